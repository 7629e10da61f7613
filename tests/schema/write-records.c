/* write-records: writes every kind of record lagwatch writes, for
 * check-records.py to validate against docs/schema/lagwatch-record.schema.json
 *
 *   write-records synthetic PATH   every member a report can have, through
 *                                  the real sinks and writers: a lag, a hang,
 *                                  each "dropped" reason, a stats event, a
 *                                  hang-killed record
 *   write-records live             a real watch (LAGWATCH_OUTPUT from the
 *                                  environment): one lag long enough to be a
 *                                  hang, then detach (a stats event)
 *   write-records killed PATH      a real watch whose process is killed once
 *                                  its hang record is in PATH: the next
 *                                  "live" run with the same LAGWATCH_STATE_DIR
 *                                  writes a hang-killed record
 */
#include <glib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-calls.h"
#include "lw-json.h"
#include "lw-report.h"
#include "lw-report-cause.h"
#include "lw-report-program.h"
#include "lw-sink.h"
#include "lw-stats-read.h"

#define WAIT_US (60 * G_USEC_PER_SEC)

/* A stack of three frames: a program function with its file and line, one
 * of GLib's without, an unnamed one; @python: a Python frame on top. */
static LwFrame *
make_frames (gboolean python, guint *n_frames)
{
  LwFrame *frames = g_new0 (LwFrame, 4);
  guint n = 0;

  if (python)
    {
      frames[n].ip = 0x7f0000001000;
      frames[n].symbol = g_strdup ("Window.on_timeout");
      frames[n].file = g_strdup ("/usr/share/app/window.py");
      frames[n].line = 12;
      frames[n].lang = "python";
      n++;
    }
  frames[n].ip = 0x55d0000013de;
  frames[n].module = g_intern_string ("/usr/bin/app");
  frames[n].build_id = g_intern_string ("ef2e5d89921f53eaf7b650cadc3e69d633e4fdec");
  frames[n].module_offset = 0x13de;
  frames[n].symbol = g_strdup ("freeze \x1b[31m\x7f\xc2\x9b");
  frames[n].symbol_offset = 14;
  frames[n].file = g_strdup ("/src/app.c");
  frames[n].line = 41;
  frames[n].inlined = TRUE;
  n++;
  frames[n].ip = 0x7f00000a0000;
  frames[n].module = g_intern_string ("/lib/x86_64-linux-gnu/libglib-2.0.so.0");
  frames[n].module_offset = 0xa0000;
  frames[n].symbol = g_strdup ("g_main_context_dispatch");
  frames[n].symbol_offset = 300;
  n++;
  frames[n].ip = 0x7f00000b0000;
  frames[n].module = g_intern_string ("/lib/x86_64-linux-gnu/libc.so.6\xff");
  frames[n].module_offset = 0xb0000;
  n++;
  *n_frames = n;
  return frames;
}

