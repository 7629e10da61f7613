/* test-trace.c: liblagwatch-trace, the exact call tree of a lag
 *
 * Built with -finstrument-functions (its own functions only: the harness
 * header is excluded) and linked with liblagwatch-trace, as a program that
 * uses the tracer is. A lag runs a known sequence of calls, a() 40 ms, b()
 * 120 ms calling c() 100 ms, a() 30 ms, after a warm-up that lasts until
 * the lag is caught; the report's tree must show them in order, nested,
 * with the durations the functions measured themselves within 1 ms.
 * Functions spin on the thread's CPU clock: a loaded machine makes them
 * longer in wall time, never shorter, and the comparison is with their own
 * wall-clock measurement.
 */
#include <glib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lag-harness.h"
#include "lagwatch-trace.h"
#include "lw-report.h"
#include "lw-tracing.h"
#include "trace/lw-trace-abi.h"

#define THRESHOLD_MS 20
#define NI __attribute__ ((no_instrument_function))
#define TRACED __attribute__ ((noipa))

/* When a traced function began and ended, by its own clock reads. */
typedef struct
{
  int64_t start_ns;
  int64_t end_ns;
} Span;

static Span span_a1, span_b, span_c, span_a2;
static Span *next_a = &span_a1;

NI static int64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

NI static int64_t
cpu_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* @ms of the thread's CPU time, calling nothing instrumented. */
NI static void
spin_cpu (int ms)
{
  int64_t end = cpu_ns () + ms * G_GINT64_CONSTANT (1000000);

  while (cpu_ns () < end)
    ;
}

static volatile int marker_calls;

TRACED static void
marker (void)
{
  marker_calls++;
}

TRACED static void
c (void)
{
  span_c.start_ns = now_ns ();
  spin_cpu (100);
  span_c.end_ns = now_ns ();
}

TRACED static void
b (void)
{
  span_b.start_ns = now_ns ();
  spin_cpu (10);
  c ();
  spin_cpu (10);
  span_b.end_ns = now_ns ();
}

TRACED static void
a (int ms)
{
  Span *span = next_a;

  next_a = &span_a2;
  span->start_ns = now_ns ();
  spin_cpu (ms);
  span->end_ns = now_ns ();
}

/* The lag. Calls made before it is caught (marker) are not recorded. */
TRACED static void
lag_sequence (gpointer data)
{
  int64_t deadline = now_ns () + 60 * G_GINT64_CONSTANT (1000000000);

  for (int i = 0; i < 100; i++)
    marker ();
  /* Warm-up: 60 ms, and on until the watcher caught the lag, however late
   * a loaded machine lets it run. */
  spin_cpu (60);
  while (!lagwatch_trace_recording ())
    {
      g_assert_cmpint (now_ns (), <, deadline);
      spin_cpu (1);
    }
  a (40);
  b ();
  a (30);
}

NI static const LwCall *
child (const LwCall *call, guint i)
{
  g_assert_nonnull (call->children);
  g_assert_cmpuint (i, <, call->children->len);
  return g_ptr_array_index (call->children, i);
}

NI static guint
n_children (const LwCall *call)
{
  return call->children != NULL ? call->children->len : 0;
}

/* How far a call's times may lie from the function's own: 1 ms, and the
 * time the loop thread waited for a CPU during the lag (a thread preempted
 * between the trace's stamp and the function's own moves them apart by
 * that long). Set by test_lag_sequence(). */
static int64_t slack_ns = 1000000;

/* @call is the function @name and lasted as long as @span said, within
 * slack_ns. */
NI static void
assert_call (const LwCall *call, const char *name, const Span *span)
{
  g_assert_cmpstr (call->name, ==, name);
  g_assert_cmpint (call->duration_ns, >=, span->end_ns - span->start_ns);
  g_assert_cmpint (call->duration_ns, <, span->end_ns - span->start_ns + slack_ns);
}

/* @later began @gap_ns after @earlier, within slack_ns. */
NI static void
assert_gap (const LwCall *earlier, const LwCall *later, int64_t gap_ns)
{
  int64_t tree_gap = later->start_ns - earlier->start_ns;

  g_assert_cmpint (tree_gap, >, gap_ns - slack_ns);
  g_assert_cmpint (tree_gap, <, gap_ns + slack_ns);
}

/* The tree in the test's log, one call a line. */
NI static void
log_tree (const LwCall *call, int depth)
{
  g_test_message ("%*s%s  +%.3f ms  %.3f ms", depth * 2, "", call->name ? call->name : "(lag)",
                  (double) call->start_ns / 1e6, (double) call->duration_ns / 1e6);
  for (guint i = 0; i < n_children (call); i++)
    log_tree (child (call, i), depth + 1);
}

