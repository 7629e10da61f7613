/* test-signals.c: lagwatch's signal in a hostile process
 *
 * A program may take the signal over after attach (SIG_DFL, SIG_IGN, a
 * handler or a signalfd of its own), run threads that block it, stop a
 * thread in the middle of the handler, lag with its stack nearly full, or
 * make itself non-dumpable. lagwatch must never kill it, never hand it a
 * signal it did not send, never wait without bound, and still report.
 * Every case runs in a subprocess: the old failures were fatal.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lag-harness.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-report.h"
#include "lw-symbols.h"
#include "lw-watcher.h"

#define CHILD_TIMEOUT_US (60 * G_USEC_PER_SEC)
/* test_hang_waits_for_stack()'s hang point: long enough that the stack
 * taken once the signal is unblocked, 100 ms after it, comes well within
 * the hang record's wait (as long again) on a loaded machine. */
#define HANG_WAIT_HANG_MS 1000

/* The environment variable that hands a subprocess the directory its test
 * process made for it (shared_tmp_new). */
#define SHARED_TMP_ENV "LW_TEST_SHARED_TMP"

/* Test process. A fresh temporary directory for the next subprocess, named
 * to it in SHARED_TMP_ENV; owned by @uid (-1: the caller), so a subprocess
 * that changes its user can still write in it. The test process removes
 * it (shared_tmp_remove) whatever the subprocess did. */
static char *
shared_tmp_new (uid_t uid)
{
  char *dir = g_dir_make_tmp ("lagwatch-signals-XXXXXX", NULL);

  g_assert_nonnull (dir);
  if (uid != (uid_t) -1)
    g_assert_cmpint (chown (dir, uid, uid), ==, 0);
  g_setenv (SHARED_TMP_ENV, dir, TRUE);
  return dir;
}

/* Test process, once its subprocess has ended (passed or not): the
 * directory shared_tmp_new() made is gone, with anything left in it. */
static void
shared_tmp_remove (char *dir)
{
  harness_remove_tree (dir);
  g_unsetenv (SHARED_TMP_ENV);
  g_assert_false (g_file_test (dir, G_FILE_TEST_EXISTS));
  g_free (dir);
}

/* Test process. Runs this test's subprocess with a shared temporary
 * directory (shared_tmp_new(), owned by @uid), removed once it has ended. */
static void
trap_subprocess_in_shared_tmp (uid_t uid)
{
  char *dir = shared_tmp_new (uid);

  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  shared_tmp_remove (dir);
}

/* In a subprocess: let messages and warnings print, as in an app. */
static void
child_allow_warnings (void)
{
  g_log_set_always_fatal (G_LOG_FATAL_MASK);
  g_log_set_fatal_mask ("lagwatch", G_LOG_FATAL_MASK);
}

static const char *
stack_error (LagWatchReport *report)
{
  return report->stack_error;
}

/* How the program takes the signal over, after attach. */
typedef enum
{
  TAKE_DEFAULT,
  TAKE_IGNORE,
  TAKE_HANDLER,
} TakeOver;

static volatile gint own_handler_calls;

static void
own_handler (int signo, siginfo_t *info, void *context)
{
  own_handler_calls++;
}

/* A running lag once the program took the signal over: the program lives,
 * its handler never sees a lagwatch signal, the report says why it has no
 * stack, one message says it once, and the next lag is still reported. */
static void
test_taken_over (gconstpointer data)
{
  TakeOver how = GPOINTER_TO_INT (data);

  if (g_test_subprocess ())
    {
      struct sigaction action = { 0 };
      Harness h;
      int signo;

      child_allow_warnings ();
      harness_init (&h, 50);
      signo = lw_capture_get_signal ();
      g_assert_cmpint (signo, >, 0);
      sigemptyset (&action.sa_mask);
      if (how == TAKE_HANDLER)
        {
          action.sa_sigaction = own_handler;
          action.sa_flags = SA_SIGINFO;
        }
      else
        action.sa_handler = how == TAKE_DEFAULT ? SIG_DFL : SIG_IGN;
      g_assert_cmpint (sigaction (signo, &action, NULL), ==, 0);

      for (guint i = 0; i < 2; i++)
        {
          harness_run_lag (&h, spin_ms, GINT_TO_POINTER (250));
          harness_wait_reports (&h, i + 1);
          g_assert_cmpint (own_handler_calls, ==, 0);
          g_assert_cmpuint (lagwatch_report_get_n_frames (harness_report (&h, i)), ==, 0);
          /* Why it has no stack: the takeover; or, on a loaded machine, a
           * watcher that did not get to try before the loop came back (the
           * takeover is still said, once: the parent checks stderr). */
          g_test_message ("lag %u: %s", i, stack_error (harness_report (&h, i)));
          g_assert_true (strstr (stack_error (harness_report (&h, i)), "the program took lagwatch's signal over")
                         || strstr (stack_error (harness_report (&h, i)),
                                    "the loop came back before the stack could be taken"));
        }
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*the program took over SIGRTMIN+7 after lagwatch_attach()*"
                             "lagwatch sends it no more*");
  /* Said once. */
  g_test_trap_assert_stderr_unmatched ("*the program took over*the program took over*");
}