/* A report with every member set that a report can have. */
static LagWatchReport *
make_report (const char *event, gboolean complete)
{
  LagWatchReport *report = lw_report_new ();
  LwCall *root = lw_call_new (NULL, 0, 0, 250000000);
  LwCall *outer = lw_call_new ("on_timeout", 0x55d0000013de, 1000000, 200000000);

  report->id = g_strdup_printf ("%d-7", (int) getpid ());
  report->event = event;
  report->threshold_ms = 100;
  report->duration_ms = 250.04;
  report->start_time_us = g_get_real_time ();
  report->pid = getpid ();
  report->thread_id = getpid ();
  report->thread_name = g_strdup ("app \"main\"\n");
  report->complete = complete;
  /* As the watcher sets it: a lag cut short by detach; a hang has none. */
  report->stopped_by = complete || g_str_equal (event, "hang") ? NULL : "detach";
  report->caught_ms = 100.3;
  report->stack_method = g_strdup ("signal");
  report->stack_truncated = TRUE;
  report->stack_at_limit = TRUE;
  report->frames = make_frames (TRUE, &report->n_frames);
  report->n_samples = 20;
  report->stacks = g_new0 (LwReportStack, 2);
  report->n_stacks = 2;
  report->stacks[0].samples = 15;
  report->stacks[0].frames = make_frames (TRUE, &report->stacks[0].n_frames);
  report->stacks[1].samples = 5;
  report->stacks[1].truncated = TRUE;
  report->stacks[1].frames = make_frames (FALSE, &report->stacks[1].n_frames);
  report->source = g_strdup ("app: timeout");
  report->source_known = TRUE;
  report->priority = -100;
  report->phase = "dispatch";
  report->cpu_ms = 249.1;
  report->thread_state = "running";
  report->syscall = "poll";
  report->wchan = g_strdup ("do_sys_poll");
  report->occurrence = 3;
  report->frames_followed = TRUE;
  report->windows = g_new0 (LwReportWindow, 2);
  report->n_windows = 2;
  report->windows[0].title = g_strdup ("Text Editor");
  report->windows[0].refresh_interval_ms = 16.667;
  report->windows[0].frames_missed = 15;
  report->windows[1].refresh_interval_ms = 8.333;
  report->run_delay_ms = 0.5;
  report->cpu_starved = FALSE;
  report->input_pending = TRUE;
  report->source_callback = g_strdup ("freeze_busy");
  report->source_callback_kind = "g_timeout_add";
  lw_call_add (outer, lw_call_new ("inner", 0x55d000001400, 2000000, 100000000));
  lw_call_add (root, outer);
  if (g_str_equal (event, "lag"))
    {
      /* A tree from samples: each call's samples, and a summary of calls
       * too short to time. */
      LwCall *summary = lw_call_new ("short", 0x55d000001500, 105000000, 30000000);

      summary->samples = 3;
      summary->short_calls = 3;
      lw_call_add (outer, summary);
      root->samples = 25;
      outer->samples = 20;
      ((LwCall *) outer->children->pdata[0])->samples = 10;
      lw_report_set_calls (report, root, FALSE);
    }
  else
    lw_report_set_calls (report, root, TRUE);
  if (g_str_equal (event, "hang"))
    {
      report->threads = g_new0 (LwReportStack, 2);
      report->n_threads = 2;
      report->threads[0].thread_id = getpid () + 1;
      report->threads[0].thread_name = g_strdup ("worker");
      report->threads[0].thread_state = g_strdup ("sleeping");
      report->threads[0].frames = make_frames (FALSE, &report->threads[0].n_frames);
      report->threads[1].thread_id = getpid () + 2;
      report->threads[1].thread_state = g_strdup ("running");
      report->threads[1].stack_error = g_strdup ("it did not get a CPU");
    }
  lw_report_compute_fingerprints (report);
  return report;
}

static gboolean
accept_member (const char *key, const char *value, gpointer data)
{
  return TRUE;
}

static int
write_synthetic (const char *path)
{
  g_autofree char *spec = g_strconcat ("json:", path, NULL);
  LwSinks *sinks = lw_sinks_open (spec);
  LagWatchReport *lag = make_report ("lag", FALSE);
  LagWatchReport *hang = make_report ("hang", FALSE);
  LagWatchReport *bare = lw_report_new ();
  static const struct { const char *reason, *text; } drops[] = {
    { "sink stalled", "sink stalled (a reader of the output stopped reading)" },
    { "reporting thread behind", "the reporting thread fell behind (a slow report callback)" },
    { "write failed (No space left on device)", NULL },
  };
  LagWatchStats stats = { .iterations = 12340, .busy_ms = 812.5, .longest_ms = 301.2, .lags = 2 };

  lw_sinks_write (sinks, lag, FALSE, 0, FALSE);
  lw_sinks_write (sinks, hang, FALSE, 0, TRUE);
  /* The least a report holds: no stack, nothing known. */
  bare->id = g_strdup ("1-1");
  bare->pid = 1;
  bare->complete = TRUE;  /* not complete, a lag record says what cut it (stopped_by) */
  lw_report_compute_fingerprints (bare);
  lw_sinks_write (sinks, bare, FALSE, 0, FALSE);
  for (gsize i = 0; i < G_N_ELEMENTS (drops); i++)
    {
      g_autofree char *json = NULL;
      g_autofree char *text = NULL;

      lw_sink_dropped_record (i + 1, drops[i].reason, drops[i].text, &json, &text);
      lw_sinks_write_raw (sinks, json, text);
    }
  for (int i = 0; i < 15; i++)
    stats.counts[i] = (guint64) (15 - i);
  {
    g_autofree char *json = lw_stats_to_json (&stats);

    lw_sinks_write_stats (sinks, json);
  }
  {
    /* As the hang store saves a hang (the last thread's stack left out, as
     * for a record over its size limit) and reads it back. */
    g_autofree char *saved = NULL;

    g_autofree char *read_back = NULL;
    g_autofree char *text = NULL;
    g_autofree char *json = NULL;
    g_autofree char *killed_text = NULL;

    hang->threads_left_out = 1;
    saved = lagwatch_report_to_json (hang);
    text = lagwatch_report_to_text (hang);
    hang->threads_left_out = 0;
    read_back = lw_json_reencode_object (saved, strlen (saved), accept_member, NULL);
    g_assert_nonnull (read_back);
    lw_sink_hang_killed_record (4242, read_back, text, &json, &killed_text);
    lw_sinks_write_raw (sinks, json, killed_text);
  }
  lagwatch_report_unref (lag);
  lagwatch_report_unref (hang);
  lagwatch_report_unref (bare);
  lw_sinks_free (sinks);
  return 0;
}

