/* lw-last-thread.c: the process ends when the program's last thread does */
#include "lw-last-thread.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lw-fd.h"
#include "lw-say.h"
#include "lw-threadinfo.h"

#ifndef PIDFD_THREAD
/* Linux 6.9 and later: pidfd_open() of any thread, not only a process's
 * first, readable once that thread has exited. */
# define PIDFD_THREAD O_EXCL
#endif

/* Where a live thread of the program cannot be given a pidfd (a kernel
 * before 6.9, no descriptor left), how often the reaper looks instead:
 * only once a thread known to be the program's has exited while others go
 * on, never while the program's known threads all live. */
#define LW_LAST_THREAD_LOOK_MS 1000
/* How soon to look again while a thread of lagwatch's own is starting. */
#define LW_LAST_THREAD_STARTING_MS 10

/* What a thread's lw_last_known holds. */
enum
{
  LW_LAST_UNKNOWN = 0,
  LW_LAST_PROGRAM,  /* the program's: its exit makes the reaper look */
  LW_LAST_OWN,      /* lagwatch's own (a report callback attaching): ignored */
};

/* A descriptor the reaper keeps, with what it was when opened: the
 * program may close it or reuse its number (lw-fd.h), and from then on the
 * number is the program's, neither polled, read, written nor closed. */
typedef struct
{
  int    fd;
  LwFdId id;
} LwLastFd;

static GMutex   lw_last_lock;
/* HOLDS: lw_last_lock. The pipe that wakes the reaper: [0] it polls and
 * reads, [1] written when a known thread exits; -1 until it starts. A pipe,
 * not an eventfd: each pipe has an inode of its own, so a number the
 * program took over is told from ours (every eventfd shares one inode). */
static LwLastFd lw_last_wake[2] = { { .fd = -1 }, { .fd = -1 } };
/* HOLDS: lw_last_lock. The reaper runs (in this process). */
static gboolean lw_last_started;

/* The word the kernel clears, and wakes as a futex, when the process's
 * first thread exits (its clear_child_tid), NULL while unknown. What it
 * holds before is glibc's: the thread's id in glibc 2.36 and 2.41
 * (Debian 12 and 13), a join state in 2.43 (2 for a running first
 * thread in Debian unstable). glibc's own pthread_join() waits for the
 * kernel's 0 in every one, so 0 alone says the thread has exited. A pidfd
 * cannot say it: the kernel wakes no poller when a process's first thread
 * exits while others go on (it stays a zombie, and its pidfd turns
 * readable without a wake-up). */
static int *_Atomic lw_last_main_tid_word;

static void lw_last_thread_exits (gpointer data);

static GPrivate lw_last_known = G_PRIVATE_INIT (lw_last_thread_exits);

/* Reaper thread. Looks at the threads of the process that are the
 * program's (not lagwatch's own) and alive (a zombie is not: a process's
 * first thread stays one, once exited, until the process ends). Each gets
 * a pidfd in @watched (tid -> LwLastFd), opened before its state is read,
 * so that an exit after the look wakes the reaper; those of threads gone
 * are closed, and one whose number the program took is forgotten (not
 * closed) and opened again. The first thread has none: @main_awaited says
 * whether lw_last_thread_main_waiter() waits for it.
 * Returns how many are alive, -1 when /proc cannot tell: the process is
 * never ended on a guess. */
