/* lw-sampler.c: how a lag's stacks are taken: signal, CPU-time timer, /proc */
#include "lw-sampler.h"

#include "lw-clock.h"
#include "lw-config.h"
#include "lw-gjs.h"
#include "lw-say.h"

void
lw_sampler_begin (LwSampler *sampler, LagWatch *watch, pid_t tid, uint64_t busy_seq)
{
  *sampler = (LwSampler) {
    .tid = tid,
    .busy_seq = busy_seq,
    .way = LW_SAMPLER_BY_SIGNAL,
    .timer_allowed = TRUE,
    .interval_ns = (int64_t) watch->config->sample_ms * LW_NSEC_PER_MSEC,
    .caught_ns = -1,
    /* What the report says if the lag ends before its first capture. */
    .first_result = LW_CAPTURE_STALE,
    .syscall_nr = -1,
  };
}

const char *
lw_sampler_capture_error (LwCaptureResult result)
{
  switch (result)
    {
    case LW_CAPTURE_OK: return NULL;
    case LW_CAPTURE_STALE: return "the loop came back before the stack could be taken";
    case LW_CAPTURE_TIMEOUT: return "the thread did not answer the signal in time "
                                    "(signal blocked, or uninterruptible sleep)";
    case LW_CAPTURE_THREAD_GONE: return "the thread exited";
    case LW_CAPTURE_IN_FLIGHT: return "an earlier signal is still queued";
    case LW_CAPTURE_IN_HANDLER: return "lagwatch's handler of an earlier sample had not returned on the thread "
                                       "(it waited for a CPU, or was stopped, in it)";
    case LW_CAPTURE_FAILED: return "no signal could be sent";
    case LW_CAPTURE_PENDING: return "the signal's handler had not run when the lag ended";
    case LW_CAPTURE_BLOCKED: return "the thread ran with lagwatch's signal blocked";
    case LW_CAPTURE_SIGNAL_TAKEN: return "the program took lagwatch's signal over: "
                                         "no stack while the thread runs";
    case LW_CAPTURE_PROC_CLOSED: return "the process is not dumpable: /proc hides where a "
                                        "sleeping thread waits";
    }
  return "unknown";
}

/* Watcher thread. Files one capture's outcome: a stack goes into the
 * profile; the first one also records how the thread was caught. */
static void
lw_sampler_took (LwSampler *sampler, LagWatch *watch, LwCaptureResult result)
{
  LwSnapshot *snap = watch->snapshot;
  gboolean truncated;
  guint n, walked;

  if (sampler->caught_ns < 0)
    sampler->first_result = result;
  /* Said once the thread is seen with the signal blocked at two captures
   * in a row: a single sight may be a handler (another watch's, or one
   * preempted on a busy machine) still returning on that thread. */
  if (result == LW_CAPTURE_BLOCKED)
    watch->blocked_in_a_row++;
  else if (result == LW_CAPTURE_OK)
    watch->blocked_in_a_row = 0;
  if (result == LW_CAPTURE_BLOCKED && watch->blocked_in_a_row >= 2 && !watch->warned_signal_blocked)
    {
      lw_say ("the watched thread %d blocks signal %d, which lagwatch sends to take the stack "
              "of a running thread; its lags are reported without a stack while it runs",
              (int) sampler->tid, watch->signo);
      watch->warned_signal_blocked = TRUE;
    }
  if (result != LW_CAPTURE_OK)
    return;

  n = lw_unwinder_walk (watch->unwinder, snap, watch->ips, watch->config->max_frames, &truncated);
  /* The JavaScript and Python frames are the stuck thread's memory: read
   * them now. JavaScript first: it places frames by the native frames'
   * stack pointers, which the walk's indices hold; Python places its
   * own by them too, while they still match (JavaScript added none). */
  walked = n;
  n = lw_gjs_merge (sampler->tid, snap->lang, snap->lang_len, watch->ips,
                    lw_unwinder_stack_pointers (watch->unwinder), n, watch->config->max_frames, &truncated);
  n = lw_python_merge (watch->python, sampler->tid,
                       n == walked ? lw_unwinder_stack_pointers (watch->unwinder) : NULL,
                       watch->ips, n, watch->config->max_frames, &truncated);
  if (lw_profile_add (watch->profile, watch->ips, n, truncated, snap->taken_ns, !snap->via_signal,
                      lw_python_last_missing (watch->python)))
    {
      lw_profile_thin (watch->profile);
      sampler->interval_ns *= 2;
      if (sampler->way == LW_SAMPLER_BY_TIMER)
        lw_capture_periodic_set_interval (watch->slot, sampler->interval_ns);
    }

  if (sampler->caught_ns < 0)
    {
      sampler->caught_ns = snap->taken_ns;
      sampler->via_signal = snap->via_signal;
      sampler->syscall_nr = snap->syscall_nr;
      sampler->state = snap->via_signal ? LW_THREAD_RUNNING : lw_threadinfo_state (sampler->tid);
      if (!snap->via_signal)
        sampler->wchan = lw_threadinfo_wchan (sampler->tid);
    }
}

