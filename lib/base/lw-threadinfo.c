/* lw-threadinfo.c: /proc/self/task/TID and per-thread CPU clocks */
#include "lw-threadinfo.h"
#include "lw-proc.h"
#include "lw-say.h"

#include <stdio.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* Any thread. */
LwThreadState
lw_threadinfo_parse_state (const char *text, gsize len)
{
  const char *after_name = NULL;

  /* "TID (comm) S ...": comm may hold spaces and parentheses, the state
   * follows the last ')'. */
  for (gsize i = 0; i < len; i++)
    if (text[i] == ')')
      after_name = text + i;
  if (after_name == NULL || (gsize) (after_name - text) + 2 >= len || after_name[1] != ' ')
    return LW_THREAD_UNKNOWN;
  switch (after_name[2])
    {
    case 'R': return LW_THREAD_RUNNING;
    case 'S': case 'I': return LW_THREAD_SLEEPING;
    case 'D': return LW_THREAD_DISK;
    case 'T': case 't': return LW_THREAD_STOPPED;
    /* Exited: a process's first thread stays a zombie until the whole
     * process ends. */
    case 'Z': case 'X': return LW_THREAD_GONE;
    default: return LW_THREAD_UNKNOWN;
    }
}

char *
lw_threadinfo_parse_name (const char *text, gsize len)
{
  const char *open_paren = memchr (text, '(', len);
  const char *close_paren = NULL;

  /* The name is between the first '(' and the last ')': it may hold
   * parentheses itself. */
  for (gsize i = 0; i < len; i++)
    if (text[i] == ')')
      close_paren = text + i;
  if (open_paren == NULL || close_paren == NULL || close_paren < open_paren)
    return NULL;
  return g_strndup (open_paren + 1, (gsize) (close_paren - open_paren - 1));
}

/* Any thread. Says once per process that /proc could not be read, and
 * why: a process out of descriptors (EMFILE), no /proc mounted, a sandbox
 * that refuses the open. */
static void
lw_threadinfo_say_unreadable (const char *path, const char *why)
{
  static gint said;

  if (g_atomic_int_compare_and_exchange (&said, 0, 1))
    lw_say ("cannot read %s (%s): thread states are unknown; lags are still reported", path, why);
}

/* Any thread. The stat file stays readable in a process that is not
 * dumpable (unlike syscall). A file that cannot be read is not proof that
 * the thread is gone (EMFILE, no /proc, an open refused): only the kernel's
 * answer to a signal 0, which needs no descriptor, is. */
LwThreadState
lw_threadinfo_state (pid_t tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/stat", (int) tid);
  g_autofree char *stat = NULL;
  g_autoptr(GError) error = NULL;
  gsize len;

  if (!g_file_get_contents (path, &stat, &len, &error))
    {
      if (!lw_threadinfo_exists (tid))
        return LW_THREAD_GONE;
      lw_threadinfo_say_unreadable (path, error->message);
      return LW_THREAD_UNKNOWN;
    }
  return lw_threadinfo_parse_state (stat, len);
}

LwThreadState
lw_threadinfo_state_and_name (pid_t tid, char **name)
{
  char path[64], text[1024];
  ssize_t n = -1;
  int fd;

  *name = NULL;
  g_snprintf (path, sizeof path, "/proc/self/task/%d/stat", (int) tid);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      while ((n = read (fd, text, sizeof text)) < 0 && errno == EINTR)
        ;
      close (fd);
    }
  if (n <= 0)
    {
      if (!lw_threadinfo_exists (tid))
        return LW_THREAD_GONE;
      lw_threadinfo_say_unreadable (path, g_strerror (errno));
      return LW_THREAD_UNKNOWN;
    }
  *name = lw_threadinfo_parse_name (text, (gsize) n);
  return lw_threadinfo_parse_state (text, (gsize) n);
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

int64_t
lw_threadinfo_run_delay_ns (pid_t tid)
{
  g_autofree char *schedstat = lw_threadinfo_read (tid, "schedstat");
  guint64 cpu_ns, delay_ns;

  /* "CPU-ns RUN-DELAY-ns TIMESLICES" */
  if (schedstat == NULL
      || sscanf (schedstat, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &cpu_ns, &delay_ns) != 2
      || delay_ns > G_MAXINT64)
    return -1;
  return (int64_t) delay_ns;
}

