/* lw-seccomp.c: which system calls a seccomp filter lets lagwatch make */
#include "lw-seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lw-private.h"

/* How long one probing child may take before its pending call counts as
 * blocking (a filter that hands it to a supervisor that never answers). */
#define LW_SECCOMP_CHILD_MS 2000
/* LwProbedCall.optional of the first call made. */
#define LW_PROBE_DUMPABLE   (-2)

/* One call made in the probing child, and what it tells. */
typedef struct
{
  const char *name;
  long        nr;
  int         optional;   /* an LwSyscall, or < 0: one lagwatch cannot do without */
} LwProbedCall;

/* The calls lagwatch's threads and handler make that a program may well
 * never make itself (measured with strace -f on the lag tests), and the
 * ones it can work around. Calls every program makes (read, mmap, futex,
 * poll...) are left out: a filter that kills them kills the program
 * before lagwatch attaches. */
static const LwProbedCall lw_probed_calls[] = {
  /* First, and made for real: PR_SET_DUMPABLE 0, so that a call killed
   * next leaves no core dump (of a copy of the whole program: slow, and
   * a crash report for the user). */
  { "prctl",              SYS_prctl,              LW_PROBE_DUMPABLE },
  { "mincore",            SYS_mincore,            LW_SYSCALL_MINCORE },
  { "process_vm_readv",   SYS_process_vm_readv,   LW_SYSCALL_PROCESS_VM_READV },
  { "sigaltstack",        SYS_sigaltstack,        LW_SYSCALL_SIGALTSTACK },
  { "timer_create",       SYS_timer_create,       LW_SYSCALL_TIMER_CREATE },
  { "rt_tgsigqueueinfo",  SYS_rt_tgsigqueueinfo,  LW_SYSCALL_RT_TGSIGQUEUEINFO },
  { "tgkill",             SYS_tgkill,             -1 },
  { "clock_nanosleep",    SYS_clock_nanosleep,    -1 },
  { "pread64",            SYS_pread64,            -1 },
  { "readlink",           SYS_readlink,           -1 },
  { "getdents64",         SYS_getdents64,         -1 },
  { "sched_getaffinity",  SYS_sched_getaffinity,  -1 },
  { "gettid",             SYS_gettid,             -1 },
  { "timer_settime",      SYS_timer_settime,      -1 },
  { "timer_delete",       SYS_timer_delete,       -1 },
  /* GLib's g_thread_new(): the new thread takes its creator's scheduling
   * settings; glibc's pthread_create() tries clone3 first. */
  { "sched_getattr",      SYS_sched_getattr,      -1 },
  { "sched_setattr",      SYS_sched_setattr,      -1 },
  { "clone3",             SYS_clone3,             -1 },
};

static _Atomic int lw_seccomp_verdicts[LW_SYSCALL_N_OPTIONAL];  /* LwSyscallVerdict, WORKS = 0 */
G_STATIC_ASSERT (LW_SYSCALL_WORKS == 0);

/* The probing child, right after clone(): a copy of the calling thread
 * alone, in a copy of the address space, sharing nothing. Only system
 * calls from here (another thread may have held malloc's or stdio's lock
 * at the clone). The @i-th call's byte is written before the next call:
 * 'W' it worked, 'F' it failed. */
