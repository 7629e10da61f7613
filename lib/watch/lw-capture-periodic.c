/* lw-capture-periodic.c: sampling a lag by a CPU-time timer
 *
 * While a lag lasts, the watcher arms a timer on the stuck thread's CPU
 * clock that sends lagwatch's signal at every sampling interval of CPU time
 * the thread uses, so samples land where it computes; a thread asleep in
 * the kernel gets none, and the watcher looks at it through /proc instead
 * (lw_capture_periodic_take()). The checks before an explicit signal
 * (lw-capture.c) come first: the timer sends the signal too.
 */
#include "lw-capture.h"
#include "lw-capture-private.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "lw-clock.h"
#include "lw-seccomp.h"
#include "lw-threadinfo.h"

/* Watcher thread of @slot. */
gboolean
lw_capture_periodic_start (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                           uintptr_t stack_hi, LwSnapshot *snap, int64_t interval_ns)
{
  LwCaptureRequest *req = &slot->capture;
  struct sigevent event;
  uintptr_t cookie;

  g_return_val_if_fail (!req->periodic, FALSE);
  /* The same checks as before an explicit signal: the timer sends it too. */
  if (!lw_capture_periodic_supported () || lw_capture_handler_busy (slot)
      || lw_capture_may_signal (slot, tid) != LW_CAPTURE_OK)
    return FALSE;

  cookie = lw_capture_prepare (slot, tid, busy_seq, stack_lo, stack_hi, snap);
  memset (&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = lw_capture_signal_number ();
  event.sigev_value.sival_ptr = (void *) cookie;
  event._sigev_un._tid = tid;  /* sigev_notify_thread_id: glibc 2.36 lacks the name */
  if (timer_create (lw_threadinfo_cpu_clock (tid), &event, &req->timer) != 0)
    {
      g_debug ("no CPU-time timer for thread %d (%s): sampling by explicit signals",
               (int) tid, g_strerror (errno));
      return FALSE;
    }
  req->periodic = TRUE;
  atomic_store (&req->word, LW_REQUEST_WORD (req->serial, LW_CAPTURE_ARMED));
  lw_capture_periodic_set_interval (slot, interval_ns);
  return TRUE;
}

/* Any thread. */
gboolean
lw_capture_periodic_supported (void)
{
  return lw_capture_timers_usable () && !lw_capture_signal_is_taken ()
         && lw_seccomp_verdict (LW_SYSCALL_TIMER_CREATE) == LW_SYSCALL_WORKS;
}

/* Watcher thread of @slot, between start and stop. */
void
lw_capture_periodic_set_interval (LwSlot *slot, int64_t interval_ns)
{
  struct itimerspec spec;

  if (lw_capture_signal_is_taken ())
    return;  /* disarmed for good (lw_capture_periodic_take) */
  spec.it_value = lw_clock_timespec (interval_ns);
  spec.it_interval = spec.it_value;
  timer_settime (slot->capture.timer, 0, &spec, NULL);
}

/* Watcher thread of @slot, between start and stop. */
LwCaptureResult
lw_capture_periodic_take (LwSlot *slot, gboolean look)
{
  LwCaptureRequest *req = &slot->capture;
  uint64_t armed = LW_REQUEST_WORD (req->serial, LW_CAPTURE_ARMED);
  uint64_t done = LW_REQUEST_WORD (req->serial, LW_CAPTURE_DONE);
  uint64_t idle = LW_REQUEST_WORD (req->serial, LW_CAPTURE_IDLE);
  gboolean running;

  /* The timer sends the signal too: once the program took it over, the
   * timer is disarmed at the next look (the sampling interval is the
   * window left), and deleted by lw_capture_periodic_stop(). */
  if (!lw_capture_signal_still_ours ())
    {
      struct itimerspec disarm = { { 0, 0 }, { 0, 0 } };

      timer_settime (req->timer, 0, &disarm, NULL);
    }
  if (atomic_compare_exchange_strong (&req->word, &done, idle))
    return (LwCaptureResult) atomic_load (&req->result);
  /* Held from here (IDLE): no expiry can write the snapshot until re-armed.
   * If the handler holds it instead, its stack is taken next time. */
  if (!look || !atomic_compare_exchange_strong (&req->word, &armed, idle))
    return LW_CAPTURE_PENDING;
  /* PENDING when it runs (or just woke): the timer takes it. */
  return lw_capture_look (slot, req->target_tid, req->expect_seq, req->stack_lo,
                          req->stack_hi, req->snapshot, &running);
}

/* Watcher thread of @slot, between start and stop. */
void
lw_capture_periodic_rearm (LwSlot *slot)
{
  LwCaptureRequest *req = &slot->capture;
  uint64_t idle = LW_REQUEST_WORD (req->serial, LW_CAPTURE_IDLE);

  atomic_compare_exchange_strong (&req->word, &idle, LW_REQUEST_WORD (req->serial, LW_CAPTURE_ARMED));
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_periodic_stop (LwSlot *slot)
{
  LwCaptureRequest *req = &slot->capture;
  uint64_t armed = LW_REQUEST_WORD (req->serial, LW_CAPTURE_ARMED);
  uint64_t done = LW_REQUEST_WORD (req->serial, LW_CAPTURE_DONE);
  uint64_t idle = LW_REQUEST_WORD (req->serial, LW_CAPTURE_IDLE);
  int64_t until;

  if (!req->periodic)
    return LW_CAPTURE_STALE;
  timer_delete (req->timer);
  req->periodic = FALSE;
  /* An expiry's signal still queued (the thread blocks it) finds its
   * serial idle from here on, and claims nothing. */
  if (atomic_compare_exchange_strong (&req->word, &armed, idle))
    return LW_CAPTURE_STALE;
  /* The handler is copying: its time is bounded; let it run, within a
   * bound of our own (then lw_capture_handler_busy() keeps the snapshot). */
  until = lw_clock_now_ns () + LW_CAPTURE_WRITING_WAIT_NS;
  while (LW_REQUEST_STATE (atomic_load (&req->word)) == LW_CAPTURE_WRITING
         && lw_clock_now_ns () < until)
    sched_yield ();
  if (!atomic_compare_exchange_strong (&req->word, &done, idle))
    return LW_CAPTURE_STALE;  /* held by the watcher already, or still writing */
  return (LwCaptureResult) atomic_load (&req->result);
}
