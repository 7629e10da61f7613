/* lw-hooks.h: knowing, at every moment, whether a context's thread is in poll
 *
 * The only per-iteration cost lagwatch puts on a watched loop: the context's
 * poll function is wrapped, and the wrapper stamps the slot on the way in
 * (seq becomes even) and on the way out (seq becomes odd, busy_since_ns is
 * set). Nested loops poll through the same wrapper, so a modal dialog that
 * sits in poll is idle, not a lag. A loop that iterates without polling (a
 * ready source of priority < 0) stays busy: its input is starved.
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

/* Any thread. Wraps @context's poll function in a free slot and returns it,
 * or NULL with @error set (already watched, no free slot). */
LwSlot *lw_hooks_attach   (GMainContext     *context,
                           GError          **error);

/* Any thread. As lw_hooks_attach(); @stats FALSE leaves the latency
 * profile out of the poll wrapper (LAGWATCH_STATS=0). */
LwSlot *lw_hooks_attach_full (GMainContext  *context,
                              gboolean       stats,
                              GError       **error);

/* Any thread, also the loop thread and while a poll is in progress.
 * Restores the poll function (unless someone wrapped ours since: then the
 * slot stays installed as a pass-through) and releases the slot. */
void    lw_hooks_detach   (LwSlot           *slot);

/* Async-signal-safe. The slot at @index, or NULL when out of range. */
LwSlot *lw_hooks_get_slot (unsigned          index);

G_END_DECLS
