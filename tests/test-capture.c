/* test-capture.c: a capture request on a machine too loaded to run its thread
 *
 * A signal sent to a thread that is runnable but waits for a CPU stays
 * queued until the thread gets one. Giving such a request up after the
 * usual timeout left its signal queued, and every later capture of the
 * same thread found it there and sent nothing ("an earlier signal is
 * still queued"): the lag got no stack at all. The request must be kept
 * until the thread runs, or until the caller ends it.
 *
 * The loaded machine is made on purpose: the target thread runs at
 * SCHED_IDLE on the same single CPU as the test's thread, which keeps that
 * CPU busy while it looks (a SCHED_IDLE thread gets a CPU that a normal
 * thread wants only about once a second). Each case runs in a subprocess.
 */
#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-watcher.h"

#define CHILD_TIMEOUT_US (90 * G_USEC_PER_SEC)
/* How long the test sleeps at most for the thread to get a CPU. */
#define LONG_WAIT_NS     ((int64_t) 10 * 1000 * LW_NSEC_PER_MSEC)

typedef struct
{
  cpu_set_t     cpu;
  _Atomic pid_t tid;      /* set once the thread runs at SCHED_IDLE */
  _Atomic int   refused;  /* SCHED_IDLE was refused (errno) */
  _Atomic int   stop;
} Starved;

/* The starved thread: pinned to the test's CPU, at SCHED_IDLE, always
 * runnable. */
static gpointer
starved_spin (gpointer data)
{
  Starved *starved = data;
  struct sched_param param = { 0 };

  if (sched_setaffinity (0, sizeof starved->cpu, &starved->cpu) != 0
      || sched_setscheduler (0, SCHED_IDLE, &param) != 0)
    {
      atomic_store (&starved->refused, errno);
      return NULL;
    }
  atomic_store (&starved->tid, gettid ());
  while (!atomic_load (&starved->stop))
    ;
  return NULL;
}

/* Test thread: keeps its CPU for @ns without a system call that sleeps. */
static void
hold_cpu (int64_t ns)
{
  int64_t until = lw_clock_now_ns () + ns;

  while (lw_clock_now_ns () < until)
    ;
}

/* A signal out to a thread that waits for a CPU, past the give-up time:
 * the request stays PENDING (not TIMEOUT), and the stack comes as soon as
 * the thread runs. Asked to give up (give-up time 0), it is given up. */
static void
test_waits_for_cpu (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      GMainContext *context = g_main_context_new ();
      LwSnapshot *snap = lw_snapshot_new (64 * 1024);
      Starved starved = { 0 };
      cpu_set_t allowed;
      gboolean seen_waiting = FALSE;
      GThread *thread;
      LagWatch *watch;
      gint64 deadline;
      int cpu = 0;

      g_assert_cmpint (sched_getaffinity (0, sizeof allowed, &allowed), ==, 0);
      while (!CPU_ISSET (cpu, &allowed))
        cpu++;
      CPU_ZERO (&starved.cpu);
      CPU_SET (cpu, &starved.cpu);
      g_assert_cmpint (sched_setaffinity (0, sizeof starved.cpu, &starved.cpu), ==, 0);

      lagwatch_config_set_output (config, "none", NULL);
      watch = lagwatch_attach_with_config (context, config);
      g_assert_nonnull (watch);
      lagwatch_pause (watch);  /* its capture slot is ours */

      thread = g_thread_new ("starved", starved_spin, &starved);
      deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
      while (atomic_load (&starved.tid) == 0 && atomic_load (&starved.refused) == 0)
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (1000);
        }
      if (atomic_load (&starved.refused) != 0)
        {
          g_test_skip_printf ("SCHED_IDLE refused: %s", g_strerror (atomic_load (&starved.refused)));
          g_thread_join (thread);
          lagwatch_detach (watch);
          g_main_context_unref (context);
          lw_snapshot_free (snap);
          return;
        }

      /* The thread may get the CPU now and then anyway: tried until one
       * request found it waiting. */
      while (!seen_waiting)
        {
          LwCaptureResult result;

          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_assert_cmpint (lw_capture_start (watch->slot, starved.tid, 0, 0, 0, snap), ==,
                           LW_CAPTURE_PENDING);
          hold_cpu (5 * LW_NSEC_PER_MSEC);
          result = lw_capture_finish (watch->slot, 0, LW_NSEC_PER_MSEC);
          if (result == LW_CAPTURE_PENDING)
            seen_waiting = TRUE;
          else
            g_assert_cmpint (result, ==, LW_CAPTURE_OK);  /* it ran: not TIMEOUT */
          if (seen_waiting)
            {
              /* Sleeping here gives it the CPU: its handler answers. */
              g_assert_cmpint (lw_capture_finish (watch->slot, LONG_WAIT_NS, LW_NSEC_PER_MSEC),
                               ==, LW_CAPTURE_OK);
            }
          g_assert_true (snap->via_signal);
        }

      /* Asked to give up, the request is given up: TIMEOUT, or OK if the
       * thread ran meanwhile. Then its next capture works. */
      g_assert_cmpint (lw_capture_start (watch->slot, starved.tid, 0, 0, 0, snap), ==, LW_CAPTURE_PENDING);
      hold_cpu (5 * LW_NSEC_PER_MSEC);
      {
        LwCaptureResult result = lw_capture_finish (watch->slot, 0, 0);

        g_assert_true (result == LW_CAPTURE_TIMEOUT || result == LW_CAPTURE_OK);
      }
      deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
      for (;;)
        {
          LwCaptureResult result = lw_capture_take_thread (watch->slot, starved.tid, 0, 0, 0, snap,
                                                           LONG_WAIT_NS);

          if (result == LW_CAPTURE_OK)
            break;
          /* The given-up signal is still queued until the thread runs. */
          g_assert_cmpint (result, ==, LW_CAPTURE_IN_FLIGHT);
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (10 * 1000);  /* the CPU to the thread */
        }

      atomic_store (&starved.stop, 1);
      g_thread_join (thread);
      lagwatch_detach (watch);
      g_main_context_unref (context);
      lw_snapshot_free (snap);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/capture/waits-for-cpu", test_waits_for_cpu);

  return g_test_run ();
}
