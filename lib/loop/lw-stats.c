/* lw-stats.c: the latency profile: counting (loop thread); lw-stats-read.c reads it */
#include "lw-stats.h"

#include <glib.h>
#include <string.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-clock.h"

const int64_t lw_stats_limit_ns[LW_STATS_N_BUCKETS - 1] = {
  1 * LW_NSEC_PER_MSEC, 2 * LW_NSEC_PER_MSEC, 4 * LW_NSEC_PER_MSEC, 8 * LW_NSEC_PER_MSEC,
  LW_NSEC_PER_SEC / 60, LW_NSEC_PER_SEC / 30, 50 * LW_NSEC_PER_MSEC, 100 * LW_NSEC_PER_MSEC,
  250 * LW_NSEC_PER_MSEC, 500 * LW_NSEC_PER_MSEC, 1 * LW_NSEC_PER_SEC, 2500 * LW_NSEC_PER_MSEC,
  5 * LW_NSEC_PER_SEC, 10 * LW_NSEC_PER_SEC,
};

/* Any thread, while the slot is not in use. */
void
lw_stats_reset (LwStatsCounters *stats, uint32_t *cutoff_ticks)
{
  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    atomic_store (&stats->counts[i], 0);
  for (int i = 0; i < LW_STATS_N_BUCKETS - 1; i++)
    stats->limit_ticks[i] = lw_clock_span_to_ticks (lw_stats_limit_ns[i]);
  atomic_store (&stats->longest_ticks, 0);
  atomic_store (&stats->n_poll_fds, 0);
  /* 1 ms of TSC is far under 2^32 ticks (4.3 s at 1 GHz). */
  *cutoff_ticks = lw_clock_tsc ? (uint32_t) MIN (stats->limit_ticks[0], (int64_t) UINT32_MAX) : 0;
}

/* Loop thread. A single writer: relaxed load and store, no locked
 * instruction. */
static inline void
lw_stats_bump (_Atomic uint64_t *counter)
{
  atomic_store_explicit (counter, atomic_load_explicit (counter, memory_order_relaxed) + 1,
                         memory_order_relaxed);
}

/* Loop thread. */
void
lw_stats_note_busy (LwStatsCounters *stats, int64_t busy_ticks)
{
  int bucket = 0;

  while (bucket < LW_STATS_N_BUCKETS - 1 && busy_ticks >= stats->limit_ticks[bucket])
    bucket++;
  /* Bucket 0 is the iterations (seq) less the others: not counted here. */
  if (bucket > 0)
    lw_stats_bump (&stats->counts[bucket]);
  if (busy_ticks > atomic_load_explicit (&stats->longest_ticks, memory_order_relaxed))
    atomic_store_explicit (&stats->longest_ticks, busy_ticks, memory_order_relaxed);
}

/* Loop thread. */
void
lw_stats_note_fds (LwStatsCounters *stats, const void *fds, unsigned nfds)
{
  const GPollFD *records = fds;
  unsigned n = MIN (nfds, LW_STATS_POLL_FDS);

  for (unsigned i = 0; i < n; i++)
    atomic_store_explicit (&stats->poll_fds[i],
                           ((uint64_t) (uint32_t) records[i].fd << 16) | (uint16_t) records[i].events,
                           memory_order_relaxed);
  atomic_store_explicit (&stats->n_poll_fds, n, memory_order_release);
}