/* Watcher thread. Collects the signalled capture still out, if any,
 * waiting at most @wait_ns for its handler and giving it up once older
 * than @give_up_ns. */
static void
lw_sampler_collect (LwSampler *sampler, LagWatch *watch, int64_t wait_ns, int64_t give_up_ns)
{
  LwCaptureResult result;

  if (sampler->way != LW_SAMPLER_SIGNAL_OUT)
    return;
  result = lw_capture_finish (watch->slot, wait_ns, give_up_ns);
  if (result == LW_CAPTURE_PENDING)
    return;
  sampler->way = LW_SAMPLER_BY_SIGNAL;
  /* Given up because the lag ended first: not a thread that ignores the
   * signal. */
  if (result == LW_CAPTURE_TIMEOUT && atomic_load (&watch->slot->seq) != sampler->busy_seq)
    result = LW_CAPTURE_STALE;
  lw_sampler_took (sampler, watch, result);
}

/* Watcher thread. Hands the rest of the lag's sampling to the timer,
 * unless that is not possible here: then it stays with explicit signals. */
static void
lw_sampler_start_timer (LwSampler *sampler, LagWatch *watch)
{
  LwSlot *slot = watch->slot;

  if (!sampler->timer_allowed || sampler->way != LW_SAMPLER_BY_SIGNAL)
    return;
  if (lw_capture_periodic_start (slot, sampler->tid, sampler->busy_seq, slot->loop_stack_lo,
                                 slot->loop_stack_hi, watch->snapshot, sampler->interval_ns))
    sampler->way = LW_SAMPLER_BY_TIMER;
  else
    sampler->timer_allowed = FALSE;  /* refused: not tried again in this lag */
  sampler->look_at_ns = lw_clock_now_ns () + sampler->interval_ns * 3 / 2;
}

/* Watcher thread. Stops sampling by timer, filing the stack its last
 * signal took. */
static void
lw_sampler_stop_timer (LwSampler *sampler, LagWatch *watch)
{
  LwCaptureResult result;

  if (sampler->way != LW_SAMPLER_BY_TIMER)
    return;
  result = lw_capture_periodic_stop (watch->slot);
  sampler->way = LW_SAMPLER_BY_SIGNAL;
  if (result == LW_CAPTURE_OK)
    lw_sampler_took (sampler, watch, result);
}

/* Watcher thread. A round by timer: files the stack the timer's signal
 * took, if any; through /proc when none came for an interval and a half. */
static void
lw_sampler_round_by_timer (LwSampler *sampler, LagWatch *watch)
{
  int64_t now_ns = lw_clock_now_ns ();
  gboolean look = now_ns >= sampler->look_at_ns;
  LwCaptureResult result = lw_capture_periodic_take (watch->slot, look);

  if (result == LW_CAPTURE_OK && watch->snapshot->via_signal)
    sampler->look_at_ns = now_ns + sampler->interval_ns * 3 / 2;
  else if (look)
    sampler->look_at_ns = now_ns + sampler->interval_ns;
  if (result != LW_CAPTURE_PENDING)
    lw_sampler_took (sampler, watch, result);
  lw_capture_periodic_rearm (watch->slot);
}