char *
lw_threadinfo_name (pid_t tid)
{
  char *name = lw_threadinfo_read (tid, "comm");

  return name != NULL ? g_strchomp (name) : NULL;
}

/* Any thread. The text after "@field:" in @text, up to the end of its line,
 * copied into @value (NUL-terminated); FALSE when there is no such line. */
static gboolean
lw_threadinfo_status_line (const char *text, gsize len, const char *field, char *value, gsize size)
{
  gsize field_len = strlen (field);

  for (gsize at = 0; at < len; )
    {
      const char *nl = memchr (text + at, '\n', len - at);
      gsize line_len = nl != NULL ? (gsize) (nl - (text + at)) : len - at;

      if (line_len > field_len && memcmp (text + at, field, field_len) == 0 && text[at + field_len] == ':')
        {
          gsize n = MIN (line_len - field_len - 1, size - 1);

          memcpy (value, text + at + field_len + 1, n);
          value[n] = '\0';
          return TRUE;
        }
      at += line_len + 1;
    }
  return FALSE;
}

/* Any thread. The hexadecimal mask in @value, the text of a status line
 * after its colon (NUL-terminated); FALSE when malformed. */
static gboolean
lw_threadinfo_parse_hex (const char *value, guint64 *mask)
{
  const char *digits;
  char *end = NULL;

  digits = value + strspn (value, " \t");
  if (!g_ascii_isxdigit (*digits))
    return FALSE;
  errno = 0;
  *mask = g_ascii_strtoull (digits, &end, 16);
  return errno == 0 && (*end == '\0' || g_ascii_isspace (*end));
}

/* Any thread. */
gboolean
lw_threadinfo_parse_mask (const char *text, gsize len, const char *field, guint64 *mask)
{
  char value[64];

  return lw_threadinfo_status_line (text, len, field, value, sizeof value)
         && lw_threadinfo_parse_hex (value, mask);
}

/* Any thread. The status file of @tid ("self" for the process when 0). */
static char *
lw_threadinfo_status (pid_t tid, gsize *len)
{
  g_autofree char *path = tid != 0 ? g_strdup_printf ("/proc/self/task/%d/status", (int) tid)
                                   : g_strdup ("/proc/self/status");
  char *status = NULL;

  if (!g_file_get_contents (path, &status, len, NULL))
    return NULL;
  return status;
}

pid_t
lw_threadinfo_tracer_pid (void)
{
  gsize len;
  g_autofree char *status = lw_threadinfo_status (0, &len);
  char value[32];

  if (status == NULL || !lw_threadinfo_status_line (status, len, "TracerPid", value, sizeof value))
    return 0;
  return (pid_t) g_ascii_strtoll (value, NULL, 10);
}

/* Any thread. TRUE when mask @field of @status has @signo. */
static gboolean
lw_threadinfo_mask_has (const char *status, gsize len, const char *field, int signo)
{
  guint64 mask;

  return signo >= 1 && signo <= 64 && lw_threadinfo_parse_mask (status, len, field, &mask)
         && ((mask >> (signo - 1)) & 1);
}

gboolean
lw_threadinfo_blocks_signal (pid_t tid, int signo)
{
  gboolean blocked, pending;

  return lw_threadinfo_signal_state (tid, signo, &blocked, &pending) && blocked;
}

/* Read before a signal to any thread but the loop thread (whose file
 * stays open): one read into the stack, no allocation, no fstat, no
 * second read for the end of the file; the masks are in its first
 * kilobyte, whatever follows. */
gboolean
lw_threadinfo_signal_state (pid_t tid, int signo, gboolean *blocked, gboolean *pending)
{
  char path[64], status[4096];
  ssize_t len;
  int fd;

  *blocked = *pending = FALSE;
  snprintf (path, sizeof path, "/proc/self/task/%d/status", (int) tid);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return FALSE;
  do
    len = read (fd, status, sizeof status);
  while (len < 0 && errno == EINTR);
  close (fd);
  if (len <= 0)
    return FALSE;
  lw_threadinfo_parse_signal_state (status, (gsize) len, signo, blocked, pending);
  return TRUE;
}

