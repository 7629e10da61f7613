/* lw-watcher-sleep.h: the watcher thread's sleeps on the slot's semaphore
 *
 * To a deadline, or until the loop's poll wrapper (or lw_watcher_stop)
 * posts it; parked: asking the wrapper first to post it at the loop's next
 * transition; and, once a lag's busy period has ended, for the loop's stamp
 * of its end. Watcher thread only.
 */
#pragma once

#include "lw-watch-private.h"

G_BEGIN_DECLS

/* Sleeps until @deadline_ns (CLOCK_MONOTONIC) or, when @deadline_ns < 0,
 * until posted. */
void lw_watcher_sleep (LwSlot  *slot,
                       int64_t  deadline_ns);

/* Raises @flags (what the poll wrapper should do at the loop's next
 * transition), then sleeps until @deadline_ns (-1: no timeout) unless the
 * loop's seq has already moved away from @seq or the watch stops; lowers
 * the flags again. Raising them before the look at seq is what makes a
 * transition impossible to miss (lw-hooks.c). */
void lw_watcher_park  (LagWatch *watch,
                       uint64_t  seq,
                       unsigned  flags,
                       int64_t   deadline_ns);

/* The watcher follows the lag of busy period @busy_seq (LW_WAKE_ON_IDLE
 * raised before it looked at seq). The time the loop ended it, stamped at
 * its next poll entry (lag_end_ns), or 0 while seq says it goes on. The
 * loop stores seq, then stamps: a watcher that runs between the two (the
 * loop thread preempted there, on a loaded machine) sees the period ended
 * but no end yet, and sleeps for the stamp, at most @wait_ns, rather than
 * call the lag cut short (0 then). */
int64_t lw_watcher_lag_end (LwSlot   *slot,
                            uint64_t  busy_seq,
                            int64_t   wait_ns);

G_END_DECLS
