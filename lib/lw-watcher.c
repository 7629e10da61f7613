/* lw-watcher.c: the watcher thread */
#include "lw-watcher.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-report.h"
#include "lw-symbols.h"

/* How long a capture may wait for the signal handler. A thread that does not
 * run it by then blocks the signal or sleeps uninterruptibly. */
#define LW_CAPTURE_TIMEOUT_NS   (50 * LW_NSEC_PER_MSEC)
/* While following a lag, how often to check that the thread still exists. */
#define LW_LIVENESS_PERIOD_NS   (1000 * LW_NSEC_PER_MSEC)
/* Stack bytes copied per capture: deep GTK stacks fit, the copy stays short. */
#define LW_STACK_COPY_BYTES     (128 * 1024)

/* Watcher thread. Sleeps on the slot's semaphore until @deadline_ns (a
 * CLOCK_MONOTONIC time) or, when @deadline_ns < 0, until posted. */
static void
lw_watcher_sleep (LwSlot *slot, int64_t deadline_ns)
{
  if (deadline_ns < 0)
    {
      while (sem_wait (&slot->wake) != 0 && errno == EINTR)
        ;
      return;
    }
  struct timespec ts = lw_clock_timespec (deadline_ns);

  while (sem_clockwait (&slot->wake, CLOCK_MONOTONIC, &ts) != 0 && errno == EINTR)
    ;
}

/* Watcher thread. Sleeps with no timeout until the loop's seq moves away
 * from @seq (or the watch stops). @flags says which transitions wake us. */
static void
lw_watcher_park (LagWatch *watch, uint64_t seq, unsigned flags)
{
  LwSlot *slot = watch->slot;

  atomic_fetch_or (&slot->wake_flags, flags);
  if (atomic_load (&slot->seq) == seq && !atomic_load (&watch->stopping))
    lw_watcher_sleep (slot, -1);
  atomic_fetch_and (&slot->wake_flags, ~flags);
}

static char *
lw_watcher_thread_name (pid_t tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/comm", (int) tid);
  char *name = NULL;

  if (!g_file_get_contents (path, &name, NULL, NULL))
    return NULL;
  return g_strchomp (name);
}

static gboolean
lw_watcher_thread_exists (pid_t tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d", (int) tid);

  return g_file_test (path, G_FILE_TEST_EXISTS);
}

static const char *
lw_watcher_capture_error (LwCaptureResult result)
{
  switch (result)
    {
    case LW_CAPTURE_OK: return NULL;
    case LW_CAPTURE_STALE: return "the loop came back before the stack could be taken";
    case LW_CAPTURE_TIMEOUT: return "the thread did not answer the signal in time "
                                    "(signal blocked, or uninterruptible sleep)";
    case LW_CAPTURE_THREAD_GONE: return "the thread exited";
    case LW_CAPTURE_IN_FLIGHT: return "an earlier signal is still queued";
    case LW_CAPTURE_FAILED: return "no signal could be sent";
    }
  return "unknown";
}

/* Watcher thread. Hands @report to the sinks and the program's callback. */
static void
lw_watcher_deliver (LagWatch *watch, LagWatchReport *report)
{
  lw_sinks_write (watch->sinks, report);
  g_rec_mutex_lock (&watch->report_lock);
  if (watch->report_func != NULL)
    watch->report_func (report, watch->report_data);
  g_rec_mutex_unlock (&watch->report_lock);
}

/* Watcher thread. The loop has been in the busy period @busy_seq since
 * @since_ns for at least the threshold: take the stack now, wait for the
 * end, report. */
