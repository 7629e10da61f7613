/* lw-threadinfo.c: /proc/self/task/TID and per-thread CPU clocks */
#include "lw-threadinfo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

/* Linux encodes another thread's CPU clock as a clockid: ~tid << 3, with
 * the per-thread bit (4) and the scheduler-time clock (2). Unlike
 * pthread_getcpuclockid(), it needs no pthread_t, which would be unsafe to
 * use once the thread has exited. */
#define LW_THREAD_CPUCLOCK(tid) ((clockid_t) ((~(unsigned int) (tid) << 3) | 4u | 2u))

static char *
lw_threadinfo_read (pid_t tid, const char *file)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/%s", (int) tid, file);
  char *contents = NULL;

  if (!g_file_get_contents (path, &contents, NULL, NULL))
    return NULL;
  return contents;
}

LwThreadState
lw_threadinfo_state (pid_t tid)
{
  g_autofree char *stat = lw_threadinfo_read (tid, "stat");
  const char *after_name;

  if (stat == NULL)
    return LW_THREAD_GONE;
  /* "TID (comm) S ...": comm may hold spaces and parentheses, the state
   * follows the last ')'. */
  after_name = strrchr (stat, ')');
  if (after_name == NULL || after_name[1] != ' ')
    return LW_THREAD_UNKNOWN;
  switch (after_name[2])
    {
    case 'R': return LW_THREAD_RUNNING;
    case 'S': case 'I': return LW_THREAD_SLEEPING;
    case 'D': return LW_THREAD_DISK;
    case 'T': case 't': return LW_THREAD_STOPPED;
    default: return LW_THREAD_UNKNOWN;
    }
}

const char *
lw_threadinfo_state_name (LwThreadState state)
{
  static const char *const names[] = {
    [LW_THREAD_UNKNOWN] = "unknown", [LW_THREAD_RUNNING] = "running",
    [LW_THREAD_SLEEPING] = "sleeping", [LW_THREAD_DISK] = "disk",
    [LW_THREAD_STOPPED] = "stopped", [LW_THREAD_GONE] = "gone",
  };

  return names[state];
}

clockid_t
lw_threadinfo_cpu_clock (pid_t tid)
{
  return LW_THREAD_CPUCLOCK (tid);
}

int64_t
lw_threadinfo_cpu_ns (pid_t tid)
{
  struct timespec ts;

  if (clock_gettime (LW_THREAD_CPUCLOCK (tid), &ts) != 0)
    return -1;
  return (int64_t) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

char *
lw_threadinfo_wchan (pid_t tid)
{
  char *wchan = lw_threadinfo_read (tid, "wchan");

  /* "0" means running or not known (kernels hiding addresses). */
  if (wchan != NULL && (wchan[0] == '\0' || g_str_equal (wchan, "0")))
    g_clear_pointer (&wchan, g_free);
  return wchan;
}

char *
lw_threadinfo_name (pid_t tid)
{
  char *name = lw_threadinfo_read (tid, "comm");

  return name != NULL ? g_strchomp (name) : NULL;
}

/* The value of the line "FIELD:" in the status file at @path, parsed in
 * @base; FALSE when the file or the line is missing. */
static gboolean
lw_threadinfo_status_field (const char *path, const char *field, int base, guint64 *value)
{
  g_autofree char *status = NULL;
  g_autofree char *key = g_strdup_printf ("\n%s:", field);
  const char *line;

  if (!g_file_get_contents (path, &status, NULL, NULL) || (line = strstr (status, key)) == NULL)
    return FALSE;
  *value = g_ascii_strtoull (line + strlen (key), NULL, base);
  return TRUE;
}

pid_t
lw_threadinfo_tracer_pid (void)
{
  guint64 pid;

  return lw_threadinfo_status_field ("/proc/self/status", "TracerPid", 10, &pid) ? (pid_t) pid : 0;
}

/* TRUE when the signal mask @field ("SigBlk", "SigPnd"...) of the status
 * file @path has @signo. */
static gboolean
lw_threadinfo_mask_has (const char *path, const char *field, int signo)
{
  guint64 mask;

  return lw_threadinfo_status_field (path, field, 16, &mask) && ((mask >> (signo - 1)) & 1);
}

gboolean
lw_threadinfo_blocks_signal (pid_t tid, int signo)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/status", (int) tid);

  return lw_threadinfo_mask_has (path, "SigBlk", signo);
}

