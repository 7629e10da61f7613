/* test-lags.c: lags of every kind are caught, measured and named
 *
 * Each lag runs inside a dispatch of a real GMainContext with lagwatch
 * attached (threshold 100 ms). A reported lag must arrive exactly once, last
 * what the test measured around the lagging call (±15 ms), and its stack
 * must name the static function of this file that caused it. Lags that must
 * not be reported are followed by a marker lag that must be: the reports
 * arrive in order, so "no report" is checked without waiting for nothing.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "lag-harness.h"

#define THRESHOLD_MS  100
#define TOLERANCE_MS  15.0

static LAGGY void
sleep_in_usleep (gpointer data)
{
  int ret = usleep (GPOINTER_TO_UINT (data) * 1000);

  /* lagwatch must not cut the sleep short (usleep fails with EINTR when a
   * signal handler runs). */
  g_assert_cmpint (ret, ==, 0);
}

static LAGGY void
sleep_in_poll (gpointer data)
{
  int ret = poll (NULL, 0, GPOINTER_TO_INT (data));

  g_assert_cmpint (ret, ==, 0);
}

typedef struct
{
  GMutex   held;      /* held by the holder thread for hold_ms */
  GMutex   sync;      /* guards `locked` for the start-up handshake */
  GCond    cond;
  gboolean locked;
  guint    hold_ms;
} MutexHolder;

static gpointer
hold_mutex_thread (gpointer data)
{
  MutexHolder *holder = data;

  g_mutex_lock (&holder->held);
  g_mutex_lock (&holder->sync);
  holder->locked = TRUE;
  g_cond_signal (&holder->cond);
  g_mutex_unlock (&holder->sync);
  g_usleep (holder->hold_ms * 1000);  /* the holder's work, on its own thread */
  g_mutex_unlock (&holder->held);
  return NULL;
}

static LAGGY void
wait_for_mutex (MutexHolder *holder)
{
  g_mutex_lock (&holder->held);
  g_mutex_unlock (&holder->held);
}

static void
lock_held_mutex (gpointer data)
{
  MutexHolder *holder = data;
  GThread *thread;

  holder->locked = FALSE;
  thread = g_thread_new ("holder", hold_mutex_thread, holder);
  g_mutex_lock (&holder->sync);
  while (!holder->locked)
    g_cond_wait (&holder->cond, &holder->sync);
  g_mutex_unlock (&holder->sync);
  wait_for_mutex (holder);
  g_thread_join (thread);
}

static LAGGY int
recurse_then_spin (int depth, int ms)
{
  int below;

  if (depth <= 1)
    {
      spin_ms (GINT_TO_POINTER (ms));
      return 1;
    }
  below = recurse_then_spin (depth - 1, ms);
  /* Keeps the call a real call: GCC would otherwise turn the recursion
   * into a loop and leave one frame. */
  __asm__ volatile ("" ::: "memory");
  return below + 1;
}

static void
deep_recursion (gpointer data)
{
  g_assert_cmpint (recurse_then_spin (40, GPOINTER_TO_INT (data)), ==, 40);
}

static LAGGY int
compare_slowly (const void *a, const void *b)
{
  spin_ms (GINT_TO_POINTER (4));
  return *(const int *) a - *(const int *) b;
}

static LAGGY void
sort_slowly (gpointer data)
{
  int values[48];

  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    values[i] = (int) ((i * 7919) % G_N_ELEMENTS (values));
  qsort (values, G_N_ELEMENTS (values), sizeof values[0], compare_slowly);
  __asm__ volatile ("" ::: "memory");
}

/* Runs one lag and checks its single report. */
static LagWatchReport *
check_one_lag (Harness *h, HarnessLagFunc func, gpointer data, const char *culprit)
{
  guint before = harness_n_reports (h);
  gint64 measured_us = harness_run_lag (h, func, data);
  LagWatchReport *report;
  double duration;

  harness_wait_reports (h, before + 1);
  g_assert_cmpuint (harness_n_reports (h), ==, before + 1);
  report = harness_report (h, before);
  duration = lagwatch_report_get_duration_ms (report);
  g_test_message ("measured %.1f ms, reported %.1f ms", measured_us / 1000.0, duration);
  g_assert_cmpfloat_with_epsilon (duration, measured_us / 1000.0, TOLERANCE_MS);
  g_assert_cmpuint (lagwatch_report_get_threshold_ms (report), ==, THRESHOLD_MS);
  g_assert_true (lagwatch_report_get_complete (report));
  g_assert_cmpint (lagwatch_report_get_thread_id (report), ==, gettid ());
  if (!harness_stack_has (report, culprit, NULL))
    {
      g_autofree char *text = lagwatch_report_to_text (report);

      g_test_message ("%s", text);
      g_error ("the stack does not name %s", culprit);
    }
  return report;
}

