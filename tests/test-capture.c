/* test-capture.c: capture requests, as the watcher makes them
 *
 * /capture/waits-for-cpu: a request on a machine too loaded to run its
 * thread. A signal sent to a thread that is runnable but waits for a CPU stays
 * queued until the thread gets one. Giving such a request up after the
 * usual timeout left its signal queued, and every later capture of the
 * same thread found it there and sent nothing ("an earlier signal is
 * still queued"): the lag got no stack at all. The request must be kept
 * until the thread runs, or until the caller ends it.
 *
 * The loaded machine is made on purpose: the target thread runs at
 * SCHED_IDLE on the same single CPU as the test's thread, which keeps that
 * CPU busy while it looks (a SCHED_IDLE thread gets a CPU that a normal
 * thread wants only about once a second).
 *
 * /capture/loop-status: the loop thread's /proc files, kept open. Before
 * every signal the watcher reads the thread's syscall and status files.
 * For the loop thread both stay open and are read again from offset 0
 * (which regenerates them): what they say must still be the thread's
 * state now, and follow the context to a new loop thread.
 *
 * /capture/in-own-handler: a thread in lagwatch's own handler has the
 * signal blocked (the kernel blocks it for the handler's run). On a busy
 * machine a handler preempted before its return stays there for
 * milliseconds, longer than the watcher looks again: that mask is
 * lagwatch's, never reported as the program's (BLOCKED, and after two
 * such sights a warning that the thread blocks the signal), and no second
 * signal is sent into it (IN_HANDLER). The handler is held there by a
 * sample hook that waits on a pipe.
 *
 * /capture/red-zone: the stack copy starts 128 bytes below the stack
 * pointer (the x86-64 red zone, where CFI can place a saved rbp), both
 * in-process and through the kernel, and at the stack pointer when the
 * page below it is not mapped (a stack grown to its limit): the copy is
 * then still made, not lost.
 *
 * Each case runs in a subprocess.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lag-harness.h"
#include "lw-capture.h"
#include "lw-capture-core.h"
#include "lw-capture-private.h"
#include "lw-clock.h"
#include "lw-threadinfo.h"
#include "lw-watcher.h"

#define CHILD_TIMEOUT_US (90 * G_USEC_PER_SEC)
/* How long the test waits at most for a thread to get a CPU (or a
 * capture for its handler). */
#define LONG_WAIT_NS     ((int64_t) 10 * 1000 * LW_NSEC_PER_MSEC)

typedef struct
{
  cpu_set_t     cpu;
  _Atomic pid_t tid;      /* set once the thread runs at SCHED_IDLE */
  _Atomic int   refused;  /* SCHED_IDLE was refused (errno) */
  _Atomic int   stop;
} Starved;

/* The starved thread: pinned to the test's CPU, at SCHED_IDLE, always
 * runnable. */
static gpointer
starved_spin (gpointer data)
{
  Starved *starved = data;
  struct sched_param param = { 0 };

  if (sched_setaffinity (0, sizeof starved->cpu, &starved->cpu) != 0
      || sched_setscheduler (0, SCHED_IDLE, &param) != 0)
    {
      atomic_store (&starved->refused, errno);
      return NULL;
    }
  atomic_store (&starved->tid, gettid ());
  while (!atomic_load (&starved->stop))
    ;
  return NULL;
}

/* Test thread: keeps its CPU for @ns without a system call that sleeps. */
static void
hold_cpu (int64_t ns)
{
  int64_t until = lw_clock_now_ns () + ns;

  while (lw_clock_now_ns () < until)
    ;
}

/* A watch on a context of its own, paused: its capture slot is the
 * test's, which takes captures as the watcher would. */
typedef struct
{
  GMainContext  *context;
  LagWatch      *watch;
  LwSnapshot    *snap;
} PausedWatch;

/* Test thread, in a subprocess. */
static void
paused_watch_init (PausedWatch *w)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();

  lagwatch_config_set_output (config, "none", NULL);
  w->context = g_main_context_new ();
  w->snap = lw_snapshot_new (64 * 1024);
  w->watch = lagwatch_attach_with_config (w->context, config);
  g_assert_nonnull (w->watch);
  lagwatch_pause (w->watch);
}

/* Test thread. */
static void
paused_watch_clear (PausedWatch *w)
{
  lagwatch_detach (w->watch);
  g_main_context_unref (w->context);
  lw_snapshot_free (w->snap);
}

