/* test-lifecycle.c: lagwatch never holds the program's life in its hands
 *
 * A report callback may detach any watch, its own or another whose
 * callback is running at the same moment and detaching this one: every
 * call returns and every watch ends. A program whose last thread ends
 * (main() calling pthread_exit() once its loop thread is gone, or a thread
 * lagwatch never saw ending after both) ends, as glibc makes it, although
 * lagwatch's threads are still there; and SIGTERM with its default action
 * ends it too. A program whose main thread lives on after a thread known
 * to lagwatch ended is not ended (the first thread's exit is read from
 * the word the kernel clears, which glibc 2.43 no longer fills with the
 * thread's id). Everything runs in a subprocess with a deadline; the waits
 * inside are on conditions, with generous deadlines that fail the test
 * only when the awaited thing never comes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lag-harness.h"
#include "take-descriptors.h"

#define SUBPROCESS_TIMEOUT_US (60 * G_USEC_PER_SEC)
#define WAIT_US               (30 * G_USEC_PER_SEC)

/* -- detach from report callbacks ----------------------------------------- */

typedef struct _Pair Pair;

typedef struct
{
  Pair         *pair;
  GMainContext *context;
  LagWatch     *watch;
  guint         index;
  GThread      *thread;
  _Atomic gboolean reported;  /* its first callback began */
} Side;

struct _Pair
{
  Side     sides[2];
  gboolean cross;       /* each callback detaches the other watch, else its own */
  GMutex   lock;
  GCond    cond;
  /* HOLDS: lock */
  guint    entered;     /* callbacks that have begun */
  guint    returned;    /* ... and whose lagwatch_detach() returned */
  guint    ended;       /* watches whose callback was released (destroy notify) */
  gboolean stop;
};

/* Waits, @pair's lock held, until *@count reaches @n; FALSE at the deadline. */
static gboolean
pair_wait (Pair *pair, guint *count, guint n)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  while (*count < n)
    if (!g_cond_wait_until (&pair->cond, &pair->lock, deadline))
      return *count >= n;
  return TRUE;
}

/* Reporting thread of a side's watch. Once both callbacks run at the same
 * time (crossed), detaches the other side's watch; else its own. */
static void
on_report_detach (LagWatchReport *report, gpointer data)
{
  Side *side = data;
  Pair *pair = side->pair;
  LagWatch *target;

  if (atomic_exchange (&side->reported, TRUE))
    return;  /* a later lag: the first callback detached already */
  g_mutex_lock (&pair->lock);
  pair->entered++;
  g_cond_broadcast (&pair->cond);
  if (pair->cross)
    g_assert_true (pair_wait (pair, &pair->entered, 2));
  g_mutex_unlock (&pair->lock);

  target = pair->sides[pair->cross ? 1 - side->index : side->index].watch;
  lagwatch_detach (target);

  g_mutex_lock (&pair->lock);
  pair->returned++;
  g_cond_broadcast (&pair->cond);
  g_mutex_unlock (&pair->lock);
}

/* Any thread: the watch released its callback, its reporting ended. */
static void
on_callback_released (gpointer data)
{
  Side *side = data;
  Pair *pair = side->pair;

  /* Before the count: once it is 2, the test may free the contexts. */
  g_main_context_wakeup (side->context);
  g_mutex_lock (&pair->lock);
  pair->ended++;
  g_cond_broadcast (&pair->cond);
  g_mutex_unlock (&pair->lock);
}

/* Lags of 150 ms until the side's callback has begun: a watcher that a
 * loaded machine wakes far too late times a busy period again, and may
 * report none of them but the last. */
