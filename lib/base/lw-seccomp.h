/* lw-seccomp.h: which system calls a seccomp filter lets lagwatch make
 *
 * A process may run under a seccomp filter (systemd's SystemCallFilter=,
 * bwrap and Flatpak, container runtimes, browsers' sandboxes) that makes
 * some system calls fail with an errno, or kills the thread or the whole
 * process that makes them. lagwatch must never be the reason a program
 * dies or hangs, so before its threads and its signal handler make a call
 * that a filter may forbid, attach finds out what the filter does with it.
 *
 * How: /proc/self/status says whether a filter is installed ("Seccomp:
 * 2"); without one (the usual case) nothing more is done. With one (or
 * when /proc cannot tell), each call is made once in a child process
 * (clone() with no signal to the parent, so no SIGCHLD reaches the
 * program and no waitpid(-1) of the program reaps it; no pthread_atfork()
 * handler runs). Filters are inherited, so the child meets the same
 * verdict; a call that kills the child (SIGSYS) or blocks it (a
 * supervisor that never answers) would have killed or blocked lagwatch's
 * thread. The child reports each call's outcome through a pipe as it
 * goes; after a fatal call a new child carries on with the next one.
 *
 * Any thread, normal context.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The calls whose loss lagwatch can work around (see lw_seccomp_check). */
typedef enum
{
  LW_SYSCALL_MINCORE,            /* libunwind calls it as it starts */
  LW_SYSCALL_PROCESS_VM_READV,   /* reads of our own memory that cannot fault */
  LW_SYSCALL_SIGALTSTACK,        /* the loop thread's alternate signal stack */
  LW_SYSCALL_TIMER_CREATE,       /* the CPU-time sampling timer */
  LW_SYSCALL_RT_TGSIGQUEUEINFO,  /* the capture signal */
  LW_SYSCALL_N_OPTIONAL
} LwSyscall;

typedef enum
{
  LW_SYSCALL_WORKS,    /* does what it does without a filter */
  LW_SYSCALL_FAILS,    /* the filter makes it fail with an errno */
  LW_SYSCALL_FATAL,    /* the filter kills the caller, traps, or blocks it */
} LwSyscallVerdict;

/* Any thread, normal context. Finds out once per process (again in a
 * child of fork(), which may have installed a filter of its own) what the
 * filter does with each call lagwatch makes. FALSE with @error when a
 * call lagwatch cannot do without is fatal: lagwatch must not attach. */
gboolean         lw_seccomp_check   (GError **error);

/* Any thread, async-signal-safe. The verdict on @call; WORKS before
 * lw_seccomp_check() and when no filter is installed. */
LwSyscallVerdict lw_seccomp_verdict (LwSyscall call);

/* Any thread. The name of @call ("mincore"). */
const char      *lw_seccomp_name    (LwSyscall call);

G_END_DECLS