/* Watcher thread. A round by explicit signal (the header says when each
 * round waits). */
static void
lw_sampler_round_by_signal (LwSampler *sampler, LagWatch *watch)
{
  LwSlot *slot = watch->slot;
  LwCaptureResult result;

  lw_sampler_collect (sampler, watch, 0, LW_CAPTURE_TIMEOUT_NS);
  if (sampler->way == LW_SAMPLER_SIGNAL_OUT)
    return;  /* the last signal is still queued: no second one */

  result = lw_capture_start (slot, sampler->tid, sampler->busy_seq, slot->loop_stack_lo,
                             slot->loop_stack_hi, watch->snapshot);
  if (result == LW_CAPTURE_PENDING)
    {
      sampler->way = LW_SAMPLER_SIGNAL_OUT;
      if (sampler->caught_ns < 0)
        lw_sampler_collect (sampler, watch, LW_CAPTURE_TIMEOUT_NS, LW_CAPTURE_TIMEOUT_NS);
    }
  else
    lw_sampler_took (sampler, watch, result);
}

void
lw_sampler_round (LwSampler *sampler, LagWatch *watch)
{
  if (sampler->way == LW_SAMPLER_BY_TIMER)
    {
      lw_sampler_round_by_timer (sampler, watch);
      return;
    }
  lw_sampler_round_by_signal (sampler, watch);
  if (sampler->caught_ns >= 0)
    lw_sampler_start_timer (sampler, watch);
}

gboolean
lw_sampler_may_catch (const LwSampler *sampler)
{
  if (sampler->caught_ns >= 0)
    return FALSE;
  if (sampler->way == LW_SAMPLER_SIGNAL_OUT)
    return TRUE;
  switch (sampler->first_result)
    {
    case LW_CAPTURE_STALE:      /* no capture yet (the loop is provably still busy) */
    case LW_CAPTURE_PENDING:
    case LW_CAPTURE_TIMEOUT:
    case LW_CAPTURE_IN_FLIGHT:
    case LW_CAPTURE_IN_HANDLER:
    case LW_CAPTURE_BLOCKED:
      return TRUE;
    case LW_CAPTURE_OK:
    case LW_CAPTURE_THREAD_GONE:
    case LW_CAPTURE_FAILED:
    case LW_CAPTURE_SIGNAL_TAKEN:
    case LW_CAPTURE_PROC_CLOSED:
      return FALSE;
    }
  return FALSE;
}

int64_t
lw_sampler_next_round_ns (LwSampler *sampler, int64_t now_ns)
{
  if (sampler->way == LW_SAMPLER_BY_TIMER)
    return MAX (sampler->look_at_ns, now_ns + LW_NSEC_PER_MSEC);
  return now_ns + MAX (sampler->interval_ns, LW_NSEC_PER_MSEC);
}

void
lw_sampler_hold (LwSampler *sampler, LagWatch *watch)
{
  lw_sampler_stop_timer (sampler, watch);
  lw_sampler_collect (sampler, watch, LW_CAPTURE_TIMEOUT_NS, LW_CAPTURE_TIMEOUT_NS);
  /* Given up even if the thread only waits for a CPU: the request is
   * needed now. */
  lw_sampler_collect (sampler, watch, 0, 0);
}

void
lw_sampler_resume (LwSampler *sampler, LagWatch *watch)
{
  lw_sampler_start_timer (sampler, watch);
}

void
lw_sampler_finish (LwSampler *sampler, LagWatch *watch)
{
  lw_sampler_stop_timer (sampler, watch);
  lw_sampler_collect (sampler, watch, 0, 0);
}

void
lw_sampler_clear (LwSampler *sampler)
{
  g_clear_pointer (&sampler->wchan, g_free);
}