static gboolean
lag_until_reported (gpointer data)
{
  Side *side = data;

  spin_ms (GINT_TO_POINTER (150));
  return atomic_load (&side->reported) ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

/* A side's loop thread: lags until one is reported, then the loop until
 * the test says stop. */
static gpointer
side_main (gpointer data)
{
  Side *side = data;
  Pair *pair = side->pair;
  gboolean stop = FALSE;
  GSource *idle;

  g_main_context_push_thread_default (side->context);
  idle = g_idle_source_new ();
  g_source_set_callback (idle, lag_until_reported, side, NULL);
  g_source_attach (idle, side->context);
  g_source_unref (idle);
  while (!stop)
    {
      g_main_context_iteration (side->context, TRUE);
      g_mutex_lock (&pair->lock);
      stop = pair->stop;
      g_mutex_unlock (&pair->lock);
    }
  g_main_context_pop_thread_default (side->context);
  return NULL;
}

static void
detach_from_callbacks (gboolean cross)
{
  Pair pair = { .cross = cross };
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();

  g_mutex_init (&pair.lock);
  g_cond_init (&pair.cond);
  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  for (guint i = 0; i < 2; i++)
    {
      Side *side = &pair.sides[i];

      side->pair = &pair;
      side->index = i;
      side->context = g_main_context_new ();
      side->watch = lagwatch_attach_with_config (side->context, config);
      g_assert_nonnull (side->watch);
      lagwatch_set_report_func (side->watch, on_report_detach, side, on_callback_released);
    }
  for (guint i = 0; i < 2; i++)
    pair.sides[i].thread = g_thread_new ("loop", side_main, &pair.sides[i]);

  g_mutex_lock (&pair.lock);
  pair_wait (&pair, &pair.returned, 2);
  g_assert_cmpuint (pair.entered, ==, 2);    /* both callbacks began */
  g_assert_cmpuint (pair.returned, ==, 2);   /* both lagwatch_detach() calls returned */
  pair_wait (&pair, &pair.ended, 2);
  g_assert_cmpuint (pair.ended, ==, 2);      /* both watches ended */
  pair.stop = TRUE;
  g_mutex_unlock (&pair.lock);
  for (guint i = 0; i < 2; i++)
    {
      g_main_context_wakeup (pair.sides[i].context);
      g_thread_join (pair.sides[i].thread);
      g_assert_false (lagwatch_is_attached (pair.sides[i].context));
      g_main_context_unref (pair.sides[i].context);
    }
  g_mutex_clear (&pair.lock);
  g_cond_clear (&pair.cond);
}

/* Two watches whose callbacks, running at once, each detach the other. */
static void
test_detach_crossed (void)
{
  if (g_test_subprocess ())
    {
      detach_from_callbacks (TRUE);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Two watches whose callbacks each detach their own. */
static void
test_detach_own (void)
{
  if (g_test_subprocess ())
    {
      detach_from_callbacks (FALSE);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* -- the program's last thread ------------------------------------------- */

/* What a child (this program, run again with --child CASE) does. */
typedef enum
{
  LAST_THREAD_MAIN_LOOP,     /* main runs the loop once, then pthread_exit() */
  LAST_THREAD_LOOP_FIRST,    /* a loop thread runs it once and ends; then main pthread_exit()s */
  LAST_THREAD_SIGTERM,       /* as MAIN_LOOP, and the test sends SIGTERM once main is gone */
  LAST_THREAD_UNKNOWN_LAST,  /* as LOOP_FIRST, and a thread lagwatch never saw ends last */
  MAIN_EXITED_FIRST,         /* main pthread_exit()s, then a loop thread lags */
  MAIN_LIVES_ON,             /* a loop thread runs it once and ends; main lives on, then exit (3) */
} ChildCase;

/* The exit status of a MAIN_LIVES_ON child that was not ended first. */
#define MAIN_LIVES_ON_STATUS 3

/* The child's objects, reachable from here once its main thread has
 * exited (a leak checker does not read an exited thread's stack). */
static GMainContext *child_context;
static LagWatch     *child_watch;

/* The child: a context watched with a 50 ms threshold, no output. */
static void
child_attach (void)
{
  LagWatchConfig *config = lagwatch_config_new ();

  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  child_context = g_main_context_new ();
  child_watch = lagwatch_attach_with_config (child_context, config);
  g_assert_nonnull (child_watch);
  lagwatch_config_free (config);
  /* glibc keeps the message of a failed dlopen() or dlsym() (lagwatch
   * probes optional libraries) per thread, and frees it at the second
   * dlerror(), not when main() ends with pthread_exit(): then only the
   * exited thread would point to it, a leak to the leak checker. */
  dlerror ();
  dlerror ();
}

/* -- the reaper's descriptors, taken over by the program ------------------ */

static GMutex   held_lock;
static GCond    held_cond;
static gboolean held_released;  /* HOLDS: held_lock */

/* A thread of the program's that lives until released. */
static gpointer
held_thread (gpointer data)
{
  g_mutex_lock (&held_lock);
  while (!held_released)
    g_cond_wait (&held_cond, &held_lock);
  g_mutex_unlock (&held_lock);
  return NULL;
}

/* A thread known to lagwatch (it attaches), whose end starts the reaper. */
static gpointer
attach_and_end (gpointer data)
{
  child_attach ();
  return NULL;
}

/* Any thread. How many of the process's descriptors are pidfds. */
static guint
count_pidfds (void)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/fd", 0, NULL);
  const char *name;
  guint n = 0;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *target = descriptor_target (atoi (name));

      n += g_strcmp0 (target, "anon_inode:[pidfd]") == 0;
    }
  return n;
}

/* Waits (polling, WAIT_US deadline) until the process holds more pidfds
 * than @than (@more) or fewer (!@more). */
static void
wait_pidfds (gboolean more, guint than)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  while (more ? count_pidfds () <= than : count_pidfds () >= than)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
}

/* The program puts its file @file, with dup3() (no number is free in
 * between for another thread to take), over the descriptors it does not
 * know (unknown_descriptors()) that lagwatch keeps for as long as it
 * runs and of the reaper's kinds: pidfds, and pipes other than its own
 * stdout's and stderr's. Not over the files lagwatch opens for an instant
 * (a /proc read, a private description of stderr for one line): a
 * program that took one of those over would lose its file when lagwatch
 * closes it a moment later, which no library's thread can prevent. The
 * numbers go to @taken. */
static void
take_reaper_kinds (int file, GArray *taken)
{
  g_autoptr(GArray) unknown = unknown_descriptors (file);
  g_autofree char *out = descriptor_target (1), *err = descriptor_target (2);

  for (guint i = 0; i < unknown->len; i++)
    {
      int fd = g_array_index (unknown, int, i);
      g_autofree char *target = descriptor_target (fd);

      if (target == NULL || g_strcmp0 (target, out) == 0 || g_strcmp0 (target, err) == 0
          || !(g_str_equal (target, "anon_inode:[pidfd]") || g_str_has_prefix (target, "pipe:")))
        continue;
      if (dup3 (file, fd, O_CLOEXEC) == fd)
        g_array_append_val (taken, fd);
    }
}

/* The reaper (the thread that ends the process with the program's last)
 * runs, watching a live thread of the program through a pidfd; the program
 * puts its own file over the descriptors it does not know that lagwatch
 * keeps (take_reaper_kinds()), the reaper's pidfds and its wake-up pipe
 * among them. The reaper must open new ones (said on stderr), and never
 * poll, read, write or close the program's:
 * after the live thread has ended and the reaper has looked, every number
 * still holds the program's file, unread (its offset 0) and unchanged. */
static void
test_reaper_descriptors_taken (void)
{
  if (g_test_subprocess ())
    {
      static const char text[] = "the program's own file\n";
      g_autofree char *dir = g_dir_make_tmp ("lagwatch-lifecycle-XXXXXX", NULL);
      g_autofree char *path = g_build_filename (dir, "program.txt", NULL);
      g_autofree char *contents = NULL;
      g_autoptr(GArray) taken = g_array_new (FALSE, FALSE, sizeof (int));
      GThread *held = g_thread_new ("held", held_thread, NULL);
      struct stat mine, now;
      guint watching;
      int file;

      g_assert_nonnull (dir);
      g_assert_true (g_file_set_contents (path, text, -1, NULL));
      g_thread_join (g_thread_new ("attach", attach_and_end, NULL));
      wait_pidfds (TRUE, 0);  /* the reaper watches "held" */
      file = open (path, O_RDONLY | O_CLOEXEC);
      g_assert_cmpint (file, >=, 0);
      g_assert_cmpint (fstat (file, &mine), ==, 0);
      take_reaper_kinds (file, taken);
      g_assert_cmpuint (taken->len, >=, 3);  /* a pidfd, the two ends of the pipe */
      /* A new pidfd for "held": the reaper found its old one taken. */
      wait_pidfds (TRUE, 0);
      watching = count_pidfds ();
      g_mutex_lock (&held_lock);
      held_released = TRUE;
      g_cond_signal (&held_cond);
      g_mutex_unlock (&held_lock);
      g_thread_join (held);
      /* The reaper looked after "held" ended: it closed that pidfd. */
      wait_pidfds (FALSE, watching);
      for (guint i = 0; i < taken->len; i++)
        {
          g_assert_cmpint (fstat (g_array_index (taken, int, i), &now), ==, 0);
          g_assert_true (now.st_dev == mine.st_dev && now.st_ino == mine.st_ino);
        }
      /* One description on every number: a read through any moved it. */
      g_assert_cmpint (lseek (file, 0, SEEK_CUR), ==, 0);
      g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
      g_assert_cmpstr (contents, ==, text);
      g_unlink (path);
      g_rmdir (dir);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: the program closed or replaced * of the descriptors that held lagwatch's "
                             "pidfds of its threads *: opened new ones\n*");
  g_test_trap_assert_stderr ("*lagwatch: the program closed or replaced descriptor *, which held the pipe that "
                             "tells lagwatch a thread of the program exited: opened a new one\n*");
}

/* Runs this program again as a child doing @which; its pid. */
static pid_t
spawn_child (ChildCase which)
{
  g_autofree char *which_text = g_strdup_printf ("%d", (int) which);
  char *argv[] = { (char *) "/proc/self/exe", (char *) "--child", which_text, NULL };
  g_autoptr(GError) error = NULL;
  GPid pid;

  g_assert_true (g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  return pid;
}

static gboolean
note_run (gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

/* The context's loop: one iteration that dispatches a source. */
static gpointer
run_loop_once (gpointer data)
{
  GMainContext *context = data;
  gboolean ran = FALSE;
  GSource *idle = g_idle_source_new ();

  g_source_set_callback (idle, note_run, &ran, NULL);
  g_source_attach (idle, context);
  g_source_unref (idle);
  while (!ran)
    g_main_context_iteration (context, TRUE);
  return NULL;
}


/* Any thread. The state letter of thread @tid of process @pid, or 0. */
static char
thread_state (pid_t pid, pid_t tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/task/%d/stat", (int) pid, (int) tid);
  g_autofree char *stat = NULL;
  const char *end;

  if (!g_file_get_contents (path, &stat, NULL, NULL) || (end = strrchr (stat, ')')) == NULL
      || end[1] != ' ')
    return 0;
  return end[2];
}

/* A thread of the child that lagwatch never saw: ends once the main
 * thread has (it is then the program's last). */
static gpointer
outlive_main (gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  while (thread_state (getpid (), getpid ()) != 'Z')
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
  return NULL;
}

/* The child: watches a context, runs its loop once, and ends its main
 * thread with pthread_exit(): no thread of the program is left, or soon
 * none (LAST_THREAD_UNKNOWN_LAST). */
static G_GNUC_NORETURN void
last_thread_child (ChildCase which)
{
  child_attach ();
  if (which == LAST_THREAD_LOOP_FIRST || which == LAST_THREAD_UNKNOWN_LAST)
    g_thread_join (g_thread_new ("loop", run_loop_once, child_context));
  else
    run_loop_once (child_context);
  if (which == LAST_THREAD_UNKNOWN_LAST)
    g_thread_unref (g_thread_new ("outlive", outlive_main, NULL));
  pthread_exit (NULL);
}

/* Any thread. TRUE when a thread of this process named lagwatch-last (the
 * thread that ends the process with the program's last, or its helper)
 * sleeps in poll(): it has looked at the program's threads since it
 * started and found some alive. */
static gboolean
reaper_is_waiting (void)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *entry;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *comm_path = g_strdup_printf ("/proc/self/task/%s/comm", entry);
      g_autofree char *syscall_path = g_strdup_printf ("/proc/self/task/%s/syscall", entry);
      g_autofree char *comm = NULL, *call = NULL;
      long nr;

      if (!g_file_get_contents (comm_path, &comm, NULL, NULL) || !g_str_equal (g_strchomp (comm), "lagwatch-last")
          || !g_file_get_contents (syscall_path, &call, NULL, NULL))
        continue;
      nr = strtol (call, NULL, 10);
      if (nr == SYS_poll || nr == SYS_ppoll)
        return TRUE;
    }
  return FALSE;
}

/* The child: a loop thread, known to lagwatch, runs the loop once and
 * ends; the main thread lives on until lagwatch's thread that ends the
 * process with the program's last has looked and found it alive, then
 * exits with MAIN_LIVES_ON_STATUS. Ended before, the child exits 0. */
static G_GNUC_NORETURN void
main_lives_on_child (void)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  child_attach ();
  g_thread_join (g_thread_new ("loop", run_loop_once, child_context));
  while (!reaper_is_waiting ())
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
  exit (MAIN_LIVES_ON_STATUS);
}

/* Says which threads of @pid are there, name and state of each: what kept
 * a child alive. */
static void
lw_tell_threads (pid_t pid)
{
  g_autofree char *task_dir = g_strdup_printf ("/proc/%d/task", (int) pid);
  g_autoptr(GDir) dir = g_dir_open (task_dir, 0, NULL);
  g_autoptr(GString) threads = g_string_new (NULL);
  const char *entry;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *stat_path = g_strdup_printf ("%s/%s/stat", task_dir, entry);
      g_autofree char *stat = NULL;

      if (g_file_get_contents (stat_path, &stat, NULL, NULL))
        g_string_append_printf (threads, " [%s]", g_strchomp (stat));
    }
  g_test_message ("its threads, still there:%s", threads->str);
}

