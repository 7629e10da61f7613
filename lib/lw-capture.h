/* lw-capture.h: taking the stuck thread's registers and stack
 *
 * Two ways, chosen per capture by what /proc/self/task/TID/syscall says:
 *  - the thread sleeps in a system call (usleep, poll, a futex, read...):
 *    its stack cannot change until it wakes, so the watcher copies it
 *    directly, with the pc and sp the kernel shows. No signal: the sleep is
 *    not cut short (poll/nanosleep/epoll_wait would fail with EINTR).
 *  - the thread runs: a real-time signal, sent only to it, whose handler
 *    copies the registers and the stack into preallocated memory and
 *    returns. The handler does nothing else: no unwinding (so no loader
 *    lock, no libunwind state), no allocation, errno preserved, bounded by
 *    the copy size.
 * Either way the stack is unwound later by lw-unwind.c on the watcher thread.
 */
#pragma once

#include <glib.h>

#include "lw-slot.h"
#include "lw-snapshot.h"

G_BEGIN_DECLS

/* Any thread, normal context, under the caller's serialization (the
 * library's global lock). Installs the handler on first use; @signo is the
 * preferred signal, @explicit_choice TRUE when the user named it. If the
 * program already handles @signo, an explicitly chosen signal is chained to
 * the program's handler, a default one is swapped for a free real-time
 * signal; a message says which. Returns the signal in use, or 0 with @error. */
int  lw_capture_acquire_signal (int        signo,
                                gboolean   explicit_choice,
                                GError   **error);

/* Any thread, normal context, same serialization. Drops one user; the last
 * one restores the previous disposition unless a signal may still be queued
 * (its default action would kill the process): then the handler stays,
 * passing foreign signals on. */
void lw_capture_release_signal (void);

/* Watcher thread. Allocates a snapshot able to hold @stack_bytes of stack. */
LwSnapshot *lw_snapshot_new    (size_t      stack_bytes);
void        lw_snapshot_free   (LwSnapshot *snapshot);

/* Watcher thread of @slot. Captures the loop thread of @slot into @snapshot
 * if it is still in the busy period @busy_seq, waiting at most @timeout_ns
 * for the signal handler. Never sends a second signal while one is queued. */
LwCaptureResult lw_capture_take (LwSlot     *slot,
                                 uint64_t    busy_seq,
                                 LwSnapshot *snapshot,
                                 int64_t     timeout_ns);

/* Watcher thread of @slot. Captures any thread @tid of the process (the
 * all-threads snapshot of a hang), with its stack bounds if known (0, 0:
 * copied by the kernel, page by page, stopping at the first hole).
 * @busy_seq 0: whatever the loop does meanwhile. */
LwCaptureResult lw_capture_take_thread (LwSlot     *slot,
                                        pid_t       tid,
                                        uint64_t    busy_seq,
                                        uintptr_t   stack_lo,
                                        uintptr_t   stack_hi,
                                        LwSnapshot *snapshot,
                                        int64_t     timeout_ns);

/* Watcher thread of @slot. Closes what the capture keeps open for the loop
 * thread (its /proc syscall file). */
void lw_capture_forget_thread (LwSlot *slot);

/* Any thread. The signal in use, 0 when none is installed. */
int  lw_capture_get_signal (void);

G_END_DECLS