/* A signal out to a thread that waits for a CPU, past the give-up time:
 * the request stays PENDING (not TIMEOUT), and the stack comes as soon as
 * the thread runs. Asked to give up (give-up time 0), it is given up. */
static void
test_waits_for_cpu (void)
{
  if (g_test_subprocess ())
    {
      PausedWatch w;
      LwSnapshot *snap;
      LagWatch *watch;
      Starved starved = { 0 };
      cpu_set_t allowed;
      gboolean seen_waiting = FALSE;
      GThread *thread;
      gint64 deadline;
      int cpu = 0;

      g_assert_cmpint (sched_getaffinity (0, sizeof allowed, &allowed), ==, 0);
      while (!CPU_ISSET (cpu, &allowed))
        cpu++;
      CPU_ZERO (&starved.cpu);
      CPU_SET (cpu, &starved.cpu);
      g_assert_cmpint (sched_setaffinity (0, sizeof starved.cpu, &starved.cpu), ==, 0);

      paused_watch_init (&w);
      watch = w.watch;
      snap = w.snap;

      thread = g_thread_new ("starved", starved_spin, &starved);
      deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
      while (atomic_load (&starved.tid) == 0 && atomic_load (&starved.refused) == 0)
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (1000);
        }
      if (atomic_load (&starved.refused) != 0)
        {
          g_test_skip_printf ("SCHED_IDLE refused: %s", g_strerror (atomic_load (&starved.refused)));
          g_thread_join (thread);
          paused_watch_clear (&w);
          return;
        }

      /* The thread may get the CPU now and then anyway: tried until one
       * request found it waiting. */
      while (!seen_waiting)
        {
          LwCaptureResult result;

          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_assert_cmpint (lw_capture_start (watch->slot, starved.tid, 0, 0, 0, snap), ==,
                           LW_CAPTURE_PENDING);
          hold_cpu (5 * LW_NSEC_PER_MSEC);
          result = lw_capture_finish (watch->slot, 0, LW_NSEC_PER_MSEC);
          if (result == LW_CAPTURE_PENDING)
            seen_waiting = TRUE;
          else
            g_assert_cmpint (result, ==, LW_CAPTURE_OK);  /* it ran: not TIMEOUT */
          if (seen_waiting)
            {
              /* Sleeping here gives it the CPU: its handler answers. */
              g_assert_cmpint (lw_capture_finish (watch->slot, LONG_WAIT_NS, LW_NSEC_PER_MSEC),
                               ==, LW_CAPTURE_OK);
            }
          g_assert_true (snap->via_signal);
        }

      /* Asked to give up, the request is given up: TIMEOUT, or OK if the
       * thread ran meanwhile. Then its next capture works. */
      g_assert_cmpint (lw_capture_start (watch->slot, starved.tid, 0, 0, 0, snap), ==, LW_CAPTURE_PENDING);
      hold_cpu (5 * LW_NSEC_PER_MSEC);
      {
        LwCaptureResult result = lw_capture_finish (watch->slot, 0, 0);

        g_assert_true (result == LW_CAPTURE_TIMEOUT || result == LW_CAPTURE_OK);
      }
      deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
      for (;;)
        {
          LwCaptureResult result = lw_capture_take_thread (watch->slot, starved.tid, 0, 0, 0, snap,
                                                           LONG_WAIT_NS);

          if (result == LW_CAPTURE_OK)
            break;
          /* The given-up signal is still queued until the thread runs. */
          g_assert_cmpint (result, ==, LW_CAPTURE_IN_FLIGHT);
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (10 * 1000);  /* the CPU to the thread */
        }

      atomic_store (&starved.stop, 1);
      g_thread_join (thread);
      paused_watch_clear (&w);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

enum { COMMAND_NONE, COMMAND_BLOCK, COMMAND_UNBLOCK, COMMAND_POLL };

/* A loop thread: runs the context once (the watch adopts it), then spins,
 * changing its own signal mask when told. */
typedef struct
{
  GMainContext *context;
  _Atomic int   tid;      /* set once adopted and spinning */
  _Atomic int   command;  /* COMMAND_*, back to NONE once done */
  _Atomic int   stop;
  int           wake[2];  /* COMMAND_POLL: polls wake[0] until readable */
  _Atomic int   eintr;    /* polls cut short by a signal */
} LoopThread;

/* The loop thread. */
static gpointer
loop_thread_main (gpointer data)
{
  LoopThread *loop = data;

  while (g_main_context_iteration (loop->context, FALSE))
    ;
  atomic_store (&loop->tid, gettid ());
  while (!atomic_load (&loop->stop))
    {
      int command = atomic_load (&loop->command);

      if (command == COMMAND_POLL)
        {
          struct pollfd fd = { loop->wake[0], POLLIN, 0 };
          char byte;

          while (poll (&fd, 1, -1) != 1)
            if (errno == EINTR)
              atomic_fetch_add (&loop->eintr, 1);
          g_assert_cmpint (read (loop->wake[0], &byte, 1), ==, 1);
          atomic_store (&loop->command, COMMAND_NONE);
        }
      else if (command != COMMAND_NONE)
        {
          sigset_t set;

          sigemptyset (&set);
          sigaddset (&set, lw_capture_get_signal ());
          pthread_sigmask (command == COMMAND_BLOCK ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
          atomic_store (&loop->command, COMMAND_NONE);
        }
    }
  return NULL;
}

/* Test thread. */
static GThread *
loop_thread_start (LoopThread *loop, GMainContext *context)
{
  GThread *thread;
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  loop->context = context;
  thread = g_thread_new ("loop", loop_thread_main, loop);
  while (atomic_load (&loop->tid) == 0)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (1000);
    }
  return thread;
}

/* Test thread. */
static void
loop_thread_tell (LoopThread *loop, int command)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  atomic_store (&loop->command, command);
  while (atomic_load (&loop->command) != COMMAND_NONE)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (1000);
    }
}

