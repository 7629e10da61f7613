/* lw-watcher-late.h: a watcher that woke late: stopped, or kept off the CPU
 *
 * The watcher sleeps to deadlines; woken far later than it asked, either the
 * process stood still (SIGSTOP, a frozen cgroup), or the watcher was
 * runnable and a busy machine or its cgroup's quota kept it off the CPU. Its
 * own run-queue delay and its cgroup's throttled time tell which, against a
 * baseline read at most every LW_DELAY_BASELINE_PERIOD_NS while it is awake.
 * Watcher thread only.
 */
#pragma once

#include "lw-watch-private.h"

G_BEGIN_DECLS

/* A watcher that wakes this much later than it asked was not running: the
 * process was stopped (SIGSTOP, a frozen cgroup), or the machine or the
 * cgroup's quota kept it off the CPU (lw_watcher_stood_still tells which).
 * Far above any scheduling delay of a live process, far below a
 * human-noticeable stop: shorter stops are not told from the lag. */
#define LW_OVERSLEEP_NS         (250 * LW_NSEC_PER_MSEC)
/* One of the watcher's sleeps: when it began, the time it should have
 * ended by (its deadline; -1 when posted by the loop: then by the start of
 * the busy period it was posted for), and the loop thread's CPU clock at
 * its start (-1 unknown), to tell afterwards how long the process stood
 * still if the watcher woke far too late (lw_watcher_stood_still). */
typedef struct
{
  int64_t from_ns;
  int64_t deadline_ns;
  int64_t loop_cpu_ns;
} LwNap;

/* Watcher thread. The whole process stood still for how long (0: it did
 * not), woken @late_ns (over LW_OVERSLEEP_NS) late at @now_ns from @nap. */
int64_t  lw_watcher_stood_still    (LagWatch    *watch,
                                    const LwNap *nap,
                                    int64_t      late_ns,
                                    int64_t      now_ns);

/* Watcher thread. What lw_watcher_stood_still() needs of a sleep about to
 * begin, to @deadline_ns (-1: until posted). */
LwNap    lw_watcher_nap            (LagWatch    *watch,
                                    int64_t      deadline_ns,
                                    gboolean     loop_cpu);

/* Watcher thread. Refreshes the baseline, at most once per
 * LW_DELAY_BASELINE_PERIOD_NS. */
void     lw_watcher_note_run_delay (LagWatch    *watch,
                                    int64_t      now_ns);

/* Watcher thread. TRUE when it was runnable, kept off the CPU, for half or
 * more of the @late_ns since @from_ns. */
gboolean lw_watcher_kept_off_cpu   (LagWatch    *watch,
                                    int64_t      from_ns,
                                    int64_t      late_ns);

G_END_DECLS