G_GNUC_NORETURN static void
lw_seccomp_child (int fd, guint first)
{
  struct sigaction dfl = { .sa_handler = SIG_DFL };

  /* SECCOMP_RET_TRAP raises SIGSYS: whatever the program's handler would
   * do with it in lagwatch's thread, here it ends the child. */
  sigaction (SIGSYS, &dfl, NULL);
  for (guint i = first; i < G_N_ELEMENTS (lw_probed_calls); i++)
    {
      const LwProbedCall *call = &lw_probed_calls[i];
      long ok;

      switch (call->optional)
        {
        case LW_SYSCALL_MINCORE:
          {
            unsigned char vec[1];

            ok = syscall (SYS_mincore, (uintptr_t) vec & ~(uintptr_t) 4095, 4096UL, vec) == 0;
          }
          break;
        case LW_SYSCALL_PROCESS_VM_READV:
          {
            long value = 42, copy = 0;
            struct iovec local = { &copy, sizeof copy }, remote = { &value, sizeof value };

            ok = syscall (SYS_process_vm_readv, (long) syscall (SYS_getpid), &local, 1UL, &remote, 1UL, 0UL)
                   == (long) sizeof copy
                 && copy == 42;
          }
          break;
        case LW_SYSCALL_SIGALTSTACK:
          {
            stack_t current;

            ok = syscall (SYS_sigaltstack, NULL, &current) == 0;
          }
          break;
        case LW_SYSCALL_TIMER_CREATE:
          {
            struct sigevent event;
            int timer;

            memset (&event, 0, sizeof event);
            event.sigev_notify = SIGEV_NONE;
            ok = syscall (SYS_timer_create, (long) CLOCK_MONOTONIC, &event, &timer) == 0;
          }
          break;
        case LW_SYSCALL_RT_TGSIGQUEUEINFO:
          {
            siginfo_t info;

            /* Signal 0: the checks without a signal. */
            memset (&info, 0, sizeof info);
            info.si_code = SI_QUEUE;
            info.si_pid = (pid_t) syscall (SYS_getpid);
            info.si_uid = getuid ();
            ok = syscall (SYS_rt_tgsigqueueinfo, (long) info.si_pid, (long) syscall (SYS_gettid), 0L, &info) == 0;
          }
          break;
        case LW_PROBE_DUMPABLE:
          ok = syscall (SYS_prctl, (long) PR_SET_DUMPABLE, 0L, 0L, 0L, 0L) == 0;
          break;
        default:
          /* Arguments every call refuses (EBADF, EFAULT, EINVAL): only
           * whether the filter lets the call return at all is looked at. */
          syscall (call->nr, -1L, -1L, -1L, -1L, -1L, -1L);
          ok = TRUE;
          break;
        }
      if (write (fd, ok ? "W" : "F", 1) != 1)
        break;
    }
  syscall (SYS_exit_group, 0);
  for (;;)
    ;
}

/* Attaching thread. Runs one probing child from call @first on; writes
 * the verdicts it gave into @verdicts and returns the index of the call
 * that killed or blocked it (G_N_ELEMENTS (lw_probed_calls) when none),
 * or -1 with errno when no child could be made. */
