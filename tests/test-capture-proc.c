/* test-capture-proc.c: the loop thread's /proc files, kept open by the watcher
 *
 * Before every signal the watcher reads the thread's syscall and status
 * files. For the loop thread both stay open and are read again from
 * offset 0 (which regenerates them): what they say must still be the
 * thread's state now, and follow the context to a new loop thread. Each
 * case runs in a subprocess.
 */
#include <glib.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-watcher.h"

#define CHILD_TIMEOUT_US (90 * G_USEC_PER_SEC)
#define WAIT_NS          ((int64_t) 10 * 1000 * LW_NSEC_PER_MSEC)

enum { COMMAND_NONE, COMMAND_BLOCK, COMMAND_UNBLOCK };

/* A loop thread: runs the context once (the watch adopts it), then spins,
 * changing its own signal mask when told. */
typedef struct
{
  GMainContext *context;
  _Atomic int   tid;      /* set once adopted and spinning */
  _Atomic int   command;  /* COMMAND_*, back to NONE once done */
  _Atomic int   stop;
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

      if (command != COMMAND_NONE)
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
                                 slot->loop_stack_hi, snap, WAIT_NS);
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
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      GMainContext *context = g_main_context_new ();
      LwSnapshot *snap = lw_snapshot_new (64 * 1024);
      LoopThread first = { 0 }, second = { 0 };
      GThread *thread;
      LagWatch *watch;
      pid_t first_tid;

      lagwatch_config_set_output (config, "none", NULL);
      watch = lagwatch_attach_with_config (context, config);
      g_assert_nonnull (watch);
      lagwatch_pause (watch);  /* its capture slot is ours */

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

      lagwatch_detach (watch);
      g_main_context_unref (context);
      lw_snapshot_free (snap);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/capture-proc/loop-status", test_loop_status);

  return g_test_run ();
}
