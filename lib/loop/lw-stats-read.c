/* lw-stats-read.c: the latency profile, read from a slot (any thread):
 * LagWatchStats, its JSON and text, and its public accessors */
#include "lw-stats-read.h"

#include <string.h>

#include "lw-clock.h"
#include "lw-json.h"

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
  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    {
      guint64 missed = atomic_load (&slot->stats.missed[i]);
      guint64 reported = atomic_load (&slot->stats.missed_reported[i]);

      /* (Read apart: a late report counted meanwhile can be ahead.) */
      stats->missed[i] = missed > reported ? missed - reported : 0;
    }
  return stats;
}

/* Any thread. The lags missed in all buckets. */
static guint64
lw_stats_missed_total (const LagWatchStats *stats)
{
  guint64 n = 0;

  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    n += stats->missed[i];
  return n;
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

/* Any thread. @value formatted by @format (one double conversion), with a
 * '.' whatever the locale. */
static void
lw_stats_append_number (GString *out, const char *format, double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append (out, g_ascii_formatd (buf, sizeof buf, format, value));
}

char *
lw_stats_to_json (const LagWatchStats *stats)
{
  GString *out = g_string_new ("{\"event\":\"stats\"");

  gint64 now_us = g_get_real_time ();
  g_autofree char *time = lw_json_format_time (now_us);

  /* "time" as in every other record (ISO 8601, UTC, milliseconds);
   * "time_ms", the epoch milliseconds "time" held before, for one release. */
  g_string_append_printf (out, ",\"pid\":%d,\"time\":\"%s\",\"time_ms\":%" G_GINT64_FORMAT, (int) getpid (),
                          time, now_us / 1000);
  g_string_append_printf (out, ",\"iterations\":%" G_GUINT64_FORMAT, stats->iterations);
  /* Numbers through g_ascii_formatd(): printf() follows LC_NUMERIC, and a
   * program that called setlocale() under a decimal-comma locale would
   * write "812,5", which is not JSON. */
  g_string_append (out, ",\"busy_ms\":");
  lw_stats_append_number (out, "%.1f", stats->busy_ms);
  g_string_append (out, ",\"longest_ms\":");
  lw_stats_append_number (out, "%.1f", stats->longest_ms);
  g_string_append_printf (out, ",\"over_16_7ms\":%" G_GUINT64_FORMAT ",\"over_33_3ms\":%" G_GUINT64_FORMAT,
                          lagwatch_stats_get_over_60hz_frame ((LagWatchStats *) stats),
                          lagwatch_stats_get_over_30hz_frame ((LagWatchStats *) stats));
  g_string_append (out, ",\"p99_ms\":");
  lw_stats_append_number (out, "%.1f", lagwatch_stats_get_percentile_ms ((LagWatchStats *) stats, 99));
  g_string_append_printf (out, ",\"lags\":%u,\"lags_missed\":%" G_GUINT64_FORMAT, stats->lags,
                          lw_stats_missed_total (stats));
  g_string_append (out, ",\"buckets\":[");
  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    {
      g_string_append_printf (out, "%s{\"from_ms\":", i > 0 ? "," : "");
      lw_stats_append_number (out, "%g", i == 0 ? 0.0 : (double) lw_stats_limit_ns[i - 1] / LW_NSEC_PER_MSEC);
      g_string_append_printf (out, ",\"count\":%" G_GUINT64_FORMAT ",\"missed\":%" G_GUINT64_FORMAT "}",
                              stats->counts[i], stats->missed[i]);
    }
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
  g_string_append (out, stats->iterations == 1 ? " iteration" : " iterations");
  g_string_append_printf (out, p99 >= 100 ? ", p99 %.0f ms, " : ", p99 %.3g ms, ", p99);
  lw_stats_append_count (out, lw_stats_count_from (stats, LW_STATS_BUCKET_60HZ));
  g_string_append_printf (out, " over 16.7 ms, %u lag%s", stats->lags, stats->lags == 1 ? "" : "s");
  return g_string_free (out, FALSE);
}

/* Any thread. "16.7-33.3 ms", "10 s and more": bucket @i's range. */
static void
lw_stats_append_range (GString *out, int i)
{
  double from_ms = i == 0 ? 0 : (double) lw_stats_limit_ns[i - 1] / LW_NSEC_PER_MSEC;
  char from[G_ASCII_DTOSTR_BUF_SIZE], to[G_ASCII_DTOSTR_BUF_SIZE];

  g_ascii_formatd (from, sizeof from, "%.3g", from_ms);
  if (i == LW_STATS_N_BUCKETS - 1)
    {
      g_string_append_printf (out, "%s ms and more", from);
      return;
    }
  g_ascii_formatd (to, sizeof to, "%.3g", (double) lw_stats_limit_ns[i] / LW_NSEC_PER_MSEC);
  g_string_append_printf (out, "%s-%s ms", from, to);
}

char *
lw_stats_missed_to_text (const LagWatchStats *stats)
{
  guint64 total = lw_stats_missed_total (stats);
  GString *out;
  gboolean first = TRUE;

  if (total == 0)
    return NULL;
  out = g_string_new (NULL);
  g_string_append_printf (out, "%" G_GUINT64_FORMAT " %s seen only after %s ended, with no report "
                          "(the watcher got no CPU in time): ",
                          total, total == 1 ? "lag was" : "lags were", total == 1 ? "it" : "they");
  for (int i = 0; i < LW_STATS_N_BUCKETS; i++)
    if (stats->missed[i] > 0)
      {
        g_string_append_printf (out, "%s%" G_GUINT64_FORMAT " of ", first ? "" : ", ", stats->missed[i]);
        lw_stats_append_range (out, i);
        first = FALSE;
      }
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

guint64
lagwatch_stats_get_lags_missed (LagWatchStats *stats)
{
  g_return_val_if_fail (stats != NULL, 0);
  return lw_stats_missed_total (stats);
}

guint64
lagwatch_stats_get_bucket_missed (LagWatchStats *stats, guint bucket)
{
  g_return_val_if_fail (stats != NULL && bucket < LW_STATS_N_BUCKETS, 0);
  return stats->missed[bucket];
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