NI static gboolean
tree_has (const LwCall *call, const char *name)
{
  if (g_strcmp0 (call->name, name) == 0)
    return TRUE;
  for (guint i = 0; i < n_children (call); i++)
    if (tree_has (child (call, i), name))
      return TRUE;
  return FALSE;
}

NI static void
test_lag_sequence (void)
{
  double waited_ms;
  Harness h;
  LagWatchReport *report;
  const LwCall *root, *sequence, *a1, *bc, *a2, *cc;

  harness_init (&h, THRESHOLD_MS);
  /* A busy period below the threshold: calls there are never recorded. */
  harness_run_lag (&h, (HarnessLagFunc) marker, NULL);
  waited_ms = thread_wait_ms (gettid ());
  harness_run_lag (&h, lag_sequence, NULL);
  if (waited_ms >= 0)
    slack_ns += (int64_t) ((thread_wait_ms (gettid ()) - waited_ms) * 1e6);
  g_test_message ("slack %.3f ms (the loop thread's wait for a CPU during the lag, and 1 ms)", slack_ns / 1e6);
  harness_wait_reports (&h, 1);
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  g_assert_false (lagwatch_trace_recording ());
  report = harness_report (&h, 0);
  g_assert_true (report->calls_exact);
  root = report->calls;
  g_assert_nonnull (root);
  log_tree (root, 0);
  g_assert_null (root->name);
  g_assert_cmpint (root->start_ns, >=, THRESHOLD_MS * G_GINT64_CONSTANT (1000000));

  /* The call the lag was caught in: already running then, it starts at the
   * root's own start; it ended after the second a(). */
  g_assert_cmpuint (n_children (root), ==, 1);
  sequence = child (root, 0);
  g_assert_cmpstr (sequence->name, ==, "lag_sequence");
  g_assert_cmpint (sequence->start_ns, ==, root->start_ns);
  g_assert_cmpint (sequence->start_ns + sequence->duration_ns, >=,
                   child (sequence, n_children (sequence) - 1)->start_ns);

  g_assert_cmpuint (n_children (sequence), ==, 3);
  a1 = child (sequence, 0);
  bc = child (sequence, 1);
  a2 = child (sequence, 2);
  assert_call (a1, "a", &span_a1);
  assert_call (bc, "b", &span_b);
  assert_call (a2, "a", &span_a2);
  g_assert_cmpint (a1->start_ns, >, root->start_ns);
  g_assert_cmpuint (n_children (a1), ==, 0);
  g_assert_cmpuint (n_children (a2), ==, 0);
  g_assert_cmpuint (n_children (bc), ==, 1);
  cc = child (bc, 0);
  assert_call (cc, "c", &span_c);
  g_assert_cmpuint (n_children (cc), ==, 0);
  assert_gap (a1, bc, span_b.start_ns - span_a1.start_ns);
  assert_gap (bc, cc, span_c.start_ns - span_b.start_ns);
  assert_gap (a1, a2, span_a2.start_ns - span_a1.start_ns);
  /* At least the CPU time each was given. */
  g_assert_cmpint (a1->duration_ns, >=, 40 * G_GINT64_CONSTANT (1000000));
  g_assert_cmpint (bc->duration_ns, >=, 120 * G_GINT64_CONSTANT (1000000));
  g_assert_cmpint (cc->duration_ns, >=, 100 * G_GINT64_CONSTANT (1000000));
  g_assert_cmpint (a2->duration_ns, >=, 30 * G_GINT64_CONSTANT (1000000));

  g_assert_false (tree_has (root, "marker"));
  harness_clear (&h);
}

/* A buffer for @capacity events, not recording. */
NI static LwTraceBuffer *
buffer_new (guint64 capacity)
{
  LwTraceBuffer *buffer = g_malloc0 (sizeof (LwTraceBuffer) + capacity * sizeof (LwTraceEvent));

  buffer->capacity = capacity;
  return buffer;
}

