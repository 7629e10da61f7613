/* lw-watcher.c: the watcher thread: catch, sample, attribute, report */
#include "lw-watcher.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-dispatch.h"
#include "lw-gjs.h"
#include "lw-report.h"
#include "lw-reporter.h"
#include "lw-stats-read.h"
#include "lw-threadinfo.h"
#include "lw-tracing.h"
#include "lw-say.h"

/* How long a capture may wait for the signal handler. A thread that does not
 * run it by then blocks the signal or sleeps uninterruptibly. */
#define LW_CAPTURE_TIMEOUT_NS   (50 * LW_NSEC_PER_MSEC)
/* The most a hang's snapshot of the other threads may take (see
 * lw_watcher_snapshot_threads()). */
#define LW_THREADS_BUDGET_NS    (2000 * LW_NSEC_PER_MSEC)
/* While following a lag, how often at least to check that the thread exists. */
#define LW_LIVENESS_PERIOD_NS   (1000 * LW_NSEC_PER_MSEC)
/* Stack bytes copied per capture: deep GTK stacks fit, the copy stays short. */
#define LW_STACK_COPY_BYTES     (128 * 1024)
/* Samples kept per lag; beyond, every other one is dropped and the interval
 * doubles. 256 at 10 ms covers 2.5 s before the first thinning. */
#define LW_SAMPLE_BUDGET        256
/* A watcher that wakes this much later than it asked was not running (the
 * process was stopped by SIGSTOP, the machine starved it): what it measured
 * meanwhile is not trusted. Far above any scheduling delay of a live
 * process, far below a human-noticeable stop. */
#define LW_OVERSLEEP_NS         (250 * LW_NSEC_PER_MSEC)
#define LW_WAKE_AT_BUSY_START   (-2)
/* The watcher's scheduler slice (lw_watcher_tune_wakeups): the kernel's least. */
#define LW_WATCHER_SLICE_NS     (100 * 1000)
/* The periodic "stats" event, while the loop is active: at most this often. */
#define LW_STATS_PERIOD_NS      (60 * LW_NSEC_PER_SEC)
/* How long lagwatch_attach() waits at most for the watcher thread's
 * first look (lw_watcher_start). */
#define LW_WATCHER_START_WAIT_NS (2000 * LW_NSEC_PER_MSEC)

/* Tests only (tests/test-watcher-start.c): how long a new watcher thread
 * sleeps before it first looks, as one that gets its first CPU late on a
 * loaded machine. 0 otherwise. */
_Atomic int64_t lw_watcher_test_start_delay_ns;

/* The lag being followed. Watcher thread only. */
typedef struct
{
  uint64_t         busy_seq;
  int64_t          since_ns;
  pid_t            tid;
  char            *id;
  guint            threshold_ms;
  gint64           start_wall_us;
  int64_t          caught_ns;        /* first stack in hand, -1 none */
  LwCaptureResult  first_result;
  gboolean         via_signal;
  LwThreadState    state;            /* when caught */
  long             syscall_nr;
  char            *wchan;
  LwDispatchInfo   dispatch;
  gboolean         dispatch_known;
  gboolean         stopped_seen;     /* SIGSTOP or a debugger stop during the lag */
  GSource         *sentinel;
  unsigned         prepares;         /* sentinel prepares seen while still in the lag */
  gboolean         hang_written;
  int64_t          watcher_delay_ns; /* the watcher's run-queue delay when the lag began, -1 unknown */
  int64_t          interval_ns;      /* between samples: doubles as the profile thins */
  gboolean         pending;          /* a signal is out for a sample, not collected yet */
  gboolean         timer_allowed;    /* may sample by CPU-time timer (lw_watcher_start_timer) */
  gboolean         by_timer;         /* sampling by that timer now */
  int64_t          look_at_ns;       /* by timer: look through /proc if no stack came by then */
  gboolean         input_pending;    /* an input fd of the context was seen readable */
} LwLag;

/* The starvation sentinel: attached while a lag is followed, at the highest
 * priority, it counts the loop's prepares. Two or more mean the loop is
 * iterating without ever polling. */
typedef struct
{
  GSource  source;
  LwSlot  *slot;
} LwSentinel;

static gboolean
lw_sentinel_prepare (GSource *source, gint *timeout)
{
  atomic_fetch_add (&((LwSentinel *) source)->slot->sentinel_prepares, 1);
  *timeout = -1;
  return FALSE;
}

static gboolean
lw_sentinel_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  return G_SOURCE_CONTINUE;  /* never ready, never dispatched */
}

static GSourceFuncs lw_sentinel_funcs = {
  .prepare = lw_sentinel_prepare,
  .dispatch = lw_sentinel_dispatch,
};

/* Watcher thread. Sleeps on the slot's semaphore until @deadline_ns (a
 * CLOCK_MONOTONIC time) or, when @deadline_ns < 0, until posted. */
static void
lw_watcher_sleep (LwSlot *slot, int64_t deadline_ns)
{
  struct timespec ts;

  if (deadline_ns < 0)
    {
      while (sem_wait (&slot->wake) != 0 && errno == EINTR)
        ;
      return;
    }
  ts = lw_clock_timespec (deadline_ns);
  while (sem_clockwait (&slot->wake, CLOCK_MONOTONIC, &ts) != 0 && errno == EINTR)
    ;
}

/* Watcher thread. Raises @flags (what the poll wrapper should do at the
 * loop's next transition), then sleeps until @deadline_ns (-1: no timeout)
 * unless the loop's seq has already moved away from @seq or the watch
 * stops; lowers the flags again. Raising them before the look at seq is
 * what makes a transition impossible to miss (lw-hooks.c). */
static void
lw_watcher_park (LagWatch *watch, uint64_t seq, unsigned flags, int64_t deadline_ns)
{
  LwSlot *slot = watch->slot;

  atomic_fetch_or (&slot->wake_flags, flags);
  if (atomic_load (&slot->seq) == seq && !atomic_load (&watch->stopping))
    lw_watcher_sleep (slot, deadline_ns);
  atomic_fetch_and (&slot->wake_flags, ~flags);
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
    case LW_CAPTURE_PENDING: return "the signal's handler had not run when the lag ended";
    case LW_CAPTURE_BLOCKED: return "the thread ran with lagwatch's signal blocked";
    case LW_CAPTURE_SIGNAL_TAKEN: return "the program took lagwatch's signal over: "
                                         "no stack while the thread runs";
    case LW_CAPTURE_PROC_CLOSED: return "the process is not dumpable: /proc hides where a "
                                        "sleeping thread waits";
    }
  return "unknown";
}