/* Any thread. Whether line "@key:" of @status (@key six characters) has
 * bit @signo set in its mask; *@found TRUE when there is such a line.
 * Found with memmem(): the status file's text is read before every
 * signal, and a walk line by line, field by field, took some 4 µs of a
 * sample's checks, cold. */
static gboolean
lw_threadinfo_status_bit (const char *status, gsize len, const char key[7], int signo, gboolean *found)
{
  char needle[9] = "\n";
  const char *line = NULL, *end;
  char value[64];
  guint64 mask;
  gsize n;

  memcpy (needle + 1, key, 6);
  needle[7] = ':';
  if (len >= 7 && memcmp (status, needle + 1, 7) == 0)
    line = status;
  else
    {
      line = memmem (status, len, needle, 8);
      line = line != NULL ? line + 1 : NULL;
    }
  *found = line != NULL;
  if (line == NULL)
    return FALSE;
  end = memchr (line, '\n', len - (gsize) (line - status));
  n = MIN ((gsize) ((end != NULL ? end : status + len) - line) - 7, sizeof value - 1);
  memcpy (value, line + 7, n);
  value[n] = '\0';
  return signo >= 1 && signo <= 64 && lw_threadinfo_parse_hex (value, &mask) && ((mask >> (signo - 1)) & 1);
}

char
lw_threadinfo_parse_status_state (const char *status, gsize len)
{
  const char *end = status + len, *value;

  if (len >= 6 && memcmp (status, "State:", 6) == 0)
    value = status + 6;
  else
    {
      const char *line = memmem (status, len, "\nState:", 7);

      if (line == NULL)
        return '\0';
      value = line + 7;
    }
  while (value < end && (*value == ' ' || *value == '\t'))
    value++;
  return value < end && g_ascii_isupper (*value) ? *value : '\0';
}

gboolean
lw_threadinfo_parse_signal_state (const char *status, gsize len, int signo, gboolean *blocked,
                                  gboolean *pending)
{
  gboolean found_pnd, found_shd, found_blk;

  *blocked = lw_threadinfo_status_bit (status, len, "SigBlk", signo, &found_blk);
  *pending = lw_threadinfo_status_bit (status, len, "SigPnd", signo, &found_pnd)
             || lw_threadinfo_status_bit (status, len, "ShdPnd", signo, &found_shd);
  return found_blk;
}

gboolean
lw_threadinfo_signal_pending_anywhere (int signo)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *entry;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      gboolean blocked, pending;

      if (lw_threadinfo_signal_state ((pid_t) g_ascii_strtoll (entry, NULL, 10), signo,
                                      &blocked, &pending) && pending)
        return TRUE;
    }
  return FALSE;
}

gboolean
lw_threadinfo_signalfd_reads (int signo)
{
  g_autofree char *fd_dir = g_strconcat (lw_proc_self (), "/fd", NULL);
  g_autoptr(GDir) dir = g_dir_open (fd_dir, 0, NULL);
  const char *entry;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *link_path = g_strdup_printf ("%s/%s", fd_dir, entry);
      g_autofree char *target = g_file_read_link (link_path, NULL);
      g_autofree char *info_path = NULL;
      g_autofree char *info = NULL;
      gsize len;

      if (g_strcmp0 (target, "anon_inode:[signalfd]") != 0)
        continue;
      /* "sigmask:\t0000000000000200": the signals it reads, bit signo - 1. */
      info_path = g_strdup_printf ("%s/fdinfo/%s", lw_proc_self (), entry);
      if (g_file_get_contents (info_path, &info, &len, NULL)
          && lw_threadinfo_mask_has (info, len, "sigmask", signo))
        return TRUE;
    }
  return FALSE;
}

gboolean
lw_threadinfo_exists (pid_t tid)
{
  return tid > 0 && (syscall (SYS_tgkill, getpid (), tid, 0) == 0 || errno != ESRCH);
}