static void
test_busy_150 (void)
{
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  check_one_lag (&h, spin_ms, GINT_TO_POINTER (150), "spin_ms");
  harness_clear (&h);
}

static void
test_busy_700 (void)
{
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  check_one_lag (&h, spin_ms, GINT_TO_POINTER (700), "spin_ms");
  harness_clear (&h);
}

/* The callback of the idle source below: a lag of 150 ms. */
static LAGGY gboolean
idle_spin_callback (gpointer data)
{
  gboolean *done = data;

  spin_ms (GINT_TO_POINTER (150));
  *done = TRUE;
  return G_SOURCE_REMOVE;
}

/* GLib (2.74 and later) names every idle source "GIdleSource", a child
 * watch "GChildWatchSource", a signal source "GUnixSignalSource: SIGxxx":
 * not names the program gave. Such a source's lag is described by its
 * callback, as an unnamed source's, with "source" null. */
static void
test_idle_default_name (void)
{
  Harness h;
  GSource *idle = g_idle_source_new ();
  gboolean done = FALSE;
  LagWatchReport *report;
  g_autofree char *json = NULL;
  g_autoptr(JsonNode) root = NULL;
  JsonObject *object;

  harness_init (&h, THRESHOLD_MS);
  g_test_message ("GLib named the idle source \"%s\"", g_source_get_name (idle));
  g_source_set_callback (idle, idle_spin_callback, &done, NULL);
  g_source_attach (idle, h.context);
  g_source_unref (idle);
  while (!done)
    g_main_context_iteration (h.context, TRUE);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  json = lagwatch_report_to_json (report);
  root = json_from_string (json, NULL);
  g_assert_nonnull (root);
  object = json_node_get_object (root);
  g_test_message ("source %s, source_callback %s (%s)",
                  json_object_get_string_member_with_default (object, "source", "null"),
                  json_object_get_string_member_with_default (object, "source_callback", "(none)"),
                  json_object_get_string_member_with_default (object, "source_callback_kind", "(none)"));
  g_assert_null (lagwatch_report_get_source (report));
  g_assert_true (json_object_get_null_member (object, "source"));
  g_assert_cmpstr (json_object_get_string_member_with_default (object, "source_callback", NULL), ==,
                   "idle_spin_callback");
  g_assert_cmpstr (json_object_get_string_member_with_default (object, "source_callback_kind", NULL), ==,
                   "g_idle_add");
  harness_clear (&h);
}

static void
test_usleep_250 (void)
{
  Harness h;
  LagWatchReport *report;

  harness_init (&h, THRESHOLD_MS);
  report = check_one_lag (&h, sleep_in_usleep, GINT_TO_POINTER (250), "sleep_in_usleep");
  /* A sleeping thread is read from /proc: no signal, so no EINTR. */
  g_assert_true (harness_stack_has (report, "usleep", NULL));
  harness_clear (&h);
}

static void
test_poll_200 (void)
{
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  check_one_lag (&h, sleep_in_poll, GINT_TO_POINTER (200), "sleep_in_poll");
  harness_clear (&h);
}

static void
test_mutex_180 (void)
{
  Harness h;
  MutexHolder holder = { .hold_ms = 180 };

  g_mutex_init (&holder.held);
  g_mutex_init (&holder.sync);
  g_cond_init (&holder.cond);
  harness_init (&h, THRESHOLD_MS);
  check_one_lag (&h, lock_held_mutex, &holder, "wait_for_mutex");
  harness_clear (&h);
  g_mutex_clear (&holder.held);
  g_mutex_clear (&holder.sync);
  g_cond_clear (&holder.cond);
}