/* Watcher thread. An unnamed source's callback, for the reporting thread
 * to name (its function's symbol) unless a hook named it already. */
static void
lw_watcher_set_source_callback (LagWatchReport *report, const LwDispatchInfo *dispatch)
{
  if (dispatch->named || dispatch->callback_func == 0)
    return;
  report->source_callback_ip = dispatch->callback_func;
  report->source_callback_kind = dispatch->callback_kind;
  if (dispatch->callback_described)
    report->source_callback = g_strdup (dispatch->callback_name);
}

/* Watcher thread. Frames holding only their addresses: the reporting
 * thread names them. */
static LwFrame *
lw_watcher_frames (const uintptr_t *ips, guint n_ips)
{
  LwFrame *frames = g_new0 (LwFrame, MAX (n_ips, 1));

  for (guint i = 0; i < n_ips; i++)
    frames[i].ip = ips[i];
  return frames;
}

/* Watcher thread. Files one capture's outcome: a stack goes into the
 * profile; the first one also records how the thread was caught. */
static void
lw_watcher_took (LagWatch *watch, LwLag *lag, LwCaptureResult result)
{
  LwSnapshot *snap = watch->snapshot;
  gboolean truncated;
  guint n, walked;

  if (lag->caught_ns < 0)
    lag->first_result = result;
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
              (int) lag->tid, watch->signo);
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
  n = lw_gjs_merge (lag->tid, watch->ips, lw_unwinder_stack_pointers (watch->unwinder), n,
                    watch->config->max_frames, &truncated);
  n = lw_python_merge (watch->python, lag->tid,
                       n == walked ? lw_unwinder_stack_pointers (watch->unwinder) : NULL,
                       watch->ips, n, watch->config->max_frames, &truncated);
  if (lw_profile_add (watch->profile, watch->ips, n, truncated, snap->taken_ns))
    {
      lw_profile_thin (watch->profile);
      lag->interval_ns *= 2;
      if (lag->by_timer)
        lw_capture_periodic_set_interval (watch->slot, lag->interval_ns);
    }

  if (lag->caught_ns < 0)
    {
      lag->caught_ns = snap->taken_ns;
      lag->via_signal = snap->via_signal;
      lag->syscall_nr = snap->syscall_nr;
      lag->state = snap->via_signal ? LW_THREAD_RUNNING : lw_threadinfo_state (lag->tid);
      if (!snap->via_signal)
        lag->wchan = lw_threadinfo_wchan (lag->tid);
    }
}

/* Watcher thread. Collects the signalled capture still out, if any,
 * waiting at most @wait_ns for its handler and giving it up once older
 * than @give_up_ns. */
static void
lw_watcher_collect (LagWatch *watch, LwLag *lag, int64_t wait_ns, int64_t give_up_ns)
{
  LwCaptureResult result;

  if (!lag->pending)
    return;
  result = lw_capture_finish (watch->slot, wait_ns, give_up_ns);
  if (result == LW_CAPTURE_PENDING)
    return;
  lag->pending = FALSE;
  /* Given up because the lag ended first: not a thread that ignores the
   * signal. */
  if (result == LW_CAPTURE_TIMEOUT && atomic_load (&watch->slot->seq) != lag->busy_seq)
    result = LW_CAPTURE_STALE;
  lw_watcher_took (watch, lag, result);
}

/* Watcher thread. Hands the rest of @lag's sampling to a timer on the
 * loop thread's CPU clock (lw-capture.h says why), unless that is not
 * possible here: then it stays with explicit signals. */
static void
lw_watcher_start_timer (LagWatch *watch, LwLag *lag)
{
  LwSlot *slot = watch->slot;

  if (!lag->timer_allowed || lag->by_timer || lag->pending)
    return;
  lag->by_timer = lw_capture_periodic_start (slot, lag->tid, lag->busy_seq, slot->loop_stack_lo,
                                             slot->loop_stack_hi, watch->snapshot, lag->interval_ns);
  lag->timer_allowed = lag->by_timer;  /* refused: not tried again in this lag */
  lag->look_at_ns = lw_clock_now_ns () + lag->interval_ns * 3 / 2;
}

/* Watcher thread. Stops sampling @lag by timer, filing the stack its last
 * signal took. */
static void
lw_watcher_stop_timer (LagWatch *watch, LwLag *lag)
{
  LwCaptureResult result;

  if (!lag->by_timer)
    return;
  result = lw_capture_periodic_stop (watch->slot);
  lag->by_timer = FALSE;
  if (result == LW_CAPTURE_OK)
    lw_watcher_took (watch, lag, result);
}

/* Watcher thread. A sampling round by timer: files the stack the timer's
 * signal took, if any. If none came for an interval and a half (the timer
 * counts CPU time, so a thread that sleeps gets none), looks at the thread
 * through /proc, and files its stack if it sleeps in the kernel: the
 * blocked part of a lag is sampled by wall time, the running part by CPU
 * time. */
static void
lw_watcher_sample_by_timer (LagWatch *watch, LwLag *lag)
{
  int64_t now_ns = lw_clock_now_ns ();
  gboolean look = now_ns >= lag->look_at_ns;
  LwCaptureResult result = lw_capture_periodic_take (watch->slot, look);

  if (result == LW_CAPTURE_OK && watch->snapshot->via_signal)
    lag->look_at_ns = now_ns + lag->interval_ns * 3 / 2;
  else if (look)
    lag->look_at_ns = now_ns + lag->interval_ns;
  if (result != LW_CAPTURE_PENDING)
    lw_watcher_took (watch, lag, result);
  lw_capture_periodic_rearm (watch->slot);
}

/* Watcher thread. A sampling round by explicit signal: the first of every
 * lag, and all of them where no timer can be used. Until the first stack
 * is in hand, the round waits for the signal handler (that is the
 * detection latency). After that it does not: the handler's copy is
 * collected at the next round, so the watcher never spins or sleeps for
 * it. */
