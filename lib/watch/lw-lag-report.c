/* lw-lag-report.c: a lag's report, from what the watcher measured */
#include "lw-lag.h"

#include <poll.h>
#include <unistd.h>

#include "lw-cgroup.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-proc.h"
#include "lw-stats-read.h"
#include "lw-threadinfo.h"

/* Watcher thread. An unnamed source's callback, for the reporting thread
 * to name (its function's symbol) unless a hook named it already. */
static void
lw_lag_set_source_callback (LagWatchReport *report, const LwDispatchInfo *dispatch)
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
lw_lag_frames (const uintptr_t *ips, guint n_ips)
{
  LwFrame *frames = g_new0 (LwFrame, MAX (n_ips, 1));

  for (guint i = 0; i < n_ips; i++)
    frames[i].ip = ips[i];
  return frames;
}

/* The most a hang's snapshot of the other threads may take (see
 * lw_lag_snapshot_threads()). */
#define LW_THREADS_BUDGET_NS    (2000 * LW_NSEC_PER_MSEC)

/* Watcher thread. Stacks of every other thread of the process (a hang's
 * lock holder shows up there), within LW_THREADS_BUDGET_NS: a thread that
 * runs answers the signal only once it gets a CPU, which with hundreds of
 * busy threads on two cores takes a scheduler round each, and the lag is
 * not sampled meanwhile. Every thread without a stack says why.
 * lagwatch's own threads are left out. */
static void
lw_lag_snapshot_threads (LagWatch *watch, LwLag *lag, LagWatchReport *report)
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
      thread.thread_id = (int) tid;
      state = lw_threadinfo_state_and_name (tid, &thread.thread_name);
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
        thread.stack_error = g_strdup (lw_sampler_capture_error (result));
      thread.frames = lw_lag_frames (watch->ips, n);
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
lw_lag_add_timeline (LagWatch *watch, LwLag *lag, LagWatchReport *report)
{
  guint n = lw_profile_n_samples (watch->profile);
  g_autoptr(GHashTable) index = g_hash_table_new (NULL, NULL);  /* stack -> its index + 1 */

  report->sampled = g_new0 (LwReportStack, MAX (n, 1));
  report->timeline = g_new0 (LwReportSample, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    {
      int64_t taken_ns;
      gboolean asleep;
      const LwProfileStack *stack = lw_profile_sample (watch->profile, i, &taken_ns, &asleep);
      guint at = GPOINTER_TO_UINT (g_hash_table_lookup (index, stack));

      if (at == 0)
        {
          LwReportStack *sampled = &report->sampled[report->n_sampled];

          sampled->samples = stack->count;
          sampled->truncated = stack->truncated;
          sampled->lang_missing = stack->lang_missing;
          sampled->frames = lw_lag_frames (stack->ips, stack->n_ips);
          sampled->n_frames = stack->n_ips;
          at = ++report->n_sampled;
          g_hash_table_insert (index, (gpointer) stack, GUINT_TO_POINTER (at));
        }
      report->timeline[i].offset_ns = taken_ns - lag->since_ns;
      report->timeline[i].stack = at - 1;
      report->timeline[i].asleep = asleep;
    }
  report->n_timeline = n;
  report->sample_interval_ns = (int64_t) watch->config->sample_ms * LW_NSEC_PER_MSEC;
  report->calls_min_ns = (int64_t) watch->config->calls_min_ms * LW_NSEC_PER_MSEC;
  report->calls_depth = watch->config->calls_depth;
}

/* Watcher thread. The report of @lag as it stands at @end_ns, its frames
 * holding addresses only (the reporting thread does the rest). */
static LagWatchReport *
lw_lag_build_report (LagWatch *watch, LwLag *lag, const char *event, int64_t end_ns,
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
  /* A lag cut short by the watch's end; a hang record (the lag goes on,
   * the watch too) has none. */
  if (!complete && g_str_equal (event, "lag"))
    report->stopped_by = atomic_load (&watch->exiting) ? "exit" : "detach";
  report->caught_ms = lag->sampler.caught_ns >= 0 ? (double) (lag->sampler.caught_ns - lag->since_ns) / LW_NSEC_PER_MSEC : -1;
  if (lag->sampler.caught_ns >= 0)
    report->stack_method = g_strdup (lag->sampler.via_signal ? "signal" : "proc");
  else
    report->stack_error = g_strdup (lw_sampler_capture_error (lag->sampler.first_result));
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
      report->stacks[i].lang_missing = stack->lang_missing;
      report->stacks[i].at_limit = stack->truncated && stack->n_ips >= watch->config->max_frames;
      report->stacks[i].frames = lw_lag_frames (stack->ips, stack->n_ips);
      report->stacks[i].n_frames = stack->n_ips;
    }
  report->source_known = lag->dispatch_known;
  if (lag->dispatch_known && lag->dispatch.dispatching)
    {
      report->priority = lag->dispatch.priority;
      if (lag->dispatch.named)
        report->source = g_strdup (lag->dispatch.name);
      lw_lag_set_source_callback (report, &lag->dispatch);
    }
  report->dispatching = lag->dispatch_known && lag->dispatch.dispatching;
  report->prepares = lag->prepares;
  report->cpu_ms = cpu_ns >= 0 ? (double) cpu_ns / LW_NSEC_PER_MSEC : -1;
  lw_frames_fill_report (watch->frames, report, end_ns - lag->since_ns);
  if (lag->sampler.caught_ns >= 0)
    {
      report->thread_state = lw_threadinfo_state_name (lag->sampler.state);
      report->syscall = lag->sampler.syscall_nr >= 0 ? lw_threadinfo_syscall_name (lag->sampler.syscall_nr) : NULL;
      report->wchan = g_strdup (lag->sampler.wchan);
    }
  report->start_ns = lag->since_ns;
  lw_lag_add_timeline (watch, lag, report);
  return report;
}

