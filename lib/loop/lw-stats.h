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
 * Who writes what: everything here is written by the loop thread only
 * (single writer: relaxed loads and stores, no read-modify-write), read by
 * any thread.
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

/* Loop thread, at a poll entry that ended a busy period of @busy_ticks
 * (its full length). Counts it. */
void lw_stats_note_busy (LwStatsCounters *stats, int64_t busy_ticks);

/* Loop thread. Copies the poll records GLib passes to the poll function. */
void lw_stats_note_fds (LwStatsCounters *stats, const void *fds, unsigned nfds);
