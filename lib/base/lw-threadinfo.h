/* lw-threadinfo.h: what the kernel says about a thread, read without
 * touching it: /proc/self/task/TID/{stat,wchan,comm,status} and the thread's
 * CPU clock.
 *
 * Every function: any thread, normal context (the watcher in practice).
 * The parsers (lw_threadinfo_parse_*) take the text of one file, read by
 * the caller, and are fuzzed (fuzz/fuzz-proc.c): the kernel writes these
 * files, but a parser must never trust a length or a field count.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef enum
{
  LW_THREAD_UNKNOWN,
  LW_THREAD_RUNNING,   /* R */
  LW_THREAD_SLEEPING,  /* S: interruptible wait */
  LW_THREAD_DISK,      /* D: uninterruptible wait (often I/O) */
  LW_THREAD_STOPPED,   /* T or t: SIGSTOP, or a debugger holds it */
  LW_THREAD_GONE,      /* no such thread, or exited (Z or X: a zombie) */
} LwThreadState;

/* The calling thread only. The bounds [*@lo, *@hi) of its stack, as
 * pthread_getattr_np() reports them; FALSE (and 0, 0) when unknown. */
gboolean      lw_threadinfo_own_stack    (uintptr_t *lo,
                                          uintptr_t *hi);

/* The thread's scheduler state. */
LwThreadState lw_threadinfo_state        (pid_t tid);

/* "running", "sleeping", "disk", "stopped", "gone" or "unknown". */
const char   *lw_threadinfo_state_name   (LwThreadState state);

/* CPU time the thread has used, in ns, from its per-thread CPU clock (no
 * /proc parsing); -1 when the thread is gone. */
int64_t       lw_threadinfo_cpu_ns       (pid_t tid);

/* Any thread. How long thread @tid has waited, runnable, for a CPU since
 * it started (the run-queue delay of /proc/self/task/TID/schedstat), in
 * ns; -1 when unknown (gone, or a kernel without scheduler statistics). */
int64_t       lw_threadinfo_run_delay_ns (pid_t tid);

/* The clock lw_threadinfo_cpu_ns() reads: for clock_gettime() or
 * timer_create(). */
clockid_t     lw_threadinfo_cpu_clock    (pid_t tid);

/* The kernel function the thread waits in ("futex_wait_queue", "do_sys_poll"...),
 * or NULL. */
char         *lw_threadinfo_wchan        (pid_t tid);

/* The thread's name (comm), or NULL. */
char         *lw_threadinfo_name         (pid_t tid);

/* The x86-64 name of system call @nr ("futex", "poll"...), or NULL for a
 * number not in the table. */
const char   *lw_threadinfo_syscall_name (long nr);

/* TRUE when the thread @tid blocks signal @signo (its SigBlk mask). */
gboolean      lw_threadinfo_blocks_signal (pid_t tid,
                                           int   signo);

/* Signal @signo as thread @tid sees it, from one read of its status file:
 * *@blocked (SigBlk), *@pending (queued for the thread or the process,
 * SigPnd or ShdPnd). FALSE when the file cannot be read. */
gboolean      lw_threadinfo_signal_state (pid_t     tid,
                                          int       signo,
                                          gboolean *blocked,
                                          gboolean *pending);

/* Any thread. The letter of the "State:" line of a status file's text
 * (R running or runnable, S, D, T, t, Z, X...), '\0' when there is none. */
char          lw_threadinfo_parse_status_state (const char *status,
                                                gsize       len);

/* Any thread. The same from the text of a status file already read; FALSE
 * when the text has no SigBlk line (a read cut short). */
gboolean      lw_threadinfo_parse_signal_state (const char *status,
                                                gsize       len,
                                                int         signo,
                                                gboolean   *blocked,
                                                gboolean   *pending);

/* TRUE when a signalfd of the process reads signal @signo (from
 * /proc/self/fdinfo; FALSE too when that cannot be read). */
gboolean      lw_threadinfo_signalfd_reads (int signo);

/* TRUE when thread @tid of this process exists (tgkill with signal 0,
 * which needs no access to /proc). */
gboolean      lw_threadinfo_exists       (pid_t tid);

/* /proc/self/task/TID/syscall, parsed. */
typedef struct
{
  gboolean  running;  /* "running", or a format not understood */
  long      nr;       /* the system call it sleeps in, -1 outside one */
  uint64_t  args[6];  /* its arguments */
  uintptr_t sp;
  uintptr_t pc;
} LwProcSyscall;

/* Parses the text of a syscall file ("NR ARG1..ARG6 SP PC", "-1 SP PC",
 * "running"); @len bytes, no terminator needed. Anything else reads as
 * running (then the stack is taken by signal). */
void          lw_threadinfo_parse_syscall (const char    *text,
                                           gsize          len,
                                           LwProcSyscall *out);

/* The scheduler state in the text of a stat file ("TID (comm) S ..."). */
LwThreadState lw_threadinfo_parse_state  (const char *text,
                                          gsize       len);

/* The name (comm) in the text of a stat file, newly allocated; NULL when
 * the text holds none. */
char         *lw_threadinfo_parse_name   (const char *text,
                                          gsize       len);

/* The thread's scheduler state, and in *@name its name (or NULL), from
 * one read of its stat file: a hang's snapshot asks both of every thread,
 * and a read of /proc costs a path walk and an open. */
LwThreadState lw_threadinfo_state_and_name (pid_t   tid,
                                            char  **name);

/* The hexadecimal mask of line "@field:" in the text of a status file;
 * FALSE when the line is missing or malformed. */
gboolean      lw_threadinfo_parse_mask   (const char *text,
                                          gsize       len,
                                          const char *field,
                                          guint64    *mask);

/* TRUE when some thread of the process has signal @signo pending (its
 * SigPnd mask): queued for it, its handler not yet run. */
gboolean      lw_threadinfo_signal_pending_anywhere (int signo);

/* The calling thread is one of lagwatch's own (a watcher, a reporter, a
 * sink writer) until it exits. Called first thing by each of them. */
void          lw_threadinfo_own_enter    (void);

/* TRUE when thread @tid is one of lagwatch's own (by id, never by name: a
 * program may name its threads anything, "lagwatch-demo" included). */
gboolean      lw_threadinfo_is_own       (pid_t tid);

/* Any thread. Starts a thread of lagwatch's own, which calls
 * lw_threadinfo_own_enter() first thing: between the two it is counted as
 * starting (lw_threadinfo_own_starting()), so that nobody takes it for one
 * of the program's threads meanwhile. */
GThread      *lw_threadinfo_own_thread_new (const char  *name,
                                            GThreadFunc  func,
                                            gpointer     data,
                                            GError     **error);

/* Any thread. How many threads of lagwatch's own are starting: created,
 * not yet in lw_threadinfo_own_enter(). */
guint         lw_threadinfo_own_starting (void);

/* The pid of the process tracing us (a debugger), 0 when none. */
pid_t         lw_threadinfo_tracer_pid   (void);

G_END_DECLS
