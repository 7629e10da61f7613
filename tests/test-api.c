/* test-api.c: the public API under misuse and bad input, the environment,
 * signals already in use, contexts and threads that go away, the JSON Lines
 * contract, and a callback that never returns.
 *
 * Anything that prints a warning, installs signal handlers or never returns
 * runs in a subprocess (g_test_trap_subprocess), whose output is checked.
 */
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "lag-harness.h"
#include "report-json.h"

/* In a subprocess: let warnings print instead of aborting, as in an app. */
static void
child_allow_warnings (void)
{
  g_log_set_always_fatal (G_LOG_FATAL_MASK);
  g_log_set_fatal_mask ("lagwatch", G_LOG_FATAL_MASK);
}

static void
test_attach_twice (void)
{
  GMainContext *context;
  LagWatch *first;

  if (!g_test_subprocess ())
    {
      g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
      /* Said on lagwatch's own channel, once. */
      g_test_trap_assert_stderr ("lagwatch: *already watched*");
      g_test_trap_assert_stderr_unmatched ("*already watched*already watched*");
      return;
    }
  context = g_main_context_new ();
  first = lagwatch_attach (context);
  g_assert_nonnull (first);
  g_assert_null (lagwatch_attach (context));
  lagwatch_detach (first);
  /* Detached, the context can be watched again. */
  first = lagwatch_attach (context);
  g_assert_nonnull (first);
  lagwatch_detach (first);
  g_main_context_unref (context);
}

/* A replaceable watch gives way to a later attach that is not replaceable,
 * and only to that. */