static int
lw_last_thread_look (GHashTable *watched, gboolean main_awaited)
{
  g_autoptr(GHashTable) alive = g_hash_table_new (NULL, NULL);
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  GHashTableIter iter;
  gpointer tid_key, value;
  const char *entry;
  guint taken = 0;

  if (dir == NULL)
    return -1;
  while ((entry = g_dir_read_name (dir)) != NULL)
    {
      pid_t tid = (pid_t) g_ascii_strtoll (entry, NULL, 10);

      if (tid <= 0 || lw_threadinfo_is_own (tid))
        continue;
      if (tid == getpid ())
        {
          int *word = atomic_load (&lw_last_main_tid_word);

          /* The kernel clears the first thread's word (and wakes its
           * waiter) as it exits, before /proc shows it a zombie: in
           * between, its state still reads as alive, and a look then
           * would wait for a thread already gone, with no waiter left
           * to wake it. A cleared word is an exited thread. */
          if (main_awaited && word != NULL && __atomic_load_n (word, __ATOMIC_ACQUIRE) == 0)
            continue;
        }
      else
        {
          LwLastFd *known = g_hash_table_lookup (watched, GINT_TO_POINTER (tid));

          if (known != NULL && !lw_fd_is (known->fd, &known->id))
            {
              taken++;
              g_hash_table_remove (watched, GINT_TO_POINTER (tid));
              known = NULL;
            }
          if (known == NULL)
            {
              int fd = (int) syscall (SYS_pidfd_open, tid, PIDFD_THREAD);

              if (fd >= 0)
                {
                  known = g_new (LwLastFd, 1);
                  known->fd = fd;
                  lw_fd_id_take (fd, &known->id);
                  g_hash_table_insert (watched, GINT_TO_POINTER (tid), known);
                }
              else if (errno == ESRCH)
                continue;  /* gone since the directory was read */
            }
        }
      /* A state that cannot be read counts as alive. */
      if (lw_threadinfo_state (tid) == LW_THREAD_GONE)
        continue;
      g_hash_table_add (alive, GINT_TO_POINTER (tid));
    }
  if (taken > 0)
    lw_say ("the program closed or replaced %u of the descriptors that held lagwatch's pidfds of its threads "
            "(they tell lagwatch when its last thread exits): opened new ones", taken);
  g_hash_table_iter_init (&iter, watched);
  while (g_hash_table_iter_next (&iter, &tid_key, &value))
    if (!g_hash_table_contains (alive, tid_key))
      {
        LwLastFd *gone = value;

        lw_fd_close (gone->fd, &gone->id);
        g_hash_table_iter_remove (&iter);
      }
  return (int) g_hash_table_size (alive);
}

/* Any thread, lw_last_lock held. Wakes the reaper, unless the program has
 * taken the pipe's number: then the reaper, which looks at least once a
 * second, finds that out and makes a new pipe. */
static void
lw_last_thread_wake_unlocked (void)
{
  if (lw_fd_is (lw_last_wake[1].fd, &lw_last_wake[1].id))
    (void) !write (lw_last_wake[1].fd, "", 1);
}

/* The thread that waits for the process's first thread to exit (on its
 * clear_child_tid word, with no timeout), then wakes the reaper and ends. */
