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
  atomic_store (&stats->lag_ticks, 0);
  atomic_store (&stats->paused, 0);
  atomic_store (&stats->claim, 0);
  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    {
      atomic_store (&stats->missed[i], 0);
      atomic_store (&stats->missed_reported[i], 0);
    }
  /* 1 ms of TSC is far under 2^32 ticks (4.3 s at 1 GHz). */
  *cutoff_ticks = lw_clock_tsc ? (uint32_t) MIN (stats->limit_ticks[0], (int64_t) UINT32_MAX) : 0;
}

/* The counter's only writer (the loop thread for counts and missed, the
 * watcher for missed_reported): relaxed load and store, no locked
 * instruction. */
static inline void
lw_stats_bump (_Atomic uint64_t *counter)
{
  atomic_store_explicit (counter, atomic_load_explicit (counter, memory_order_relaxed) + 1,
                         memory_order_relaxed);
}

/* The claim word's bucket has 4 bits. */
G_STATIC_ASSERT (LW_STATS_N_BUCKETS <= 16);
#define LW_STATS_CLAIM_SEQ(claim) ((claim) >> 5)
#define LW_STATS_CLAIM_BY_LOOP    1u

/* Loop thread. The busy period @seq, in @bucket, outlasted the threshold:
 * missed, unless the watcher claimed it. One compare-and-swap, only for
 * periods over the threshold. */
static void
lw_stats_note_long (LwStatsCounters *stats, uint64_t seq, int bucket)
{
  uint64_t claim = atomic_load (&stats->claim);

  do
    if (LW_STATS_CLAIM_SEQ (claim) == seq)
      return;  /* the watcher took it up */
  while (!atomic_compare_exchange_weak (&stats->claim, &claim,
                                        seq << 5 | (uint64_t) bucket << 1 | LW_STATS_CLAIM_BY_LOOP));
  lw_stats_bump (&stats->missed[bucket]);
}

/* Loop thread. */
void
lw_stats_note_busy (LwStatsCounters *stats, uint64_t seq, int64_t busy_ticks, int declared)
{
  int64_t lag_ticks = atomic_load_explicit (&stats->lag_ticks, memory_order_relaxed);
  int bucket = 0;

  while (bucket < LW_STATS_N_BUCKETS - 1 && busy_ticks >= stats->limit_ticks[bucket])
    bucket++;
  /* Bucket 0 is the iterations (seq) less the others: not counted here. */
  if (bucket > 0)
    lw_stats_bump (&stats->counts[bucket]);
  if (busy_ticks > atomic_load_explicit (&stats->longest_ticks, memory_order_relaxed))
    atomic_store_explicit (&stats->longest_ticks, busy_ticks, memory_order_relaxed);
  if (lag_ticks > 0 && busy_ticks >= lag_ticks && !declared
      && !atomic_load_explicit (&stats->paused, memory_order_relaxed))
    lw_stats_note_long (stats, seq, bucket);
}

/* Watcher thread. */
void
lw_stats_claim (LwStatsCounters *stats, uint64_t seq)
{
  uint64_t claim = atomic_load (&stats->claim);

  do
    if (LW_STATS_CLAIM_SEQ (claim) == seq)
      {
        /* The loop ended it before the watcher got to it, and counted it
         * missed: the watcher reports it after all (from the loop's
         * stamps), so it is counted once, as reported. */
        if (claim & LW_STATS_CLAIM_BY_LOOP)
          lw_stats_bump (&stats->missed_reported[(claim >> 1) & 0xf]);  /* the watcher: its only writer */
        return;
      }
  while (!atomic_compare_exchange_weak (&stats->claim, &claim, seq << 5));
}

/* Any thread. */
void
lw_stats_set_threshold_ms (LwStatsCounters *stats, unsigned threshold_ms)
{
  atomic_store (&stats->lag_ticks, lw_clock_span_to_ticks ((int64_t) threshold_ms * LW_NSEC_PER_MSEC));
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