/* The loop thread blocks the signal and reads it through a signalfd: the
 * program must never read a lagwatch signal there. */
static void
test_taken_by_signalfd (void)
{
  if (g_test_subprocess ())
    {
      struct signalfd_siginfo info;
      sigset_t set;
      Harness h;
      int fd;

      child_allow_warnings ();
      harness_init (&h, 50);
      sigemptyset (&set);
      sigaddset (&set, lw_capture_get_signal ());
      g_assert_cmpint (pthread_sigmask (SIG_BLOCK, &set, NULL), ==, 0);
      fd = signalfd (-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
      g_assert_cmpint (fd, >=, 0);

      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (250));
      harness_wait_reports (&h, 1);
      g_assert_cmpint (read (fd, &info, sizeof info), ==, -1);
      g_assert_cmpint (errno, ==, EAGAIN);
      g_assert_nonnull (strstr (stack_error (harness_report (&h, 0)),
                                "the program took lagwatch's signal over"));
      close (fd);
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*the program took over SIGRTMIN+7*read through a signalfd*");
}

typedef struct
{
  volatile gint stop;
  volatile gint running;
} Spinner;

static gpointer
spin_all_blocked (gpointer data)
{
  Spinner *s = data;
  sigset_t all;

  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, NULL);
  s->running = 1;
  while (!s->stop)
    ;
  return NULL;
}

/* A hang's all-threads snapshot meets a running thread that blocks every
 * signal (as GLib's own workers do): that thread only loses its own stack;
 * the next lag of the loop thread still gets one. */
static void
test_hang_with_blocked_thread (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (g_getenv (SHARED_TMP_ENV), "state", NULL);
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      Spinner spinner = { 0, 0 };
      GThread *thread;
      Harness h;

      child_allow_warnings ();
      g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
      g_assert_true (lagwatch_config_set_hang_ms (config, 200));
      g_assert_true (lagwatch_config_set_output (config, "none", NULL));
      g_assert_true (lagwatch_config_set_state_dir (config, state));
      harness_init_with_config (&h, config);
      thread = g_thread_new ("blocks-all", spin_all_blocked, &spinner);
      while (!spinner.running)
        g_thread_yield ();

      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (400));  /* a hang */
      harness_wait_reports (&h, 1);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));  /* a lag */
      harness_wait_reports (&h, 2);
      g_assert_cmpstr (stack_error (harness_report (&h, 1)), ==, NULL);
      g_assert_true (harness_stack_has (harness_report (&h, 1), "spin_ms", NULL));

      spinner.stop = 1;
      g_thread_join (thread);
      harness_clear (&h);
      /* The hang record is gone once its lag is reported. */
      g_assert_cmpint (g_rmdir (state), ==, 0);
      return;
    }
  trap_subprocess_in_shared_tmp ((uid_t) -1);
  g_test_trap_assert_passed ();
}

/* The lag of test_hang_waits_for_stack(): the loop thread spins with
 * lagwatch's signal blocked until past the hang point, then with it
 * unblocked until the hang record is in @data's file. */
static __attribute__ ((noipa)) void
spin_blocked_past_hang (gpointer data)
{
  const char *path = data;
  gint64 start = g_get_monotonic_time (), last_read = 0;
  sigset_t set;

  sigemptyset (&set);
  sigaddset (&set, lw_capture_get_signal ());
  g_assert_cmpint (pthread_sigmask (SIG_BLOCK, &set, NULL), ==, 0);
  while (g_get_monotonic_time () - start < (HANG_WAIT_HANG_MS + 100) * G_TIME_SPAN_MILLISECOND)
    ;
  g_assert_cmpint (pthread_sigmask (SIG_UNBLOCK, &set, NULL), ==, 0);
  for (;;)
    {
      g_autofree char *contents = NULL;
      gint64 now = g_get_monotonic_time ();

      if (now - last_read < 10 * G_TIME_SPAN_MILLISECOND)
        continue;
      last_read = now;
      if (g_file_get_contents (path, &contents, NULL, NULL) && strstr (contents, "\"event\":\"hang\"") != NULL)
        break;
    }
  __asm__ volatile ("" ::: "memory");  /* no tail call: this frame stays */
}

