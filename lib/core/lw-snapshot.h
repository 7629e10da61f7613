/* lw-snapshot.h: what a capture takes from the stuck thread
 *
 * Registers and a raw copy of the thread's stack from its stack pointer up,
 * taken either by the signal handler (all general registers) or by the
 * watcher from /proc while the thread sleeps in a system call (pc and sp
 * only). The unwinder (lw-unwind.c) walks it later, on the watcher thread.
 * A snapshot is preallocated once per watch: nothing is allocated while the
 * thread is interrupted.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Register numbers as libunwind numbers them on x86-64 (UNW_X86_64_*). */
enum
{
  LW_REG_RAX, LW_REG_RDX, LW_REG_RCX, LW_REG_RBX,
  LW_REG_RSI, LW_REG_RDI, LW_REG_RBP, LW_REG_RSP,
  LW_REG_R8,  LW_REG_R9,  LW_REG_R10, LW_REG_R11,
  LW_REG_R12, LW_REG_R13, LW_REG_R14, LW_REG_R15,
  LW_REG_RIP,
  LW_N_REGS
};

/* Room for what a language's sampler takes in the handler (the names of
 * JavaScript functions running as compiled code: lw-gjs-jit.c). */
#define LW_SNAPSHOT_LANG_BYTES 4096

typedef enum
{
  LW_CAPTURE_OK,           /* registers and stack in hand */
  LW_CAPTURE_STALE,        /* the loop went back to poll before the stack was taken */
  LW_CAPTURE_TIMEOUT,      /* the thread did not run the handler in time */
  LW_CAPTURE_THREAD_GONE,  /* the thread no longer exists */
  LW_CAPTURE_IN_FLIGHT,    /* an earlier signal is still queued: not resent */
  LW_CAPTURE_FAILED,       /* the signal could not be sent */
  LW_CAPTURE_PENDING,      /* the signal is sent, its handler has not finished yet */
  LW_CAPTURE_BLOCKED,      /* the thread runs and blocks the signal: not sent */
  LW_CAPTURE_SIGNAL_TAKEN, /* the program took the signal over: no more are sent */
  LW_CAPTURE_PROC_CLOSED,  /* the thread sleeps and /proc hides its registers (not dumpable) */
  LW_CAPTURE_IN_HANDLER,   /* lagwatch's handler of an earlier signal has not returned on the thread: not sent */
} LwCaptureResult;

typedef struct
{
  uint64_t  regs[LW_N_REGS];
  uint32_t  regs_valid;     /* bit LW_REG_x set when regs[x] is known */
  long      syscall_nr;     /* the system call it sleeps in, -1 when running */
  int       via_signal;     /* taken by the handler (1) or from /proc (0) */
  int64_t   taken_ns;       /* lw_clock_now_ns() when the copy was made */
  uintptr_t stack_base;     /* address the copy starts at: the red zone below the stack pointer, or the stack pointer (lw_core_copy_stack) */
  size_t    stack_len;      /* bytes copied */
  size_t    stack_capacity; /* size of stack[] */
  size_t    lang_len;       /* bytes of lang[] a language's sampler wrote (lw_core_set_sample_hook), 0 when none */
  int64_t   lang_ns;        /* the time that sampler took in the handler, 0 when none ran */
  unsigned char lang[LW_SNAPSHOT_LANG_BYTES];
  unsigned char stack[];    /* the copy */
} LwSnapshot;