static void
test_attach_replaceable (void)
{
  g_autoptr(LagWatchConfig) replaceable = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  GMainContext *context = g_main_context_new ();
  LagWatch *first, *own;

  lagwatch_config_set_replaceable (replaceable, TRUE);
  first = lagwatch_attach_full (context, replaceable, &error);
  g_assert_no_error (error);
  g_assert_nonnull (first);
  g_assert_null (lagwatch_attach_full (context, replaceable, &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_ALREADY_WATCHED);
  g_clear_error (&error);

  own = lagwatch_attach_full (context, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (own);
  g_assert_true (lagwatch_is_attached (context));
  /* The program's own watch is not replaceable, by either kind. */
  g_assert_null (lagwatch_attach_full (context, replaceable, &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_ALREADY_WATCHED);
  g_clear_error (&error);
  g_assert_null (lagwatch_attach_full (context, NULL, &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_ALREADY_WATCHED);
  g_clear_error (&error);
  lagwatch_detach (own);
  g_assert_false (lagwatch_is_attached (context));
  g_main_context_unref (context);
}

static void
test_detach_null_and_twice (void)
{
  GMainContext *context = g_main_context_new ();
  LagWatch *watch = lagwatch_attach (context);

  g_test_expect_message ("lagwatch", G_LOG_LEVEL_CRITICAL, "*watch != NULL*");
  lagwatch_detach (NULL);
  g_test_assert_expected_messages ();

  lagwatch_detach (watch);
  g_test_expect_message ("lagwatch", G_LOG_LEVEL_CRITICAL, "*known*");
  lagwatch_detach (watch);
  g_test_assert_expected_messages ();
  g_main_context_unref (context);
}

/* Child: attach with the environment the parent set, print the threshold. */
static void
child_attach_and_print (void)
{
  LagWatch *watch;

  child_allow_warnings ();
  watch = lagwatch_attach (g_main_context_new ());
  if (watch == NULL)
    printf ("watch=none\n");
  else
    {
      printf ("threshold=%u\n", lagwatch_get_threshold_ms (watch));
      lagwatch_detach (watch);
    }
}

typedef struct
{
  const char *variable;
  const char *value;
  const char *stdout_pattern;
  const char *stderr_pattern;  /* NULL: stderr must be empty */
} EnvCase;

static const EnvCase env_cases[] = {
  { "LAGWATCH_THRESHOLD_MS", "abc", "threshold=100\n",
    "*LAGWATCH_THRESHOLD_MS=\"abc\" is not valid: expected a whole number of milliseconds from 1 to 3600000; using 100*" },
  { "LAGWATCH_THRESHOLD_MS", "-5", "threshold=100\n", "*LAGWATCH_THRESHOLD_MS=\"-5\" is not valid*using 100*" },
  { "LAGWATCH_THRESHOLD_MS", "1e9", "threshold=100\n", "*LAGWATCH_THRESHOLD_MS=\"1e9\" is not valid*using 100*" },
  { "LAGWATCH_THRESHOLD_MS", "99999999999", "threshold=100\n", "*LAGWATCH_THRESHOLD_MS=\"99999999999\" is not valid*" },
  { "LAGWATCH_THRESHOLD_MS", "0", "threshold=100\n", "*LAGWATCH_THRESHOLD_MS=\"0\" is not valid*" },
  { "LAGWATCH_THRESHOLD_MS", "250", "threshold=250\n", NULL },
  { "LAGWATCH_HANG_MS", "soon", "threshold=100\n", "*LAGWATCH_HANG_MS=\"soon\" is not valid*using 2000*" },
  { "LAGWATCH_MAX_FRAMES", "5000", "threshold=100\n", "*LAGWATCH_MAX_FRAMES=\"5000\" is not valid*from 1 to 1024*using 128*" },
  { "LAGWATCH_OUTPUT", "syslog", "threshold=100\n",
    "*LAGWATCH_OUTPUT=\"syslog\" is not valid: unknown sink \"syslog\"*stderr, json:PATH, journal or none*using \"stderr\"*" },
  { "LAGWATCH_OUTPUT", "json:", "threshold=100\n", "*LAGWATCH_OUTPUT=\"json:\" is not valid*needs a file path*" },
  { "LAGWATCH_OUTPUT", "json:/nonexistent-dir/x.jsonl", "threshold=100\n",
    "*cannot open \"/nonexistent-dir/x.jsonl\"*writing reports to stderr instead*" },
  { "LAGWATCH_SIGNAL", "SIGFOO", "threshold=100\n", "*LAGWATCH_SIGNAL=\"SIGFOO\" is not valid*SIGRTMIN+N*" },
  { "LAGWATCH_SIGNAL", "SIGRTMIN+999", "threshold=100\n", "*LAGWATCH_SIGNAL=\"SIGRTMIN+999\" is not valid*" },
  { "LAGWATCH_DEBUG_DIRS", "relative/debug:/usr/lib/debug", "threshold=100\n",
    "*LAGWATCH_DEBUG_DIRS: \"relative/debug\" is not an absolute directory; skipped*" },
  { "LAGWATCH_SAMPLE_MS", "0", "threshold=100\n", "*LAGWATCH_SAMPLE_MS=\"0\" is not valid*from 1 to 1000*using 10*" },
  { "LAGWATCH_STATE_DIR", "state", "threshold=100\n", "*LAGWATCH_STATE_DIR=\"state\" is not valid: expected an absolute directory path*" },
  { "LAGWATCH_UNDER_DEBUGGER", "yes", "threshold=100\n", "*LAGWATCH_UNDER_DEBUGGER=\"yes\" is not valid*" },
  { "LAGWATCH_JS_FRAMES", "off", "threshold=100\n",
    "*LAGWATCH_JS_FRAMES=\"off\" is not valid: expected 1 (name JavaScript functions in GJS programs) or 0; using 1*" },
  { "LAGWATCH_DISABLE", "1", "watch=none\n", NULL },
  { "LAGWATCH_DISABLE", "maybe", "threshold=100\n", "*LAGWATCH_DISABLE=\"maybe\" is not valid*" },
};

static void
test_environment (gconstpointer data)
{
  const EnvCase *c = data;

  if (g_test_subprocess ())
    {
      child_attach_and_print ();
      return;
    }
  g_setenv (c->variable, c->value, TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv (c->variable);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout (c->stdout_pattern);
  if (c->stderr_pattern != NULL)
    {
      g_test_trap_assert_stderr (c->stderr_pattern);
      /* One warning, not one per field or per retry. */
      g_test_trap_assert_stderr_unmatched ("*is not valid*is not valid*");
      g_test_trap_assert_stderr_unmatched ("*not an absolute directory*not an absolute directory*");
    }
  else
    g_test_trap_assert_stderr ("");
}

static volatile sig_atomic_t app_signal_count;

static void
app_handler (int signo)
{
  app_signal_count++;
}

/* Child: the program owns SIGRTMIN+7 before lagwatch starts. */
static void
child_signal_in_use (void)
{
  Harness h;
  LagWatchReport *report;
  struct sigaction action = { 0 };

  child_allow_warnings ();
  action.sa_handler = app_handler;
  sigaction (SIGRTMIN + 7, &action, NULL);

  harness_init (&h, 100);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (200));
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_true (harness_stack_has (report, "spin_ms", NULL));
  /* The program's own signal still reaches its own handler. */
  raise (SIGRTMIN + 7);
  g_assert_cmpint (app_signal_count, ==, 1);
  harness_clear (&h);

  /* Detached: the program's handler is in place again. */
  sigaction (SIGRTMIN + 7, NULL, &action);
  g_assert_true (action.sa_handler == app_handler);
}

static void
test_signal_in_use_default (void)
{
  if (g_test_subprocess ())
    {
      child_signal_in_use ();
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*SIGRTMIN+7 is already handled by the program; lagwatch uses SIGRTMIN+8 instead*");
}

static void
test_signal_in_use_explicit (void)
{
  if (g_test_subprocess ())
    {
      child_signal_in_use ();
      return;
    }
  g_setenv ("LAGWATCH_SIGNAL", "SIGRTMIN+7", TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv ("LAGWATCH_SIGNAL");
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*SIGRTMIN+7 is also handled by the program; lagwatch passes the program's own*");
}

static void
mark_finalized (gpointer data)
{
  *(gboolean *) data = TRUE;
}

static gboolean
never_called (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

/* The program drops its last reference while the context is watched: the
 * context lives on until detach, then is finalized (its sources with it). */
static void
test_context_dropped_while_attached (void)
{
  GMainContext *context = g_main_context_new ();
  GSource *marker = g_timeout_source_new_seconds (3600);
  gboolean finalized = FALSE;
  LagWatch *watch;

  g_source_set_callback (marker, never_called, &finalized, mark_finalized);
  g_source_attach (marker, context);
  g_source_unref (marker);
  watch = lagwatch_attach (context);
  g_assert_nonnull (watch);
  g_main_context_iteration (context, FALSE);
  g_main_context_unref (context);
  g_assert_false (finalized);
  lagwatch_detach (watch);
  g_assert_true (finalized);
}

typedef struct
{
  GMainContext *context;
  LagWatch     *watch;
} ThreadLoop;

static gpointer
run_loop_then_exit (gpointer data)
{
  ThreadLoop *tl = data;

  g_main_context_push_thread_default (tl->context);
  for (int i = 0; i < 3; i++)
    g_main_context_iteration (tl->context, FALSE);
  /* Leave the loop busy and exit: the watcher finds the thread gone. */
  spin_ms (GINT_TO_POINTER (150));
  g_main_context_pop_thread_default (tl->context);
  return NULL;
}

static void
test_thread_exits_while_attached (void)
{
  ThreadLoop tl;
  GThread *thread;

  tl.context = g_main_context_new ();
  tl.watch = lagwatch_attach (tl.context);
  g_assert_nonnull (tl.watch);
  thread = g_thread_new ("short-lived loop", run_loop_then_exit, &tl);
  g_thread_join (thread);
  lagwatch_detach (tl.watch);
  g_main_context_unref (tl.context);
}

/* -- a poll function set by the program after attach --------------------- */

typedef enum
{
  REPLACED_DEFAULT,    /* the context polled with g_poll at attach */
  REPLACED_OWN,        /* the program's own poll function at attach, another later */
  REPLACED_CHAINED,    /* as OWN, and the later one calls the one before it */
} ReplacedCase;

/* Loop thread: the program's poll functions. */
static GPollFunc replaced_prev_poll;

static gint
program_poll (GPollFD *fds, guint nfds, gint timeout)
{
  return g_poll (fds, nfds, timeout);
}

static gint
program_poll_chained (GPollFD *fds, guint nfds, gint timeout)
{
  return replaced_prev_poll (fds, nfds, timeout);
}

static gboolean
set_program_poll (gpointer data)
{
  GMainContext *context = g_main_context_get_thread_default ();

  replaced_prev_poll = g_main_context_get_poll_func (context);
  g_main_context_set_poll_func (context, data);
  return G_SOURCE_REMOVE;
}

static gboolean
note_quiet_over (gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

static LAGGY void
lag_after_poll_replaced (gpointer data)
{
  spin_cpu_ms (GINT_TO_POINTER (300));
  __asm__ volatile ("" ::: "memory");  /* not a tail call: this frame stays */
}

/* The program sets its own poll function from a dispatch, after attach;
 * the loop then sleeps in poll five thresholds long, and lags once. The
 * quiet time is no lag: the one report is the real lag, with its stack. */
static void
test_poll_replaced_after_attach (gconstpointer data)
{
  ReplacedCase which = GPOINTER_TO_INT (data);
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  gboolean quiet_over = FALSE;
  GSource *source;
  Harness h;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 100));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  g_mutex_init (&h.lock);
  h.reports = g_ptr_array_new_with_free_func ((GDestroyNotify) lagwatch_report_unref);
  h.context = g_main_context_new ();
  g_main_context_push_thread_default (h.context);
  if (which != REPLACED_DEFAULT)
    g_main_context_set_poll_func (h.context, program_poll);
  h.watch = lagwatch_attach_with_config (h.context, config);
  g_assert_nonnull (h.watch);
  lagwatch_set_report_func (h.watch, harness_on_report, &h, NULL);

  source = g_idle_source_new ();
  g_source_set_callback (source, set_program_poll,
                         which == REPLACED_CHAINED ? program_poll_chained : program_poll, NULL);
  g_source_attach (source, h.context);
  g_source_unref (source);
  source = g_timeout_source_new (500);
  g_source_set_callback (source, note_quiet_over, &quiet_over, NULL);
  g_source_attach (source, h.context);
  g_source_unref (source);
  while (!quiet_over)
    g_main_context_iteration (h.context, TRUE);

  harness_run_lag (&h, lag_after_poll_replaced, NULL);
  harness_wait_reports (&h, 1);
  lagwatch_detach (g_steal_pointer (&h.watch));
  /* A lag still followed at detach is reported then, before it returns. */
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  g_assert_true (harness_stack_has (harness_report (&h, 0), "lag_after_poll_replaced", NULL));
  harness_clear (&h);
}

static _Atomic gint64 forever_entered_us;

/* The lag's timeline of waiting for a CPU: every millisecond or so, how
 * long the loop thread and the watcher thread have waited, together,
 * since the loop entered the lag. Written by the detacher thread, read by
 * the reporting thread after the detach. */
#define WAIT_POINTS 1024
static struct
{
  double elapsed_ms;
  double wait_ms;
} wait_points[WAIT_POINTS];
static guint n_wait_points;

static LAGGY void
spin_forever (void)
{
  forever_entered_us = g_get_monotonic_time ();
  for (;;)
    ;
}

static gboolean
never_returns (gpointer data)
{
  spin_forever ();
  return G_SOURCE_REMOVE;
}

/* Watcher thread of the child: hand the report to the parent, with the
 * timeline of waiting for a CPU ("ELAPSED_MS WAIT_MS" lines), end. */
static void
write_report_json (LagWatchReport *report, gpointer data)
{
  g_autofree char *json = lagwatch_report_to_json (report);
  g_autofree char *wait_path = g_strconcat (g_getenv ("LW_TEST_REPORT_FILE"), ".wait", NULL);
  g_autoptr(GString) waits = g_string_new ("");

  for (guint i = 0; i < n_wait_points; i++)
    g_string_append_printf (waits, "%.3f %.3f\n", wait_points[i].elapsed_ms, wait_points[i].wait_ms);
  g_assert_true (g_file_set_contents (wait_path, waits->str, -1, NULL));
  g_assert_true (g_file_set_contents (g_getenv ("LW_TEST_REPORT_FILE"), json, -1, NULL));
  _exit (0);
}

static gpointer
detach_after (gpointer data)
{
  pid_t loop_tid = getpid (), watcher = watcher_tid ();
  double base_ms = -1;

  while (forever_entered_us == 0)
    g_usleep (1000);
  /* The observation window: by 400 ms into the lag the stack must have
   * been taken (the assertion is on caught_ms, measured by lagwatch). */
  while (g_get_monotonic_time () - forever_entered_us < 400 * 1000)
    {
      double loop_wait = thread_wait_ms (loop_tid), watcher_wait = thread_wait_ms (watcher);

      if (base_ms < 0 && loop_wait >= 0 && watcher_wait >= 0)
        base_ms = loop_wait + watcher_wait;
      if (base_ms >= 0 && loop_wait >= 0 && watcher_wait >= 0 && n_wait_points < WAIT_POINTS)
        {
          wait_points[n_wait_points].elapsed_ms = (g_get_monotonic_time () - forever_entered_us) / 1000.0;
          wait_points[n_wait_points].wait_ms = loop_wait + watcher_wait - base_ms;
          n_wait_points++;
        }
      g_usleep (1000);
    }
  lagwatch_detach (data);
  return NULL;
}

static void
child_never_returns (void)
{
  GMainContext *context = g_main_context_default ();
  LagWatch *watch = lagwatch_attach (context);

  lagwatch_set_report_func (watch, write_report_json, NULL, NULL);
  g_thread_unref (g_thread_new ("detacher", detach_after, watch));
  g_timeout_add (20, never_returns, NULL);
  for (;;)
    g_main_context_iteration (context, TRUE);
}

static JsonObject *
parse_json_object (JsonParser *parser, const char *line)
{
  g_autoptr(GError) error = NULL;

  json_parser_load_from_data (parser, line, -1, &error);
  g_assert_no_error (error);
  g_assert_true (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));
  return json_node_get_object (json_parser_get_root (parser));
}

static gboolean
json_stack_has (JsonObject *object, const char *symbol)
{
  return json_frames_have (json_object_get_array_member (object, "stack"), symbol);
}

/* Test process. From @timeline ("ELAPSED_MS WAIT_MS" lines, elapsed since
 * the lag began), how long the loop and watcher threads had waited for a
 * CPU at the first point at or past @at_ms (the last point if none; 0 for
 * none at all, as where the kernel keeps no scheduler statistics). The
 * lag began a little before the timeline's zero: the point found is, if
 * anything, later than @at_ms, and its wait larger. */
static double
waited_until (const char *timeline, double at_ms)
{
  g_auto(GStrv) lines = g_strsplit (timeline, "\n", -1);
  double wait_ms = 0;

  for (guint i = 0; lines[i] != NULL && lines[i][0] != '\0'; i++)
    {
      char *end;
      double elapsed_ms = g_ascii_strtod (lines[i], &end);

      wait_ms = g_ascii_strtod (end, NULL);
      if (elapsed_ms >= at_ms)
        break;
    }
  return wait_ms;
}

static void
test_never_returns (void)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autofree char *dir = NULL, *path = NULL, *json = NULL, *wait_path = NULL, *wait = NULL;
  JsonObject *report;
  double caught, wait_ms;

  if (g_test_subprocess ())
    {
      child_never_returns ();
      return;
    }
  dir = g_dir_make_tmp ("lagwatch-hang-XXXXXX", NULL);
  path = g_build_filename (dir, "report.json", NULL);
  wait_path = g_strconcat (path, ".wait", NULL);
  g_setenv ("LW_TEST_REPORT_FILE", path, TRUE);
  g_test_trap_subprocess (NULL, 20 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv ("LW_TEST_REPORT_FILE");
  g_file_get_contents (path, &json, NULL, NULL);
  g_file_get_contents (wait_path, &wait, NULL, NULL);
  g_unlink (path);
  g_unlink (wait_path);
  g_rmdir (dir);
  g_test_trap_assert_passed ();
  g_assert_nonnull (json);
  g_assert_nonnull (wait);
  report = parse_json_object (parser, json);
  caught = json_object_get_double_member (report, "caught_ms");
  wait_ms = waited_until (wait, caught);
  g_test_message ("stack taken %.1f ms into the lag; the loop and watcher threads had waited %.1f ms "
                  "for a CPU by then", caught, wait_ms);
  /* Never before the threshold (100 ms, the default). After it, by 10 ms
   * at most (the watcher's wake-up and one signal round trip take well
   * under 1 ms on an idle machine; a catch one sampling interval late
   * would be 110 ms or more), plus the time the watcher and the loop
   * thread waited for a CPU by then, which a loaded machine adds to the
   * watcher's wake-up and to the handler's run: exact on an idle machine,
   * as wide as the measured starvation on a loaded one. */
  g_assert_cmpfloat (caught, >=, 100.0);
  g_assert_cmpfloat (caught, <=, 110.0 + wait_ms);
  g_assert_false (json_object_get_boolean_member (report, "complete"));
  g_assert_true (json_stack_has (report, "spin_forever"));
}

static void
test_json_contract (void)
{
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-json-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "lags.jsonl", NULL);
  g_autofree char *spec = g_strdup_printf ("stderr,json:%s", path);
  g_autofree char *contents = NULL;
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_auto(GStrv) lines = NULL;
  JsonObject *object;
  JsonArray *stack;
  double wait_before, waited;
  Harness h;

  /* The harness writes nowhere; this watch writes JSON Lines (and stderr,
   * which the test runner keeps). */
  g_assert_true (lagwatch_config_set_output (config, spec, NULL));
  g_assert_true (lagwatch_config_set_threshold_ms (config, 100));
  h.context = g_main_context_new ();
  g_main_context_push_thread_default (h.context);
  g_mutex_init (&h.lock);
  h.reports = g_ptr_array_new_with_free_func ((GDestroyNotify) lagwatch_report_unref);
  h.watch = lagwatch_attach_with_config (h.context, config);
  lagwatch_set_report_func (h.watch, harness_on_report, &h, NULL);
  /* The lag lasts the 160 ms spun, plus any time this thread waited for a
   * CPU inside the dispatch (a loaded machine): its run delay around it
   * widens the bound. */
  wait_before = thread_wait_ms (gettid ());
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (160));
  waited = wait_before < 0 ? 0 : thread_wait_ms (gettid ()) - wait_before;
  harness_wait_reports (&h, 1);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (130));
  harness_wait_reports (&h, 2);
  harness_clear (&h);

  g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
  g_assert_true (g_str_has_suffix (contents, "\n"));
  lines = g_strsplit (contents, "\n", -1);
  /* Two records, the "stats" event written at detach, the empty tail. */
  g_assert_cmpuint (g_strv_length (lines), ==, 4);
  g_assert_true (g_str_has_prefix (lines[2], "{\"event\":\"stats\""));

  object = parse_json_object (parser, lines[0]);
  g_assert_cmpstr (json_object_get_string_member (object, "event"), ==, "lag");
  g_assert_cmpfloat (json_object_get_double_member (object, "duration_ms"), >=, 160.0 - 15.0);
  g_assert_cmpfloat (json_object_get_double_member (object, "duration_ms"), <=, 160.0 + 15.0 + waited);
  g_assert_cmpint (json_object_get_int_member (object, "threshold_ms"), ==, 100);
  g_assert_cmpint (json_object_get_int_member (object, "thread_id"), ==, gettid ());
  g_assert_true (g_regex_match_simple ("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$",
                                       json_object_get_string_member (object, "time"), 0, 0));
  stack = json_object_get_array_member (object, "stack");
  g_assert_cmpuint (json_array_get_length (stack), >, 3);
  for (guint i = 0; i < json_array_get_length (stack); i++)
    {
      JsonObject *frame = json_array_get_object_element (stack, i);
      const char *module = json_object_get_string_member (frame, "module");

      g_assert_true (g_str_has_prefix (json_object_get_string_member (frame, "ip"), "0x"));
      g_assert_true (g_str_has_prefix (json_object_get_string_member (frame, "module_offset"), "0x"));
      g_assert_true (json_object_has_member (frame, "build_id"));
      g_assert_true (json_object_has_member (frame, "symbol"));
      g_assert_true (JSON_NODE_TYPE (json_object_get_member (frame, "symbol_offset")) == JSON_NODE_VALUE);
      g_assert_true (module[0] == '/' || g_str_equal (module, "[vdso]"));
    }
  g_assert_true (json_stack_has (object, "spin_ms"));

  object = parse_json_object (parser, lines[1]);
  g_assert_cmpfloat_with_epsilon (json_object_get_double_member (object, "duration_ms"), 130.0, 15.0);

  g_unlink (path);
  g_rmdir (dir);
}

/* Lag ids are unique in the process ("PID-N"), whichever watch caught the
 * lag: one lag on each of two watched contexts. */
static void
test_lag_ids_unique_across_watches (void)
{
  Harness first, second;
  g_autofree char *pattern = g_strdup_printf ("^%d-[1-9][0-9]*$", (int) getpid ());
  const char *first_id, *second_id;

  harness_init (&first, 100);
  harness_init (&second, 100);
  harness_run_lag (&first, spin_ms, GINT_TO_POINTER (150));
  harness_wait_reports (&first, 1);
  harness_run_lag (&second, spin_ms, GINT_TO_POINTER (150));
  harness_wait_reports (&second, 1);
  first_id = lagwatch_report_get_id (harness_report (&first, 0));
  second_id = lagwatch_report_get_id (harness_report (&second, 0));
  g_test_message ("ids: %s and %s", first_id, second_id);
  g_assert_true (g_regex_match_simple (pattern, first_id, 0, 0));
  g_assert_true (g_regex_match_simple (pattern, second_id, 0, 0));
  g_assert_cmpstr (first_id, !=, second_id);
  harness_clear (&second);
  harness_clear (&first);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/api/attach-twice", test_attach_twice);
  g_test_add_func ("/api/attach-replaceable", test_attach_replaceable);
  g_test_add_func ("/api/detach-null-and-twice", test_detach_null_and_twice);
  for (guint i = 0; i < G_N_ELEMENTS (env_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/env/%s/%u", env_cases[i].variable, i);

      g_test_add_data_func (path, &env_cases[i], test_environment);
    }
  g_test_add_func ("/signal/in-use-default-picks-another", test_signal_in_use_default);
  g_test_add_func ("/signal/in-use-explicit-chains", test_signal_in_use_explicit);
  g_test_add_func ("/context/dropped-while-attached", test_context_dropped_while_attached);
  g_test_add_func ("/context/thread-exits-while-attached", test_thread_exits_while_attached);
  g_test_add_data_func ("/context/poll-replaced-after-attach/default", GINT_TO_POINTER (REPLACED_DEFAULT),
                        test_poll_replaced_after_attach);
  g_test_add_data_func ("/context/poll-replaced-after-attach/own", GINT_TO_POINTER (REPLACED_OWN),
                        test_poll_replaced_after_attach);
  g_test_add_data_func ("/context/poll-replaced-after-attach/chained", GINT_TO_POINTER (REPLACED_CHAINED),
                        test_poll_replaced_after_attach);
  g_test_add_func ("/lag/never-returns-caught-at-threshold", test_never_returns);
  g_test_add_func ("/json/contract", test_json_contract);
  g_test_add_func ("/json/lag-ids-unique-across-watches", test_lag_ids_unique_across_watches);

  return g_test_run ();
}