gboolean
lw_threadinfo_signal_pending_anywhere (int signo)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *entry;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_strdup_printf ("/proc/self/task/%s/status", entry);

      if (lw_threadinfo_mask_has (path, "SigPnd", signo))
        return TRUE;
    }
  return FALSE;
}

const char *
lw_threadinfo_syscall_name (long nr)
{
  /* The calls a main-loop thread is found waiting in. */
  static const struct { long nr; const char *name; } calls[] = {
    { SYS_read, "read" }, { SYS_write, "write" }, { SYS_open, "open" },
    { SYS_close, "close" }, { SYS_poll, "poll" }, { SYS_ppoll, "ppoll" },
    { SYS_select, "select" }, { SYS_pselect6, "pselect6" },
    { SYS_epoll_wait, "epoll_wait" }, { SYS_epoll_pwait, "epoll_pwait" },
    { SYS_futex, "futex" }, { SYS_nanosleep, "nanosleep" },
    { SYS_clock_nanosleep, "clock_nanosleep" }, { SYS_fsync, "fsync" },
    { SYS_fdatasync, "fdatasync" }, { SYS_sync, "sync" }, { SYS_openat, "openat" },
    { SYS_readv, "readv" }, { SYS_writev, "writev" }, { SYS_pread64, "pread64" },
    { SYS_pwrite64, "pwrite64" }, { SYS_connect, "connect" }, { SYS_accept, "accept" },
    { SYS_accept4, "accept4" }, { SYS_recvfrom, "recvfrom" }, { SYS_recvmsg, "recvmsg" },
    { SYS_sendto, "sendto" }, { SYS_sendmsg, "sendmsg" }, { SYS_wait4, "wait4" },
    { SYS_waitid, "waitid" }, { SYS_flock, "flock" }, { SYS_fcntl, "fcntl" },
    { SYS_ioctl, "ioctl" }, { SYS_rt_sigtimedwait, "rt_sigtimedwait" },
    { SYS_rt_sigsuspend, "rt_sigsuspend" }, { SYS_pause, "pause" },
    { SYS_msync, "msync" }, { SYS_mmap, "mmap" }, { SYS_munmap, "munmap" },
    { SYS_mprotect, "mprotect" }, { SYS_madvise, "madvise" }, { SYS_stat, "stat" },
    { SYS_newfstatat, "newfstatat" }, { SYS_statx, "statx" }, { SYS_getdents64, "getdents64" },
    { SYS_unlink, "unlink" }, { SYS_unlinkat, "unlinkat" }, { SYS_rename, "rename" },
    { SYS_renameat2, "renameat2" }, { SYS_io_uring_enter, "io_uring_enter" },
    { SYS_sched_yield, "sched_yield" }, { SYS_splice, "splice" },
    { SYS_sendfile, "sendfile" }, { SYS_copy_file_range, "copy_file_range" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (calls); i++)
    if (calls[i].nr == nr)
      return calls[i].name;
  return NULL;
}

gboolean
lw_threadinfo_own_stack (uintptr_t *lo, uintptr_t *hi)
{
  pthread_attr_t attr;
  void *addr;
  size_t size;
  gboolean known = FALSE;

  *lo = *hi = 0;
  if (pthread_getattr_np (pthread_self (), &attr) != 0)
    return FALSE;
  if (pthread_attr_getstack (&attr, &addr, &size) == 0)
    {
      *lo = (uintptr_t) addr;
      *hi = *lo + size;
      known = TRUE;
    }
  pthread_attr_destroy (&attr);
  return known;
}