static void
test_deep_300 (void)
{
  Harness h;
  LagWatchReport *report;
  guint depth;

  harness_init (&h, THRESHOLD_MS);
  report = check_one_lag (&h, deep_recursion, GINT_TO_POINTER (300), "recurse_then_spin");
  harness_stack_has (report, "recurse_then_spin", &depth);
  g_assert_cmpuint (depth, ==, 40);
  g_assert_true (harness_stack_has (report, "deep_recursion", NULL));
  harness_clear (&h);
}

/* A frame of @report whose symbol starts with @prefix, or -1. */
static int
frame_with_prefix (LagWatchReport *report, const char *prefix)
{
  for (guint i = 0; i < lagwatch_report_get_n_frames (report); i++)
    {
      const char *name = NULL;

      lagwatch_report_get_frame (report, i, NULL, NULL, NULL, &name, NULL);
      if (name != NULL && g_str_has_prefix (name, prefix))
        return (int) i;
    }
  return -1;
}

/* One stack names the comparator (static, in this executable),
 * msort_with_tmp (static in libc: only libc6-dbg's debug file has it), the
 * qsort frame (glibc 2.36's qsort is a tail jump into qsort_r, so the frame
 * on the stack is qsort_r's) and GLib's dispatch, and every frame
 * carries its build-id and module offset. */
static void
test_qsort_stack (void)
{
  Harness h;
  LagWatchReport *report;
  int comparator, sort, dispatch;

  harness_init (&h, THRESHOLD_MS);
  report = check_one_lag (&h, sort_slowly, NULL, "compare_slowly");
  comparator = frame_with_prefix (report, "compare_slowly");
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer replaces qsort_r with its own interceptor and
   * comparator wrapper: glibc's sorting frames are not on this stack. The
   * interceptor is __interceptor_qsort up to gcc 13's runtime,
   * ___interceptor_qsort from gcc 14's. */
  sort = frame_with_prefix (report, "__interceptor_qsort");
  if (sort < 0)
    sort = frame_with_prefix (report, "___interceptor_qsort");
#else
  sort = frame_with_prefix (report, "qsort");
#endif
  /* GLib 2.77 and later dispatch in static functions: without GLib's
   * debug file, lagwatch names the frame by its address. */
  dispatch = frame_with_prefix (report, "g_main_context_dispatch");
  if (dispatch < 0)
    dispatch = frame_with_prefix (report, "g_main_dispatch");
  g_assert_cmpint (comparator, >=, 0);
  g_assert_cmpint (sort, >, comparator);
  g_assert_cmpint (dispatch, >, sort);
#if !defined(__SANITIZE_ADDRESS__)
  int msort = frame_with_prefix (report, "msort_with_tmp");

  if (g_file_test ("/usr/lib/debug/.build-id", G_FILE_TEST_IS_DIR))
    {
      g_assert_cmpint (msort, >, comparator);
      g_assert_cmpint (msort, <, sort);
    }
  else
    g_test_message ("no /usr/lib/debug (libc6-dbg): msort_with_tmp cannot be named");
#endif
  for (guint i = 0; i < lagwatch_report_get_n_frames (report); i++)
    {
      const char *module = NULL, *build_id = NULL;
      guint64 offset = 0;

      lagwatch_report_get_frame (report, i, &module, &build_id, &offset, NULL, NULL);
      g_assert_nonnull (module);
      g_assert_nonnull (build_id);
      g_assert_cmpuint (offset, >, 0);
    }
  harness_clear (&h);
}

static void
test_short_lags_not_reported (void)
{
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (40));
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (80));
  check_one_lag (&h, spin_ms, GINT_TO_POINTER (150), "spin_ms");
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  harness_clear (&h);
}