/* Waits up to WAIT_US for @pid to end; FALSE (and it is killed) when it
 * did not. Its status in *@status. */
static gboolean
wait_child (pid_t pid, int *status)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;
  pid_t done;

  while ((done = waitpid (pid, status, WNOHANG)) == 0 && g_get_monotonic_time () < deadline)
    g_usleep (10 * 1000);
  if (done == pid)
    return TRUE;
  lw_tell_threads (pid);
  kill (pid, SIGKILL);
  waitpid (pid, status, 0);
  return FALSE;
}

static void
test_last_thread (gconstpointer data)
{
  ChildCase which = GPOINTER_TO_INT (data);
  pid_t pid = spawn_child (which);
  int status = 0;

  if (which == LAST_THREAD_SIGTERM)
    {
      /* Once its main thread is gone (a zombie, or the process ended). */
      gint64 deadline = g_get_monotonic_time () + WAIT_US;
      char state;

      while ((state = thread_state (pid, pid)) != 'Z' && state != 'X' && state != 0
             && g_get_monotonic_time () < deadline)
        g_usleep (10 * 1000);
      kill (pid, SIGTERM);
    }
  if (!wait_child (pid, &status))
    {
      g_test_message ("the child was still there %d s after its last thread ended",
                      (int) (WAIT_US / G_USEC_PER_SEC));
      g_test_fail ();
      return;
    }
  if (which == LAST_THREAD_SIGTERM && WIFSIGNALED (status))
    g_assert_cmpint (WTERMSIG (status), ==, SIGTERM);
  else
    {
      /* As glibc ends a process whose last thread exits: exit (0). */
      g_assert_true (WIFEXITED (status));
      g_assert_cmpint (WEXITSTATUS (status), ==, 0);
    }
}

