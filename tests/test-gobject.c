/* test-gobject.c: the GObject face (lagwatch-gobject.h) from C
 *
 * The monitor emits ::report on the main context chosen at its creation,
 * never on lagwatch's threads nor on the watched context; attach errors
 * come back as GErrors of LAGWATCH_ERROR; frames copy out as boxed structs.
 */
#include <glib.h>
#include <string.h>

#include "lagwatch-gobject.h"
#include "lag-harness.h"

#define LAG_MS 150

typedef struct
{
  GMainContext   *watched;      /* run by the lag thread */
  GMainContext   *reports_on;   /* the monitor's report context: this thread's */
  GThread        *test_thread;
  GPtrArray      *reports;      /* received by on_report, on this thread */
  GThread        *emitted_on;   /* the thread the last ::report ran on */
  guint           emitted_elsewhere; /* ::report emissions outside reports_on */
  LagWatchReport *spin_report;  /* the report of the spin source, when in */
} Fixture;

/* ::report: this test's thread, iterating reports_on. */
static void
on_report (LagWatchMonitor *monitor, LagWatchReport *report, gpointer data)
{
  Fixture *f = data;

  if (!g_main_context_is_owner (f->reports_on) || g_thread_self () != f->test_thread)
    f->emitted_elsewhere++;
  g_ptr_array_add (f->reports, lagwatch_report_ref (report));
  /* A loaded machine may add lags of its own (a thread preempted out of
   * poll for 50 ms): the one under test is the spin source's, known by its
   * stack (its source name needs GLib's dispatch record, which a lag caught
   * outside the dispatch does not show). */
  if (harness_stack_has (report, "spin_once", NULL))
    {
      f->spin_report = report;
      g_atomic_pointer_set (&f->emitted_on, g_thread_self ());
    }
}

/* The watched context's one slow source. */
static LAGGY gboolean
spin_once (gpointer data)
{
  spin_ms (GINT_TO_POINTER (LAG_MS));
  __asm__ volatile ("" ::: "memory");  /* no tail call: this frame stays in the stack */
  return G_SOURCE_REMOVE;
}

/* The lag thread: one LAG_MS lag in spin_ms on the watched context, then
 * it keeps iterating until told to stop. */
static gpointer
lag_thread (gpointer data)
{
  Fixture *f = data;
  GSource *source;

  g_main_context_push_thread_default (f->watched);
  source = g_timeout_source_new (1);
  g_source_set_callback (source, spin_once, NULL, NULL);
  g_source_set_static_name (source, "test-gobject: spin");
  g_source_attach (source, f->watched);
  g_source_unref (source);
  while (!g_atomic_pointer_get (&f->emitted_on))
    g_main_context_iteration (f->watched, TRUE);
  g_main_context_pop_thread_default (f->watched);
  return NULL;
}

static gboolean
wake_lag_thread (gpointer data)
{
  return G_SOURCE_REMOVE;
}

