/* test-exit.c: a lag the program exits in, or right after
 *
 * A handler that freezes the loop and then calls exit() (a "Quit" that
 * saves for too long) never returns to the loop: the lag never ends. It is
 * reported at exit, as still running, like a lag in progress at detach,
 * instead of being lost with the process. A lag that ends (the loop is
 * back in poll) right before the program quits its loop and returns from
 * main() is reported whole: the watcher may not have looked again since
 * it ended (it samples every 10 ms), and exit must not outrun it. A busy
 * period after the loop returned (g_main_loop_run() returned, then the
 * program works on its way out) is not a lag of the loop: not reported.
 * A report still being made when exit has waited its bound is said lost.
 *
 * Each test runs in a subprocess: it attaches with JSON output to a file,
 * and its handler spins until the watcher has followed the lag long enough
 * to write a hang record into that file (a condition, not a time: on a
 * loaded machine the watcher may see the lag late), then exits.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lagwatch.h"

#define HANG_MS 150
#define WAIT_US (60 * G_USEC_PER_SEC)

static char *json_path;

/* Loop thread. TRUE once the JSON file holds a whole line that is a hang
 * record. */
static gboolean
hang_written (void)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents (json_path, &text, NULL, NULL))
    return FALSE;
  lines = g_strsplit (text, "\n", -1);
  /* The last piece has no newline yet: not a whole line. */
  for (guint i = 0; lines[i] != NULL && lines[i + 1] != NULL; i++)
    if (strstr (lines[i], "\"event\":\"hang\"") != NULL)
      return TRUE;
  return FALSE;
}

static GMainLoop *loop;

/* Loop thread: the next iteration, after the lag ended in poll. */
static gboolean
quit (gpointer data)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

/* Loop thread: freezes the loop until the hang is on record; then exits
 * from inside the dispatch (@data set), or returns to the loop, which
 * quits at its next iteration. */
static gboolean
freeze (gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  while (!hang_written ())
    if (g_get_monotonic_time () > deadline)
      exit (3);
  if (data != NULL)
    exit (0);
  g_idle_add (quit, NULL);
  return G_SOURCE_REMOVE;
}

/* Subprocess: one frozen dispatch; returns once the loop quits (then the
 * test program exits). */
static void
child_freeze (gboolean exit_inside)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *output = g_strdup_printf ("json:%s,stderr", json_path);

  loop = g_main_loop_new (NULL, FALSE);
  lagwatch_config_set_threshold_ms (config, 50);
  lagwatch_config_set_hang_ms (config, HANG_MS);
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  g_assert_nonnull (lagwatch_attach_with_config (NULL, config));
  g_timeout_add (10, freeze, exit_inside ? GINT_TO_POINTER (1) : NULL);
  g_main_loop_run (loop);
}

/* Loop thread: quits the loop at its first iteration. */
static gboolean
quit_now (gpointer data)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

/* Subprocess: the loop runs and returns; then the program stays busy
 * (Python's finalization, atexit handlers) until the watcher has followed
 * that busy period long enough to write a hang record, and exits. */
static void
child_busy_after_loop (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *output = g_strdup_printf ("json:%s,stderr", json_path);
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  loop = g_main_loop_new (NULL, FALSE);
  lagwatch_config_set_threshold_ms (config, 50);
  lagwatch_config_set_hang_ms (config, HANG_MS);
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  g_assert_nonnull (lagwatch_attach_with_config (NULL, config));
  g_idle_add (quit_now, NULL);
  g_main_loop_run (loop);
  while (!hang_written ())
    if (g_get_monotonic_time () > deadline)
      exit (3);
}

static gint    callback_entered;  /* (atomic) */
static GMutex   never_lock;
static GCond    never_cond;

/* Reporting thread: a report callback that never returns (the stand-in
 * for a report that takes longer to make than exit waits: a machine too
 * busy to give the reporting thread a CPU, symbols slow to load). */
static void
on_report_never_returns (LagWatchReport *report, gpointer data)
{
  g_atomic_int_set (&callback_entered, 1);
  g_mutex_lock (&never_lock);
  for (;;)
    g_cond_wait (&never_cond, &never_lock);
}

/* Loop thread: a 200 ms busy period, then the loop quits. */
static gboolean
spin_then_quit (gpointer data)
{
  gint64 end = g_get_monotonic_time () + 200 * G_TIME_SPAN_MILLISECOND;

  while (g_get_monotonic_time () < end)
    ;
  g_idle_add (quit, NULL);
  return G_SOURCE_REMOVE;
}