static void
lw_watcher_sample_by_signal (LagWatch *watch, LwLag *lag)
{
  LwSlot *slot = watch->slot;
  LwCaptureResult result;

  lw_watcher_collect (watch, lag, 0, LW_CAPTURE_TIMEOUT_NS);
  if (lag->pending)
    return;  /* the last signal is still queued: no second one */

  result = lw_capture_start (slot, lag->tid, lag->busy_seq, slot->loop_stack_lo,
                             slot->loop_stack_hi, watch->snapshot);
  if (result == LW_CAPTURE_PENDING)
    {
      lag->pending = TRUE;
      if (lag->caught_ns < 0)
        lw_watcher_collect (watch, lag, LW_CAPTURE_TIMEOUT_NS, LW_CAPTURE_TIMEOUT_NS);
    }
  else
    lw_watcher_took (watch, lag, result);
}

/* Watcher thread. One sampling round of the loop thread. */
static void
lw_watcher_sample (LagWatch *watch, LwLag *lag)
{
  LwSlot *slot = watch->slot;

  if (lag->by_timer)
    lw_watcher_sample_by_timer (watch, lag);
  else
    {
      lw_watcher_sample_by_signal (watch, lag);
      if (lag->caught_ns >= 0)
        lw_watcher_start_timer (watch, lag);
    }

  /* The source's name is copied while the loop is provably still in this
   * busy period (so the source is alive): read, then check. */
  if (!lag->dispatch_known)
    {
      LwDispatchInfo info;

      if (lw_dispatch_read (slot, &info) && atomic_load (&slot->seq) == lag->busy_seq)
        {
          lag->dispatch = info;
          lag->dispatch_known = TRUE;
        }
    }
}

/* Watcher thread. Attaches the starvation sentinel to the context (safe
 * from any thread; the loop thread holds no context lock while stuck). */
static void
lw_watcher_attach_sentinel (LagWatch *watch, LwLag *lag)
{
  GSource *source = g_source_new (&lw_sentinel_funcs, sizeof (LwSentinel));

  ((LwSentinel *) source)->slot = watch->slot;
  g_source_set_priority (source, G_MININT);
  g_source_set_name (source, "lagwatch: starvation sentinel");
  atomic_store (&watch->slot->sentinel_prepares, 0);
  g_source_attach (source, watch->slot->context);
  lag->sentinel = source;
}

/* Watcher thread. Stacks of every other thread of the process (a hang's
 * lock holder shows up there), within LW_THREADS_BUDGET_NS: a thread that
 * runs answers the signal only once it gets a CPU, which with hundreds of
 * busy threads on two cores takes a scheduler round each, and the lag is
 * not sampled meanwhile. Every thread without a stack says why.
 * lagwatch's own threads are left out. */
static void
lw_watcher_snapshot_threads (LagWatch *watch, LwLag *lag, LagWatchReport *report)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  GArray *threads = g_array_new (FALSE, TRUE, sizeof (LwReportStack));
  int64_t until = lw_clock_now_ns () + LW_THREADS_BUDGET_NS;
  const char *entry;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      pid_t tid = (pid_t) g_ascii_strtoll (entry, NULL, 10);
      LwReportStack thread = { 0 };
      int64_t left = until - lw_clock_now_ns ();
      LwThreadState state;
      LwCaptureResult result;
      gboolean truncated;
      guint n = 0;

      if (tid == lag->tid || tid == gettid () || lw_threadinfo_is_own (tid))
        continue;
      thread.thread_name = lw_threadinfo_name (tid);
      thread.thread_id = (int) tid;
      state = lw_threadinfo_state (tid);
      thread.thread_state = g_strdup (lw_threadinfo_state_name (state));
      /* Past the budget, a sleeping thread still costs only a look at /proc. */
      result = left > 0 || state != LW_THREAD_RUNNING
               ? lw_capture_take_thread (watch->slot, tid, 0, 0, 0, watch->snapshot,
                                         left > 0 ? MIN (left, LW_CAPTURE_TIMEOUT_NS) : LW_NSEC_PER_MSEC)
               : LW_CAPTURE_TIMEOUT;
      if (result == LW_CAPTURE_OK)
        n = lw_unwinder_walk (watch->unwinder, watch->snapshot, watch->ips,
                              watch->config->max_frames, &truncated);
      else if (left <= 0)
        thread.stack_error = g_strdup_printf ("not captured: the snapshot's budget of %d ms "
                                              "was spent on the threads before it",
                                              (int) (LW_THREADS_BUDGET_NS / LW_NSEC_PER_MSEC));
      else if (result == LW_CAPTURE_TIMEOUT && lw_threadinfo_state (tid) == LW_THREAD_RUNNING)
        thread.stack_error = g_strdup_printf ("not captured: runnable, it did not get a CPU to answer "
                                              "the signal within %d ms",
                                              (int) (MIN (left, LW_CAPTURE_TIMEOUT_NS) / LW_NSEC_PER_MSEC));
      else
        thread.stack_error = g_strdup (lw_watcher_capture_error (result));
      thread.frames = lw_watcher_frames (watch->ips, n);
      thread.n_frames = n;
      g_array_append_val (threads, thread);
    }
  report->n_threads = threads->len;
  report->threads = (LwReportStack *) g_array_free (threads, FALSE);
}

/* Watcher thread. Every sample of @lag in time order, and every distinct
 * stack they took by exact addresses (at most the profile's budget of
 * each), for the call tree and for profilers; the settings the reporting
 * thread builds the tree with. */