static void
test_report_on_the_creators_context (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(LagWatchMonitor) monitor = NULL;
  g_autoptr(LagWatchFrame) frame = NULL;
  Fixture f = { 0 };
  GThread *thread;
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US;
  gboolean named_spin = FALSE;
  GSource *timeout;

  f.watched = g_main_context_new ();
  f.reports_on = g_main_context_new ();
  f.reports = g_ptr_array_new_with_free_func ((GDestroyNotify) lagwatch_report_unref);
  f.test_thread = g_thread_self ();
  lagwatch_config_set_threshold_ms (config, 50);
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));

  /* Created with reports_on as this thread's default: reports go there. */
  g_main_context_push_thread_default (f.reports_on);
  monitor = lagwatch_monitor_new (f.watched, config, &error);
  g_assert_no_error (error);
  g_assert_true (lagwatch_monitor_get_report_context (monitor) == f.reports_on);
  g_assert_true (lagwatch_monitor_get_attached (monitor));
  g_assert_cmpuint (lagwatch_monitor_get_threshold_ms (monitor), ==, 50);
  g_signal_connect (monitor, "report", G_CALLBACK (on_report), &f);

  thread = g_thread_new ("lag", lag_thread, &f);
  /* The deadline wakes the wait even when no report comes. */
  timeout = g_timeout_source_new ((HARNESS_DEADLINE_US + G_USEC_PER_SEC) / 1000);
  g_source_set_callback (timeout, wake_lag_thread, NULL, NULL);
  g_source_attach (timeout, f.reports_on);
  while (f.spin_report == NULL && g_get_monotonic_time () < deadline)
    g_main_context_iteration (f.reports_on, TRUE);
  g_source_destroy (timeout);
  g_source_unref (timeout);
  g_main_context_invoke (f.watched, wake_lag_thread, NULL);
  g_thread_join (thread);

  g_assert_nonnull (f.spin_report);
  g_assert_true (f.emitted_on == g_thread_self ());
  g_assert_cmpuint (f.emitted_elsewhere, ==, 0);
  g_assert_cmpfloat (lagwatch_report_get_duration_ms (f.spin_report), >=, LAG_MS * 0.9);
  for (guint i = 0; i < lagwatch_report_get_n_frames (f.spin_report); i++)
    {
      g_autoptr(LagWatchFrame) each = lagwatch_report_get_frame_info (f.spin_report, i);

      g_assert_nonnull (each);
      named_spin |= g_strcmp0 (each->symbol, "spin_ms") == 0;
    }
  g_assert_true (named_spin);
  frame = lagwatch_report_get_frame_info (f.spin_report, lagwatch_report_get_n_frames (f.spin_report));
  g_assert_null (frame);

  /* The record's fields, each with its getter: a lag caught in the
   * dispatch of the named spin source, of the default priority. */
  {
    int priority = -1;
    const char *title = "unset";
    double interval_ms = -1;

    g_assert_cmpint (lagwatch_report_get_kind (f.spin_report), ==, LAGWATCH_REPORT_KIND_LAG);
    g_assert_true (lagwatch_report_get_priority (f.spin_report, &priority));
    g_assert_cmpint (priority, ==, G_PRIORITY_DEFAULT);
    g_assert_cmpfloat (lagwatch_report_get_caught_ms (f.spin_report), >=, 0);
    g_assert_cmpfloat (lagwatch_report_get_caught_ms (f.spin_report), <=,
                       lagwatch_report_get_duration_ms (f.spin_report));
    g_assert_cmpuint (lagwatch_report_get_occurrence (f.spin_report), >=, 1);
    /* A named source is described by its name, not its callback. */
    g_assert_cmpstr (lagwatch_report_get_source (f.spin_report), ==, "test-gobject: spin");
    g_assert_null (lagwatch_report_get_source_callback (f.spin_report));
    g_assert_null (lagwatch_report_get_source_callback_kind (f.spin_report));
    /* It computed: no kernel wait point. */
    if (g_strcmp0 (lagwatch_report_get_thread_state (f.spin_report), "running") == 0)
      g_assert_null (lagwatch_report_get_wchan (f.spin_report));
    /* No GTK window: window 0 is out of range, an empty answer and no
     * critical warning (which GTest makes fatal). */
    g_assert_cmpuint (lagwatch_report_get_n_windows (f.spin_report), ==, 0);
    g_assert_cmpuint (lagwatch_report_get_frames_missed (f.spin_report, 0, &title, &interval_ms), ==, 0);
    g_assert_null (title);
    g_assert_cmpfloat (interval_ms, ==, 0);
  }

  /* The boxed types copy as documented: a report by reference. */
  {
    LagWatchReport *copy = g_boxed_copy (LAGWATCH_TYPE_REPORT, f.spin_report);

    g_assert_true (copy == f.spin_report);
    g_boxed_free (LAGWATCH_TYPE_REPORT, copy);
  }

  lagwatch_monitor_detach (monitor);
  g_assert_false (lagwatch_monitor_get_attached (monitor));
  g_assert_false (lagwatch_is_attached (f.watched));
  g_main_context_pop_thread_default (f.reports_on);
  g_ptr_array_unref (f.reports);
  g_main_context_unref (f.watched);
  g_main_context_unref (f.reports_on);
}

