/* lw-unwind.h: from a snapshot (registers + stack copy) to return addresses
 *
 * The copy is walked with DWARF CFI from .eh_frame, on the watcher thread:
 * frames with ordinary rules by lw-cfi's rows (cached), the others by
 * libunwind's remote API, whose accessors read the stack from the snapshot,
 * code and unwind tables from the loaded modules through the kernel (a
 * module unmapped meanwhile ends the walk there, without a fault), and
 * find the unwind table through lw-modules. libunwind itself is dlopen()ed with
 * RTLD_LOCAL so that its _Unwind_* exports never enter the global scope,
 * where the program's C++ runtime would bind its exception unwinding to them.
 */
#pragma once

#include <glib.h>

#include "lw-snapshot.h"

G_BEGIN_DECLS

/* The most return addresses a stack may be given (LAGWATCH_MAX_FRAMES's
 * upper bound, and what the frames of interpreters are merged into). */
#define LW_MAX_FRAMES_LIMIT 1024

/* Any thread, normal context. Loads libunwind once. FALSE (with @error)
 * when it cannot be loaded; stacks then hold the innermost frame only. */
gboolean lw_unwind_init  (GError **error);

/* Any thread, normal context, before the first unwinder is made: never
 * load nor use libunwind (a seccomp filter kills a call it makes as it
 * starts). Unwinders then step with lw-cfi's rows only, and a walk ends
 * at a frame those cannot step. */
void     lw_unwind_forgo (void);

/* One unwinder per watcher thread: libunwind's per-address-space caches are
 * used without sharing. */
typedef struct _LwUnwinder LwUnwinder;

/* Watcher thread. NULL when libunwind is not available. */
LwUnwinder *lw_unwinder_new  (void);
void        lw_unwinder_free (LwUnwinder *unwinder);

/* Tests and benchmarks. An unwinder that walks every frame with one
 * libunwind cursor, as lagwatch did before lw-cfi. Without libunwind's
 * cache of rows: the reference lagwatch's walks are checked against (that
 * cache answers a return address with the rules of the same pc met
 * earlier as an interrupted one, so a cached walk depends on the walks
 * before it). */
LwUnwinder *lw_unwinder_new_reference        (void);
/* With libunwind's cache, as lagwatch ran it: the cost lagwatch's own
 * walks are compared with. */
LwUnwinder *lw_unwinder_new_reference_cached (void);

/* Watcher thread. Writes up to @max_frames instruction addresses, innermost
 * first, into @ips; returns how many. ips[0] is the interrupted pc (exact);
 * the others are return addresses. *@truncated is set when the walk stopped
 * at @max_frames or at the end of the stack copy rather than at the
 * outermost frame. Works with @unwinder NULL (one frame, the pc). */
guint lw_unwinder_walk (LwUnwinder       *unwinder,
                        const LwSnapshot *snapshot,
                        uintptr_t        *ips,
                        guint             max_frames,
                        gboolean         *truncated);

/* Watcher thread. The stack pointer of each frame of the last
 * lw_unwinder_walk() on @unwinder (same indices as its ips; 0 where not
 * known): frame k's own stack lies in [sps[k], sps[k + 1]), which tells
 * which frame an address on the stack belongs to. Valid until the next
 * walk; NULL before the first. */
const uintptr_t *lw_unwinder_stack_pointers (LwUnwinder *unwinder);

G_END_DECLS