static int
lw_seccomp_run_child (guint first, LwSyscallVerdict *verdicts)
{
  int fds[2];
  pid_t pid;
  guint at = first;
  gint64 deadline = g_get_monotonic_time () + LW_SECCOMP_CHILD_MS * 1000;
  int status;

  if (pipe2 (fds, O_CLOEXEC) != 0)
    return -1;
  /* No exit signal: the program gets no SIGCHLD and its waitpid(-1)
   * (without __WALL) does not see this child. */
  pid = (pid_t) syscall (SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
  if (pid == 0)
    {
      close (fds[0]);
      lw_seccomp_child (fds[1], first);
    }
  close (fds[1]);
  if (pid < 0)
    {
      int saved = errno;

      close (fds[0]);
      errno = saved;
      return -1;
    }
  while (at < G_N_ELEMENTS (lw_probed_calls))
    {
      struct pollfd p = { fds[0], POLLIN, 0 };
      gint64 left = deadline - g_get_monotonic_time ();
      char byte;
      ssize_t n;

      if (left <= 0)
        break;
      if (poll (&p, 1, (int) MAX (left / 1000, 1)) < 0 && errno != EINTR)
        break;
      if (p.revents == 0)
        continue;
      n = read (fds[0], &byte, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n != 1)
        break;  /* the child died at call @at */
      verdicts[at++] = byte == 'W' ? LW_SYSCALL_WORKS : LW_SYSCALL_FAILS;
    }
  close (fds[0]);
  if (at < G_N_ELEMENTS (lw_probed_calls))
    kill (pid, SIGKILL);  /* blocked in call @at, or already dead */
  while (waitpid (pid, &status, __WCLONE) < 0 && errno == EINTR)
    ;
  return (int) at;
}

/* Any thread. TRUE when /proc/self/status shows no seccomp filter ("Seccomp:
 * 0", or no such line: a kernel without seccomp). FALSE when it shows one,
 * or cannot be read (no /proc: a filter cannot be ruled out). */
static gboolean
lw_seccomp_unfiltered (void)
{
  g_autofree char *status = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return FALSE;
  line = strstr (status, "\nSeccomp:");
  if (line == NULL)
    return TRUE;
  line += strlen ("\nSeccomp:");
  while (*line == ' ' || *line == '\t')
    line++;
  return *line == '0';
}

/* Attaching thread. */
static gboolean
lw_seccomp_probe (GError **error)
{
  LwSyscallVerdict verdicts[G_N_ELEMENTS (lw_probed_calls)];
  guint first = 0;

  while (first < G_N_ELEMENTS (lw_probed_calls))
    {
      int fatal = lw_seccomp_run_child (first, verdicts);

      if (fatal < 0)
        {
          g_set_error (error, LW_ERROR, LW_ERROR_INVALID,
                       "this process runs under a seccomp filter, and what it allows cannot be "
                       "found out (no child process: %s): not attaching", g_strerror (errno));
          return FALSE;
        }
      if ((guint) fatal >= G_N_ELEMENTS (lw_probed_calls))
        break;
      verdicts[fatal] = LW_SYSCALL_FATAL;
      if (lw_probed_calls[fatal].optional < 0)  /* prctl among them */
        {
          g_set_error (error, LW_ERROR, LW_ERROR_INVALID,
                       "this process's seccomp filter kills or blocks the system call %s, which "
                       "lagwatch needs: not attaching", lw_probed_calls[fatal].name);
          return FALSE;
        }
      first = (guint) fatal + 1;
    }
  for (guint i = 0; i < G_N_ELEMENTS (lw_probed_calls); i++)
    if (lw_probed_calls[i].optional >= 0)
      atomic_store (&lw_seccomp_verdicts[lw_probed_calls[i].optional], (int) verdicts[i]);
  return TRUE;
}

gboolean
lw_seccomp_check (GError **error)
{
  static GMutex lock;
  static pid_t checked_pid;
  static gboolean usable;
  static char *refusal;
  gboolean ok;

  g_mutex_lock (&lock);
  if (checked_pid != getpid ())
    {
      g_autoptr(GError) local = NULL;

      for (guint i = 0; i < LW_SYSCALL_N_OPTIONAL; i++)
        atomic_store (&lw_seccomp_verdicts[i], LW_SYSCALL_WORKS);
      g_clear_pointer (&refusal, g_free);
      usable = lw_seccomp_unfiltered () || lw_seccomp_probe (&local);
      if (!usable)
        refusal = g_strdup (local->message);
      checked_pid = getpid ();
    }
  ok = usable;
  if (!ok)
    g_set_error_literal (error, LW_ERROR, LW_ERROR_INVALID, refusal);
  g_mutex_unlock (&lock);
  return ok;
}

LwSyscallVerdict
lw_seccomp_verdict (LwSyscall call)
{
  if ((guint) call >= LW_SYSCALL_N_OPTIONAL)
    return LW_SYSCALL_WORKS;
  return (LwSyscallVerdict) atomic_load (&lw_seccomp_verdicts[call]);
}

const char *
lw_seccomp_name (LwSyscall call)
{
  for (guint i = 0; i < G_N_ELEMENTS (lw_probed_calls); i++)
    if (lw_probed_calls[i].optional == (int) call)
      return lw_probed_calls[i].name;
  return "?";
}