/* The hooks record between start and stop only, and count what does not fit. */
NI static void
test_records_only_while_started (void)
{
  pid_t tid = (pid_t) syscall (SYS_gettid);
  g_autofree LwTraceBuffer *buffer = buffer_new (3);
  g_autofree LwTraceBuffer *other = buffer_new (1);

  marker ();  /* this thread is known to the tracer from its first call */
  g_assert_false (lagwatch_trace_recording ());
  g_assert_cmpint (lagwatch_trace_start_v1 (tid, buffer), ==, 0);
  g_assert_true (lagwatch_trace_recording ());
  /* One recording per thread at a time; unknown threads are refused. */
  g_assert_cmpint (lagwatch_trace_start_v1 (tid, other), ==, -1);
  g_assert_cmpint (lagwatch_trace_start_v1 (-1, other), ==, -1);
  marker ();
  g_assert_cmpuint (atomic_load (&buffer->claimed), ==, 2);
  g_assert_cmpuint (buffer->events[0].fn, ==, (uintptr_t) marker);
  g_assert_cmpint (buffer->events[0].stamp & LW_TRACE_STAMP_RETURN, ==, 0);
  g_assert_cmpuint (buffer->events[1].fn, ==, (uintptr_t) marker);
  g_assert_cmpint (buffer->events[1].stamp & LW_TRACE_STAMP_RETURN, ==, LW_TRACE_STAMP_RETURN);
  g_assert_cmpint (buffer->events[1].stamp / 2, >=, buffer->events[0].stamp / 2);
  marker ();
  /* Full after 3: the fourth is counted, not written. */
  g_assert_cmpuint (atomic_load (&buffer->claimed), ==, 4);
  g_assert_cmpuint (buffer->events[2].fn, ==, (uintptr_t) marker);
  lagwatch_trace_stop_v1 (tid, buffer);
  g_assert_false (lagwatch_trace_recording ());
  for (int i = 0; i < 1000; i++)
    marker ();
  g_assert_cmpuint (atomic_load (&buffer->claimed), ==, 4);
  g_assert_cmpuint (atomic_load (&other->claimed), ==, 0);
}

#define MS G_GINT64_CONSTANT (1000000)

/* A call (@ret FALSE) or return of @fn at @ms (CLOCK_MONOTONIC ms). */
NI static LwTraceEvent
event (uintptr_t fn, int64_t ms, gboolean ret)
{
  return (LwTraceEvent) { fn, ms * MS * 2 + (ret ? LW_TRACE_STAMP_RETURN : 0) };
}

/* The tree from events: calls open at the start adopt what ran inside
 * them; a return skipping calls (longjmp) closes them; events after the
 * end are ignored; calls open at the end close with it. Lag from 1000 ms,
 * caught at 1020 ms, ended at 1100 ms. */
NI static void
test_tree_from_events (void)
{
  const LwTraceEvent events[] = {
    event (0x10, 1021, FALSE), event (0x10, 1025, TRUE),  /* x() inside y() */
    event (0x20, 1030, TRUE),                             /* y(), open at 1020 */
    event (0x30, 1040, FALSE), event (0x40, 1041, FALSE), /* z() calls w() ... */
    event (0x30, 1050, TRUE),                             /* ... which never returns */
    event (0x50, 1060, FALSE),                            /* v(), open at the end */
    event (0x60, 1200, FALSE),                            /* after the end */
  };
  LwCall *root = lw_tracing_build (events, G_N_ELEMENTS (events), 1000 * MS, 1020 * MS, 1100 * MS, FALSE);
  const LwCall *y, *x, *z, *w, *v;

  g_assert_cmpint (root->start_ns, ==, 20 * MS);
  g_assert_cmpint (root->duration_ns, ==, 80 * MS);
  g_assert_cmpuint (n_children (root), ==, 3);
  y = child (root, 0);
  g_assert_cmpuint (y->ip, ==, 0x20);
  g_assert_cmpint (y->start_ns, ==, 20 * MS);
  g_assert_cmpint (y->duration_ns, ==, 10 * MS);
  g_assert_cmpuint (n_children (y), ==, 1);
  x = child (y, 0);
  g_assert_cmpuint (x->ip, ==, 0x10);
  g_assert_cmpint (x->start_ns, ==, 21 * MS);
  g_assert_cmpint (x->duration_ns, ==, 4 * MS);
  z = child (root, 1);
  g_assert_cmpuint (z->ip, ==, 0x30);
  g_assert_cmpint (z->duration_ns, ==, 10 * MS);
  w = child (z, 0);
  g_assert_cmpuint (w->ip, ==, 0x40);
  g_assert_cmpint (w->start_ns, ==, 41 * MS);
  g_assert_cmpint (w->duration_ns, ==, 9 * MS);
  v = child (root, 2);
  g_assert_cmpuint (v->ip, ==, 0x50);
  g_assert_cmpint (v->start_ns, ==, 60 * MS);
  g_assert_cmpint (v->duration_ns, ==, 40 * MS);
  lw_call_free (root);

  /* Overflowed: the tree stops at the last event kept. */
  root = lw_tracing_build (events, 4, 1000 * MS, 1020 * MS, 1100 * MS, TRUE);
  g_assert_cmpint (root->duration_ns, ==, 20 * MS);
  g_assert_cmpuint (n_children (root), ==, 2);
  z = child (root, 1);
  g_assert_cmpint (z->start_ns, ==, 40 * MS);
  g_assert_cmpint (z->duration_ns, ==, 0);
  lw_call_free (root);
}

NI int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/trace/records-only-while-started", test_records_only_while_started);
  g_test_add_func ("/trace/tree-from-events", test_tree_from_events);
  g_test_add_func ("/trace/lag-sequence", test_lag_sequence);
  return g_test_run ();
}
