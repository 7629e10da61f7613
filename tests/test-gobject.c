/* test-gobject.c: the GObject face (lagwatch-gobject.h) from C
 *
 * The monitor emits ::report on the main context chosen at its creation,
 * never on lagwatch's threads nor on the watched context; attach errors
 * come back as GErrors of LAGWATCH_ERROR; frames copy out as boxed structs.
 */
#include <glib.h>

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
  return g_test_run ();
}