static void
lw_watcher_follow_lag (LagWatch *watch, uint64_t busy_seq, int64_t since_ns)
{
  LwSlot *slot = watch->slot;
  pid_t tid = atomic_load (&slot->loop_tid);
  guint threshold_ms = atomic_load (&watch->threshold_ms);
  LwCaptureResult result;
  LagWatchReport *report;
  int64_t caught_ns = -1, end_ns, now_ns;
  gint64 wall_us = g_get_real_time ();
  gboolean truncated = FALSE, complete;
  guint n_ips = 0;

  now_ns = lw_clock_now_ns ();
  result = lw_capture_take (slot, busy_seq, watch->snapshot, LW_CAPTURE_TIMEOUT_NS);
  if (result == LW_CAPTURE_THREAD_GONE)
    {
      g_debug ("the thread that ran the context exited while out of poll; not a lag");
      return;
    }
  if (result == LW_CAPTURE_OK)
    {
      caught_ns = watch->snapshot->taken_ns;
      n_ips = lw_unwinder_walk (watch->unwinder, watch->snapshot, watch->ips,
                                watch->config->max_frames, &truncated);
    }
  else if (result == LW_CAPTURE_TIMEOUT && !watch->warned_signal_blocked
           && lw_capture_thread_blocks_signal (tid, watch->signo))
    {
      g_warning ("the watched thread %d blocks signal %d, which lagwatch sends to take the stack "
                 "of a running thread; its lags are reported without a stack while it runs",
                 (int) tid, watch->signo);
      watch->warned_signal_blocked = TRUE;
    }

  /* Wait for the first poll entry: the wrapper stamps lag_end_ns. */
  while (atomic_load (&slot->seq) == busy_seq && !atomic_load (&watch->stopping))
    {
      lw_watcher_sleep (slot, lw_clock_now_ns () + LW_LIVENESS_PERIOD_NS);
      if (atomic_load (&slot->seq) == busy_seq && !lw_watcher_thread_exists (tid))
        {
          g_debug ("the thread that ran the context exited during a lag; dropped");
          return;
        }
    }
  end_ns = atomic_load (&slot->lag_end_ns);
  complete = end_ns != 0;
  if (!complete)
    end_ns = lw_clock_now_ns ();

  report = lw_report_new ();
  report->id = g_strdup_printf ("%d-%" G_GUINT64_FORMAT, (int) getpid (), ++watch->lag_count);
  report->threshold_ms = threshold_ms;
  report->duration_ms = (double) (end_ns - since_ns) / LW_NSEC_PER_MSEC;
  report->start_time_us = wall_us - (now_ns - since_ns) / 1000;
  report->pid = (int) getpid ();
  report->thread_id = (int) tid;
  report->thread_name = lw_watcher_thread_name (tid);
  report->complete = complete;
  report->caught_ms = caught_ns >= 0 ? (double) (caught_ns - since_ns) / LW_NSEC_PER_MSEC : -1;
  if (result == LW_CAPTURE_OK)
    report->stack_method = g_strdup (watch->snapshot->via_signal ? "signal" : "proc");
  report->stack_error = g_strdup (lw_watcher_capture_error (result));
  report->stack_truncated = truncated;
  report->frames = g_new0 (LwFrame, MAX (n_ips, 1));
  report->n_frames = n_ips;
  for (guint i = 0; i < n_ips; i++)
    lw_symbols_resolve (watch->ips[i], i > 0, &report->frames[i]);

  lw_watcher_deliver (watch, report);
  lagwatch_report_unref (report);
}

/* The watcher thread. */
static gpointer
lw_watcher_main (gpointer data)
{
  LagWatch *watch = data;
  LwSlot *slot = watch->slot;
  uint64_t settled_seq = 0;  /* a busy period already dealt with */

  watch->unwinder = lw_unwinder_new ();
  while (!atomic_load (&watch->stopping))
    {
      uint64_t seq = atomic_load (&slot->seq);
      int64_t since_ns, deadline_ns;

      if (seq == 0 || !(seq & 1))
        {
          lw_watcher_park (watch, seq, LW_WAKE_ON_BUSY);
          continue;
        }
      if (seq == settled_seq)
        {
          lw_watcher_park (watch, seq, LW_WAKE_ON_IDLE);
          continue;
        }

      since_ns = atomic_load (&slot->busy_since_ns);
      deadline_ns = since_ns + (int64_t) atomic_load (&watch->threshold_ms) * LW_NSEC_PER_MSEC;
      if (lw_clock_now_ns () < deadline_ns)
        {
          lw_watcher_sleep (slot, deadline_ns);
          continue;
        }

      /* Ask to be woken at the next poll entry, then confirm the loop is
       * still in the same busy period: from here on its end cannot be missed. */
      atomic_store (&slot->lag_end_ns, 0);
      atomic_fetch_or (&slot->wake_flags, LW_WAKE_ON_IDLE);
      if (atomic_load (&slot->seq) == seq)
        lw_watcher_follow_lag (watch, seq, since_ns);
      if (atomic_load (&watch->self_free))
        break;  /* detached from the report callback: the slot is no longer ours to touch */
      atomic_fetch_and (&slot->wake_flags, ~(unsigned) LW_WAKE_ON_IDLE);
      settled_seq = seq;
    }

  lw_unwinder_free (g_steal_pointer (&watch->unwinder));
  if (atomic_load (&watch->self_free))
    lw_watch_finish (watch);
  return NULL;
}

gboolean
lw_watcher_start (LagWatch *watch, GError **error)
{
  sigset_t all, saved;

  watch->snapshot = lw_snapshot_new (LW_STACK_COPY_BYTES);
  watch->ips = g_new0 (uintptr_t, watch->config->max_frames);
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  watch->thread = g_thread_try_new ("lagwatch", lw_watcher_main, watch, error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  return watch->thread != NULL;
}

void
lw_watcher_stop (LagWatch *watch)
{
  atomic_store (&watch->stopping, TRUE);
  sem_post (&watch->slot->wake);
  g_thread_join (g_steal_pointer (&watch->thread));
}