#ifndef LW_TEST_NO_LIBDW
/* The lag of /gobject/frame/fields: LAG_MS of CPU in a function the
 * compiler inlines into its caller, a logical frame from debug info. */
static inline __attribute__ ((always_inline)) void
spin_inlined (int ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

static LAGGY gboolean
spin_with_inlined_call (gpointer data)
{
  spin_inlined (LAG_MS);
  __asm__ volatile ("" ::: "memory");  /* no tail call: this frame stays in the stack */
  return G_SOURCE_REMOVE;
}

/* ::report: this test's thread. Keeps the report of the lag under test. */
static void
on_frame_report (LagWatchMonitor *monitor, LagWatchReport *report, gpointer data)
{
  LagWatchReport **found = data;

  if (*found == NULL && harness_stack_has (report, "spin_with_inlined_call", NULL))
    *found = lagwatch_report_ref (report);
}
#endif

/* A frame copied out for GObject Introspection carries what the C API
 * says of it: language, inlined, the program's; here on a real report
 * whose stack has an inlined call. */
static void
test_frame_fields (void)
{
#ifdef LW_TEST_NO_LIBDW
  g_test_skip ("built with -Dlibdw=disabled: no inlined frames");
#else
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(LagWatchMonitor) monitor = NULL;
  LagWatchReport *report = NULL;
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US;
  GSource *source;
  GSource *timeout;
  int inlined = -1, caller = -1;

  g_main_context_push_thread_default (context);
  lagwatch_config_set_threshold_ms (config, 50);
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  monitor = lagwatch_monitor_new (context, config, &error);
  g_assert_no_error (error);
  g_signal_connect (monitor, "report", G_CALLBACK (on_frame_report), &report);
  source = g_timeout_source_new (1);
  g_source_set_callback (source, spin_with_inlined_call, NULL, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
  /* The deadline wakes the wait even when no report comes. */
  timeout = g_timeout_source_new ((HARNESS_DEADLINE_US + G_USEC_PER_SEC) / 1000);
  g_source_set_callback (timeout, wake_lag_thread, NULL, NULL);
  g_source_attach (timeout, context);
  while (report == NULL && g_get_monotonic_time () < deadline)
    g_main_context_iteration (context, TRUE);
  g_source_destroy (timeout);
  g_source_unref (timeout);
  g_assert_nonnull (report);

  for (guint i = 0; i < lagwatch_report_get_n_frames (report); i++)
    {
      g_autoptr(LagWatchFrame) frame = lagwatch_report_get_frame_info (report, i);

      g_assert_cmpstr (frame->language, ==, lagwatch_report_get_frame_language (report, i));
      g_assert_cmpint (frame->inlined, ==, lagwatch_report_get_frame_inlined (report, i));
      g_assert_cmpint (frame->is_program, ==, lagwatch_report_get_frame_is_program (report, i));
      if (g_strcmp0 (frame->symbol, "spin_inlined") == 0 && inlined < 0)
        inlined = (int) i;
      if (g_strcmp0 (frame->symbol, "spin_with_inlined_call") == 0 && caller < 0)
        caller = (int) i;
    }
  g_assert_cmpint (inlined, >=, 0);
  g_assert_cmpint (caller, ==, inlined + 1);
  {
    g_autoptr(LagWatchFrame) frame = lagwatch_report_get_frame_info (report, (guint) inlined);
    g_autoptr(LagWatchFrame) outer = lagwatch_report_get_frame_info (report, (guint) caller);
    LagWatchFrame *copy = g_boxed_copy (LAGWATCH_TYPE_FRAME, frame);

    g_assert_cmpstr (frame->language, ==, "native");
    g_assert_true (frame->inlined);
    g_assert_true (frame->is_program);
    g_assert_false (outer->inlined);
    g_assert_true (outer->is_program);
    g_assert_cmpuint (outer->ip, ==, frame->ip);
    /* The copy owns its own strings. */
    g_assert_cmpstr (copy->language, ==, "native");
    g_assert_true (copy->language != frame->language);
    g_assert_true (copy->inlined && copy->is_program);
    g_boxed_free (LAGWATCH_TYPE_FRAME, copy);
  }
  lagwatch_report_unref (report);
  lagwatch_monitor_detach (monitor);
  g_main_context_pop_thread_default (context);
#endif
}

static void
test_errors (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(LagWatchMonitor) first = NULL;
  g_autoptr(LagWatchMonitor) second = NULL;

  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  first = lagwatch_monitor_new (context, config, &error);
  g_assert_no_error (error);
  second = lagwatch_monitor_new (context, config, &error);
  g_assert_null (second);
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_ALREADY_WATCHED);
}

/* A LagWatchMonitor exists only attached: its type is abstract (so that
 * `LagWatch.Monitor()` fails in Python and GJS), lagwatch_monitor_new()
 * makes an instance of it, and its threshold is a read-only property. */
static void
test_monitor_abstract (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(LagWatchMonitor) monitor = NULL;
  GParamSpec *pspec;

  g_assert_true (G_TYPE_IS_ABSTRACT (LAGWATCH_TYPE_MONITOR));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  monitor = lagwatch_monitor_new (context, config, &error);
  g_assert_no_error (error);
  g_assert_true (LAGWATCH_IS_MONITOR (monitor));
  g_assert_true (G_TYPE_CHECK_INSTANCE_TYPE (monitor, LAGWATCH_TYPE_MONITOR));
  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (monitor), "threshold-ms");
  g_assert_nonnull (pspec);
  g_assert_false (pspec->flags & G_PARAM_WRITABLE);
}

