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
 * Before any signal the watcher checks that it is still lagwatch's and may
 * be sent (lw-capture.c says what is checked); a program that took it over
 * gets no more, and only the /proc way is left. In a process that is not
 * dumpable, /proc hides the syscall file: a running thread is still taken
 * by signal, a sleeping one not at all (PROC_CLOSED says why).
 * That is how the first stack of a lag is taken. The samples after it come
 * from a timer on the thread's CPU clock, whose signal the same handler
 * answers (lw_capture_periodic_start() says why).
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

/* Watcher thread. Allocates a snapshot able to hold @stack_bytes of stack
 * above the stack pointer, and the red zone below it. */
LwSnapshot *lw_snapshot_new    (size_t      stack_bytes);
void        lw_snapshot_free   (LwSnapshot *snapshot);

/* Watcher thread of @slot. Starts capturing thread @tid of the process
 * (the loop thread, or any other for the all-threads snapshot of a hang)
 * into @snapshot, if the loop is still in the busy period @busy_seq (0:
 * whatever the loop does meanwhile). @stack_lo, @stack_hi: the thread's
 * stack bounds if known (0, 0: the kernel copies page by page, stopping at
 * the first hole). Does not wait: OK when the stack was copied from /proc
 * (the thread sleeps in the kernel), PENDING when the signal is on its way
 * (then lw_capture_finish() collects it), or why nothing was taken. Never
 * sends a second signal while one is queued (IN_FLIGHT) or while an
 * earlier handler has not returned on the thread (IN_HANDLER: its mask is
 * then lagwatch's, not the program's), nor to a thread that blocks it
 * (BLOCKED), nor once the program took the signal over (SIGNAL_TAKEN). */
LwCaptureResult lw_capture_start (LwSlot     *slot,
                                  pid_t       tid,
                                  uint64_t    busy_seq,
                                  uintptr_t   stack_lo,
                                  uintptr_t   stack_hi,
                                  LwSnapshot *snapshot);

/* Watcher thread of @slot, after lw_capture_start() returned PENDING.
 * Waits at most @wait_ns for the handler (0: only looks). Returns its
 * result once it has run; PENDING while it has not and the signal is
 * younger than @give_up_ns, or (@give_up_ns > 0) while the thread is
 * runnable with the signal unblocked, only waiting for a CPU; else gives
 * the request up (a late handler then leaves the snapshot alone) and
 * returns TIMEOUT. @give_up_ns = 0 gives it up at once. A handler found
 * copying is waited for a bounded time too; past it, TIMEOUT, and the
 * snapshot stays the handler's until it is done. Any result other than
 * PENDING ends the request. */
LwCaptureResult lw_capture_finish (LwSlot  *slot,
                                   int64_t  wait_ns,
                                   int64_t  give_up_ns);

/* Watcher thread of @slot. lw_capture_start() and, when the signal was
 * sent, lw_capture_finish() waiting and giving up after @timeout_ns, even
 * on a thread that only waits for a CPU. Never returns PENDING. */
LwCaptureResult lw_capture_take_thread (LwSlot     *slot,
                                        pid_t       tid,
                                        uint64_t    busy_seq,
                                        uintptr_t   stack_lo,
                                        uintptr_t   stack_hi,
                                        LwSnapshot *snapshot,
                                        int64_t     timeout_ns);

/* Sampling a lag, once its first stack is in hand: by a timer on the
 * thread's CPU clock (timer_create with SIGEV_THREAD_ID), which signals it
 * after every @interval_ns of CPU it uses. The kernel checks the expiry at
 * a tick and queues the signal only on the thread's way back to user space
 * (task work), so the handler never runs while the thread sleeps in a call:
 * no EINTR, whatever the call, which a signal sent after reading /proc
 * cannot promise (the thread may go to sleep in between). No wake-up of
 * the watcher per sample either, nor a /proc read, nor an IPI: the handler
 * posts slot->wake once the stack is copied. The timer does not fire while
 * the thread sleeps; lw_capture_periodic_take (look = TRUE) then copies
 * the sleeping stack through /proc.
 *
 * Watcher thread of @slot. Starts sampling thread @tid, while the loop is
 * in busy period @busy_seq, into @snapshot. FALSE when the kernel or the
 * thread allows no such timer, or a signal of an earlier request is still
 * queued: sample with lw_capture_start() then. */
gboolean        lw_capture_periodic_start        (LwSlot     *slot,
                                                  pid_t       tid,
                                                  uint64_t    busy_seq,
                                                  uintptr_t   stack_lo,
                                                  uintptr_t   stack_hi,
                                                  LwSnapshot *snapshot,
                                                  int64_t     interval_ns);

/* Any thread, once a watch is attached. FALSE where lw_capture_periodic_start()
 * is always refused (this kernel may queue the timer's signal from the tick). */
gboolean        lw_capture_periodic_supported    (void);

/* Watcher thread of @slot, while sampling: the timer's new period. */
void            lw_capture_periodic_set_interval (LwSlot     *slot,
                                                  int64_t     interval_ns);

/* Watcher thread of @slot, while sampling. A stack the timer's signal
 * took, if one is in: OK (or STALE when the loop had left the busy
 * period). Otherwise, with @look, the thread is looked at through /proc:
 * OK when it sleeps in the kernel and its stack was copied, THREAD_GONE,
 * STALE, or PENDING when it runs (the timer will take it). PENDING without
 * @look. The snapshot is the watcher's until lw_capture_periodic_rearm(),
 * which must follow every take. */
LwCaptureResult lw_capture_periodic_take         (LwSlot     *slot,
                                                  gboolean    look);

/* Watcher thread of @slot, while sampling: lets the next expiry write the
 * snapshot again. */
void            lw_capture_periodic_rearm        (LwSlot     *slot);

/* Watcher thread of @slot. Deletes the timer. OK when a last stack is in
 * the snapshot (its handler checked the busy period), else STALE. */
LwCaptureResult lw_capture_periodic_stop         (LwSlot     *slot);

/* Watcher thread of @slot. Closes what the capture keeps open for the loop
 * thread (its /proc syscall file). */
void lw_capture_forget_thread (LwSlot *slot);

/* Any thread. The signal in use, 0 when none is installed. */
int  lw_capture_get_signal (void);

G_END_DECLS