static gboolean
quit_nested (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

/* A modal-dialog-like nested loop: it sits in poll, so it is not a lag. */
static LAGGY void
run_nested_loop (gpointer data)
{
  GMainContext *context = g_main_context_get_thread_default ();
  GMainLoop *nested = g_main_loop_new (context, FALSE);
  GSource *timeout = g_timeout_source_new (GPOINTER_TO_UINT (data));

  g_source_set_callback (timeout, quit_nested, nested, NULL);
  g_source_attach (timeout, context);
  g_source_unref (timeout);
  g_main_loop_run (nested);
  g_main_loop_unref (nested);
}

static void
test_nested_loop_not_reported (void)
{
  Harness h;
  gint64 measured_us;

  harness_init (&h, THRESHOLD_MS);
  measured_us = harness_run_lag (&h, run_nested_loop, GINT_TO_POINTER (600));
  g_assert_cmpint (measured_us, >=, 600 * 1000);
  check_one_lag (&h, spin_ms, GINT_TO_POINTER (150), "spin_ms");
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  harness_clear (&h);
}

/* Work that stops inside a nested loop: the busy time before the nested
 * loop polls is one lag, the nested loop's idle time (300 ms) is none.
 * @data: a gint64 where the time from the start to the nested loop's run
 * is stored, in µs. The nested loop is no tail call: this frame stays
 * below it, so that every sample of the lag names this function, those
 * taken while the nested loop is set up too (a sample sent late, on a
 * loaded machine, lands there). */
static LAGGY void
spin_then_nested_loop (gpointer data)
{
  gint64 start = g_get_monotonic_time ();

  spin_ms (GINT_TO_POINTER (150));
  *(gint64 *) data = g_get_monotonic_time () - start;
  run_nested_loop (GINT_TO_POINTER (300));
  __asm__ volatile ("" ::: "memory");
}

static void
test_lag_ends_at_nested_poll (void)
{
  Harness h;
  LagWatchReport *report;
  gint64 busy_us = 0;
  double duration;

  harness_init (&h, THRESHOLD_MS);
  harness_run_lag (&h, spin_then_nested_loop, &busy_us);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  duration = lagwatch_report_get_duration_ms (report);
  g_test_message ("busy %.1f ms before the nested loop ran, lag %.1f ms", busy_us / 1000.0, duration);
  /* At least the busy time; far less than busy plus the nested loop's
   * 300 ms of idle. (Between the two, a loaded machine may keep the thread
   * off the CPU before the nested loop polls: that is still the lag.) */
  g_assert_cmpfloat (duration, >=, busy_us / 1000.0 - TOLERANCE_MS);
  g_assert_cmpfloat (duration, <, busy_us / 1000.0 + 150.0);
  if (!harness_stack_has (report, "spin_then_nested_loop", NULL))
    {
      g_autofree char *text = lagwatch_report_to_text (report);

      g_test_message ("%s", text);
      g_error ("the stack does not name spin_then_nested_loop");
    }
  harness_clear (&h);
}

typedef struct
{
  LagWatch     *watch;
  _Atomic gint64 entered_us;
} DetachPlan;

static gpointer
detach_when_lag_is_old (gpointer data)
{
  DetachPlan *plan = data;

  /* Wait until the loop thread has spun for 250 ms (its own timestamp),
   * well past the 100 ms threshold, then detach from this other thread. */
  while (plan->entered_us == 0 || g_get_monotonic_time () - plan->entered_us < 250 * 1000)
    g_usleep (1000);
  lagwatch_detach (plan->watch);
  return NULL;
}

static LAGGY void
spin_while_detached (gpointer data)
{
  DetachPlan *plan = data;

  plan->entered_us = g_get_monotonic_time ();
  spin_ms (GINT_TO_POINTER (500));
  __asm__ volatile ("" ::: "memory");  /* not a tail call: keep this frame */
}

static void
test_detach_during_lag (void)
{
  Harness h;
  DetachPlan plan = { 0 };
  GThread *detacher;
  LagWatchReport *report;
  GPollFunc original;

  harness_init (&h, THRESHOLD_MS);
  original = g_poll;
  /* Wrapped, except where GLib polls g_poll's contexts with ppoll() (2.81
   * and later): lagwatch leaves the poll function alone there. */
  if (glib_check_version (2, 81, 0) == NULL)
    g_assert_true (g_main_context_get_poll_func (h.context) == original);
  else
    g_assert_true (g_main_context_get_poll_func (h.context) != original);
  plan.watch = h.watch;
  detacher = g_thread_new ("detacher", detach_when_lag_is_old, &plan);
  harness_run_lag (&h, spin_while_detached, &plan);
  g_thread_join (detacher);
  h.watch = NULL;

  /* Detach waited for the watcher, which reported the lag as incomplete. */
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  report = harness_report (&h, 0);
  g_assert_false (lagwatch_report_get_complete (report));
  g_assert_cmpfloat (lagwatch_report_get_duration_ms (report), >=, 250.0);
  g_assert_true (harness_stack_has (report, "spin_while_detached", NULL));
  g_assert_true (g_main_context_get_poll_func (h.context) == original);
  /* The loop keeps working without lagwatch. */
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (1));
  harness_clear (&h);
}