/* The lag: @data milliseconds of CPU, long enough to be a hang. */
static gboolean
spin (gpointer data)
{
  gint64 end = g_get_monotonic_time () + GPOINTER_TO_INT (data) * 1000;

  while (g_get_monotonic_time () < end)
    ;
  return G_SOURCE_REMOVE;
}

/* Reporting thread. Counts the lag reports. */
static void
on_report (LagWatchReport *report, gpointer data)
{
  g_atomic_int_inc ((gint *) data);
}

/* A lag past LAGWATCH_HANG_MS, then detach (which writes the stats event). */
static int
write_live (void)
{
  GMainContext *context = g_main_context_new ();
  LagWatch *watch = lagwatch_attach (context);
  gint64 deadline = g_get_monotonic_time () + WAIT_US;
  gint reports = 0;

  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, on_report, &reports, NULL);
  for (int i = 0; i < 10; i++)
    g_main_context_iteration (context, FALSE);
  {
    GSource *source = g_idle_source_new ();

    g_source_set_callback (source, spin, GINT_TO_POINTER (600), NULL);
    g_source_attach (source, context);
    g_source_unref (source);
  }
  while (g_atomic_int_get (&reports) == 0 && g_get_monotonic_time () < deadline)
    {
      g_main_context_iteration (context, FALSE);
      g_usleep (10000);
    }
  g_assert_cmpint (g_atomic_int_get (&reports), >, 0);
  lagwatch_detach (watch);
  g_main_context_unref (context);
  return 0;
}

/* Loop thread: spins until the hang record is in @data (the JSON file),
 * its whole line, newline included (the writer may be in the middle of
 * it), then the process dies as a killed one does. */
static gboolean
spin_until_hang_written (gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  while (g_get_monotonic_time () < deadline)
    {
      g_autofree char *contents = NULL;
      const char *hang;

      if (g_file_get_contents (data, &contents, NULL, NULL)
          && (hang = strstr (contents, "\"event\":\"hang\"")) != NULL && strchr (hang, '\n') != NULL)
        raise (SIGKILL);
      g_usleep (1000);
    }
  g_printerr ("no hang record in %s\n", (const char *) data);
  _exit (1);
}

static G_NORETURN void
write_killed (const char *path)
{
  GMainContext *context = g_main_context_new ();
  LagWatch *watch = lagwatch_attach (context);
  GSource *source = g_idle_source_new ();

  g_assert_nonnull (watch);
  g_source_set_callback (source, spin_until_hang_written, (gpointer) path, NULL);
  g_source_attach (source, context);
  for (;;)
    g_main_context_iteration (context, TRUE);
}

int
main (int argc, char **argv)
{
  if (argc == 3 && g_str_equal (argv[1], "synthetic"))
    return write_synthetic (argv[2]);
  if (argc == 2 && g_str_equal (argv[1], "live"))
    return write_live ();
  if (argc == 3 && g_str_equal (argv[1], "killed"))
    write_killed (argv[2]);
  g_printerr ("usage: write-records synthetic PATH | live | killed PATH\n");
  return 2;
}
