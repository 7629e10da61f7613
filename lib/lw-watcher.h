/* lw-watcher.h: the watch, and the thread that watches
 *
 * One watcher thread per watch. While the loop sleeps in poll the watcher
 * sleeps on its semaphore with no timeout (no wake-up while the app idles).
 * When the loop leaves poll, the wrapper wakes it; it then sleeps until
 * busy_since + threshold. If the loop is still in the same busy period at
 * that deadline, that is a lag: it takes the stack at once, waits for the
 * loop's next poll entry (which stamps the lag's end and wakes it), and
 * reports the lag with its true duration. While it sleeps to a deadline it
 * has the wrapper stamp the poll entry that ends that busy period, so a lag
 * that ends before a late wake-up is still reported (without a stack).
 * After the first stack, a timer on the loop thread's CPU clock takes the
 * samples (lw-capture.h): the watcher wakes when the handler posts one, or
 * when none came for an interval and a half, to look at a sleeping thread
 * through /proc. Where no such timer can be used, each round collects the
 * stack the previous round's signal took, then sends the next.
 */
#pragma once

#include "lagwatch.h"
#include "lw-hang.h"
#include "lw-profile.h"
#include "lw-reporter.h"
#include "lw-sink.h"
#include "lw-summary.h"
#include "lw-slot.h"
#include "lw-snapshot.h"
#include "lw-unwind.h"

G_BEGIN_DECLS

struct _LagWatch
{
  LwSlot          *slot;
  LagWatchConfig  *config;           /* resolved: program + environment */
  _Atomic guint    threshold_ms;
  int              signo;            /* 0 when no signal handler could be installed */
  LwSinks         *sinks;
  GThread         *thread;
  _Atomic gboolean stopping;
  _Atomic gboolean self_free;        /* detached from its own report callback */
  LwReporter      *reporter;         /* the reporting thread */
  _Atomic gboolean paused;           /* lagwatch_pause() */
  LwSummary       *summary;          /* lags by fingerprint (any thread, locked) */
  LwHangStore     *hangs;            /* NULL when the state directory is unusable */

  GRecMutex          report_lock;    /* guards the callback (recursive: it may reset itself) */
  LagWatchReportFunc report_func;
  gpointer           report_data;
  GDestroyNotify     report_destroy;

  int64_t          started_ns;       /* when the watcher thread was created */
  /* Tests only (tests/test-watcher.c): added to each sleep to a busy
   * period's deadline, as an idle CPU or a loaded machine may wake the
   * watcher late. 0 otherwise. */
  _Atomic int64_t  test_oversleep_ns;
  /* Tests and bench only: sample every lag by explicit signals, as where
   * no CPU-time timer can be used. FALSE otherwise. */
  _Atomic gboolean explicit_sampling;

  /* Watcher thread only. */
  LwSnapshot      *snapshot;
  LwUnwinder      *unwinder;
  uintptr_t       *ips;
  LwProfile       *profile;
  gboolean         warned_signal_blocked;
  gboolean         noted_debugger;
  uint64_t         observed_seq;     /* the busy period last seen by the watcher */
  int64_t          observed_at_ns;   /* when it was first seen */
  int64_t          observed_cpu_ns;  /* the thread's CPU clock then, -1 unknown */
  int64_t          retimed_since_ns; /* restart of its timing after an oversleep, 0 none */

  /* Issue 15: whose fault, and the latency profile's events. */
  int64_t          observed_delay_ns; /* the thread's run-queue delay at first sight, -1 unknown */
  _Atomic guint    n_lags;           /* lags reported (any thread reads) */
  int64_t          stats_written_ns; /* watcher: the last periodic "stats" event, 0 none */
  guint64          stats_written_iterations; /* watcher: the iterations it counted */
};

/* Any thread. Starts the watcher thread of @watch (all signals blocked in
 * it, so the program's process-wide signals never land there). The
 * reporting thread must be running. */
gboolean lw_watcher_start (LagWatch *watch,
                           GError  **error);

/* Any thread but the watcher's own (the watcher never runs program code).
 * Asks the watcher to stop, and waits. A lag in progress is handed to the
 * reporting thread as incomplete. */
void     lw_watcher_stop (LagWatch *watch);

/* Provided by lagwatch.c: releases everything of a stopped watch. Called by
 * lagwatch_detach(), or by the reporting thread itself when the watch was
 * detached from one of its callbacks. */
void     lw_watch_finish (LagWatch *watch);

G_END_DECLS