static LAGGY gboolean
spin_in_high_timeout (gpointer data)
{
  gboolean *done = data;

  spin_ms (GINT_TO_POINTER (300));
  *done = TRUE;
  __asm__ volatile ("" ::: "memory");  /* not a tail call: keep this frame */
  return G_SOURCE_REMOVE;
}

/* The name of the first outermost call of @report's call tree, or NULL. */
static char *
first_call_name (LagWatchReport *report)
{
  g_autofree char *json = lagwatch_report_to_json (report);
  g_autoptr(JsonNode) root = json_from_string (json, NULL);
  JsonObject *object = root != NULL ? json_node_get_object (root) : NULL;
  JsonArray *calls;

  if (object == NULL || !json_object_has_member (object, "calls"))
    return NULL;
  calls = json_object_get_array_member (object, "calls");
  if (json_array_get_length (calls) == 0)
    return NULL;
  return g_strdup (json_object_get_string_member (json_array_get_object_element (calls, 0), "name"));
}

/* A source of priority < 0 that turns ready after the poll (a timeout at
 * G_PRIORITY_HIGH, ready in GLib's check phase): its dispatch is a lag
 * like any other, whatever lagwatch stamps the poll with. Its call tree
 * starts at the callback, not at main() or _start: GLib's dispatch frame
 * is known even where GLib dispatches in static functions (2.77+). */
static void
test_high_priority_timeout (void)
{
  GSource *timeout = g_timeout_source_new (30);
  gboolean done = FALSE;
  g_autofree char *first_call = NULL;
  LagWatchReport *report;
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  g_source_set_priority (timeout, G_PRIORITY_HIGH);
  g_source_set_callback (timeout, spin_in_high_timeout, &done, NULL);
  g_source_attach (timeout, h.context);
  g_source_unref (timeout);
  while (!done)
    g_main_context_iteration (h.context, TRUE);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_cmpfloat (lagwatch_report_get_duration_ms (report), >=, 150.0);
  g_assert_true (harness_stack_has (report, "spin_in_high_timeout", NULL));
  first_call = first_call_name (report);
  g_assert_cmpstr (first_call, ==, "spin_in_high_timeout");
  harness_clear (&h);
}

static LAGGY void
spin_and_detach_self (gpointer data)
{
  Harness *h = data;

  spin_ms (GINT_TO_POINTER (200));
  lagwatch_detach (h->watch);
  h->watch = NULL;
  spin_ms (GINT_TO_POINTER (50));
}

static void
test_detach_from_lagging_thread (void)
{
  Harness h;
  LagWatchReport *report;

  harness_init (&h, THRESHOLD_MS);
  harness_run_lag (&h, spin_and_detach_self, &h);
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  report = harness_report (&h, 0);
  g_assert_false (lagwatch_report_get_complete (report));
  g_assert_true (harness_stack_has (report, "spin_and_detach_self", NULL));
  harness_clear (&h);
}

static void
on_report_detach (LagWatchReport *report, gpointer data)
{
  Harness *h = data;
  /* Read before the report is counted: the test clears h->watch as soon
   * as it sees the report. */
  LagWatch *watch = h->watch;

  harness_on_report (report, h);
  lagwatch_detach (watch);
}

static void
test_detach_from_report_callback (void)
{
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  lagwatch_set_report_func (h.watch, on_report_detach, &h, NULL);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
  harness_wait_reports (&h, 1);
  h.watch = NULL;
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  harness_clear (&h);
}

typedef struct
{
  Harness  *h;
  pthread_t self;
  void     *thread_pointer;
  pid_t     tid;
  guint     lag_ms;   /* 0: iterate once, no lag */
} LoopTurn;