void
lw_threadinfo_parse_syscall (const char *text, gsize len, LwProcSyscall *out)
{
  char copy[256];
  char *fields[9] = { 0 };
  int count = 0;
  char *save = NULL;

  memset (out, 0, sizeof *out);
  out->nr = -1;
  len = MIN (len, sizeof copy - 1);
  memcpy (copy, text, len);
  copy[len] = '\0';
  if (g_str_has_prefix (copy, "running"))
    {
      out->running = TRUE;
      return;
    }
  /* "NR ARG1 .. ARG6 SP PC", or "-1 SP PC" when blocked outside a call. */
  for (char *tok = strtok_r (copy, " \n", &save); tok != NULL && count < 9;
       tok = strtok_r (NULL, " \n", &save))
    fields[count++] = tok;
  if ((count != 9 && count != 3) || strtok_r (NULL, " \n", &save) != NULL)
    {
      out->running = TRUE;  /* unknown format: take it by signal */
      return;
    }
  out->nr = strtol (fields[0], NULL, 10);
  for (int i = 1; i < count - 2; i++)
    out->args[i - 1] = g_ascii_strtoull (fields[i], NULL, 16);
  out->sp = (uintptr_t) g_ascii_strtoull (fields[count - 2], NULL, 16);
  out->pc = (uintptr_t) g_ascii_strtoull (fields[count - 1], NULL, 16);
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

/* Threads lw_threadinfo_own_thread_new() started that have not entered
 * lw_threadinfo_own_enter() yet. */
static atomic_uint lw_own_starting;

/* lagwatch's own threads, by thread id. HOLDS: lw_own_lock */
static GMutex lw_own_lock;
static GArray *lw_own_tids;

/* The thread that set lw_own_key is exiting: it is no longer ours. */
static void
lw_threadinfo_own_forget (gpointer data)
{
  pid_t tid = (pid_t) GPOINTER_TO_INT (data);

  g_mutex_lock (&lw_own_lock);
  for (guint i = 0; lw_own_tids != NULL && i < lw_own_tids->len; i++)
    if (g_array_index (lw_own_tids, pid_t, i) == tid)
      {
        g_array_remove_index_fast (lw_own_tids, i);
        break;
      }
  g_mutex_unlock (&lw_own_lock);
}

static GPrivate lw_own_key = G_PRIVATE_INIT (lw_threadinfo_own_forget);

void
lw_threadinfo_own_enter (void)
{
  pid_t tid = gettid ();

  g_mutex_lock (&lw_own_lock);
  if (lw_own_tids == NULL)
    lw_own_tids = g_array_new (FALSE, FALSE, sizeof (pid_t));
  g_array_append_val (lw_own_tids, tid);
  g_mutex_unlock (&lw_own_lock);
  g_private_set (&lw_own_key, GINT_TO_POINTER ((int) tid));
  /* A thread lw_threadinfo_own_thread_new() started is no longer starting
   * (one that another way started was never counted). */
  for (guint n = atomic_load (&lw_own_starting); n > 0;)
    if (atomic_compare_exchange_weak (&lw_own_starting, &n, n - 1))
      break;
}

GThread *
lw_threadinfo_own_thread_new (const char *name, GThreadFunc func, gpointer data, GError **error)
{
  GThread *thread;

  atomic_fetch_add (&lw_own_starting, 1);
  thread = g_thread_try_new (name, func, data, error);
  if (thread == NULL)
    atomic_fetch_sub (&lw_own_starting, 1);
  return thread;
}

guint
lw_threadinfo_own_starting (void)
{
  return atomic_load (&lw_own_starting);
}

gboolean
lw_threadinfo_is_own (pid_t tid)
{
  gboolean own = FALSE;

  g_mutex_lock (&lw_own_lock);
  for (guint i = 0; lw_own_tids != NULL && i < lw_own_tids->len && !own; i++)
    own = g_array_index (lw_own_tids, pid_t, i) == tid;
  g_mutex_unlock (&lw_own_lock);
  return own;
}