/* A thread known to lagwatch ends while the main thread runs on: the
 * process goes on. Seen on Debian unstable (glibc 2.43): it ended with
 * status 0 at once. */
static void
test_main_lives_on (void)
{
  pid_t pid = spawn_child (MAIN_LIVES_ON);
  int status = 0;

  g_assert_true (wait_child (pid, &status));
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, MAIN_LIVES_ON_STATUS);
}

/* -- a program whose main thread ended first ----------------------------- */

static _Atomic int after_main_verdict;  /* 0 waiting, 1 whole stack, 2 innermost frame only */

static LAGGY void
lag_after_main_exit (void)
{
  spin_cpu_ms (GINT_TO_POINTER (300));
}

/* A lag at every dispatch until the first report has come (a watcher
 * woken far too late may report none of them but the last). */
static LAGGY gboolean
dispatch_after_main_exit (gpointer data)
{
  lag_after_main_exit ();
  return atomic_load (&after_main_verdict) != 0 ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

/* Reporting thread. */
static void
on_report_after_main_exit (LagWatchReport *report, gpointer data)
{
  atomic_store (&after_main_verdict, harness_stack_has (report, "dispatch_after_main_exit", NULL) ? 1 : 2);
  g_main_context_wakeup (data);
}

/* The child's loop thread: once the main thread has exited, one lag; the
 * process ends with 0 when its report has the whole stack, 3 when it
 * holds the innermost frame only. */
static gpointer
loop_after_main_exit (gpointer data)
{
  GMainContext *context = data;
  gint64 deadline = g_get_monotonic_time () + WAIT_US;
  GSource *idle;

  while (thread_state (getpid (), getpid ()) != 'Z')
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
  idle = g_idle_source_new ();
  g_source_set_callback (idle, dispatch_after_main_exit, NULL, NULL);
  g_source_attach (idle, context);
  g_source_unref (idle);
  while (atomic_load (&after_main_verdict) == 0)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (context, TRUE);
    }
  exit (atomic_load (&after_main_verdict) == 1 ? 0 : 3);
}

