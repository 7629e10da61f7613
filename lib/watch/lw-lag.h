/* lw-lag.h: a lag as the watcher follows it, and its report
 *
 * The watcher thread (lw-watcher.c) follows one lag at a time through its
 * states (docs/how-it-works.md, "The watcher's states"); lw-lag-report.c
 * makes its report from what was measured. Watcher thread only.
 */
#pragma once

#include "lw-dispatch.h"
#include "lw-report.h"
#include "lw-sampler.h"
#include "lw-watch-private.h"

G_BEGIN_DECLS

/* Where a lag stands. */
typedef enum
{
  LW_LAG_SAMPLING,  /* caught: sampled until the loop polls again */
  LW_LAG_HANG,      /* past hang_ms: its hang record is out; sampled on */
} LwLagState;

typedef struct
{
  LwLagState       state;
  uint64_t         busy_seq;
  int64_t          since_ns;
  pid_t            tid;
  char            *id;
  guint            threshold_ms;
  gint64           start_wall_us;
  LwSampler        sampler;
  LwDispatchInfo   dispatch;
  gboolean         dispatch_known;
  int64_t          stopped_ns;         /* how long the process stood still (SIGSTOP, freezer) */
  int64_t          throttled_begin_ns; /* its cgroup's throttled time at throttled_at_ns, -1 unknown */
  int64_t          throttled_at_ns;
  GSource         *sentinel;
  unsigned         prepares;           /* sentinel prepares seen while still in the lag */
  gboolean         input_pending;      /* an input fd of the context was seen readable */
} LwLag;

/* The report of @lag as it stands at @end_ns ("lag" or "hang"), its frames
 * holding addresses only (the reporting thread does the rest), with whose
 * fault it was; a hang's also has every other thread's stack. */
LagWatchReport *lw_lag_report            (LagWatch   *watch,
                                          LwLag      *lag,
                                          const char *event,
                                          int64_t     end_ns,
                                          gboolean    complete);

/* The same without a stack or measures: a lag the watcher did not see. */
LagWatchReport *lw_lag_report_unseen     (LagWatch   *watch,
                                          LwLag      *lag,
                                          int64_t     end_ns);

/* TRUE when an input file descriptor of the context (one the loop polls
 * for reading) is readable now. */
gboolean        lw_lag_input_pending     (LagWatch   *watch);

G_END_DECLS
