/* lw-watcher-late.c: a watcher that woke late: stopped, or kept off the CPU */
#include "lw-watcher-late.h"

#include <unistd.h>

#include "lw-cgroup.h"
#include "lw-clock.h"
#include "lw-threadinfo.h"

/* How often, at most, the watcher reads its own run-queue delay and its
 * cgroup's throttled time while it times busy periods: the baseline of
 * lw_watcher_stood_still() then. */
#define LW_DELAY_BASELINE_PERIOD_NS (100 * LW_NSEC_PER_MSEC)

/* Watcher thread. A new baseline for lw_watcher_stood_still(); the one
 * before is kept for lw_watcher_kept_off_cpu(). */
static void
lw_watcher_set_baseline (LagWatch *watch, int64_t delay_ns, int64_t throttled_ns, int64_t now_ns)
{
  watch->delay_before_ns = watch->delay_baseline_ns;
  watch->throttled_before_ns = watch->throttled_baseline_ns;
  watch->delay_before_at_ns = watch->delay_baseline_at_ns;
  watch->delay_baseline_ns = delay_ns;
  watch->throttled_baseline_ns = throttled_ns;
  watch->delay_baseline_at_ns = now_ns;
}

/* Watcher thread, woken at @now_ns, @late_ns (over LW_OVERSLEEP_NS) after
 * the time it asked for in the sleep begun as @nap says. How long the whole
 * process stood still meanwhile (SIGSTOP, a frozen cgroup), 0 when it did
 * not: when the watcher's own run-queue delay and its cgroup's throttled
 * time grew by half of @late_ns or more since the baseline, it was
 * runnable, kept off the CPU by a busy machine or its quota. Otherwise
 * (also when the kernel keeps no scheduler statistics) the process was
 * stopped, at least for the part of @late_ns they do not explain, at most
 * for the whole sleep less that; less still the loop thread's CPU time in
 * the sleep when it is known (it ran, so it was not stopped then): exact
 * for a thread that computes. Refreshes the baseline. */
int64_t
lw_watcher_stood_still (LagWatch *watch, const LwNap *nap, int64_t late_ns, int64_t now_ns)
{
  int64_t delay_ns = lw_threadinfo_run_delay_ns (gettid ());
  int64_t throttled_ns = lw_cgroup_throttled_ns (watch->cgroup);
  int64_t loop_cpu_ns = lw_threadinfo_cpu_ns (atomic_load (&watch->slot->loop_tid));
  int64_t explained_ns = 0, stopped_ns;

  if (watch->delay_baseline_ns >= 0 && delay_ns >= watch->delay_baseline_ns)
    explained_ns += delay_ns - watch->delay_baseline_ns;
  if (watch->throttled_baseline_ns >= 0 && throttled_ns >= watch->throttled_baseline_ns)
    explained_ns += throttled_ns - watch->throttled_baseline_ns;
  lw_watcher_set_baseline (watch, delay_ns, throttled_ns, now_ns);
  if (explained_ns >= late_ns / 2)
    {
      g_debug ("the watcher woke %.0f ms late, kept off the CPU (a busy machine, its cgroup's quota)",
               (double) late_ns / LW_NSEC_PER_MSEC);
      return 0;
    }
  stopped_ns = now_ns - nap->from_ns - explained_ns;
  if (nap->loop_cpu_ns >= 0 && loop_cpu_ns >= nap->loop_cpu_ns)
    stopped_ns -= loop_cpu_ns - nap->loop_cpu_ns;
  stopped_ns = MAX (stopped_ns, late_ns - explained_ns);
  g_debug ("the watcher woke %.0f ms late: the process stood still for %.0f ms",
           (double) late_ns / LW_NSEC_PER_MSEC, (double) stopped_ns / LW_NSEC_PER_MSEC);
  return stopped_ns;
}

/* Watcher thread, about to sleep until @deadline_ns (-1: until posted).
 * What lw_watcher_stood_still() needs to know of the sleep. @loop_cpu:
 * whether to read the loop thread's CPU clock (only while the loop is
 * busy: it is what tells a stop from the loop's own work). */
LwNap
lw_watcher_nap (LagWatch *watch, int64_t deadline_ns, gboolean loop_cpu)
{
  LwNap nap = { lw_clock_now_ns (), deadline_ns, -1 };

  if (loop_cpu)
    nap.loop_cpu_ns = lw_threadinfo_cpu_ns (atomic_load (&watch->slot->loop_tid));
  return nap;
}

/* Watcher thread, awake anyway (and once as it starts). Refreshes the
 * baseline of its own run-queue delay, at most once per
 * LW_DELAY_BASELINE_PERIOD_NS (a /proc read; none while the loop idles, as
 * the watcher sleeps then). */
void
lw_watcher_note_run_delay (LagWatch *watch, int64_t now_ns)
{
  if (now_ns - watch->delay_baseline_at_ns < LW_DELAY_BASELINE_PERIOD_NS)
    return;
  lw_watcher_set_baseline (watch, lw_threadinfo_run_delay_ns (gettid ()),
                           lw_cgroup_throttled_ns (watch->cgroup), now_ns);
}

/* Watcher thread. TRUE when the watcher was runnable and kept off the CPU
 * (a busy machine, its cgroup's quota) for half or more of the @late_ns
 * since @from_ns, by its own run-queue delay and its cgroup's throttled
 * time since the latest baseline taken by then (else the one before). With
 * none taken by then (@from_ns before the watcher's first), its whole
 * run-queue delay: a thread's starts at 0 when it is created, and it is
 * runnable from then until it first runs; its cgroup's throttled time has
 * no such start and is left out. A watcher that slept meanwhile (stopped
 * with the whole process, or alone by a tracer), or where the kernel keeps
 * no scheduler statistics: FALSE. */
gboolean
lw_watcher_kept_off_cpu (LagWatch *watch, int64_t from_ns, int64_t late_ns)
{
  gboolean current = watch->delay_baseline_at_ns <= from_ns;
  gboolean before = !current && watch->delay_before_at_ns > 0;
  int64_t base_delay_ns = current ? watch->delay_baseline_ns : before ? watch->delay_before_ns : 0;
  int64_t base_throttled_ns = current ? watch->throttled_baseline_ns : before ? watch->throttled_before_ns : -1;
  int64_t delay_ns = lw_threadinfo_run_delay_ns (gettid ());
  int64_t throttled_ns = lw_cgroup_throttled_ns (watch->cgroup);
  int64_t explained_ns = 0;

  if (late_ns <= 0)
    return TRUE;
  if (base_delay_ns < 0 || delay_ns < base_delay_ns)
    return FALSE;
  explained_ns = delay_ns - base_delay_ns;
  if (base_throttled_ns >= 0 && throttled_ns >= base_throttled_ns)
    explained_ns += throttled_ns - base_throttled_ns;
  return explained_ns >= late_ns / 2;
}