/* ::notify: counts the threshold's notifications. */
static void
on_notify (GObject *object, GParamSpec *pspec, gpointer data)
{
  guint *count = data;

  (*count)++;
}

/* The threshold changes through a setter that fails with a GError; the
 * C setter of before still answers TRUE or FALSE. */
static void
test_monitor_threshold_errors (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(LagWatchMonitor) monitor = NULL;
  guint notified = 0;

  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  monitor = lagwatch_monitor_new (context, config, &error);
  g_assert_no_error (error);
  g_signal_connect (monitor, "notify::threshold-ms", G_CALLBACK (on_notify), &notified);
  g_assert_false (lagwatch_monitor_try_set_threshold_ms (monitor, 0, &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (lagwatch_monitor_try_set_threshold_ms (monitor, 3600001, &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_cmpuint (lagwatch_monitor_get_threshold_ms (monitor), ==, 100);
  g_assert_cmpuint (notified, ==, 0);
  g_assert_true (lagwatch_monitor_try_set_threshold_ms (monitor, 150, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (lagwatch_monitor_get_threshold_ms (monitor), ==, 150);
  g_assert_cmpuint (notified, ==, 1);
  g_assert_false (lagwatch_monitor_set_threshold_ms (monitor, 0));
  g_assert_true (lagwatch_monitor_set_threshold_ms (monitor, 200));
  g_assert_cmpuint (notified, ==, 2);
  lagwatch_monitor_detach (monitor);
  g_assert_false (lagwatch_monitor_try_set_threshold_ms (monitor, 150, &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_DETACHED);
}

/* The try setters: a value out of range is a GError of LAGWATCH_ERROR,
 * an accepted one TRUE; the signal by name as LAGWATCH_SIGNAL names it. */
static void
test_config_try_setters (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  struct { gboolean (*set) (LagWatchConfig *, guint, GError **); guint bad, good; } uints[] = {
    { lagwatch_config_try_set_threshold_ms, 0, 50 },
    { lagwatch_config_try_set_threshold_ms, 3600001, 3600000 },
    { lagwatch_config_try_set_hang_ms, 0, 1000 },
    { lagwatch_config_try_set_sample_ms, 1001, 5 },
    { lagwatch_config_try_set_max_frames, 1025, 64 },
  };
  const char *bad_signals[] = { "SIGRTMIN+99", "SIGRTMAX-99", "SIGUSR1", "SIGRTMIN-1", "", "9", "RTMIN+x" };
  const char *good_signals[] = { "SIGRTMIN+3", "SIGRTMAX-2", "RTMIN", "SIGRTMAX" };

  for (guint i = 0; i < G_N_ELEMENTS (uints); i++)
    {
      g_assert_false (uints[i].set (config, uints[i].bad, &error));
      g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID);
      g_assert_nonnull (strstr (error->message, "out of range"));
      g_clear_error (&error);
      g_assert_true (uints[i].set (config, uints[i].good, &error));
      g_assert_no_error (error);
    }
  g_assert_false (lagwatch_config_try_set_state_dir (config, "relative/dir", &error));
  g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_true (lagwatch_config_try_set_state_dir (config, "/tmp", &error));
  g_assert_true (lagwatch_config_try_set_state_dir (config, NULL, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (bad_signals); i++)
    {
      g_assert_false (lagwatch_config_try_set_signal (config, bad_signals[i], &error));
      g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID);
      g_clear_error (&error);
    }
  for (guint i = 0; i < G_N_ELEMENTS (good_signals); i++)
    {
      g_assert_true (lagwatch_config_try_set_signal (config, good_signals[i], &error));
      g_assert_no_error (error);
    }
}

/* A JSON path given in code that cannot be opened is named as the
 * program's, not as LAGWATCH_OUTPUT's; one given in the environment is
 * named as LAGWATCH_OUTPUT's. */
static void
test_output_origin (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GMainContext) context = g_main_context_new ();
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      g_autoptr(GError) error = NULL;
      g_autoptr(LagWatchMonitor) monitor = NULL;

      g_assert_true (lagwatch_config_set_output (config, "json:/nonexistent/lagwatch-test.jsonl", NULL));
      monitor = lagwatch_monitor_new (context, config, &error);
      g_assert_no_error (error);
      lagwatch_monitor_detach (monitor);
      return;
    }
  g_unsetenv ("LAGWATCH_OUTPUT");
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: the output set in code (lagwatch_config_set_output): cannot open "
                             "\"/nonexistent/lagwatch-test.jsonl\"*");
  g_test_trap_assert_stderr_unmatched ("*LAGWATCH_OUTPUT*");

  g_setenv ("LAGWATCH_OUTPUT", "json:/nonexistent/lagwatch-test-env.jsonl", TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv ("LAGWATCH_OUTPUT");
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: LAGWATCH_OUTPUT: cannot open \"/nonexistent/lagwatch-test-env.jsonl\"*");
  g_test_trap_assert_stderr_unmatched ("*set in code*");
}

/* Under LAGWATCH_DISABLE=1 attaching fails with DISABLED, quietly. */
static void
test_disabled (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GMainContext) context = g_main_context_new ();
      g_autoptr(GError) error = NULL;
      g_autoptr(LagWatchMonitor) monitor = NULL;

      g_setenv ("LAGWATCH_DISABLE", "1", TRUE);
      monitor = lagwatch_monitor_new (context, NULL, &error);
      g_assert_null (monitor);
      g_assert_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_DISABLED);
      g_assert_null (lagwatch_attach (context));
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gobject/monitor/report-on-the-creators-context", test_report_on_the_creators_context);
  g_test_add_func ("/gobject/frame/fields", test_frame_fields);
  g_test_add_func ("/gobject/monitor/errors", test_errors);
  g_test_add_func ("/gobject/monitor/disabled", test_disabled);
  g_test_add_func ("/gobject/monitor/abstract", test_monitor_abstract);
  g_test_add_func ("/gobject/monitor/threshold-errors", test_monitor_threshold_errors);
  g_test_add_func ("/gobject/config/try-setters", test_config_try_setters);
  g_test_add_func ("/gobject/config/output-origin", test_output_origin);
  return g_test_run ();
}
