/* test-fork.c: a child of fork() in a watched process
 *
 * The child has none of lagwatch's threads, and any lock one of them held
 * at fork time stays held there for ever. lagwatch must be inert in the
 * child: no summary of the parent's lags at exit (and no lock taken for
 * it), lagwatch_detach() and the other calls on the parent's watch doing
 * nothing, quietly, and lagwatch_attach() refusing.
 *
 * Each test runs in a subprocess whose watch has seen one lag, forks, and
 * waits for the child with a deadline; the child's stderr goes to a file.
 * lw_report_frame_is_platform() is wrapped (--wrap): lw_summary_record()
 * calls it with the summary's lock held, so the wrapper can park a thread
 * there, as the reporting thread may be at any fork.
 *
 * Under AddressSanitizer the children allocate nothing, and a hook checks
 * it: see child_begin().
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lag-harness.h"
#include "lw-report.h"
#include "lw-watch-private.h"

#define THRESHOLD_MS     20
#define CHILD_DEADLINE_US (20 * G_USEC_PER_SEC)

/* Set by the thread to park inside the summary's lock; the handshake. */
static __thread gboolean parking;
static GMutex   park_lock;
static GCond    park_cond;
static gboolean parked, released;

char *__real_lw_report_stack_label (const LwFrame *frames, guint n_frames);
char *__wrap_lw_report_stack_label (const LwFrame *frames, guint n_frames);

char *
__wrap_lw_report_stack_label (const LwFrame *frames, guint n_frames)
{
  if (parking)
    {
      g_mutex_lock (&park_lock);
      parked = TRUE;
      g_cond_broadcast (&park_cond);
      while (!released)
        g_cond_wait (&park_cond, &park_lock);
      g_mutex_unlock (&park_lock);
    }
  return __real_lw_report_stack_label (frames, n_frames);
}

/* Parking thread: records a lag of a new fingerprint, which labels it
 * (lw_report_stack_label()) with the summary's lock held. */
static gpointer
park_in_summary (gpointer data)
{
  LwSummary *summary = data;
  LagWatchReport *report = lw_report_new ();
  guint skipped;

  report->fingerprint = g_strdup ("parked");
  report->n_frames = 1;
  report->frames = g_new0 (LwFrame, 1);
  report->frames[0].symbol = g_strdup ("parked_function");
  parking = TRUE;
  lw_summary_record (summary, report, &skipped);
  lagwatch_report_unref (report);
  return NULL;
}

/* The state directory of the watch: hang records never go to the user's. */
static char *state_dir;

/* A watch on stderr that has recorded one lag: its summary is not empty. */
static void
watch_one_lag (Harness *h)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;

  state_dir = g_dir_make_tmp ("lagwatch-fork-state-XXXXXX", &error);
  g_assert_no_error (error);
  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_output (config, "stderr", NULL));
  g_assert_true (lagwatch_config_set_state_dir (config, state_dir));
  harness_init_with_config (h, config);
  harness_run_lag (h, spin_ms, GINT_TO_POINTER (3 * THRESHOLD_MS));
  harness_wait_reports (h, 1);
}

/* Detaches the watch of watch_one_lag(); no hang record was left. */
static void
unwatch (Harness *h)
{
  harness_clear (h);
  g_assert_cmpint (g_rmdir (state_dir), ==, 0);
  g_clear_pointer (&state_dir, g_free);
}

/* What a child writes to its stderr if it allocated (under ASan only). */
#define CHILD_ALLOCATED_LINE "test-fork: the child allocated memory\n"
/* Exit status of a child whose allocations could not be watched. */
#define CHILD_NO_HOOK 3

#ifdef __SANITIZE_ADDRESS__
/* The ASan runtime of GCC 12 has no fork handler for its allocator (nor
 * for anything else): a lock one of the parent's threads held inside
 * malloc() at fork stays held in the child, whose next allocation of that
 * size waits for ever. Measured with a thread allocating 1 MiB blocks
 * beside fork(): 4 of 200 children hung on their first malloc() under
 * ASan, 0 of 200 with glibc's malloc, which takes its locks around fork().
 * lagwatch's threads allocate while they report, so a child here that
 * allocated could hang now and then, until the test's deadline. So these
 * children make no allocation (exit() included), and a hook proves it on
 * every run: it writes CHILD_ALLOCATED_LINE at the child's first one,
 * which run_child() fails on, instead of leaving a rare hang. */

/* No leak check at exit in this program either: a child's leak check at
 * exit waited on such a lock for ever (6 times in 20 runs), and when it
 * did not, it reported the parent's threads' memory, which no thread of
 * the child reaches. Called by the ASan runtime as it starts, before
 * main(). */
const char *__lsan_default_options (void);

const char *
__lsan_default_options (void)
{
  return "leak_check_at_exit=0";
}

/* The ASan runtime's (GCC ships no header for it): installs hooks called
 * after every allocation and before every release, in every thread;
 * returns 0 when it did not. */
int __sanitizer_install_malloc_and_free_hooks (void (*malloc_hook) (const volatile void *, size_t),
                                               void (*free_hook) (const volatile void *));

static volatile sig_atomic_t child_allocated;

/* The child's only thread, from the ASan runtime, after an allocation:
 * says so on stderr, once. Nothing here allocates. */
static void
child_note_allocation (const volatile void *ptr, size_t size)
{
  G_GNUC_UNUSED ssize_t written;

  if (child_allocated)
    return;
  child_allocated = 1;
  written = write (STDERR_FILENO, CHILD_ALLOCATED_LINE, strlen (CHILD_ALLOCATED_LINE));
}

/* The child's only thread, from the ASan runtime, before a release: the
 * runtime takes the hooks only as a pair, and releases need no note. */