static void
lw_watcher_add_timeline (LagWatch *watch, LwLag *lag, LagWatchReport *report)
{
  guint n = lw_profile_n_samples (watch->profile);
  g_autoptr(GHashTable) index = g_hash_table_new (NULL, NULL);  /* stack -> its index + 1 */

  report->sampled = g_new0 (LwReportStack, MAX (n, 1));
  report->timeline = g_new0 (LwReportSample, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    {
      int64_t taken_ns;
      const LwProfileStack *stack = lw_profile_sample (watch->profile, i, &taken_ns);
      guint at = GPOINTER_TO_UINT (g_hash_table_lookup (index, stack));

      if (at == 0)
        {
          LwReportStack *sampled = &report->sampled[report->n_sampled];

          sampled->samples = stack->count;
          sampled->truncated = stack->truncated;
          sampled->frames = lw_watcher_frames (stack->ips, stack->n_ips);
          sampled->n_frames = stack->n_ips;
          at = ++report->n_sampled;
          g_hash_table_insert (index, (gpointer) stack, GUINT_TO_POINTER (at));
        }
      report->timeline[i].offset_ns = taken_ns - lag->since_ns;
      report->timeline[i].stack = at - 1;
    }
  report->n_timeline = n;
  report->sample_interval_ns = (int64_t) watch->config->sample_ms * LW_NSEC_PER_MSEC;
  report->calls_min_ns = (int64_t) watch->config->calls_min_ms * LW_NSEC_PER_MSEC;
  report->calls_depth = watch->config->calls_depth;
}

/* Watcher thread. The report of @lag as it stands at @end_ns, its frames
 * holding addresses only (the reporting thread does the rest). */
static LagWatchReport *
lw_watcher_build_report (LagWatch *watch, LwLag *lag, const char *event, int64_t end_ns,
                         gboolean complete, int64_t cpu_ns)
{
  LagWatchReport *report = lw_report_new ();
  GPtrArray *stacks = lw_profile_exact_stacks (watch->profile);

  report->event = event;
  report->id = g_strdup (lag->id);
  report->threshold_ms = lag->threshold_ms;
  report->duration_ms = (double) (end_ns - lag->since_ns) / LW_NSEC_PER_MSEC;
  report->start_time_us = lag->start_wall_us;
  report->pid = (int) getpid ();
  report->thread_id = (int) lag->tid;
  report->thread_name = lw_threadinfo_name (lag->tid);
  report->complete = complete;
  if (!complete)
    report->stopped_by = atomic_load (&watch->exiting) ? "exit" : "detach";
  report->caught_ms = lag->caught_ns >= 0 ? (double) (lag->caught_ns - lag->since_ns) / LW_NSEC_PER_MSEC : -1;
  if (lag->caught_ns >= 0)
    report->stack_method = g_strdup (lag->via_signal ? "signal" : "proc");
  else
    report->stack_error = g_strdup (lw_watcher_capture_error (lag->first_result));
  report->n_samples = lw_profile_n_samples (watch->profile);
  /* Every stack by exact addresses (at most LW_SAMPLE_BUDGET): grouping
   * them by function needs symbols, which the reporting thread looks up
   * (lw_profile_group()), and so does the choice of the heaviest. */
  report->n_stacks = stacks->len;
  report->stacks = g_new0 (LwReportStack, MAX (report->n_stacks, 1));
  for (guint i = 0; i < report->n_stacks; i++)
    {
      const LwProfileStack *stack = stacks->pdata[i];

      report->stacks[i].samples = stack->count;
      report->stacks[i].truncated = stack->truncated;
      report->stacks[i].at_limit = stack->truncated && stack->n_ips >= watch->config->max_frames;
      report->stacks[i].frames = lw_watcher_frames (stack->ips, stack->n_ips);
      report->stacks[i].n_frames = stack->n_ips;
    }
  report->source_known = lag->dispatch_known;
  if (lag->dispatch_known && lag->dispatch.dispatching)
    {
      report->priority = lag->dispatch.priority;
      if (lag->dispatch.named)
        report->source = g_strdup (lag->dispatch.name);
      lw_watcher_set_source_callback (report, &lag->dispatch);
    }
  report->dispatching = lag->dispatch_known && lag->dispatch.dispatching;
  report->prepares = lag->prepares;
  report->cpu_ms = cpu_ns >= 0 ? (double) cpu_ns / LW_NSEC_PER_MSEC : -1;
  lw_frames_fill_report (watch->frames, report, end_ns - lag->since_ns);
  if (lag->caught_ns >= 0)
    {
      report->thread_state = lw_threadinfo_state_name (lag->state);
      report->syscall = lag->syscall_nr >= 0 ? lw_threadinfo_syscall_name (lag->syscall_nr) : NULL;
      report->wchan = g_strdup (lag->wchan);
    }
  report->start_ns = lag->since_ns;
  lw_watcher_add_timeline (watch, lag, report);
  return report;
}

/* Watcher thread. CPU time the loop thread used from the lag's start to now:
 * measured from the watcher's first sight of the busy period, scaled up to
 * the part before it (usually microseconds: the wrapper wakes a parked
 * watcher at once). */
static int64_t
lw_watcher_lag_cpu (LagWatch *watch, LwLag *lag, int64_t now_ns)
{
  int64_t cpu_now = lw_threadinfo_cpu_ns (lag->tid);
  int64_t seen_at = MAX (watch->observed_at_ns, lag->since_ns);
  double used;

  if (cpu_now < 0 || watch->observed_cpu_ns < 0 || watch->observed_seq != lag->busy_seq
      || now_ns <= seen_at)
    return -1;
  used = (double) (cpu_now - watch->observed_cpu_ns);
  return (int64_t) (used * (double) (now_ns - lag->since_ns) / (double) (now_ns - seen_at));
}

static void lw_watcher_whose_fault (LagWatch *watch, LwLag *lag, LagWatchReport *report, int64_t end_ns);

/* Watcher thread. The hang record of @lag, with every other thread's
 * stack, handed to the reporting thread (durable write, state copy). */
static void
lw_watcher_report_hang (LagWatch *watch, LwLag *lag, int64_t now_ns)
{
  LagWatchReport *report;

  /* The all-threads snapshot reuses the capture request and snapshot. */
  lw_watcher_stop_timer (watch, lag);
  lw_watcher_collect (watch, lag, LW_CAPTURE_TIMEOUT_NS, LW_CAPTURE_TIMEOUT_NS);
  /* Given up even if the thread only waits for a CPU: the request is
   * needed now. */
  lw_watcher_collect (watch, lag, 0, 0);
  report = lw_watcher_build_report (watch, lag, "hang", now_ns, FALSE,
                                    lw_watcher_lag_cpu (watch, lag, now_ns));
  lw_watcher_whose_fault (watch, lag, report, now_ns);

  lw_watcher_snapshot_threads (watch, lag, report);
  lw_reporter_submit (watch->reporter, report, LW_REPORT_HANG);
  lag->hang_written = TRUE;
  lw_watcher_start_timer (watch, lag);
}

/* Watcher thread. TRUE when this busy period must not be reported because
 * the program said so: paused, or declared long. Cheap: checked at every
 * sample. */
static gboolean
lw_watcher_declined (LagWatch *watch, LwLag *lag)
{
  return atomic_load (&watch->paused) || atomic_load (&watch->slot->expected_seq) == lag->busy_seq;
}

/* Watcher thread. TRUE when this busy period is not the program's doing:
 * a debugger is attached, or the thread is stopped (SIGSTOP, a debugger
 * stop). Reads /proc: checked when the lag is caught and when it ends; a
 * stop of the whole process in between shows as a watcher oversleep. */
static gboolean
lw_watcher_excused (LagWatch *watch, LwLag *lag)
{
  if (lw_watcher_declined (watch, lag))
    return TRUE;
  if (!watch->config->under_debugger && lw_threadinfo_tracer_pid () != 0)
    {
      if (!watch->noted_debugger)
        g_debug ("a debugger is attached: lags are not reported (LAGWATCH_UNDER_DEBUGGER=1 to report them)");
      watch->noted_debugger = TRUE;
      return TRUE;
    }
  if (lw_threadinfo_state (lag->tid) == LW_THREAD_STOPPED)
    lag->stopped_seen = TRUE;
  return lag->stopped_seen;
}

/* Watcher thread. The loop thread's run-queue delay from the lag's start
 * to @now_ns (how long it was runnable but not running: waiting for a
 * CPU), measured from the watcher's first sight of the busy period and
 * scaled up to the part before it, as lw_watcher_lag_cpu() does. -1
 * unknown. */
static int64_t
lw_watcher_lag_run_delay (LagWatch *watch, LwLag *lag, int64_t now_ns)
{
  int64_t delay_now = lw_threadinfo_run_delay_ns (lag->tid);
  int64_t seen_at = MAX (watch->observed_at_ns, lag->since_ns);

  if (delay_now < 0 || watch->observed_delay_ns < 0 || watch->observed_seq != lag->busy_seq
      || now_ns <= seen_at)
    return -1;
  return (int64_t) ((double) (delay_now - watch->observed_delay_ns) * (double) (now_ns - lag->since_ns)
                    / (double) (now_ns - seen_at));
}

/* Watcher thread. TRUE when an input file descriptor of the context (one
 * the loop polls for reading, as last passed to the poll wrapper's slow
 * path) is readable now. GLib's own wake-up eventfd is left out: attaching
 * the starvation sentinel writes to it. A number closed and reused since
 * is harmless: poll() with timeout 0 changes nothing. */
static gboolean
lw_watcher_input_pending (LagWatch *watch)
{
  LwStatsCounters *stats = &watch->slot->stats;
  struct pollfd fds[LW_STATS_POLL_FDS];
  unsigned n = MIN (atomic_load_explicit (&stats->n_poll_fds, memory_order_acquire), LW_STATS_POLL_FDS);
  unsigned used = 0;

  for (unsigned i = 0; i < n; i++)
    {
      uint64_t record = atomic_load_explicit (&stats->poll_fds[i], memory_order_relaxed);

      if ((record & G_IO_IN) && (int) (record >> 16) >= 0)
        fds[used++] = (struct pollfd) { .fd = (int) (record >> 16), .events = POLLIN };
    }
  if (used == 0 || poll (fds, used, 0) <= 0)
    return FALSE;
  for (unsigned i = 0; i < used; i++)
    if (fds[i].revents & POLLIN)
      {
        char path[64], target[64];
        ssize_t len;

        g_snprintf (path, sizeof path, "/proc/self/fd/%d", fds[i].fd);
        len = readlink (path, target, sizeof target - 1);
        if (len >= 0)
          target[len] = '\0';
        if (len < 0 || !g_str_equal (target, "anon_inode:[eventfd]"))
          return TRUE;
      }
  return FALSE;
}

/* Watcher thread. Fills in whose fault @lag was, as of @end_ns: the time
 * the thread waited for a CPU ("most" of the lag: half or more) and
 * whether input was waiting. */
static void
lw_watcher_whose_fault (LagWatch *watch, LwLag *lag, LagWatchReport *report, int64_t end_ns)
{
  int64_t delay_ns = lw_watcher_lag_run_delay (watch, lag, end_ns);

  /* Measured a little past the lag's end (the read comes after it), and
   * scaled: never more than the part of the lag the thread did not run. */
  report->run_delay_ms = delay_ns >= 0 ? MIN ((double) delay_ns / LW_NSEC_PER_MSEC,
                                              MAX (report->duration_ms - MAX (report->cpu_ms, 0), 0))
                                       : -1;
  report->cpu_starved = delay_ns >= 0 && report->duration_ms > 0
                        && report->run_delay_ms >= report->duration_ms / 2;
  report->input_pending = lag->input_pending;
}

/* Watcher thread. The latency profile as a "stats" event to the JSON
 * sinks, once the loop has iterated (stderr gets it with the summary). */
static void
lw_watcher_write_stats (LagWatch *watch)
{
  LagWatchStats *stats;
  g_autofree char *json = NULL;

  if (!watch->slot->stats_enabled)
    return;
  stats = lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
  watch->stats_written_iterations = lagwatch_stats_get_iterations (stats);
  if (watch->stats_written_iterations > 0)
    json = lw_stats_to_json (stats);
  lagwatch_stats_free (stats);
  if (json != NULL)
    lw_reporter_write_stats (watch->reporter, json);
}

/* Watcher thread, while the loop polls. The periodic "stats" event: at
 * most once a minute, only if the loop iterated since the last one, and
 * only on a wake-up the watcher has anyway (none while the loop idles). */
static void
lw_watcher_maybe_write_stats (LagWatch *watch)
{
  int64_t now_ns = lw_clock_now_ns ();

  if (watch->stats_written_ns == 0)
    watch->stats_written_ns = now_ns;
  if (now_ns - watch->stats_written_ns < LW_STATS_PERIOD_NS
      || atomic_load (&watch->slot->seq) >> 1 == watch->stats_written_iterations + 1)
    return;
  watch->stats_written_ns = now_ns;
  lw_watcher_write_stats (watch);
}

/* The N of lag ids ("PID-N"): one count for all the process's watches,
 * so an id is unique in the process (each watch has its own watcher
 * thread). */
static _Atomic guint64 lw_lag_serial;

/* Watcher thread, woken @late_ns after the time it asked for. TRUE when it
 * was kept waiting for a CPU for most of that time: its run-queue delay
 * grew by half of @late_ns or more since @baseline_ns (read earlier, -1
 * unknown): the machine is busy. FALSE when it was not runnable, as in a
 * stopped process (SIGSTOP, a frozen cgroup, a suspend), or when the kernel
 * keeps no scheduler statistics. @what says what follows, for the debug
 * message. */
static gboolean
lw_watcher_waited_for_cpu (int64_t baseline_ns, int64_t late_ns, const char *what)
{
  int64_t delay_ns;

  if (baseline_ns < 0 || (delay_ns = lw_threadinfo_run_delay_ns (gettid ())) < 0
      || delay_ns - baseline_ns < late_ns / 2)
    return FALSE;
  g_debug ("the watcher waited %.0f ms for a CPU (the machine is busy); %s",
           (double) (delay_ns - baseline_ns) / LW_NSEC_PER_MSEC, what);
  return TRUE;
}

/* How often, at most, the watcher reads its own run-queue delay while it
 * times busy periods: the baseline of lw_watcher_waited_for_cpu() then. */
#define LW_DELAY_BASELINE_PERIOD_NS (100 * LW_NSEC_PER_MSEC)

/* Watcher thread, awake anyway (and once as it starts). Refreshes the
 * baseline of its own run-queue delay, at most once per
 * LW_DELAY_BASELINE_PERIOD_NS (a /proc read; none while the loop idles, as
 * the watcher sleeps then). */
static void
lw_watcher_note_run_delay (LagWatch *watch, int64_t now_ns)
{
  if (now_ns - watch->delay_baseline_at_ns < LW_DELAY_BASELINE_PERIOD_NS)
    return;
  watch->delay_baseline_ns = lw_threadinfo_run_delay_ns (gettid ());
  watch->delay_baseline_at_ns = now_ns;
}

/* Watcher thread. Starts @lag, the busy period @busy_seq since @since_ns,
 * unless it is excused (then FALSE). */
static gboolean
lw_watcher_lag_begin (LagWatch *watch, LwLag *lag, uint64_t busy_seq, int64_t since_ns)
{
  int64_t now_ns = lw_clock_now_ns ();

  *lag = (LwLag) { 0 };
  lag->busy_seq = busy_seq;
  lag->since_ns = since_ns;
  lag->tid = atomic_load (&watch->slot->loop_tid);
  lag->threshold_ms = atomic_load (&watch->threshold_ms);
  lag->start_wall_us = g_get_real_time () - (now_ns - since_ns) / 1000;
  lag->caught_ns = -1;
  /* What the report says if the lag ends before its first capture. */
  lag->first_result = LW_CAPTURE_STALE;
  lag->syscall_nr = -1;
  lag->watcher_delay_ns = lw_threadinfo_run_delay_ns (gettid ());
  lag->interval_ns = (int64_t) watch->config->sample_ms * LW_NSEC_PER_MSEC;
  lag->timer_allowed = !atomic_load (&watch->explicit_sampling);
  if (lw_watcher_excused (watch, lag))
    return FALSE;
  lag->id = g_strdup_printf ("%d-%" G_GUINT64_FORMAT, (int) getpid (), atomic_fetch_add (&lw_lag_serial, 1) + 1);
  lw_profile_reset (watch->profile);
  return TRUE;
}

/* Watcher thread. The busy period @busy_seq outlasted the threshold but
 * ended, at @end_ns by the loop's own stamp, before the watcher woke to
 * look (it woke late: an idle CPU, a loaded machine). Reported, without a
 * stack, rather than lost. */
static void
lw_watcher_report_unseen (LagWatch *watch, uint64_t busy_seq, int64_t since_ns, int64_t end_ns)
{
  LwLag lag;

  if (!lw_watcher_lag_begin (watch, &lag, busy_seq, since_ns))
    return;
  lag.first_result = LW_CAPTURE_STALE;
  atomic_fetch_add (&watch->n_lags, 1);
  lw_reporter_submit (watch->reporter, lw_watcher_build_report (watch, &lag, "lag", end_ns, TRUE, -1),
                      LW_REPORT_LAG);
  g_free (lag.id);
}

/* Watcher thread. The loop has been in the busy period @busy_seq since
 * @since_ns for at least the threshold: sample it until it ends, report. */
static void
lw_watcher_follow_lag (LagWatch *watch, uint64_t busy_seq, int64_t since_ns)
{
  LwSlot *slot = watch->slot;
  LwLag lag;
  int64_t now_ns = lw_clock_now_ns ();
  int64_t next_check_ns = now_ns + LW_LIVENESS_PERIOD_NS;
  int64_t hang_ns = (int64_t) watch->config->hang_ms * LW_NSEC_PER_MSEC;
  int64_t end_ns;
  gboolean complete, dropped = FALSE;
  LagWatchReport *report;
  LwTracing *tracing;

  if (!lw_watcher_lag_begin (watch, &lag, busy_seq, since_ns))
    return;
  lw_watcher_attach_sentinel (watch, &lag);
  /* Exact calls from here on, if the thread runs code built for it. */
  tracing = lw_tracing_start (lag.tid);

  while (atomic_load (&slot->seq) == busy_seq && !atomic_load (&watch->stopping))
    {
      int64_t next_sample_ns;

      lw_watcher_sample (watch, &lag);
      if (!lag.input_pending && atomic_load (&slot->seq) == busy_seq)
        lag.input_pending = lw_watcher_input_pending (watch);
      {
        /* Counted only while the lag provably goes on: once it ends, the
         * loop's ordinary iterations prepare the sentinel too. */
        unsigned prepares = atomic_load (&slot->sentinel_prepares);

        if (atomic_load (&slot->seq) == busy_seq)
          lag.prepares = prepares;
      }
      if (lag.first_result == LW_CAPTURE_THREAD_GONE && lag.caught_ns < 0)
        {
          g_debug ("the thread that ran the context exited while out of poll; not a lag");
          dropped = TRUE;
          break;
        }
      now_ns = lw_clock_now_ns ();
      if (!lag.hang_written && now_ns - since_ns >= hang_ns && atomic_load (&slot->seq) == busy_seq)
        {
          lw_watcher_report_hang (watch, &lag, now_ns);
          now_ns = lw_clock_now_ns ();
        }
      if (now_ns >= next_check_ns)
        {
          next_check_ns = now_ns + LW_LIVENESS_PERIOD_NS;
          if (lw_threadinfo_state (lag.tid) == LW_THREAD_GONE && atomic_load (&slot->seq) == busy_seq)
            {
              g_debug ("the thread that ran the context exited during a lag; dropped");
              dropped = TRUE;
              break;
            }
        }
      if (lw_watcher_declined (watch, &lag))
        {
          dropped = TRUE;
          break;
        }
      /* By timer, the handler's post wakes the watcher for each stack. */
      if (lag.by_timer)
        next_sample_ns = MAX (lag.look_at_ns, now_ns + LW_NSEC_PER_MSEC);
      else
        next_sample_ns = MAX (now_ns + lag.interval_ns, now_ns + LW_NSEC_PER_MSEC);
      lw_watcher_sleep (slot, next_sample_ns);
      if (lw_clock_now_ns () - next_sample_ns > LW_OVERSLEEP_NS
          && !lw_watcher_waited_for_cpu (lag.watcher_delay_ns, lw_clock_now_ns () - next_sample_ns,
                                         "the lag is kept"))
        {
          /* The whole process stood still (SIGSTOP, a frozen cgroup): its
           * duration is not the program's doing. */
          g_debug ("the watcher woke far too late during a lag; the process was stopped: dropped");
          dropped = TRUE;
          break;
        }
    }
  /* The last signal's stack, if its handler ran in time: it checked that
   * the loop was still in this busy period. Otherwise it is given up. */
  lw_watcher_stop_timer (watch, &lag);
  lw_watcher_collect (watch, &lag, 0, 0);

  g_source_destroy (lag.sentinel);
  g_source_unref (lag.sentinel);
  end_ns = atomic_load (&slot->lag_end_ns);
  complete = end_ns != 0;
  if (!complete)
    end_ns = lw_clock_now_ns ();
  if (tracing != NULL)
    lw_tracing_stop (tracing, since_ns, end_ns);
  if (!dropped && !lw_watcher_excused (watch, &lag))
    {
      report = lw_watcher_build_report (watch, &lag, "lag", end_ns, complete,
                                        lw_watcher_lag_cpu (watch, &lag, end_ns));
      lw_watcher_whose_fault (watch, &lag, report, end_ns);
      atomic_fetch_add (&watch->n_lags, 1);
      report->tracing = g_steal_pointer (&tracing);
      lw_reporter_submit (watch->reporter, report,
                          lag.hang_written ? LW_REPORT_LAG_AFTER_HANG : LW_REPORT_LAG);
    }
  else if (lag.hang_written)
    {
      report = lw_report_new ();
      report->id = g_strdup (lag.id);
      lw_reporter_submit (watch->reporter, report, LW_REPORT_DROPPED_AFTER_HANG);
    }
  lw_tracing_free (tracing);
  g_free (lag.wchan);
  g_free (lag.id);
}

/* Watcher thread. Notes the first sight of a busy period: when, and the
 * thread's CPU clock then (for cpu_ms). */
static void
lw_watcher_observe (LagWatch *watch, uint64_t seq, int64_t now_ns)
{
  if (watch->observed_seq == seq)
    return;
  watch->observed_seq = seq;
  watch->observed_at_ns = now_ns;
  watch->observed_cpu_ns = lw_threadinfo_cpu_ns (atomic_load (&watch->slot->loop_tid));
  watch->retimed_since_ns = 0;
  watch->observed_delay_ns = lw_threadinfo_run_delay_ns (atomic_load (&watch->slot->loop_tid));
}

/* Watcher thread. Makes its wake-ups prompt. No timer slack: it sleeps to
 * a deadline at most once per busy period (and never while the loop
 * sleeps), so precision costs nothing. A short scheduler slice: on EEVDF
 * kernels (Linux 6.12 and later) a thread woken onto the CPU of a busy one
 * then preempts it at once, rather than after the busy thread's protected
 * slice. Measured with both threads on one CPU (taskset -c 0, 100 lags):
 * detection latency p90 3.5-3.9 ms without, 0.3-0.4 ms with. Only under
 * SCHED_OTHER (a real-time policy inherited from the program is better
 * still, and kept); best effort: older kernels refuse a slice for
 * SCHED_OTHER, and then nothing changes. */
static void
lw_watcher_tune_wakeups (void)
{
  /* The kernel's struct sched_attr (its header clashes with <sched.h>). */
  struct
  {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t  sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
  } attr;

  prctl (PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (sched_getscheduler (0) != SCHED_OTHER)
    return;
  memset (&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_OTHER;
  errno = 0;
  attr.sched_nice = getpriority (PRIO_PROCESS, 0);  /* this thread's: kept */
  if (errno != 0)
    return;
  attr.sched_runtime = LW_WATCHER_SLICE_NS;
  if (syscall (SYS_sched_setattr, 0, &attr, 0U) != 0)
    g_debug ("the kernel keeps the watcher's default scheduler slice: %s", g_strerror (errno));
}

/* The watcher thread. */
static gpointer
lw_watcher_main (gpointer data)
{
  LagWatch *watch = data;
  LwSlot *slot = watch->slot;
  uint64_t settled_seq = 0;  /* a busy period already dealt with */
  uint64_t quiet_seq = 0;    /* a poll seen at the last look, to park on if it lasts */
  /* When the watcher should have been running at the latest: the deadline
   * it slept to; (LW_WAKE_AT_BUSY_START) the start of the busy period that
   * the loop's poll transition posted it for; or when it last ran (its own
   * creation: it may first get the CPU late, after the process was
   * stopped). */
  int64_t expected_wake_ns = watch->started_ns;

  lw_threadinfo_own_enter ();
  if (atomic_load (&lw_watcher_test_start_delay_ns) > 0)
    {
      struct timespec delay = lw_clock_timespec (atomic_load (&lw_watcher_test_start_delay_ns));

      nanosleep (&delay, NULL);
    }
  lw_watcher_tune_wakeups ();
  /* Watching from here on: a busy period, begun before or after, is timed
   * from the loop's own stamp (busy_since). Not late: it runs now. Posted
   * before the unwinder is made, which may dlopen() libunwind: an attach
   * made under the loader's lock (from a library constructor) must not
   * wait for it. */
  expected_wake_ns = lw_clock_now_ns ();
  sem_post (&watch->watching);
  watch->unwinder = lw_unwinder_new ();
  watch->profile = lw_profile_new (LW_SAMPLE_BUDGET);
  watch->python = lw_python_new ();
  lw_watcher_note_run_delay (watch, lw_clock_now_ns ());  /* the first baseline */
  while (!atomic_load (&watch->stopping))
    {
      uint64_t seq = atomic_load (&slot->seq);
      int64_t since_ns, deadline_ns, now_ns;

      if (seq == 0 || !(seq & 1) || atomic_load (&watch->paused))
        {
          /* In poll. Park until the next poll exit only once the loop has
           * sat in this same poll since the last look: a loop that keeps
           * polling briefly would otherwise post a re-parked watcher at
           * nearly every iteration. Else look again after a threshold; a
           * busy period that starts meanwhile is still caught at its own
           * start + threshold (the watcher then sleeps until that). */
          lw_watcher_maybe_write_stats (watch);
          if (seq == quiet_seq || seq == 0 || atomic_load (&watch->paused))
            {
              lw_watcher_park (watch, seq, LW_WAKE_ON_BUSY, -1);
              expected_wake_ns = LW_WAKE_AT_BUSY_START;
            }
          else
            {
              quiet_seq = seq;
              expected_wake_ns = lw_clock_now_ns ()
                                 + (int64_t) atomic_load (&watch->threshold_ms) * LW_NSEC_PER_MSEC;
              lw_watcher_sleep (slot, expected_wake_ns);
            }
          continue;
        }
      if (seq == settled_seq)
        {
          lw_watcher_park (watch, seq, LW_WAKE_ON_IDLE, -1);
          expected_wake_ns = LW_WAKE_AT_BUSY_START;
          continue;
        }

      now_ns = lw_clock_now_ns ();
      lw_watcher_observe (watch, seq, now_ns);
      since_ns = lw_clock_ticks_to_ns (atomic_load (&slot->busy_since));
      if (expected_wake_ns == LW_WAKE_AT_BUSY_START)
        expected_wake_ns = since_ns;
      /* Woken far later than it should have: the process was stopped (its
       * time is not the program's: time this busy period again from now),
       * or the watcher waited for a CPU (the machine is busy: the busy
       * period's time stands). */
      if (now_ns - expected_wake_ns > LW_OVERSLEEP_NS
          && !lw_watcher_waited_for_cpu (watch->delay_baseline_ns, now_ns - expected_wake_ns,
                                         "the busy period's time stands"))
        {
          g_debug ("the watcher woke %.0f ms late; timing the busy period again",
                   (double) (now_ns - expected_wake_ns) / LW_NSEC_PER_MSEC);
          watch->retimed_since_ns = now_ns;
        }
      lw_watcher_note_run_delay (watch, now_ns);
      since_ns = MAX (since_ns, watch->retimed_since_ns);
      deadline_ns = since_ns + (int64_t) atomic_load (&watch->threshold_ms) * LW_NSEC_PER_MSEC;
      if (now_ns < deadline_ns)
        {
          int64_t end_ns;

          /* Have the loop stamp the poll entry that ends this busy
           * period: if the watcher then wakes late, a lag that ended
           * meanwhile is still known. */
          expected_wake_ns = deadline_ns;
          atomic_store (&slot->entry_seq, 0);
          lw_watcher_park (watch, seq, LW_STAMP_ENTRY,
                           deadline_ns + atomic_load (&watch->test_oversleep_ns));
          if (atomic_load_explicit (&slot->entry_seq, memory_order_acquire) == seq + 1)
            {
              end_ns = lw_clock_ticks_to_ns (atomic_load_explicit (&slot->entry_ticks,
                                                                   memory_order_relaxed));
              /* (A watcher far later still was stopped with the whole
               * process: nothing it measured meanwhile is trusted.) */
              if (end_ns >= deadline_ns && lw_clock_now_ns () - deadline_ns <= LW_OVERSLEEP_NS)
                lw_watcher_report_unseen (watch, seq, since_ns, end_ns);
            }
          continue;
        }

      /* Ask to be woken at the next poll entry, then confirm the loop is
       * still in the same busy period: from here on its end cannot be missed. */
      atomic_store (&slot->lag_end_ns, 0);
      atomic_fetch_or (&slot->wake_flags, LW_WAKE_ON_IDLE);
      if (atomic_load (&slot->seq) == seq)
        lw_watcher_follow_lag (watch, seq, since_ns);
      atomic_fetch_and (&slot->wake_flags, ~(unsigned) LW_WAKE_ON_IDLE);
      settled_seq = seq;
      expected_wake_ns = lw_clock_now_ns ();
    }

  lw_watcher_write_stats (watch);
  lw_profile_free (g_steal_pointer (&watch->profile));
  lw_unwinder_free (g_steal_pointer (&watch->unwinder));
  lw_python_free (g_steal_pointer (&watch->python));
  lw_capture_forget_thread (slot);
  return NULL;
}

/* The attaching thread. Waits until the new watcher thread watches: a
 * thread is not running the moment it is created, and on a loaded machine
 * its first CPU can come hundreds of milliseconds later (measured up to
 * 440 ms in the stress test). A lag that began after attach and ended
 * before that first look was never seen, and never said. Bounded: past the
 * wait, attach returns anyway, and says so. */
static void
lw_watcher_wait_watching (LagWatch *watch)
{
  struct timespec deadline = lw_clock_timespec (lw_clock_now_ns () + LW_WATCHER_START_WAIT_NS);

  while (sem_clockwait (&watch->watching, CLOCK_MONOTONIC, &deadline) != 0)
    if (errno != EINTR)
      {
        g_debug ("the watcher thread has not run %d ms after attach: a lag that ends before it "
                 "does goes unseen", (int) (LW_WATCHER_START_WAIT_NS / LW_NSEC_PER_MSEC));
        return;
      }
}

gboolean
lw_watcher_start (LagWatch *watch, GError **error)
{
  sigset_t all, saved;

  watch->snapshot = lw_snapshot_new (LW_STACK_COPY_BYTES);
  watch->ips = g_new0 (uintptr_t, watch->config->max_frames);
  lw_python_init ();
  watch->started_ns = lw_clock_now_ns ();
  sem_init (&watch->watching, 0, 0);
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  watch->thread = g_thread_try_new ("lagwatch", lw_watcher_main, watch, error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (watch->thread == NULL)
    {
      sem_destroy (&watch->watching);
      return FALSE;
    }
  lw_watcher_wait_watching (watch);
  return TRUE;
}

void
lw_watcher_stop (LagWatch *watch)
{
  /* Stopped already: at exit, before a detach from a later exit handler. */
  if (watch->thread == NULL)
    return;
  atomic_store (&watch->stopping, TRUE);
  sem_post (&watch->slot->wake);
  g_thread_join (g_steal_pointer (&watch->thread));
  sem_destroy (&watch->watching);
}