static gpointer
lw_last_thread_main_waiter (gpointer data)
{
  int *word = atomic_load (&lw_last_main_tid_word);
  int value;

  lw_threadinfo_own_enter ();
  /* Until the kernel has cleared the word: a wait returns when woken,
   * maybe spuriously, on a signal, or at once (EAGAIN) when the word no
   * longer holds the value seen (a join state may change before the
   * kernel's 0): each time it is read again. */
  while ((value = __atomic_load_n (word, __ATOMIC_ACQUIRE)) != 0)
    syscall (SYS_futex, word, FUTEX_WAIT, value, NULL, NULL, 0);
  /* The kernel wakes one waiter: a pthread_join() of the first thread may
   * have waited beside this one. */
  syscall (SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  g_mutex_lock (&lw_last_lock);
  lw_last_thread_wake_unlocked ();
  g_mutex_unlock (&lw_last_lock);
  return NULL;
}

/* Reaper thread. Starts lw_last_thread_main_waiter() (every signal
 * blocked); FALSE when it could not. */
static gboolean
lw_last_thread_await_main (void)
{
  g_autoptr(GError) error = NULL;
  sigset_t all, saved;
  GThread *waiter;

  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  waiter = lw_threadinfo_own_thread_new ("lagwatch-last", lw_last_thread_main_waiter, NULL, &error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (waiter == NULL)
    {
      g_debug ("cannot start the thread that waits for the first thread's exit: %s", error->message);
      return FALSE;
    }
  g_thread_unref (waiter);
  return TRUE;
}

/* Any thread, lw_last_lock held. Opens the pipe that wakes the reaper
 * into lw_last_wake; FALSE (and -1s) when it cannot. */
static gboolean
lw_last_thread_open_wake_unlocked (void)
{
  int ends[2];

  if (pipe2 (ends, O_CLOEXEC | O_NONBLOCK) != 0)
    {
      lw_last_wake[0].fd = lw_last_wake[1].fd = -1;
      return FALSE;
    }
  for (int i = 0; i < 2; i++)
    {
      lw_last_wake[i].fd = ends[i];
      lw_fd_id_take (ends[i], &lw_last_wake[i].id);
    }
  return TRUE;
}

/* Any thread, lw_last_lock held. Closes the ends of the wake-up pipe that
 * are still ours (lw_fd_close) and forgets both numbers. */
static void
lw_last_thread_close_wake_unlocked (void)
{
  for (int i = 0; i < 2; i++)
    {
      lw_fd_close (lw_last_wake[i].fd, &lw_last_wake[i].id);
      lw_last_wake[i].fd = -1;
    }
}

/* Reaper thread. The end of the wake-up pipe to poll, checked first: when
 * the program has taken either end's number, the ends still ours are
 * closed and a new pipe opened (said once each time). Its number and
 * identity in *@end; -1 when there is none: the reaper then looks once a
 * second, which it does anyway. */
static void
lw_last_thread_wake_end (LwLastFd *end)
{
  g_mutex_lock (&lw_last_lock);
  if (lw_last_wake[0].fd >= 0)
    {
      gboolean read_end_ours = lw_fd_is (lw_last_wake[0].fd, &lw_last_wake[0].id);

      if (!read_end_ours || !lw_fd_is (lw_last_wake[1].fd, &lw_last_wake[1].id))
        {
          int taken = read_end_ours ? lw_last_wake[1].fd : lw_last_wake[0].fd;

          lw_last_thread_close_wake_unlocked ();
          if (lw_last_thread_open_wake_unlocked ())
            lw_say ("the program closed or replaced descriptor %d, which held the pipe that tells lagwatch a "
                    "thread of the program exited: opened a new one", taken);
          else
            lw_say ("the program closed or replaced descriptor %d, which held the pipe that tells lagwatch a "
                    "thread of the program exited, and no new one can be opened (%s): lagwatch looks once a "
                    "second instead", taken, g_strerror (errno));
        }
    }
  *end = lw_last_wake[0];
  g_mutex_unlock (&lw_last_lock);
}

/* The reaper thread: started when a thread known to be the program's
 * exits; ends the process once none of the program's threads is left, as
 * glibc does when a program's last thread exits: exit (0), atexit handlers
 * and all (lagwatch's own stops the watchers, which never wait on this
 * thread, and lets the reports reach the sinks). Sleeps with no timeout
 * on the program's live threads (their pidfds) and the wake-up pipe,
 * written when another known thread exits. Every descriptor is checked
 * before it is polled (lw-fd.h). */
static gpointer
lw_last_thread_reaper (gpointer data)
{
  g_autoptr(GHashTable) watched = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  gboolean main_awaited = FALSE;

  lw_threadinfo_own_enter ();
  for (;;)
    {
      g_autofree struct pollfd *fds = NULL;
      GHashTableIter iter;
      gpointer value;
      guint n = 1;
      LwLastFd wake;
      int left;

      /* Whether the first thread has exited or not: a waiter that finds
       * it gone returns at once. */
      if (!main_awaited && atomic_load (&lw_last_main_tid_word) != NULL)
        main_awaited = lw_last_thread_await_main ();
      lw_last_thread_wake_end (&wake);
      left = lw_last_thread_look (watched, main_awaited);
      if (left == 0)
        {
          g_debug ("no thread of the program is left: ending the process, as its last thread would");
          exit (0);
        }
      fds = g_new0 (struct pollfd, 1 + g_hash_table_size (watched));
      fds[0] = (struct pollfd) { .fd = wake.fd, .events = POLLIN };
      g_hash_table_iter_init (&iter, watched);
      while (g_hash_table_iter_next (&iter, NULL, &value))
        fds[n++] = (struct pollfd) { .fd = ((LwLastFd *) value)->fd, .events = POLLIN };
      /* A thread of lagwatch's own that is starting (not yet marked as
       * such) was counted as the program's: look again shortly. And never
       * sleep for good on the threads counted: one may still turn out to
       * be lagwatch's own, which would keep the process alive for ever
       * (seen under load: the sink thread, not yet marked when the first
       * thread exited). So once a known thread has exited and others live
       * on, the reaper looks at least once a second. */
      while (poll (fds, n, lw_threadinfo_own_starting () > 0 ? LW_LAST_THREAD_STARTING_MS
                           : LW_LAST_THREAD_LOOK_MS) < 0 && errno == EINTR)
        ;
      if (fds[0].revents & POLLIN)
        {
          char drained[64];

          /* Checked again before each read: the program may have taken
           * the number while the reaper slept (its file then reads as
           * ready), and a read would take the program's bytes. */
          while (lw_fd_is (wake.fd, &wake.id) && read (wake.fd, drained, sizeof drained) > 0)
            ;
        }
    }
  return NULL;
}

/* Any thread, lw_last_lock held. Starts the reaper (every signal blocked,
 * as lagwatch's other threads). */
static void
lw_last_thread_start_unlocked (void)
{
  g_autoptr(GError) error = NULL;
  sigset_t all, saved;
  GThread *reaper;

  if (!lw_last_thread_open_wake_unlocked ())
    {
      g_debug ("no pipe for the thread that ends the process with the program's last: %s", g_strerror (errno));
      return;
    }
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  reaper = lw_threadinfo_own_thread_new ("lagwatch-last", lw_last_thread_reaper, NULL, &error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (reaper == NULL)
    {
      g_debug ("cannot start the thread that ends the process with the program's last: %s",
               error->message);
      lw_last_thread_close_wake_unlocked ();
      return;
    }
  g_thread_unref (reaper);
  lw_last_started = TRUE;
}

/* A thread known to be the program's, exiting (its GPrivate destructor):
 * the reaper looks whether it was the last. */
static void
lw_last_thread_exits (gpointer data)
{
  int saved_errno = errno;

  if (GPOINTER_TO_INT (data) != LW_LAST_PROGRAM)
    return;
  g_mutex_lock (&lw_last_lock);
  if (!lw_last_started)
    lw_last_thread_start_unlocked ();
  else
    lw_last_thread_wake_unlocked ();
  g_mutex_unlock (&lw_last_lock);
  errno = saved_errno;
}

/* The forking thread, before fork(): the reaper's state is whole in the
 * child. */
static void
lw_last_thread_atfork_prepare (void)
{
  g_mutex_lock (&lw_last_lock);
}

/* The forking thread, in the parent after fork(). */
static void
lw_last_thread_atfork_parent (void)
{
  g_mutex_unlock (&lw_last_lock);
}

/* The only thread of the child, after fork(): the reaper stayed in the
 * parent; a later exit starts the child's own. */
static void
lw_last_thread_atfork_child (void)
{
  lw_last_thread_close_wake_unlocked ();
  lw_last_started = FALSE;
  g_mutex_unlock (&lw_last_lock);
}

/* Any thread, normal context. On the process's first thread, notes the
 * word the kernel clears when it exits. Also run as the library is loaded
 * (on the first thread, unless the library is opened later by another). */
__attribute__ ((constructor)) static void
lw_last_thread_note_main (void)
{
  int *word = NULL;

  if (gettid () != getpid () || atomic_load (&lw_last_main_tid_word) != NULL)
    return;
  /* PR_GET_TID_ADDRESS needs a kernel with checkpoint/restore support (as
   * Debian's); without it, the reaper looks at the first thread now and
   * then instead. */
  if (prctl (PR_GET_TID_ADDRESS, &word, 0, 0, 0) == 0 && word != NULL)
    atomic_store (&lw_last_main_tid_word, word);
}

void
lw_last_thread_track_self (void)
{
  static gsize atfork_registered;

  if (g_private_get (&lw_last_known) != NULL)
    return;
  lw_last_thread_note_main ();
  if (g_once_init_enter (&atfork_registered))
    {
      pthread_atfork (lw_last_thread_atfork_prepare, lw_last_thread_atfork_parent,
                      lw_last_thread_atfork_child);
      g_once_init_leave (&atfork_registered, 1);
    }
  g_private_set (&lw_last_known,
                 GINT_TO_POINTER (lw_threadinfo_is_own (gettid ()) ? LW_LAST_OWN : LW_LAST_PROGRAM));
}
