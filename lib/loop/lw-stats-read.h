/* lw-stats-read.h: reading the latency profile (any thread) */
#pragma once

#include "lagwatch.h"
#include "lw-slot.h"
#include "lw-stats.h"

G_BEGIN_DECLS

struct _LagWatchStats
{
  guint64  iterations;
  guint64  counts[LW_STATS_N_BUCKETS];
  double   busy_ms;
  double   longest_ms;
  guint    lags;
  guint64  missed[LW_STATS_N_BUCKETS];  /* lags seen only after they ended, by bucket */
};

/* Any thread. The profile of @slot's watch as it stands, with @lags the
 * lags reported so far. */
LagWatchStats *lw_stats_snapshot (LwSlot *slot, guint lags);

/* Any thread. The "stats" event as one JSON object, no newline. */
char *lw_stats_to_json (const LagWatchStats *stats);

/* Any thread. "12,340 iterations, p99 4 ms, 37 over 16.7 ms, 2 lags". */
char *lw_stats_to_text (const LagWatchStats *stats);

/* Any thread. "3 lags were seen only after they ended, with no report: 2
 * of 16.7-33.3 ms, 1 of 50-100 ms"; NULL when none was. */
char *lw_stats_missed_to_text (const LagWatchStats *stats);

G_END_DECLS
