/* text-report-lag.c: one real lag of a deep recursion, its report written
 * as text and as JSON, for test-text-report.py.
 *
 *   text-report-lag recursion PREFIX   60 levels of recurse(), then 300 ms
 *                                      of CPU at the bottom
 *   text-report-lag spread PREFIX      60 levels of recurse(), 8 ms of CPU
 *                                      at each level on the way down: the
 *                                      samples spread over many stacks
 *
 * Writes PREFIX.txt (lagwatch_report_to_text()) and PREFIX.json
 * (lagwatch_report_to_json(), one line) of the first lag, then exits 0;
 * exits 1 when no lag is reported within 60 s.
 */
#include <glib.h>
#include <string.h>
#include <time.h>

#include "lagwatch.h"

#define DEPTH 60

static char *prefix;
static gboolean spread;
static gint reported;

/* Loop thread. @ms of this thread's CPU time: the same work however busy
 * the machine is (a running thread is sampled per 10 ms of its CPU). */
static __attribute__ ((noipa)) void
spin_cpu (int ms)
{
  struct timespec ts;
  double end, now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  end = (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6 + ms;
  do
    {
      clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
      now = (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6;
    }
  while (now < end);
}

/* Loop thread. @level levels of itself below this one. */
static __attribute__ ((noipa)) int
recurse (int level)
{
  int depth;

  if (level == 0)
    {
      spin_cpu (spread ? 8 : 300);
      return 1;
    }
  if (spread)
    spin_cpu (8);
  depth = recurse (level - 1);
  __asm__ volatile ("" ::: "memory");
  return depth + 1;
}

static gboolean
run_lag (gpointer user_data)
{
  g_assert_cmpint (recurse (DEPTH - 1), ==, DEPTH);
  return G_SOURCE_REMOVE;
}

static gboolean
tick (gpointer user_data)
{
  return G_SOURCE_CONTINUE;
}

/* Reporting thread. The first report, written to both files. */
static void
on_report (LagWatchReport *report, gpointer user_data)
{
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;
  g_autofree char *text_path = g_strconcat (prefix, ".txt", NULL);
  g_autofree char *json_path = g_strconcat (prefix, ".json", NULL);
  g_autofree char *json_line = NULL;

  if (g_atomic_int_get (&reported))
    return;
  text = lagwatch_report_to_text (report);
  json = lagwatch_report_to_json (report);
  json_line = g_strconcat (json, "\n", NULL);
  g_assert_true (g_file_set_contents (text_path, text, -1, NULL));
  g_assert_true (g_file_set_contents (json_path, json_line, -1, NULL));
  g_atomic_int_set (&reported, 1);
  g_main_context_wakeup (user_data);
}

int
main (int argc, char **argv)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_default ();
  GSource *source = g_idle_source_new ();
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  LagWatch *watch;

  if (argc != 3 || (strcmp (argv[1], "recursion") != 0 && strcmp (argv[1], "spread") != 0))
    {
      g_printerr ("usage: %s recursion|spread PREFIX\n", argv[0]);
      return 2;
    }
  spread = strcmp (argv[1], "spread") == 0;
  prefix = argv[2];
  g_assert_true (lagwatch_config_set_threshold_ms (config, 100));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  watch = lagwatch_attach_with_config (context, config);
  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, on_report, context, NULL);

  g_source_set_name (source, "text-report: recursion");
  g_source_set_callback (source, run_lag, NULL, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
  /* Each wait bounded: the report's wakeup could come between the check
   * and the iteration. */
  g_timeout_add (50, tick, NULL);
  while (!g_atomic_int_get (&reported) && g_get_monotonic_time () < deadline)
    g_main_context_iteration (context, TRUE);
  lagwatch_detach (watch);
  return g_atomic_int_get (&reported) ? 0 : 1;
}
