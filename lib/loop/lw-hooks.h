/* lw-hooks.h: knowing, at every moment, whether a context's thread is in poll
 *
 * The only per-iteration cost lagwatch puts on a watched loop: the context's
 * poll function is wrapped, and the wrapper stamps the slot on the way in
 * (seq becomes even) and on the way out (seq becomes odd, busy_since_ns is
 * set). Nested loops poll through the same wrapper, so a modal dialog that
 * sits in poll is idle, not a lag. A loop that iterates without polling (a
 * ready source of priority < 0) stays busy: its input is starved.
 *
 * On GLib 2.81 and later, a context whose poll function is g_poll is polled
 * with ppoll() and the exact timeout, and any other poll function gets the
 * timeout rounded up to milliseconds: there the poll function is left alone
 * and two never-ready sources stamp the same transitions (the entry in a
 * prepare at priority 0, the exit in a check at G_MININT; lw-hooks.c says
 * why), so that no source fires later than it would without lagwatch.
 *
 * The slot holds a reference on the context until detach: a context the
 * program drops while watched is finalized at detach, never under our feet.
 * (A never-ready GSource could watch for finalization instead, but GLib walks
 * it, with a ref and an unref, in prepare and check of every iteration:
 * about 120 instructions, +9% on a no-op iteration, measured with callgrind.)
 */
#pragma once

#include <glib.h>

#include "lw-slot.h"

G_BEGIN_DECLS

/* Any thread. Takes a free slot for @context and hooks it (wraps its poll
 * function, or attaches the two sources) and returns it, or NULL with
 * @error set (already watched, no free slot). */
LwSlot *lw_hooks_attach   (GMainContext     *context,
                           GError          **error);

/* Any thread. As lw_hooks_attach(); @stats FALSE leaves the latency
 * profile out of the poll wrapper (LAGWATCH_STATS=0). */
LwSlot *lw_hooks_attach_full (GMainContext  *context,
                              gboolean       stats,
                              GError       **error);

/* Any thread, also the loop thread and while a poll is in progress.
 * Restores the poll function (unless someone wrapped ours since: then the
 * slot stays installed as a pass-through) or destroys the two sources, and
 * releases the slot. */
void    lw_hooks_detach   (LwSlot           *slot);

/* Watcher thread, holding no lock of GLib's. When the program replaced the
 * poll wrapper since attach (g_main_context_set_poll_func()), its polls no
 * longer reach lagwatch (unless its function calls the wrapper): the
 * trackers are attached, which see every poll whatever the poll function,
 * and the wrapper, if still called, only passes calls through. TRUE when
 * it switched now. */
gboolean lw_hooks_follow_replaced_poll (LwSlot *slot);

/* Async-signal-safe. The slot at @index, or NULL when out of range. */
LwSlot *lw_hooks_get_slot (unsigned          index);

G_END_DECLS
