/* lw-stats.h: the latency profile of every loop iteration
 *
 * Every busy period of the watched loop (poll exit to the next poll entry)
 * is counted, at the cost of a few instructions in the poll wrapper. The
 * wrapper's fast path (lw-hooks.c) takes one TSC read at poll entry, adds
 * the low 32 bits of the busy period to busy_ticks and compares them with
 * a cutoff (1 ms in ticks): only a busy period of 1 ms or more goes to
 * lw_stats_note_busy(), which puts it in its bucket with its full 64-bit
 * length. The busy periods under the cutoff are counted from seq (the
 * number of iterations) minus the others: nothing more per iteration.
 *
 * Every lag is counted, also one the watcher never saw while it lasted
 * (it got no CPU in time on a loaded machine): a busy period that
 * outlasted the threshold and that the watcher did not claim by the time
 * it ended is counted as missed, in its bucket (lw_stats_note_busy). The
 * watcher claims a busy period when it takes it up, to report it or to
 * excuse it (lw_stats_claim). The two decide through one word, `claim`,
 * which names the last busy period decided and by whom: the loop marks
 * a period missed only if the watcher has not claimed it, and a watcher
 * that claims one the loop marked already counts it in missed_reported
 * (it reports it after all, from the loop's stamps), so that a lag is
 * counted once either way.
 *
 * Who writes what: counts, longest_ticks, poll_fds and missed are written
 * by the loop thread only (single writer: relaxed loads and stores, no
 * read-modify-write); missed_reported by the watcher thread only;
 * lag_ticks and paused by the threads that attach and configure the
 * watch; claim by both, by compare-and-swap. Any thread reads.
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

/* Buckets: [0, 1 ms), [1, 2), [2, 4), [4, 8), [8, 16.7), [16.7, 33.3),
 * [33.3, 50), [50, 100), [100, 250), [250, 500), [500 ms, 1 s), [1, 2.5 s),
 * [2.5, 5 s), [5, 10 s), 10 s and more. One frame at 60 Hz and at 30 Hz are
 * bucket limits, so the counts over them are exact. */
#define LW_STATS_N_BUCKETS     15
#define LW_STATS_BUCKET_60HZ   5   /* the first bucket over 16.7 ms */
#define LW_STATS_BUCKET_30HZ   6   /* the first bucket over 33.3 ms */
/* The context's poll records copied for the input_pending check. */
#define LW_STATS_POLL_FDS      32

extern const int64_t lw_stats_limit_ns[LW_STATS_N_BUCKETS - 1] __attribute__ ((visibility ("hidden")));

typedef struct
{
  /* Set at attach (lw_stats_reset), constant afterwards. */
  int64_t           limit_ticks[LW_STATS_N_BUCKETS - 1];
  /* Busy periods counted by lw_stats_note_busy(), by bucket; [0] unused
   * (the iterations less the others). */
  _Atomic uint64_t  counts[LW_STATS_N_BUCKETS];
  _Atomic int64_t   longest_ticks;
  /* The threshold in ticks (0: no missed lag is counted) and whether the
   * program paused the watch (no lag is then reported, none missed). */
  _Atomic int64_t   lag_ticks;
  _Atomic int       paused;
  /* The last busy period decided: seq << 5 | bucket << 1 | 1 when the
   * loop marked it missed, seq << 5 when the watcher claimed it. */
  _Atomic uint64_t  claim;
  /* Lags missed, by bucket; of them, the ones the watcher reported after
   * all. */
  _Atomic uint64_t  missed[LW_STATS_N_BUCKETS];
  _Atomic uint64_t  missed_reported[LW_STATS_N_BUCKETS];
  /* The context's poll records as last passed to the slow path: fd << 16
   * | events. Read by the watcher during a lag (input_pending). */
  _Atomic unsigned  n_poll_fds;
  _Atomic uint64_t  poll_fds[LW_STATS_POLL_FDS];
} LwStatsCounters;

/* Any thread, while the slot is not in use (attach). Zeroes @stats and
 * sets the bucket limits in the hot path's ticks; *@cutoff_ticks gets the
 * fast path's cutoff: 1 ms in ticks, or 0 (every poll entry takes the slow
 * path) when the ticks are not the TSC. */
void lw_stats_reset (LwStatsCounters *stats, uint32_t *cutoff_ticks);

/* Loop thread, at a poll entry that ended the busy period @seq of
 * @busy_ticks (its full length). Counts it, and counts it missed when it
 * outlasted the threshold unclaimed, unless @declared (the program said
 * it would be long). */
void lw_stats_note_busy (LwStatsCounters *stats, uint64_t seq, int64_t busy_ticks, int declared);

/* Watcher thread. Claims the busy period @seq: the watcher takes it up
 * (to follow, report or excuse it), so it is not counted missed. */
void lw_stats_claim (LwStatsCounters *stats, uint64_t seq);

/* Any thread. The threshold the missed lags are judged by. */
void lw_stats_set_threshold_ms (LwStatsCounters *stats, unsigned threshold_ms);

/* Loop thread. Copies the poll records GLib passes to the poll function. */
void lw_stats_note_fds (LwStatsCounters *stats, const void *fds, unsigned nfds);