/* Subprocess: a lag whose report is still being made (its callback has
 * not returned) when the program returns from main(). */
static void
child_report_unfinished (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  gint64 deadline = g_get_monotonic_time () + WAIT_US;
  LagWatch *watch;

  loop = g_main_loop_new (NULL, FALSE);
  lagwatch_config_set_threshold_ms (config, 50);
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  watch = lagwatch_attach_with_config (NULL, config);
  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, on_report_never_returns, NULL, NULL);
  g_timeout_add (10, spin_then_quit, NULL);
  g_main_loop_run (loop);
  while (!g_atomic_int_get (&callback_entered))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
}

/* The one lag record of the JSON file, which must hold each of @wanted
 * (NULL-terminated). */
static void
assert_one_lag (const char *const *wanted)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  guint lags = 0;

  g_assert_true (g_file_get_contents (json_path, &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (strstr (lines[i], "\"event\":\"lag\"") != NULL)
      {
        g_test_message ("%s", lines[i]);
        for (guint k = 0; wanted[k] != NULL; k++)
          g_assert_nonnull (strstr (lines[i], wanted[k]));
        lags++;
      }
  g_assert_cmpuint (lags, ==, 1);
}

/* How many records of the JSON file are @event ("stats"). */
static guint
count_events (const char *event)
{
  g_autofree char *text = NULL;
  g_autofree char *member = g_strdup_printf ("{\"event\":\"%s\"", event);
  g_auto(GStrv) lines = NULL;
  guint n = 0;

  g_assert_true (g_file_get_contents (json_path, &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    n += g_str_has_prefix (lines[i], member);
  return n;
}

static void
test_exit_in_lag (void)
{
  static const char *const wanted[] = { "\"complete\":false", "\"stopped_by\":\"exit\"", NULL };

  if (g_test_subprocess ())
    {
      child_freeze (TRUE);
      return;
    }
  g_test_trap_subprocess (NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: lag still running at exit, after *");
  assert_one_lag (wanted);
  /* The watcher writes the profile as it stops: once, at exit too. */
  g_assert_cmpuint (count_events ("stats"), ==, 1);
}

static void
test_exit_after_lag (void)
{
  static const char *const wanted[] = { "\"complete\":true", NULL };

  if (g_test_subprocess ())
    {
      child_freeze (FALSE);
      return;
    }
  g_unlink (json_path);
  g_test_trap_subprocess (NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: lag of *");
  assert_one_lag (wanted);
  g_assert_cmpuint (count_events ("stats"), ==, 1);
}

/* Busy after g_main_loop_run() returned: not a lag of the loop, neither
 * in the records nor in the summary. */
static void
test_busy_after_loop (void)
{
  if (g_test_subprocess ())
    {
      child_busy_after_loop ();
      return;
    }
  g_unlink (json_path);
  g_test_trap_subprocess (NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr_unmatched ("*lag still running at exit*");
  g_assert_cmpuint (count_events ("hang"), ==, 1);
  g_assert_cmpuint (count_events ("lag"), ==, 0);
  g_assert_cmpuint (count_events ("stats"), ==, 1);
}

/* A report still being made when the program exits (exit waits for it
 * LW_SINK_QUEUE_STOP_MS at most): the program ends all the same, and
 * lagwatch says the report is lost. */
static void
test_report_unfinished (void)
{
  if (g_test_subprocess ())
    {
      child_report_unfinished ();
      return;
    }
  g_test_trap_subprocess (NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: the program exited with 1 report still being made after 2000 ms (*): "
                             "it is lost\n*");
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  /* The parent names the file; its subprocesses inherit the name. */
  if (!g_test_subprocess ())
    {
      json_path = g_strdup_printf ("%s/lagwatch-test-exit-%d.jsonl", g_get_tmp_dir (), (int) getpid ());
      g_unlink (json_path);
      g_setenv ("LW_TEST_EXIT_JSON", json_path, TRUE);
    }
  else
    json_path = g_strdup (g_getenv ("LW_TEST_EXIT_JSON"));
  g_test_add_func ("/exit/lag-in-progress", test_exit_in_lag);
  g_test_add_func ("/exit/lag-just-ended", test_exit_after_lag);
  g_test_add_func ("/exit/busy-after-loop", test_busy_after_loop);
  g_test_add_func ("/exit/report-unfinished", test_report_unfinished);
  status = g_test_run ();
  if (!g_test_subprocess ())
    g_unlink (json_path);
  g_free (json_path);
  return status;
}