/* Watcher thread. CPU time the loop thread used from the lag's start to now:
 * measured from the watcher's first sight of the busy period, scaled up to
 * the part before it (usually microseconds: the wrapper wakes a parked
 * watcher at once). */
static int64_t
lw_lag_cpu (LagWatch *watch, LwLag *lag, int64_t now_ns)
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

/* Watcher thread. The loop thread's run-queue delay from the lag's start
 * to @now_ns (how long it was runnable but not running: waiting for a
 * CPU), measured from the watcher's first sight of the busy period and
 * scaled up to the part before it, as lw_lag_cpu() does. -1
 * unknown. */
static int64_t
lw_lag_run_delay (LagWatch *watch, LwLag *lag, int64_t now_ns)
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
gboolean
lw_lag_input_pending (LagWatch *watch)
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

        g_snprintf (path, sizeof path, "%s/fd/%d", lw_proc_self (), fds[i].fd);
        len = readlink (path, target, sizeof target - 1);
        if (len >= 0)
          target[len] = '\0';
        if (len < 0 || !g_str_equal (target, "anon_inode:[eventfd]"))
          return TRUE;
      }
  return FALSE;
}

/* Watcher thread. The time @lag's cgroup was throttled from the lag's
 * start to @now_ns, measured from the lag's begin and scaled up to the part
 * before it, as lw_lag_cpu() does. -1 unknown. */
static int64_t
lw_lag_throttled (LagWatch *watch, LwLag *lag, int64_t now_ns)
{
  int64_t throttled_now;

  if (lag->throttled_begin_ns < 0 || now_ns <= lag->throttled_at_ns
      || (throttled_now = lw_cgroup_throttled_ns (watch->cgroup)) < lag->throttled_begin_ns)
    return -1;
  return (int64_t) ((double) (throttled_now - lag->throttled_begin_ns) * (double) (now_ns - lag->since_ns)
                    / (double) (now_ns - lag->throttled_at_ns));
}

/* Watcher thread. Fills in whose fault @lag was, as of @end_ns: how long
 * the process stood still (stopped), how long its cgroup's CPU quota held
 * it back (throttled), the time the thread waited for a CPU beyond that
 * ("most" of the lag: half or more: the machine was busy) and whether
 * input was waiting. */
static void
lw_lag_whose_fault (LagWatch *watch, LwLag *lag, LagWatchReport *report, int64_t end_ns)
{
  int64_t delay_ns = lw_lag_run_delay (watch, lag, end_ns);
  int64_t throttled_ns = lw_lag_throttled (watch, lag, end_ns);
  double not_running_ms;

  report->stopped_ms = (double) lag->stopped_ns / LW_NSEC_PER_MSEC;
  /* The part of the lag the thread neither ran nor stood still: what
   * waiting for a CPU and throttling may account for at most (both are
   * measured a little past the lag's end, and scaled). A throttled thread
   * also shows as waiting for a CPU: that part is the quota's, not the
   * machine's. */
  not_running_ms = MAX (report->duration_ms - MAX (report->cpu_ms, 0) - report->stopped_ms, 0);
  report->throttled_ms = throttled_ns >= 0 ? MIN ((double) throttled_ns / LW_NSEC_PER_MSEC, not_running_ms) : -1;
  report->run_delay_ms = delay_ns >= 0 ? MAX (MIN ((double) delay_ns / LW_NSEC_PER_MSEC, not_running_ms)
                                              - MAX (report->throttled_ms, 0), 0)
                                       : -1;
  report->cpu_starved = delay_ns >= 0 && report->duration_ms > 0
                        && report->run_delay_ms >= report->duration_ms / 2;
  report->input_pending = lag->input_pending;
}

LagWatchReport *
lw_lag_report (LagWatch *watch, LwLag *lag, const char *event, int64_t end_ns, gboolean complete)
{
  LagWatchReport *report = lw_lag_build_report (watch, lag, event, end_ns, complete,
                                                lw_lag_cpu (watch, lag, end_ns));

  lw_lag_whose_fault (watch, lag, report, end_ns);
  if (g_str_equal (event, "hang"))
    lw_lag_snapshot_threads (watch, lag, report);
  return report;
}

LagWatchReport *
lw_lag_report_unseen (LagWatch *watch, LwLag *lag, int64_t end_ns)
{
  return lw_lag_build_report (watch, lag, "lag", end_ns, TRUE, -1);
}