/* Test thread. One capture of the watch's loop thread, as the watcher
 * takes one. */
static LwCaptureResult
capture_loop_thread (LagWatch *watch, LwSnapshot *snap)
{
  LwSlot *slot = watch->slot;

  return lw_capture_take_thread (slot, atomic_load (&slot->loop_tid), 0, slot->loop_stack_lo,
                                 slot->loop_stack_hi, snap, LONG_WAIT_NS);
}

/* Test thread. TRUE when the process has thread @tid's status file open. */
static gboolean
status_file_open (pid_t tid)
{
  g_autofree char *wanted = g_strdup_printf ("/proc/%d/task/%d/status", (int) getpid (), (int) tid);
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/fd", 0, NULL);
  const char *entry;

  g_assert_nonnull (dir);
  while ((entry = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *link = g_build_filename ("/proc/self/fd", entry, NULL);
      g_autofree char *target = g_file_read_link (link, NULL);

      if (g_strcmp0 (target, wanted) == 0)
        return TRUE;
    }
  return FALSE;
}

/* Captures of the loop thread keep its status file open, and read it
 * again each time: a mask changed since shows at once (BLOCKED, then OK
 * again). When another thread becomes the loop thread, its own file is
 * read, and the first thread's is closed. */
static void
test_loop_status (void)
{
  if (g_test_subprocess ())
    {
      LoopThread first = { 0 }, second = { 0 };
      PausedWatch w;
      LwSnapshot *snap;
      LagWatch *watch;
      GMainContext *context;
      GThread *thread;
      pid_t first_tid;

      paused_watch_init (&w);
      watch = w.watch;
      snap = w.snap;
      context = w.context;

      thread = loop_thread_start (&first, context);
      first_tid = atomic_load (&first.tid);
      g_assert_cmpint (atomic_load (&watch->slot->loop_tid), ==, first_tid);
      g_assert_cmpint (capture_loop_thread (watch, snap), ==, LW_CAPTURE_OK);
      g_assert_true (status_file_open (first_tid));

      loop_thread_tell (&first, COMMAND_BLOCK);
      g_assert_cmpint (capture_loop_thread (watch, snap), ==, LW_CAPTURE_BLOCKED);
      loop_thread_tell (&first, COMMAND_UNBLOCK);
      g_assert_cmpint (capture_loop_thread (watch, snap), ==, LW_CAPTURE_OK);
      atomic_store (&first.stop, 1);
      g_thread_join (thread);

      /* A new loop thread, which blocks the signal from the start: its
       * own file says so, not the first thread's. */
      thread = loop_thread_start (&second, context);
      g_assert_cmpint (atomic_load (&watch->slot->loop_tid), ==, atomic_load (&second.tid));
      loop_thread_tell (&second, COMMAND_BLOCK);
      g_assert_cmpint (capture_loop_thread (watch, snap), ==, LW_CAPTURE_BLOCKED);
      g_assert_true (status_file_open (atomic_load (&second.tid)));
      g_assert_false (status_file_open (first_tid));
      loop_thread_tell (&second, COMMAND_UNBLOCK);
      g_assert_cmpint (capture_loop_thread (watch, snap), ==, LW_CAPTURE_OK);
      atomic_store (&second.stop, 1);
      g_thread_join (thread);
      paused_watch_clear (&w);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* The handler's sample hook of /capture/in-own-handler: says it runs, then
 * waits (read() is async-signal-safe) until the test writes a byte. */
static int           own_handler_pipe[2];
static _Atomic int   own_handler_entered;

/* Async-signal-safe: runs in lagwatch's handler, on the loop thread. */
static void
own_handler_hold (const void *ucontext, LwSnapshot *snap)
{
  char byte;

  (void) ucontext;
  (void) snap;
  atomic_store (&own_handler_entered, 1);
  while (read (own_handler_pipe[0], &byte, 1) < 0 && errno == EINTR)
    ;
}

static void
test_in_own_handler (void)
{
  if (g_test_subprocess ())
    {
      LoopThread loop = { 0 };
      PausedWatch w;
      LwSlot *slot;
      GThread *thread;
      gboolean blocked, pending;
      gint64 deadline;
      pid_t tid;

      paused_watch_init (&w);
      slot = w.watch->slot;
      thread = loop_thread_start (&loop, w.context);
      tid = atomic_load (&loop.tid);
      g_assert_cmpint (pipe2 (own_handler_pipe, O_CLOEXEC), ==, 0);
      lw_core_set_sample_hook (tid, own_handler_hold);

      g_assert_cmpint (lw_capture_start (slot, tid, 0, slot->loop_stack_lo, slot->loop_stack_hi, w.snap),
                       ==, LW_CAPTURE_PENDING);
      deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
      while (!atomic_load (&own_handler_entered))
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (1000);
        }
      /* In the handler: the kernel shows the signal blocked. */
      g_assert_true (lw_threadinfo_signal_state (tid, lw_capture_get_signal (), &blocked, &pending));
      g_assert_true (blocked);
      g_assert_cmpint (lw_capture_may_signal (slot, tid), ==, LW_CAPTURE_IN_HANDLER);

      g_assert_cmpint (write (own_handler_pipe[1], "x", 1), ==, 1);
      g_assert_cmpint (lw_capture_finish (slot, LONG_WAIT_NS, LONG_WAIT_NS), ==, LW_CAPTURE_OK);
      lw_core_set_sample_hook (0, NULL);
      /* Out of the handler, the program's own mask counts again. */
      loop_thread_tell (&loop, COMMAND_BLOCK);
      g_assert_cmpint (lw_capture_may_signal (slot, tid), ==, LW_CAPTURE_BLOCKED);
      loop_thread_tell (&loop, COMMAND_UNBLOCK);

      atomic_store (&loop.stop, 1);
      g_thread_join (thread);
      close (own_handler_pipe[0]);
      close (own_handler_pipe[1]);
      paused_watch_clear (&w);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* A thread's name and state from one read of its stat file (a hang's
 * snapshot asks both of every thread): the same name as its comm file,
 * parentheses and all; text without a name gives none. */
static void
test_stat_name (void)
{
  static const char *const odd_name = "a) (b) S c";
  g_autofree char *from_stat = NULL;
  g_autofree char *from_comm = NULL;
  char *parsed;

  g_assert_cmpint (pthread_setname_np (pthread_self (), odd_name), ==, 0);
  g_assert_cmpint (lw_threadinfo_state_and_name (gettid (), &from_stat), ==, LW_THREAD_RUNNING);
  from_comm = lw_threadinfo_name (gettid ());
  g_assert_cmpstr (from_stat, ==, odd_name);
  g_assert_cmpstr (from_comm, ==, odd_name);

  parsed = lw_threadinfo_parse_name ("42 (pool-7) S 1 2", 17);
  g_assert_cmpstr (parsed, ==, "pool-7");
  g_free (parsed);
  g_assert_null (lw_threadinfo_parse_name ("42 pool S", 9));
  g_assert_null (lw_threadinfo_parse_name ("42 ) (x S", 9));
  g_assert_null (lw_threadinfo_parse_name ("", 0));
}

/* The masks of a status file, in the one pass before every signal: the
 * thread's own (SigBlk), what is queued for it (SigPnd) or for the whole
 * process (ShdPnd), a real-time signal's bit among the 64; a text cut
 * short before its SigBlk line says so. */
static void
test_status_masks (void)
{
  static const char status[] =
    "Name:\tloop\nState:\tR (running)\nSigQ:\t1/95432\n"
    "SigPnd:\t0000000000000000\nShdPnd:\t0000000400000000\n"
    "SigBlk:\t0000000200000000\nSigIgn:\t0000000000001000\nSigCgt:\t0000000680004a02\n";
  gboolean blocked, pending;

  /* SIGRTMIN+0 on glibc is 34: bit 33 (0x200000000), 35 bit 34. */
  g_assert_true (lw_threadinfo_parse_signal_state (status, sizeof status - 1, 34, &blocked, &pending));
  g_assert_true (blocked);
  g_assert_false (pending);
  g_assert_true (lw_threadinfo_parse_signal_state (status, sizeof status - 1, 35, &blocked, &pending));
  g_assert_false (blocked);
  g_assert_true (pending);
  g_assert_true (lw_threadinfo_parse_signal_state (status, sizeof status - 1, 13, &blocked, &pending));
  g_assert_false (blocked);
  g_assert_false (pending);
  /* Cut before SigBlk: not known. */
  g_assert_false (lw_threadinfo_parse_signal_state (status, strstr (status, "SigBlk") - status, 34,
                                                    &blocked, &pending));
  g_assert_false (blocked);
  /* A malformed mask is no bit set. */
  g_assert_true (lw_threadinfo_parse_signal_state ("SigBlk:\tzz\n", 11, 34, &blocked, &pending));
  g_assert_false (blocked);
}

/* A thread's masks read from its status file by path (any thread but the
 * loop thread): this thread's own, as it changes; no such thread, no
 * answer. */
static void
test_status_by_path (void)
{
  sigset_t set;
  gboolean blocked, pending;

  sigemptyset (&set);
  sigaddset (&set, SIGRTMIN + 3);
  g_assert_cmpint (pthread_sigmask (SIG_BLOCK, &set, NULL), ==, 0);
  g_assert_true (lw_threadinfo_signal_state (gettid (), SIGRTMIN + 3, &blocked, &pending));
  g_assert_true (blocked);
  g_assert_false (pending);
  g_assert_cmpint (pthread_kill (pthread_self (), SIGRTMIN + 3), ==, 0);
  g_assert_true (lw_threadinfo_signal_state (gettid (), SIGRTMIN + 3, &blocked, &pending));
  g_assert_true (blocked);
  g_assert_true (pending);
  {
    int got;

    g_assert_cmpint (sigwait (&set, &got), ==, 0);
    g_assert_cmpint (got, ==, SIGRTMIN + 3);
  }
  g_assert_cmpint (pthread_sigmask (SIG_UNBLOCK, &set, NULL), ==, 0);
  g_assert_true (lw_threadinfo_signal_state (gettid (), SIGRTMIN + 3, &blocked, &pending));
  g_assert_false (blocked);
  g_assert_false (pending);
  g_assert_false (lw_threadinfo_signal_state (G_MAXINT32, SIGRTMIN + 3, &blocked, &pending));
}

/* A thread that sleeps in a futex with every signal blocked, whose /proc
 * files the test dup2()s over the watch's. */
typedef struct
{
  GMutex        lock;
  GCond         cond;
  gboolean      quit;
  _Atomic pid_t tid;
} Sleeper;

static gpointer
sleeper_main (gpointer data)
{
  Sleeper *sleeper = data;
  sigset_t all;

  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, NULL);
  g_mutex_lock (&sleeper->lock);
  atomic_store (&sleeper->tid, gettid ());
  while (!sleeper->quit)
    g_cond_wait (&sleeper->cond, &sleeper->lock);
  g_mutex_unlock (&sleeper->lock);
  return NULL;
}

/* Test thread. Opens @tid's /proc @file onto descriptor @fd, as a program
 * that reuses a number lagwatch holds; returns the file's inode. */
static ino_t
open_over (int fd, pid_t tid, const char *file)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/%s", (int) tid, file);
  int opened = open (path, O_RDONLY | O_CLOEXEC);
  struct stat st;

  g_assert_cmpint (opened, >=, 0);
  g_assert_cmpint (dup2 (opened, fd), ==, fd);
  close (opened);
  g_assert_cmpint (fstat (fd, &st), ==, 0);
  return st.st_ino;
}

/* The program dup2()s files of its own over the loop thread's /proc files
 * that the watch keeps open: another thread's status file (that thread
 * blocks every signal), then another thread's syscall file (that thread
 * sleeps). Each is checked before it is read: the capture and the look
 * through /proc read the loop thread's own files again (OK by signal: not
 * BLOCKED; running: not the sleeping thread's stack), said once, and the
 * program's descriptors are left open. */
static void
test_kept_files_replaced (void)
{
  if (g_test_subprocess ())
    {
      LoopThread loop = { 0 };
      Sleeper sleeper = { 0 };
      PausedWatch w;
      GThread *thread, *sleeper_thread;
      LwSlot *slot;
      int status_fd, syscall_fd;
      ino_t status_ino, syscall_ino;
      gboolean running;
      struct stat st;

      paused_watch_init (&w);
      slot = w.watch->slot;
      g_mutex_init (&sleeper.lock);
      g_cond_init (&sleeper.cond);
      sleeper_thread = g_thread_new ("sleeper", sleeper_main, &sleeper);
      while (atomic_load (&sleeper.tid) == 0)
        g_usleep (1000);
      thread = loop_thread_start (&loop, w.context);
      g_assert_cmpint (capture_loop_thread (w.watch, w.snap), ==, LW_CAPTURE_OK);
      g_assert_cmpint (slot->proc_status_fd, >=, 0);
      g_assert_cmpint (slot->proc_syscall_fd, >=, 0);

      status_fd = slot->proc_status_fd;
      status_ino = open_over (status_fd, atomic_load (&sleeper.tid), "status");
      g_assert_cmpint (capture_loop_thread (w.watch, w.snap), ==, LW_CAPTURE_OK);
      g_assert_true (w.snap->via_signal);

      /* The syscall file, as the sampler's looks through /proc read it:
       * the loop thread runs (not the sleeper's stack copied). */
      syscall_fd = slot->proc_syscall_fd;
      syscall_ino = open_over (syscall_fd, atomic_load (&sleeper.tid), "syscall");
      g_assert_cmpint (lw_capture_look (slot, atomic_load (&loop.tid), 0, slot->loop_stack_lo,
                                        slot->loop_stack_hi, w.snap, &running), ==, LW_CAPTURE_PENDING);
      g_assert_true (running);
      g_assert_cmpint (capture_loop_thread (w.watch, w.snap), ==, LW_CAPTURE_OK);
      g_assert_true (w.snap->via_signal);

      /* The program's descriptors, untouched. */
      g_assert_cmpint (fstat (status_fd, &st), ==, 0);
      g_assert_cmpuint (st.st_ino, ==, status_ino);
      g_assert_cmpint (fstat (syscall_fd, &st), ==, 0);
      g_assert_cmpuint (st.st_ino, ==, syscall_ino);
      close (status_fd);
      close (syscall_fd);

      atomic_store (&loop.stop, 1);
      g_thread_join (thread);
      g_mutex_lock (&sleeper.lock);
      sleeper.quit = TRUE;
      g_cond_signal (&sleeper.cond);
      g_mutex_unlock (&sleeper.lock);
      g_thread_join (sleeper_thread);
      paused_watch_clear (&w);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*the program closed or replaced descriptor *, which held a /proc file "
                             "of the loop thread*");
  g_test_trap_assert_stderr_unmatched ("*closed or replaced descriptor*closed or replaced descriptor*");
}

/* The loop thread ran at the last capture, then went to sleep in poll():
 * the next capture, which reads its status file first for a thread last
 * seen running, takes its stack through /proc, and the poll is not cut
 * short. */
static void
test_running_then_asleep (void)
{
  if (g_test_subprocess ())
    {
      LoopThread loop = { 0 };
      PausedWatch w;
      GThread *thread;
      pid_t tid;
      gint64 deadline;

      paused_watch_init (&w);
      g_assert_cmpint (pipe2 (loop.wake, O_CLOEXEC), ==, 0);
      thread = loop_thread_start (&loop, w.context);
      tid = atomic_load (&loop.tid);
      g_assert_cmpint (capture_loop_thread (w.watch, w.snap), ==, LW_CAPTURE_OK);
      g_assert_true (w.snap->via_signal);
      g_assert_true (w.watch->slot->proc_seen_running);

      atomic_store (&loop.command, COMMAND_POLL);
      deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
      while (lw_threadinfo_state (tid) != LW_THREAD_SLEEPING)
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (1000);
        }
      g_assert_cmpint (capture_loop_thread (w.watch, w.snap), ==, LW_CAPTURE_OK);
      g_assert_false (w.snap->via_signal);
      g_assert_cmpint (w.snap->syscall_nr, >=, 0);

      g_assert_cmpint (write (loop.wake[1], "x", 1), ==, 1);
      while (atomic_load (&loop.command) != COMMAND_NONE)
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (1000);
        }
      g_assert_cmpint (atomic_load (&loop.eintr), ==, 0);
      atomic_store (&loop.stop, 1);
      g_thread_join (thread);
      close (loop.wake[0]);
      close (loop.wake[1]);
      paused_watch_clear (&w);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Two pages standing for a stack, each word holding its own address, with
 * an inaccessible page above them (where the kernel's copy stops). */
static void
test_red_zone (void)
{
  const size_t page = (size_t) sysconf (_SC_PAGESIZE);
  guint64 *words = mmap (NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uintptr_t lo = (uintptr_t) words, hi = lo + 2 * page;
  uintptr_t sp = lo + page + 64;  /* 64 bytes into the upper page */
  LwSnapshot *snap = lw_snapshot_new (4 * page);
  guint64 word;

  g_assert_true (words != MAP_FAILED);
  g_assert_cmpint (mprotect ((void *) hi, page, PROT_NONE), ==, 0);
  for (size_t i = 0; i < 2 * page / 8; i++)
    words[i] = (guint64) (uintptr_t) &words[i];

  /* In-process, the stack's bounds known: up to the top. */
  lw_core_copy_stack (snap, sp, lo, hi);
  g_assert_cmpuint (snap->stack_base, ==, sp - LW_CORE_RED_ZONE_BYTES);
  g_assert_cmpuint (snap->stack_len, ==, hi - snap->stack_base);
  memcpy (&word, snap->stack, 8);
  g_assert_cmpuint (word, ==, sp - LW_CORE_RED_ZONE_BYTES);
  /* ...but never below them. */
  lw_core_copy_stack (snap, lo + 40, lo, hi);
  g_assert_cmpuint (snap->stack_base, ==, lo);
  g_assert_cmpuint (snap->stack_len, ==, 2 * page);

  /* Through the kernel (bounds unknown), from the page below. */
  lw_core_copy_stack (snap, sp, 0, 0);
  g_assert_cmpuint (snap->stack_base, ==, sp - LW_CORE_RED_ZONE_BYTES);
  g_assert_cmpuint (snap->stack_len, ==, hi - snap->stack_base);
  memcpy (&word, snap->stack + LW_CORE_RED_ZONE_BYTES, 8);
  g_assert_cmpuint (word, ==, sp);

  /* The page below inaccessible: from the stack pointer. */
  g_assert_cmpint (mprotect (words, page, PROT_NONE), ==, 0);
  lw_core_copy_stack (snap, sp, 0, 0);
  g_assert_cmpuint (snap->stack_base, ==, sp);
  g_assert_cmpuint (snap->stack_len, ==, hi - sp);
  memcpy (&word, snap->stack, 8);
  g_assert_cmpuint (word, ==, sp);

  lw_snapshot_free (snap);
  munmap (words, 3 * page);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  harness_subprocess_dumpable ();

  g_test_add_func ("/capture/waits-for-cpu", test_waits_for_cpu);
  g_test_add_func ("/capture/loop-status", test_loop_status);
  g_test_add_func ("/capture/kept-files-replaced", test_kept_files_replaced);
  g_test_add_func ("/capture/running-then-asleep", test_running_then_asleep);
  g_test_add_func ("/capture/status-masks", test_status_masks);
  g_test_add_func ("/capture/status-by-path", test_status_by_path);
  g_test_add_func ("/capture/stat-name", test_stat_name);
  g_test_add_func ("/capture/in-own-handler", test_in_own_handler);
  g_test_add_func ("/capture/red-zone", test_red_zone);

  return g_test_run ();
}