/* A lag whose stack cannot be taken at its hang point (its thread blocks
 * the signal, as a thread waiting for a CPU on a busy machine leaves it
 * unanswered): the hang record waits for the first stack, which comes
 * once the signal is unblocked, 100 ms after the hang point, and names
 * the function that hangs. Without the wait the record is written at the
 * hang point with no stack. */
static void
test_hang_waits_for_stack (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (g_getenv (SHARED_TMP_ENV), "state", NULL);
      g_autofree char *json = g_build_filename (g_getenv (SHARED_TMP_ENV), "out.jsonl", NULL);
      g_autofree char *output = g_strconcat ("json:", json, NULL);
      g_autofree char *contents = NULL;
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      g_auto(GStrv) lines = NULL;
      const char *hang = NULL;
      Harness h;

      child_allow_warnings ();
      g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
      g_assert_true (lagwatch_config_set_hang_ms (config, HANG_WAIT_HANG_MS));
      g_assert_true (lagwatch_config_set_output (config, output, NULL));
      g_assert_true (lagwatch_config_set_state_dir (config, state));
      harness_init_with_config (&h, config);
      harness_run_lag (&h, spin_blocked_past_hang, json);
      harness_wait_reports (&h, 1);
      harness_clear (&h);

      g_assert_true (g_file_get_contents (json, &contents, NULL, NULL));
      lines = g_strsplit (contents, "\n", -1);
      for (guint i = 0; lines[i] != NULL && hang == NULL; i++)
        if (strstr (lines[i], "\"event\":\"hang\"") != NULL)
          hang = lines[i];
      g_assert_nonnull (hang);
      if (strstr (hang, "spin_blocked_past_hang") == NULL)
        g_error ("the hang record names no spin_blocked_past_hang: %s", hang);
      g_assert_cmpint (g_unlink (json), ==, 0);
      g_assert_cmpint (g_rmdir (state), ==, 0);
      return;
    }
  trap_subprocess_in_shared_tmp ((uid_t) -1);
  g_test_trap_assert_passed ();
}

/* A thread on a stack of the test's own, with one page above it that
 * userfaultfd holds back: the handler's copy of that stack stops there,
 * in the middle of the request, until the test lets it go. */
typedef struct
{
  char          *map;        /* [stack | held page] */
  size_t         stack_size;
  int            uffd;
  volatile gint  stop;
  volatile pid_t tid;
} HeldStack;

static gpointer
held_stack_spin (gpointer data)
{
  HeldStack *held = data;

  held->tid = gettid ();
  while (!held->stop)
    ;
  return NULL;
}

/* Waits for the fault on the held page; FALSE at the deadline. */
static gboolean
held_stack_wait_fault (HeldStack *held)
{
  struct pollfd pfd = { held->uffd, POLLIN, 0 };
  struct uffd_msg msg;

  if (poll (&pfd, 1, 20 * 1000) != 1)
    return FALSE;
  return read (held->uffd, &msg, sizeof msg) == sizeof msg && msg.event == UFFD_EVENT_PAGEFAULT;
}

typedef struct
{
  LwSlot         *slot;
  LwCaptureResult result;
  volatile gint   returned;
} FinishCall;

static gpointer
call_finish (gpointer data)
{
  FinishCall *call = data;

  call->result = lw_capture_finish (call->slot, 10 * LW_NSEC_PER_MSEC, 0);
  call->returned = 1;
  return NULL;
}

/* The watcher gives a request up while its handler is stuck in the copy
 * (the thread preempted or stopped there): lw_capture_finish() returns in
 * bounded time, no new request touches the snapshot until the handler is
 * done, and the next capture works. */
