/* lw-stats.c: the latency profile: counting (loop thread) and reading it */
#include "lw-stats.h"

#include <glib.h>
#include <string.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-clock.h"
#include "lw-stats-private.h"

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

/* Any thread. */
LagWatchStats *
lw_stats_snapshot (LwSlot *slot, guint lags)
{
  LagWatchStats *stats = g_new0 (LagWatchStats, 1);
  guint64 others = 0, seq;

  /* The buckets before seq: a busy period is counted in its bucket before
   * the poll entry moves seq, so the iterations are never fewer. */
  for (int i = 1; i < LW_STATS_N_BUCKETS; i++)
    others += stats->counts[i] = atomic_load_explicit (&slot->stats.counts[i], memory_order_relaxed);
  seq = atomic_load (&slot->seq);
  /* seq: 2 at the first poll entry, +2 at each later one (lw-hooks.c). */
  stats->iterations = MAX (seq >> 1, 1) - 1;
  stats->iterations = MAX (stats->iterations, others);
  stats->counts[0] = stats->iterations - others;
  stats->busy_ms = (double) lw_clock_span_to_ns ((int64_t) __atomic_load_n (&slot->busy_ticks, __ATOMIC_RELAXED))
                   / LW_NSEC_PER_MSEC;
  stats->longest_ms = (double) lw_clock_span_to_ns (atomic_load_explicit (&slot->stats.longest_ticks,
                                                                          memory_order_relaxed))
                      / LW_NSEC_PER_MSEC;
  stats->lags = lags;
  return stats;
}

/* Any thread. The busy periods over bucket limit @bucket - 1 ms. */
static guint64
lw_stats_count_from (const LagWatchStats *stats, int bucket)
{
  guint64 n = 0;

  for (int i = bucket; i < LW_STATS_N_BUCKETS; i++)
    n += stats->counts[i];
  return n;
}

/* Any thread. "12,340". */
static void
lw_stats_append_count (GString *out, guint64 n)
{
  g_autofree char *digits = g_strdup_printf ("%" G_GUINT64_FORMAT, n);
  gsize len = strlen (digits);

  for (gsize i = 0; i < len; i++)
    {
      if (i > 0 && (len - i) % 3 == 0)
        g_string_append_c (out, ',');
      g_string_append_c (out, digits[i]);
    }
}

char *
lw_stats_to_json (const LagWatchStats *stats)
{
  GString *out = g_string_new ("{\"event\":\"stats\"");

  g_string_append_printf (out, ",\"pid\":%d,\"time\":%" G_GINT64_FORMAT, (int) getpid (),
                          g_get_real_time () / 1000);
  g_string_append_printf (out, ",\"iterations\":%" G_GUINT64_FORMAT, stats->iterations);
  g_string_append_printf (out, ",\"busy_ms\":%.1f,\"longest_ms\":%.1f", stats->busy_ms, stats->longest_ms);
  g_string_append_printf (out, ",\"over_16_7ms\":%" G_GUINT64_FORMAT ",\"over_33_3ms\":%" G_GUINT64_FORMAT,
                          lagwatch_stats_get_over_60hz_frame ((LagWatchStats *) stats),
                          lagwatch_stats_get_over_30hz_frame ((LagWatchStats *) stats));
  g_string_append_printf (out, ",\"p99_ms\":%.1f,\"lags\":%u",
                          lagwatch_stats_get_percentile_ms ((LagWatchStats *) stats, 99), stats->lags);
  g_string_append (out, ",\"buckets\":[");
  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    g_string_append_printf (out, "%s{\"from_ms\":%g,\"count\":%" G_GUINT64_FORMAT "}", i > 0 ? "," : "",
                            i == 0 ? 0.0 : (double) lw_stats_limit_ns[i - 1] / LW_NSEC_PER_MSEC,
                            stats->counts[i]);
  g_string_append (out, "]}");
  return g_string_free (out, FALSE);
}

char *
lw_stats_to_text (const LagWatchStats *stats)
{
  GString *out = g_string_new (NULL);
  double p99;

  lw_stats_append_count (out, stats->iterations);
  p99 = lagwatch_stats_get_percentile_ms ((LagWatchStats *) stats, 99);
  /* "4 ms", "16.7 ms", "801 ms", "2500 ms". */
  g_string_append_printf (out, p99 >= 100 ? " iterations, p99 %.0f ms, " : " iterations, p99 %.3g ms, ", p99);
  lw_stats_append_count (out, lw_stats_count_from (stats, LW_STATS_BUCKET_60HZ));
  g_string_append_printf (out, " over 16.7 ms, %u lag%s", stats->lags, stats->lags == 1 ? "" : "s");
  return g_string_free (out, FALSE);
}

/* ---- the public snapshot ---- */

LagWatchStats *
lagwatch_stats_copy (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, NULL);
  return g_memdup2 (stats, sizeof *stats);
}

void
lagwatch_stats_free (LagWatchStats *stats)
{
  g_free (stats);
}

guint64
lagwatch_stats_get_iterations (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return stats->iterations;
}

guint
lagwatch_stats_get_n_buckets (LagWatchStats *stats)
{
  return LW_STATS_N_BUCKETS;
}

double
lagwatch_stats_get_bucket_start_ms (LagWatchStats *stats, guint bucket)
{
  g_return_val_if_fail (bucket < LW_STATS_N_BUCKETS, -1);
  return bucket == 0 ? 0 : (double) lw_stats_limit_ns[bucket - 1] / LW_NSEC_PER_MSEC;
}

guint64
lagwatch_stats_get_bucket_count (LagWatchStats *stats, guint bucket)
{
  g_return_val_if_fail (stats != NULL && bucket < LW_STATS_N_BUCKETS, 0);
  return stats->counts[bucket];
}

guint64
lagwatch_stats_get_over_60hz_frame (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return lw_stats_count_from (stats, LW_STATS_BUCKET_60HZ);
}

guint64
lagwatch_stats_get_over_30hz_frame (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return lw_stats_count_from (stats, LW_STATS_BUCKET_30HZ);
}

double
lagwatch_stats_get_busy_ms (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return stats->busy_ms;
}

double
lagwatch_stats_get_longest_ms (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return stats->longest_ms;
}

guint
lagwatch_stats_get_lags (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return stats->lags;
}

double
lagwatch_stats_get_percentile_ms (LagWatchStats *stats, double percent)
{
  guint64 seen = 0, rank;

  g_return_val_if_fail (stats != NULL && percent >= 0 && percent <= 100, 0);
  if (stats->iterations == 0)
    return 0;
  rank = (guint64) ((percent / 100.0) * (double) stats->iterations + 0.999999);
  for (int i = 0; i < LW_STATS_N_BUCKETS - 1; i++)
    {
      double limit_ms = (double) lw_stats_limit_ns[i] / LW_NSEC_PER_MSEC;

      seen += stats->counts[i];
      /* The bucket's upper limit; the longest busy period is a tighter
       * bound (it is only known for periods over 1 ms). */
      if (seen >= rank)
        return i == 0 ? limit_ms : MIN (limit_ms, stats->longest_ms);
    }
  return stats->longest_ms;
}
