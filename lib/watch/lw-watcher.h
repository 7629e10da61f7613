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
 * samples (lw-sampler.h): the watcher wakes when the handler posts one, or
 * when none came for an interval and a half, to look at a sleeping thread
 * through /proc. Where no such timer can be used, each round collects the
 * stack the previous round's signal took, then sends the next.
 *
 * These are the watcher's phases (IDLE, LOOKING, ARMED, LAGGING, SETTLED),
 * changed in one place (lw-watcher.c; docs/how-it-works.md draws them).
 */
#pragma once

#include "lw-watch-private.h"

G_BEGIN_DECLS

/* Any thread. Starts the watcher thread of @watch (all signals blocked in
 * it, so the program's process-wide signals never land there), and
 * returns once it watches (waiting 2 s at most). The reporting thread must
 * be running. */
gboolean lw_watcher_start (LagWatch *watch,
                           GError  **error);

/* Any thread but the watcher's own (the watcher never runs program code).
 * Asks the watcher to stop, and waits. A lag in progress is handed to the
 * reporting thread as incomplete. */
void     lw_watcher_stop (LagWatch *watch);

G_END_DECLS
