/* lw-watch-private.h: the watch itself, shared by lagwatch.c and the
 * watcher thread (lw-watcher.c) only
 *
 * The reporting thread does not see it: it gets what it needs through
 * lw-reporter.h (the sinks, the summary, the hang store, and a function that
 * finishes a watch detached from its own callback).
 */
#pragma once

#include <semaphore.h>

#include "lagwatch.h"
#include "lw-cgroup.h"
#include "lw-frames.h"
#include "lw-hang.h"
#include "lw-profile.h"
#include "lw-python.h"
#include "lw-reporter.h"
#include "lw-slot.h"
#include "lw-snapshot.h"
#include "lw-summary.h"
#include "lw-unwind.h"

G_BEGIN_DECLS

struct _LagWatch
{
  LwSlot          *slot;
  LagWatchConfig  *config;           /* resolved: program + environment */
  _Atomic guint    threshold_ms;
  int              signo;            /* 0 when no signal handler could be installed */
  GThread         *thread;
  _Atomic gboolean stopping;
  _Atomic gboolean exiting;          /* stopped by the process's exit, not by detach */
  _Atomic gboolean loop_returned;    /* at exit: the loop thread exits outside any iteration
                                      * of the context (g_main_loop_run returned) */
  LwReporter      *reporter;         /* the reporting thread; owns the sinks and the callback */
  _Atomic gboolean paused;           /* lagwatch_pause() */
  _Atomic guint64  resumed_seq;      /* the loop's seq at the last lagwatch_resume(), 0 none */
  LwSummary       *summary;          /* lags by fingerprint (any thread, locked) */
  LwHangStore     *hangs;            /* NULL when the state directory is unusable */

  int64_t          started_ns;       /* when the watcher thread was created */

  /* Watcher thread only. */
  LwSnapshot      *snapshot;
  LwUnwinder      *unwinder;
  uintptr_t       *ips;
  LwProfile       *profile;
  gboolean         warned_signal_blocked;
  guint            blocked_in_a_row; /* captures that found the loop thread blocking the signal */
  int64_t          delay_baseline_ns;    /* its own run-queue delay, read at delay_baseline_at_ns */
  int64_t          delay_baseline_at_ns; /* when (read first as the watcher starts) */
  int64_t          throttled_baseline_ns; /* its cgroup's throttled time then, -1 unknown */
  int64_t          delay_before_ns;      /* the three above as they were before the last */
  int64_t          throttled_before_ns;  /* refresh (delay_before_at_ns 0: none yet) */
  int64_t          delay_before_at_ns;
  LwCgroup        *cgroup;           /* the process's cgroup (lw-cgroup.h) */
  gboolean         noted_debugger;
  uint64_t         observed_seq;     /* the busy period last seen by the watcher */
  int64_t          observed_at_ns;   /* when it was first seen */
  int64_t          observed_cpu_ns;  /* the thread's CPU clock then, -1 unknown */
  int64_t          observed_stopped_ns; /* how long the process stood still in it before the lag */
  LwFrames        *frames;           /* GTK windows followed, NULL without GTK 4 */
  LwPython        *python;           /* Python frames read at each sample (lw-python.h) */
  GSource         *gjs;              /* lw_gjs_start()'s retry, NULL when none */

  /* Whose fault, and the latency profile's events. */
  int64_t          observed_delay_ns; /* the thread's run-queue delay at first sight, -1 unknown */
  _Atomic guint    n_lags;           /* lags reported (any thread reads) */
  int64_t          stats_written_ns; /* watcher: the last periodic "stats" event, 0 none */
  guint64          stats_written_iterations; /* watcher: the iterations it counted */

  /* Posted by the watcher thread once it watches: lw_watcher_start()
   * waits for it. */
  sem_t            watching;
};

G_END_DECLS