static void
test_handshake_bounded (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      GMainContext *context = g_main_context_new ();
      LwSnapshot *snap = lw_snapshot_new (1024 * 1024);
      HeldStack held = { 0 };
      struct uffdio_api api = { .api = UFFD_API };
      struct uffdio_register reg = { 0 };
      struct uffdio_zeropage zero = { 0 };
      FinishCall call = { 0 };
      pthread_attr_t attr;
      pthread_t thread;
      GThread *finisher;
      LagWatch *watch;
      gint64 deadline;
      uintptr_t lo, hi;

      child_allow_warnings ();
      held.stack_size = 256 * 1024;
      held.map = mmap (NULL, held.stack_size + 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      g_assert_true (held.map != MAP_FAILED);
      held.uffd = (int) syscall (SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
      if (held.uffd < 0)
        {
          g_test_skip ("no userfaultfd here");
          return;
        }
      g_assert_cmpint (ioctl (held.uffd, UFFDIO_API, &api), ==, 0);
      reg.range.start = (uintptr_t) held.map + held.stack_size;
      reg.range.len = 4096;
      reg.mode = UFFDIO_REGISTER_MODE_MISSING;
      g_assert_cmpint (ioctl (held.uffd, UFFDIO_REGISTER, &reg), ==, 0);

      lagwatch_config_set_output (config, "none", NULL);
      watch = lagwatch_attach_with_config (context, config);
      g_assert_nonnull (watch);
      lagwatch_pause (watch);  /* its capture slot is ours */
      pthread_attr_init (&attr);
      pthread_attr_setstack (&attr, held.map, held.stack_size);
      g_assert_cmpint (pthread_create (&thread, &attr, held_stack_spin, &held), ==, 0);
      pthread_attr_destroy (&attr);
      while (held.tid == 0)
        g_thread_yield ();
      lo = (uintptr_t) held.map;
      hi = lo + held.stack_size + 4096;

      g_assert_cmpint (lw_capture_start (watch->slot, held.tid, 0, lo, hi, snap), ==,
                       LW_CAPTURE_PENDING);
      g_assert_true (held_stack_wait_fault (&held));  /* the handler is in the copy */

      call.slot = watch->slot;
      finisher = g_thread_new ("finish", call_finish, &call);
      deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
      while (!call.returned && g_get_monotonic_time () < deadline)
        g_usleep (1000);
      g_assert_true (call.returned);
      g_thread_join (finisher);
      g_assert_cmpint (call.result, ==, LW_CAPTURE_TIMEOUT);
      /* The late handler still owns the snapshot. */
      g_assert_cmpint (lw_capture_start (watch->slot, held.tid, 0, lo, hi, snap), ==,
                       LW_CAPTURE_IN_HANDLER);

      zero.range.start = reg.range.start;
      zero.range.len = 4096;
      g_assert_cmpint (ioctl (held.uffd, UFFDIO_ZEROPAGE, &zero), ==, 0);
      deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
      for (;;)
        {
          LwCaptureResult result = lw_capture_take_thread (watch->slot, held.tid, 0, lo, hi, snap,
                                                           50 * LW_NSEC_PER_MSEC);

          if (result == LW_CAPTURE_OK)
            break;
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        }
      g_assert_true (snap->via_signal);
      g_assert_cmpuint (snap->regs[LW_REG_RSP], >=, lo);
      g_assert_cmpuint (snap->regs[LW_REG_RSP], <, lo + held.stack_size);

      held.stop = 1;
      pthread_join (thread, NULL);
      lagwatch_detach (watch);
      g_main_context_unref (context);
      lw_snapshot_free (snap);
      close (held.uffd);
      munmap (held.map, held.stack_size + 4096);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Where the low-stack thread's stack ends, and how close to it a lag may
 * come: less than the kernel's signal frame (AT_MINSIGSTKSZ, 3376 bytes
 * with AVX-512 state). */
static uintptr_t low_stack_lo;
#define LOW_STACK_LEFT 3000

static LAGGY void
dive_then_spin (gpointer data)
{
  volatile char pad[200];

  pad[0] = 0;
  if ((uintptr_t) __builtin_frame_address (0) - low_stack_lo > LOW_STACK_LEFT + sizeof pad + 128)
    dive_then_spin (data);
  else
    spin_ms (data);
  __asm__ volatile ("" ::: "memory");  /* no tail call */
}

static gpointer
low_stack_thread (gpointer data)
{
  Harness h;

  harness_init (&h, 50);
  harness_run_lag (&h, dive_then_spin, GINT_TO_POINTER (250));
  harness_wait_reports (&h, 1);
  g_assert_true (harness_stack_has (harness_report (&h, 0), "dive_then_spin", NULL));
  harness_clear (&h);
  return NULL;
}

/* A lag with less than the signal frame's size of stack left: the thread
 * survives the signal (lagwatch's alternate stack takes the frame) and
 * the lag is reported with its stack. */
static void
test_low_stack (void)
{
  if (g_test_subprocess ())
    {
      size_t size = 256 * 1024;
      char *map = mmap (NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      pthread_attr_t attr;
      pthread_t thread;

      child_allow_warnings ();
      g_assert_true (map != MAP_FAILED);
      g_assert_cmpint (mprotect (map, 4096, PROT_NONE), ==, 0);  /* a guard page */
      low_stack_lo = (uintptr_t) map + 4096;
      pthread_attr_init (&attr);
      pthread_attr_setstack (&attr, map + 4096, size);
      g_assert_cmpint (pthread_create (&thread, &attr, low_stack_thread, NULL), ==, 0);
      pthread_attr_destroy (&attr);
      pthread_join (thread, NULL);
      munmap (map, size + 4096);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* A process that is not dumpable (/proc/self/task/TID/syscall closed to
 * it): a running lag is reported with its stack, a sleeping one too, with
 * the reason it has no stack.
 *
 * The files of a process that is not dumpable belong to root, and root
 * reads them anyway (and owns them, so no dropped capability closes them):
 * run as root, the subprocess becomes the unprivileged user 65534 to meet
 * the closed files. That user may not be able to read the test program
 * itself (a checkout under a 0700 home): its symbol table is loaded
 * before, as root. A setuid program reads its own file as it starts too. */
static void
test_not_dumpable (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      LwFrame frame = { 0 };
      Harness h;

      child_allow_warnings ();
      if (getuid () == 0)
        {
          lw_symbols_resolve ((uintptr_t) spin_ms, FALSE, &frame);
          g_assert_cmpstr (frame.symbol, ==, "spin_ms");
          lw_frame_clear (&frame);
          g_assert_cmpint (setgroups (0, NULL), ==, 0);
          g_assert_cmpint (setresgid (65534, 65534, 65534), ==, 0);
          g_assert_cmpint (setresuid (65534, 65534, 65534), ==, 0);
        }
      g_assert_cmpint (prctl (PR_SET_DUMPABLE, 0, 0, 0, 0), ==, 0);
      g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
      g_assert_true (lagwatch_config_set_output (config, "none", NULL));
      g_assert_true (lagwatch_config_set_state_dir (config, g_getenv (SHARED_TMP_ENV)));
      harness_init_with_config (&h, config);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (250));
      harness_wait_reports (&h, 1);
      g_assert_true (harness_stack_has (harness_report (&h, 0), "spin_ms", NULL));
      harness_run_lag (&h, (HarnessLagFunc) (void (*) (void)) g_usleep, GINT_TO_POINTER (250 * 1000));
      harness_wait_reports (&h, 2);
      /* Unless a sample met the thread running at the lag's very end. */
      g_test_message ("the sleeping lag: %u frames, %s", lagwatch_report_get_n_frames (harness_report (&h, 1)),
                      stack_error (harness_report (&h, 1)));
      if (lagwatch_report_get_n_frames (harness_report (&h, 1)) == 0)
        g_assert_nonnull (strstr (stack_error (harness_report (&h, 1)), "not dumpable"));
      harness_clear (&h);
      /* LeakSanitizer, at exit, needs to ptrace the process. */
      prctl (PR_SET_DUMPABLE, 1, 0, 0, 0);
      return;
    }
  trap_subprocess_in_shared_tmp (getuid () == 0 ? 65534 : (uid_t) -1);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* /signals/not-dumpable makes its own subprocess non-dumpable on purpose. */
  harness_subprocess_dumpable ();
  g_setenv ("LAGWATCH_SIGNAL", "SIGRTMIN+7", TRUE);
  g_test_add_data_func ("/signals/taken/sig-dfl", GINT_TO_POINTER (TAKE_DEFAULT), test_taken_over);
  g_test_add_data_func ("/signals/taken/sig-ign", GINT_TO_POINTER (TAKE_IGNORE), test_taken_over);
  g_test_add_data_func ("/signals/taken/own-handler", GINT_TO_POINTER (TAKE_HANDLER), test_taken_over);
  g_test_add_func ("/signals/taken/signalfd", test_taken_by_signalfd);
  g_test_add_func ("/signals/hang-with-blocked-thread", test_hang_with_blocked_thread);
  g_test_add_func ("/signals/hang-waits-for-stack", test_hang_waits_for_stack);
  g_test_add_func ("/signals/handshake-bounded", test_handshake_bounded);
  g_test_add_func ("/signals/low-stack", test_low_stack);
  g_test_add_func ("/signals/not-dumpable", test_not_dumpable);
  return g_test_run ();
}