static void
child_ignore_release (const volatile void *ptr)
{
}

/* The child's only thread, first thing after fork(). No allocation. */
static void
child_begin (void)
{
  if (__sanitizer_install_malloc_and_free_hooks (child_note_allocation, child_ignore_release) == 0)
    _exit (CHILD_NO_HOOK);
}
#else
/* The child's only thread. glibc's malloc takes its locks around fork():
 * nothing to watch. */
static void
child_begin (void)
{
}
#endif

typedef void (*ChildFunc) (Harness *h);

/* Forks; the child sends its stderr to a file and runs @child, which must
 * end the process. Waits for the child with a deadline (then kills it and
 * fails), and returns its stderr; *@status gets its wait status. */
static char *
run_child (Harness *h, ChildFunc child, int *status)
{
  g_autofree char *path = NULL;
  g_autoptr(GError) error = NULL;
  char *output = NULL;
  int fd = g_file_open_tmp ("lagwatch-fork-XXXXXX", &path, &error);
  gint64 deadline;
  pid_t pid;

  g_assert_no_error (error);
  /* This thread waits for the child outside its loop: not a lag. */
  lagwatch_pause (h->watch);
  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      dup2 (fd, STDERR_FILENO);
      child_begin ();
      child (h);
      _exit (100);  /* @child must not return */
    }
  close (fd);
  deadline = g_get_monotonic_time () + CHILD_DEADLINE_US;
  while (waitpid (pid, status, WNOHANG) == 0)
    {
      if (g_get_monotonic_time () > deadline)
        {
          kill (pid, SIGKILL);
          waitpid (pid, status, 0);
          g_test_message ("the child was still running after %d s: killed",
                          (int) (CHILD_DEADLINE_US / G_USEC_PER_SEC));
          g_assert_not_reached ();
        }
      g_usleep (10 * 1000);
    }
  lagwatch_resume (h->watch);
  g_assert_true (g_file_get_contents (path, &output, NULL, NULL));
  g_unlink (path);
  g_assert_null (strstr (output, CHILD_ALLOCATED_LINE));
  g_assert_false (WIFEXITED (*status) && WEXITSTATUS (*status) == CHILD_NO_HOOK);
  return output;
}

static void
child_exit (Harness *h)
{
  exit (0);
}

static void
child_detach (Harness *h)
{
  lagwatch_pause (h->watch);
  lagwatch_resume (h->watch);
  lagwatch_set_report_func (h->watch, NULL, NULL, NULL);
  lagwatch_detach (h->watch);
  _exit (lagwatch_is_attached (h->context) ? 1 : 0);
}

/* A context of the parent's, made before fork(): the child allocates
 * nothing (see child_begin()). */
static GMainContext *child_context;

/* lagwatch_attach_full() without a GError: the refusal itself allocates
 * nothing; lagwatch_attach() would add its message (a GError and a
 * g_debug()), whose allocations this test leaves out. */
static void
child_attach (Harness *h)
{
  LagWatch *watch = lagwatch_attach_full (child_context, NULL, NULL);

  _exit (watch == NULL ? 0 : 1);
}

/* exit() in the child while another thread of the parent held the
 * summary's lock: the child must neither wait for it nor print. */
static void
exit_while_summary_locked_child (void)
{
  g_autofree char *output = NULL;
  GThread *park_thread;
  Harness h;
  int status;

  watch_one_lag (&h);
  park_thread = g_thread_new ("parked", park_in_summary, h.watch->summary);
  g_mutex_lock (&park_lock);
  while (!parked)
    g_cond_wait (&park_cond, &park_lock);
  g_mutex_unlock (&park_lock);

  output = run_child (&h, child_exit, &status);

  g_mutex_lock (&park_lock);
  released = TRUE;
  g_cond_broadcast (&park_cond);
  g_mutex_unlock (&park_lock);
  g_thread_join (park_thread);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  g_assert_null (strstr (output, "summary of this run"));
  unwatch (&h);
}

/* exit() in the child: the parent's summary is not the child's. */
static void
exit_prints_no_summary_child (void)
{
  g_autofree char *output = NULL;
  Harness h;
  int status;

  watch_one_lag (&h);
  output = run_child (&h, child_exit, &status);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  g_assert_null (strstr (output, "summary of this run"));
  unwatch (&h);
}

/* The parent's watch in the child: every call does nothing, quietly. */
static void
detach_is_silent_child (void)
{
  g_autofree char *output = NULL;
  Harness h;
  int status;

  watch_one_lag (&h);
  output = run_child (&h, child_detach, &status);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  g_assert_cmpstr (output, ==, "");
  unwatch (&h);
}

/* No new watch in the child of a watched process. */
static void
attach_refused_child (void)
{
  g_autofree char *output = NULL;
  Harness h;
  int status;

  watch_one_lag (&h);
  child_context = g_main_context_new ();
  output = run_child (&h, child_attach, &status);
  g_main_context_unref (g_steal_pointer (&child_context));
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  unwatch (&h);
}

static void
run_in_subprocess (gconstpointer data)
{
  void (*body) (void) = data;

  if (g_test_subprocess ())
    {
      body ();
      return;
    }
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_data_func ("/fork/exit-while-summary-locked", exit_while_summary_locked_child,
                        run_in_subprocess);
  g_test_add_data_func ("/fork/exit-prints-no-summary", exit_prints_no_summary_child,
                        run_in_subprocess);
  g_test_add_data_func ("/fork/detach-is-silent", detach_is_silent_child, run_in_subprocess);
  g_test_add_data_func ("/fork/attach-refused", attach_refused_child, run_in_subprocess);
  return g_test_run ();
}
