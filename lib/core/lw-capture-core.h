/* lw-capture-core.h: the async-signal-safe core of the capture
 *
 * Everything the signal handler touches, and the handshake between the
 * watcher and the handler. This header and lw-capture-core.c are built into
 * their own library (lagwatch-core) without GLib's include path and checked
 * by the build (tests/check-core-symbols.sh) to call nothing but
 * async-signal-safe functions: a stray GLib call, malloc or stdio in the
 * handler's path fails the build instead of a program.
 *
 * The handshake: a request is one 64-bit word {serial, state}. The watcher
 * arms a request by storing {new serial, ARMED}; the signal carries the
 * serial in its cookie (si_value); the handler claims the request with ONE
 * compare-and-swap from {its serial, ARMED} to {its serial, WRITING}, so a
 * late signal of an older request (a stale serial) can never claim a newer
 * one, whatever the interleaving. Every wait of the watcher on the handler
 * is bounded (lw-capture.c).
 */
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "lw-snapshot.h"

#define LW_MAX_SLOTS 16

/* The state half of a request word. */
enum
{
  LW_CAPTURE_IDLE,       /* no request */
  LW_CAPTURE_ARMED,      /* watcher sent the signal, or awaits the timer's; handler may claim it */
  LW_CAPTURE_WRITING,    /* handler is filling the snapshot */
  LW_CAPTURE_DONE,       /* handler finished; watcher reads the result */
  LW_CAPTURE_ABANDONED,  /* watcher gave up waiting; a late handler must not write */
};

/* A request word: the serial (40 bits, from the cookie) and the state. */
#define LW_REQUEST_WORD(serial, state) (((uint64_t) (serial) << 8) | (uint64_t) (state))
#define LW_REQUEST_SERIAL(word)        ((uint64_t) (word) >> 8)
#define LW_REQUEST_STATE(word)         ((int) ((word) & 0xff))

/* si_value of a lagwatch signal: magic (16 bits) | slot (8) | serial (40). */
#define LW_COOKIE_MAGIC          UINT64_C (0x1a97)
#define LW_COOKIE_SERIAL_MASK    UINT64_C (0xffffffffff)
#define LW_COOKIE(slot, serial)  ((uintptr_t) ((LW_COOKIE_MAGIC << 48) | ((uint64_t) (slot) << 40) \
                                               | ((uint64_t) (serial) & LW_COOKIE_SERIAL_MASK)))
#define LW_COOKIE_SLOT(c)        ((unsigned) (((uint64_t) (c) >> 40) & 0xff))
#define LW_COOKIE_SERIAL(c)      ((uint64_t) (c) & LW_COOKIE_SERIAL_MASK)

/* A request is made either for one signal (lw_capture_start) or for a
 * CPU-time timer's signals (lw_capture_periodic_start): then the handler
 * fills the snapshot at each expiry the watcher has re-armed it for, and
 * posts @wake instead of @done. Fields without (atomic) are written by the
 * watcher before it stores the armed word (release) and read by the
 * handler after its claim (acquire). */
typedef struct
{
  _Atomic uint64_t        word;        /* {serial, state} (atomic) */
  uint64_t                serial;      /* the serial of the watcher's current request (watcher only) */
  timer_t                 timer;       /* the periodic request's timer (watcher only) */
  int                     periodic;    /* the timer exists (watcher only) */
  uint64_t                expect_seq;  /* capture only if *seq still equals this (0: any) */
  const _Atomic uint64_t *seq;         /* the slot's busy-period counter */
  pid_t                   target_tid;  /* the thread the request is for */
  uintptr_t               stack_lo;    /* its stack bounds, 0 when unknown */
  uintptr_t               stack_hi;
  LwSnapshot             *snapshot;    /* preallocated by the watcher, filled by the handler */
  _Atomic int             result;      /* LwCaptureResult, set by the handler (atomic) */
  int64_t                 sent_ns;     /* when the watcher sent the signal (watcher only) */
  sem_t                   done;        /* posted by the handler of an explicit signal */
  sem_t                  *wake;        /* posted by the handler of a timer's signal */
} LwCaptureRequest;

/* Async-signal-safe: the handler (SA_SIGINFO). Runs on the signalled
 * thread. Signals that are not lagwatch's go to lw_core_set_chained(). */
void lw_core_on_signal (int signo, siginfo_t *info, void *ucontext);

/* Any thread, normal context, before the handler may see @index's
 * signals: makes @req the request of slot @index (once per slot; a slot's
 * request lives as long as the process). */
void lw_core_register_request (unsigned index, LwCaptureRequest *req);

/* A language's sampler, run by the handler on the thread it was set for,
 * right after the registers and stack were copied, while the thread is
 * stopped in the handler: writes at most LW_SNAPSHOT_LANG_BYTES into
 * @snap->lang and their count into @snap->lang_len. Must be
 * async-signal-safe and bounded; the handler restores errno after it. */
typedef void (*LwCoreSampleHook) (const void *ucontext, LwSnapshot *snap);

/* Any thread, normal context. Runs @hook in the handler of captures of
 * thread @tid from now on (one hook per process; NULL removes it). */
void lw_core_set_sample_hook (pid_t tid, LwCoreSampleHook hook);

/* Any thread, normal context, while the handler is not installed or
 * before it is: the disposition a foreign signal is passed on to. */
void lw_core_set_chained (const struct sigaction *action);

/* Any thread. Explicit signals sent whose handler has not yet run. */
int  lw_core_signals_in_flight (void);

/* Any thread. TRUE (1) while thread @tid runs lagwatch's handler (its
 * signal blocked by the kernel for that run, not by the program): from
 * the handler's first steps to its last before the return. */
int  lw_core_handler_runs (pid_t tid);

/* Watcher thread, right before it sends an explicit signal (+1), or
 * after a send failed (-1). */
void lw_core_count_signal (int delta);

/* lw_core_set_memory_fd(): no way to read memory through the kernel. */
#define LW_CORE_MEMORY_NONE (-2)

/* Any thread, normal context. How lw_core_read_memory() reads: -1 (the
 * default) with process_vm_readv(), a descriptor of /proc/self/mem with
 * pread(), or LW_CORE_MEMORY_NONE (every read fails with ENOSYS), when a
 * seccomp filter forbids process_vm_readv(). */
void    lw_core_set_memory_fd (int fd);

/* Async-signal-safe. process_vm_readv() on this process, or its
 * equivalent chosen by lw_core_set_memory_fd(): bytes read, stopping at
 * the first unreadable page, or -1 with errno. */
ssize_t lw_core_read_memory   (const struct iovec *local,
                               unsigned long       n_local,
                               const struct iovec *remote,
                               unsigned long       n_remote);

/* The x86-64 ABI's red zone: the 128 bytes below the stack pointer, which
 * a function may use without moving it, and which the kernel leaves as
 * they are when it delivers a signal on that stack. CFI can place a saved
 * register there: after `leave` (or `pop %rbp`), GCC emits only
 * `.cfi_def_cfa rsp, 8`, so the rows up to the `ret` still say "rbp at
 * CFA-16", the word the pop just read, now below the stack pointer. */
#define LW_CORE_RED_ZONE_BYTES 128

/* Async-signal-safe. Copies the stack of a thread into @snap, from its red
 * zone below @sp (where the stack has one: not below @lo, nor on an
 * unmapped page) up: plainly within [@lo, @hi) when @sp is inside, else
 * through the kernel (process_vm_readv), which stops at the first unmapped
 * page instead of faulting. */
void lw_core_copy_stack (LwSnapshot *snap, uintptr_t sp, uintptr_t lo, uintptr_t hi);