/* Runs the harness's context on a thread of its own for one turn. */
static gpointer
run_context_turn (gpointer data)
{
  LoopTurn *turn = data;

  turn->self = pthread_self ();
  turn->thread_pointer = __builtin_thread_pointer ();
  turn->tid = gettid ();
  g_main_context_push_thread_default (turn->h->context);
  if (turn->lag_ms > 0)
    {
      harness_run_lag (turn->h, spin_ms, GUINT_TO_POINTER (turn->lag_ms));
      harness_wait_reports (turn->h, 1);
    }
  else
    harness_run_lag (turn->h, spin_ms, GUINT_TO_POINTER (1));
  g_main_context_pop_thread_default (turn->h->context);
  return NULL;
}

/* A thread runs the context and exits; glibc gives the next thread the
 * same thread block (same pthread_self, same thread pointer). The new
 * thread must be taken as the context's thread: its lag is reported with
 * its own TID. */
static void
test_thread_block_reused (void)
{
  Harness h;
  LoopTurn first = { &h, 0, NULL, 0, 0 };
  LoopTurn second = { &h, 0, NULL, 0, 150 };
  LagWatchReport *report;

  harness_init (&h, THRESHOLD_MS);
  /* The harness made the context this thread's: hand it over. */
  g_main_context_pop_thread_default (h.context);
  g_thread_join (g_thread_new ("first loop thread", run_context_turn, &first));
  g_thread_join (g_thread_new ("second loop thread", run_context_turn, &second));
  /* glibc caches the dead thread's stack and thread block: the case this
   * test is about. */
  g_assert_true (pthread_equal (first.self, second.self));
  g_assert_true (first.thread_pointer == second.thread_pointer);
  g_assert_cmpint (first.tid, !=, second.tid);
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  report = harness_report (&h, 0);
  g_assert_cmpint (lagwatch_report_get_thread_id (report), ==, second.tid);
  g_assert_true (harness_stack_has (report, "spin_ms", NULL));
  g_main_context_push_thread_default (h.context);
  harness_clear (&h);
}

static void
test_threshold_runtime_change (void)
{
  Harness h;

  harness_init (&h, THRESHOLD_MS);
  g_assert_true (lagwatch_set_threshold_ms (h.watch, 300));
  g_assert_cmpuint (lagwatch_get_threshold_ms (h.watch), ==, 300);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
  /* Back through poll before lowering the threshold: a lowered threshold
   * judges the busy period in progress, and this thread is out of poll. */
  g_main_context_iteration (h.context, FALSE);
  g_assert_true (lagwatch_set_threshold_ms (h.watch, THRESHOLD_MS));
  check_one_lag (&h, spin_ms, GINT_TO_POINTER (150), "spin_ms");
  g_assert_false (lagwatch_set_threshold_ms (h.watch, 0));
  harness_clear (&h);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/lag/busy-150ms", test_busy_150);
  g_test_add_func ("/lag/busy-700ms", test_busy_700);
  g_test_add_func ("/lag/usleep-250ms", test_usleep_250);
  g_test_add_func ("/lag/idle-default-name", test_idle_default_name);
  g_test_add_func ("/lag/poll-200ms", test_poll_200);
  g_test_add_func ("/lag/mutex-180ms", test_mutex_180);
  g_test_add_func ("/lag/deep-40-frames-300ms", test_deep_300);
  g_test_add_func ("/lag/qsort-stack", test_qsort_stack);
  g_test_add_func ("/lag/short-40-and-80ms-not-reported", test_short_lags_not_reported);
  g_test_add_func ("/lag/nested-loop-not-reported", test_nested_loop_not_reported);
  g_test_add_func ("/lag/ends-at-nested-poll", test_lag_ends_at_nested_poll);
  g_test_add_func ("/lag/threshold-runtime-change", test_threshold_runtime_change);
  g_test_add_func ("/lag/new-thread-in-reused-thread-block", test_thread_block_reused);
  g_test_add_func ("/lag/high-priority-timeout", test_high_priority_timeout);
  g_test_add_func ("/detach/during-lag-from-other-thread", test_detach_during_lag);
  g_test_add_func ("/detach/during-lag-from-lagging-thread", test_detach_from_lagging_thread);
  g_test_add_func ("/detach/from-report-callback", test_detach_from_report_callback);

  return g_test_run ();
}