/* main() ends with pthread_exit() while a thread runs the loop: the lags
 * that follow still get whole stacks (lagwatch reads its own memory
 * through a thread that is alive, not the exited main thread's pid). */
static G_GNUC_NORETURN void
main_exited_first_child (void)
{
  child_attach ();
  lagwatch_set_report_func (child_watch, on_report_after_main_exit, child_context, NULL);
  g_thread_unref (g_thread_new ("loop", loop_after_main_exit, child_context));
  pthread_exit (NULL);
}

static void
test_after_main_exit (void)
{
  pid_t pid = spawn_child (MAIN_EXITED_FIRST);
  int status = 0;

  g_assert_true (wait_child (pid, &status));
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);  /* 3: the innermost frame only */
}

int
main (int argc, char **argv)
{
  if (argc == 3 && g_str_equal (argv[1], "--child"))
    {
      ChildCase which = (ChildCase) g_ascii_strtoll (argv[2], NULL, 10);

      if (which == MAIN_EXITED_FIRST)
        main_exited_first_child ();
      if (which == MAIN_LIVES_ON)
        main_lives_on_child ();
      last_thread_child (which);
    }
  g_setenv ("G_DEBUG", "fatal-warnings", TRUE);
  g_unsetenv ("LAGWATCH_OUTPUT");
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/lifecycle/detach-from-callback/crossed", test_detach_crossed);
  g_test_add_func ("/lifecycle/detach-from-callback/own", test_detach_own);
  g_test_add_data_func ("/lifecycle/last-thread/main-runs-loop", GINT_TO_POINTER (LAST_THREAD_MAIN_LOOP),
                        test_last_thread);
  g_test_add_data_func ("/lifecycle/last-thread/loop-thread-first", GINT_TO_POINTER (LAST_THREAD_LOOP_FIRST),
                        test_last_thread);
  g_test_add_data_func ("/lifecycle/last-thread/sigterm", GINT_TO_POINTER (LAST_THREAD_SIGTERM),
                        test_last_thread);
  g_test_add_data_func ("/lifecycle/last-thread/unknown-thread-last",
                        GINT_TO_POINTER (LAST_THREAD_UNKNOWN_LAST), test_last_thread);
  g_test_add_func ("/lifecycle/main-exited-first/whole-stacks", test_after_main_exit);
  g_test_add_func ("/lifecycle/last-thread/main-lives-on", test_main_lives_on);
  g_test_add_func ("/lifecycle/last-thread/descriptors-taken", test_reaper_descriptors_taken);
  return g_test_run ();
}
