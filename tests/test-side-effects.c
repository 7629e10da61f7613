/* test-side-effects.c: lagwatch never changes what the watched thread sees
 *
 * A lag spent in a blocking call must last its full time and return what
 * it would have returned without lagwatch: never EINTR (these calls are
 * never restarted, whatever SA_RESTART says). Lags inside dlopen (a
 * constructor that spins) and inside heavy malloc/free traffic are reported
 * without deadlock, many times over. A thread that blocks lagwatch's
 * signal gets a clear warning, and lagwatch does not hang. A source fires
 * when it would without lagwatch: lagwatch does not round GLib's poll
 * timeout.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "lag-harness.h"

#define BLOCK_MS 250

typedef struct
{
  int    ret;
  int    error;
  gint64 elapsed_us;
} CallResult;

static LAGGY void
block_usleep (gpointer data)
{
  CallResult *r = data;

  r->ret = usleep (BLOCK_MS * 1000);
  r->error = errno;
}

static LAGGY void
block_nanosleep (gpointer data)
{
  CallResult *r = data;
  struct timespec ts = { 0, BLOCK_MS * 1000 * 1000 };

  r->ret = nanosleep (&ts, NULL);
  r->error = errno;
}

static LAGGY void
block_clock_nanosleep (gpointer data)
{
  CallResult *r = data;
  struct timespec ts = { 0, BLOCK_MS * 1000 * 1000 };

  /* Returns the error number itself rather than setting errno. */
  r->ret = clock_nanosleep (CLOCK_MONOTONIC, 0, &ts, NULL);
  r->error = r->ret;
}

static LAGGY void
block_poll (gpointer data)
{
  CallResult *r = data;

  r->ret = poll (NULL, 0, BLOCK_MS);
  r->error = errno;
}

static LAGGY void
block_select (gpointer data)
{
  CallResult *r = data;
  struct timeval tv = { 0, BLOCK_MS * 1000 };

  r->ret = select (0, NULL, NULL, NULL, &tv);
  r->error = errno;
}

static LAGGY void
block_epoll_wait (gpointer data)
{
  CallResult *r = data;
  struct epoll_event event;
  int fd = epoll_create1 (EPOLL_CLOEXEC);

  r->ret = epoll_wait (fd, &event, 1, BLOCK_MS);
  r->error = errno;
  close (fd);
}

static void
test_blocking_call (gconstpointer data)
{
  HarnessLagFunc func = (HarnessLagFunc) data;
  CallResult result = { -2, 0, 0 };
  Harness h;

  harness_init (&h, 100);
  result.elapsed_us = harness_run_lag (&h, func, &result);
  harness_wait_reports (&h, 1);
  g_test_message ("returned %d (errno %d) after %.1f ms", result.ret, result.error,
                  result.elapsed_us / 1000.0);
  g_assert_cmpint (result.ret, ==, 0);
  g_assert_cmpint (result.elapsed_us, >=, BLOCK_MS * 1000);
  g_assert_cmpstr (lagwatch_report_get_thread_state (harness_report (&h, 0)), ==, "sleeping");
  harness_clear (&h);
}

/* A lag that keeps changing between running and sleeping: 0.3 ms of CPU,
 * then one of the six blocking calls for 0.2 ms, over and over, for about a
 * second, sampled every millisecond. None of the calls may see EINTR or
 * return early. A signal sent because /proc showed the thread running can
 * land just after it went to sleep: sampling by such signals failed here
 * with 4 to 10 EINTR per run; lagwatch samples by a CPU-time timer, whose
 * signal the kernel queues only on the way back to user space.
 * The lag opens with 100 ms of plain CPU, so that the one explicit signal
 * of a lag, at the threshold (50 ms), finds the thread running: its
 * remaining window is a README limit, not what this test is about. */
#define MIXED_SLEEP_US 200

typedef struct
{
  guint  calls;
  guint  eintr;
  double eintr_started_ms;  /* when the last call that saw EINTR began, into the lag */
  guint  other_failures;
  guint  short_sleeps;
} MixedResult;

static int
mixed_block (guint kind, int epoll_fd)
{
  struct timespec ts = { 0, MIXED_SLEEP_US * 1000 };
  struct timeval tv = { 0, MIXED_SLEEP_US };
  struct epoll_event event;
  int ret;

  switch (kind % 6)
    {
    case 0: return usleep (MIXED_SLEEP_US);
    case 1: return nanosleep (&ts, NULL);
    case 2:
      ret = clock_nanosleep (CLOCK_MONOTONIC, 0, &ts, NULL);
      errno = ret;
      return ret == 0 ? 0 : -1;
    /* poll and epoll_wait take milliseconds: 1 ms for them. */
    case 3: return poll (NULL, 0, 1);
    case 4: return select (0, NULL, NULL, NULL, &tv);
    default: return epoll_wait (epoll_fd, &event, 1, 1);
    }
}

static LAGGY void
run_then_block (gpointer data)
{
  MixedResult *r = data;
  gint64 start = g_get_monotonic_time (), end = start + 1100 * 1000;
  int epoll_fd = epoll_create1 (EPOLL_CLOEXEC);

  spin_ms (GINT_TO_POINTER (100));
  /* At least 1.1 s and 600 calls: a loaded machine stretches each call
   * (its 300 µs of work, its sleep), and the check is on what the calls
   * saw, however long they took. */
  while (g_get_monotonic_time () < end || r->calls < 600)
    {
      guint kind = r->calls++;
      gint64 before, after;
      int ret;

      before = g_get_monotonic_time ();
      while (g_get_monotonic_time () < before + 300)
        ;
      before = g_get_monotonic_time ();
      ret = mixed_block (kind, epoll_fd);
      after = g_get_monotonic_time ();
      if (ret < 0 && errno == EINTR)
        {
          r->eintr++;
          r->eintr_started_ms = (before - start) / 1000.0;
        }
      else if (ret != 0)
        r->other_failures++;
      else if (after - before < MIXED_SLEEP_US)
        r->short_sleeps++;
    }
  close (epoll_fd);
}

static void
test_running_then_blocking (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  MixedResult result = { 0 };
  Harness h;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_sample_ms (config, 1));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  harness_init_with_config (&h, config);
  harness_run_lag (&h, run_then_block, &result);
  harness_wait_reports (&h, 1);
  g_test_message ("%u calls: %u EINTR (the last begun %.1f ms in), %u other failures, %u short; %u samples, "
                  "the first %.1f ms in",
                  result.calls, result.eintr, result.eintr_started_ms, result.other_failures,
                  result.short_sleeps, lagwatch_report_get_n_samples (harness_report (&h, 0)),
                  lagwatch_report_get_caught_ms (harness_report (&h, 0)));
  g_assert_cmpuint (result.calls, >, 500);
  /* The one window a lag has (README, Limits): its first stack is taken by
   * a signal, which a loaded machine may delay past the 100 ms of plain
   * CPU, into the calls. A call it cut short began before that stack was
   * taken; none after. */
  g_assert_cmpuint (result.eintr, <=, 1);
  if (result.eintr == 1)
    g_assert_cmpfloat (result.eintr_started_ms, <=, lagwatch_report_get_caught_ms (harness_report (&h, 0)));
  g_assert_cmpuint (result.other_failures, ==, 0);
  g_assert_cmpuint (result.short_sleeps, ==, 0);
  /* Sampled all along, not only at the threshold. */
  g_assert_cmpuint (lagwatch_report_get_n_samples (harness_report (&h, 0)), >=, 50);
  harness_clear (&h);
}

/* A constructor that spins 300 ms: the lag happens inside dlopen, with
 * the loader's lock held. (Closed after the report: the names of a library
 * unloaded before its lag is symbolized are not kept.) */
static void *slow_library;

static LAGGY void
open_slow_library (gpointer data)
{
  slow_library = dlopen (data, RTLD_NOW | RTLD_LOCAL);
  g_assert_nonnull (slow_library);
}

static void
test_lag_in_dlopen (void)
{
  const char *path = g_getenv ("LW_SLOW_CONSTRUCTOR_LIB");
  guint rounds = 8;
  Harness h;

  g_assert_nonnull (path);
  harness_init (&h, 100);
  for (guint i = 0; i < rounds; i++)
    {
      harness_run_lag (&h, open_slow_library, (gpointer) path);
      harness_wait_reports (&h, i + 1);
      g_assert_true (harness_stack_has (harness_report (&h, i), "slow_constructor", NULL));
      g_assert_true (harness_stack_has (harness_report (&h, i), "open_slow_library", NULL));
      dlclose (slow_library);
    }
  harness_clear (&h);
}

static LAGGY void
churn_malloc (gpointer data)
{
  gint64 end = g_get_monotonic_time () + 300 * 1000;
  void *blocks[64] = { 0 };
  guint i = 0;

  while (g_get_monotonic_time () < end)
    {
      free (blocks[i % 64]);
      blocks[i % 64] = malloc (16 + (i * 7919) % 4096);
      i++;
    }
  for (i = 0; i < 64; i++)
    free (blocks[i]);
}

static void
test_lag_in_malloc (void)
{
  guint rounds = 8;
  Harness h;

  harness_init (&h, 100);
  for (guint i = 0; i < rounds; i++)
    {
      harness_run_lag (&h, churn_malloc, NULL);
      harness_wait_reports (&h, i + 1);
      g_assert_true (harness_stack_has (harness_report (&h, i), "churn_malloc", NULL));
    }
  harness_clear (&h);
}

/* The loop thread's signal mask before spin_with_signal_blocked(). */
static sigset_t mask_before_block;

/* Blocks signal @data and spins 300 ms, and on until the watcher has run
 * four times since the lag passed its 100 ms threshold (each time it looks
 * at the thread, and the warning needs two looks that find the signal
 * blocked: on a loaded machine a watcher can get no CPU for the whole 300
 * ms). The signal stays blocked after it returns, until the test restores
 * mask_before_block. */
static LAGGY void
spin_with_signal_blocked (gpointer data)
{
  sigset_t set;
  gint64 start = g_get_monotonic_time (), deadline = start + 20 * G_USEC_PER_SEC;
  pid_t watcher = watcher_tid ();
  gint64 runs_past_threshold = -1;

  sigemptyset (&set);
  sigaddset (&set, GPOINTER_TO_INT (data));
  pthread_sigmask (SIG_BLOCK, &set, &mask_before_block);
  for (;;)
    {
      gint64 now = g_get_monotonic_time ();
      gint64 runs = thread_runs (watcher);

      if (runs_past_threshold < 0 && now - start >= 150 * 1000)
        runs_past_threshold = runs;
      if (now - start >= 300 * 1000 && (runs < 0 || (runs_past_threshold >= 0 && runs - runs_past_threshold >= 4)))
        break;
      g_assert_cmpint (now, <, deadline);
    }
}

/* The signal blocked while the thread runs: no stack can be taken by
 * signal, a warning says why, the lag is still reported, nothing hangs.
 * The signal stays blocked until the lag's report has arrived: unblocked
 * at the end of the lag, the signal queued for it would run its handler
 * there, and a sample the watcher asked for at that moment (a loaded
 * machine delays the watcher's end of the lag) would take a stack after
 * all. Unblocked after the report, it is taken outside any lag, and
 * lagwatch absorbs it. */
static void
test_signal_blocked (void)
{
  if (g_test_subprocess ())
    {
      Harness h;

      g_log_set_always_fatal (G_LOG_FATAL_MASK);
      g_log_set_fatal_mask ("lagwatch", G_LOG_FATAL_MASK);
      g_setenv ("LAGWATCH_SIGNAL", "SIGRTMIN+9", TRUE);
      harness_init (&h, 100);
      harness_run_lag (&h, spin_with_signal_blocked, GINT_TO_POINTER (SIGRTMIN + 9));
      harness_wait_reports (&h, 1);
      g_assert_cmpuint (lagwatch_report_get_n_frames (harness_report (&h, 0)), ==, 0);
      /* The queued signal arrives now, its handler run before this
       * returns; lagwatch absorbs it, and the next lag is caught. */
      pthread_sigmask (SIG_SETMASK, &mask_before_block, NULL);
      harness_run_lag (&h, (HarnessLagFunc) (void (*) (void)) g_usleep, GINT_TO_POINTER (150 * 1000));
      harness_wait_reports (&h, 2);
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*blocks signal*lags are reported without a stack while it runs*");
}

/* Sources fire when they would without lagwatch. A source whose ready time
 * is 0.3 ms ahead is dispatched, on a context lagwatch watches and on one
 * it does not, one after the other on the same thread, many times: load
 * delays both alike. What is compared is how late each fires: a poll
 * timeout rounded up to whole milliseconds (GLib 2.81 and later poll with
 * the exact timeout while the poll function is g_poll) makes every
 * dispatch of the watched context at least 0.7 ms late. Load only adds
 * delay, to either side, and mostly to the slow half: the 10th and 25th
 * percentiles of each side are compared, and a round that shows both
 * shifted is measured again: a systematic shift shows in every round,
 * a burst of load in few. */
#define READY_AHEAD_US     300
#define READY_SAMPLES      200
#define READY_ROUNDS       3
#define READY_MAX_SHIFT_US 350

typedef struct
{
  GSource source;
  gint64  late_us;  /* -1 until dispatched */
} ReadySource;

static gboolean
ready_source_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  ReadySource *ready = (ReadySource *) source;

  ready->late_us = g_get_monotonic_time () - g_source_get_ready_time (source);
  g_source_set_ready_time (source, -1);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs ready_source_funcs = { .dispatch = ready_source_dispatch };

/* How late @source fired, READY_AHEAD_US after now. */
static gint64
ready_time_lateness (GMainContext *context, ReadySource *source)
{
  source->late_us = -1;
  g_source_set_ready_time (&source->source, g_get_monotonic_time () + READY_AHEAD_US);
  while (source->late_us < 0)
    g_main_context_iteration (context, TRUE);
  return source->late_us;
}

static int
compare_gint64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;

  return (x > y) - (x < y);
}

/* One round: TRUE when the watched context's sources fired later than
 * the bare one's at both low percentiles, by more than READY_MAX_SHIFT_US. */
static gboolean
ready_time_round_shifted (GMainContext *contexts[2], GSource *sources[2])
{
  gint64 late[2][READY_SAMPLES];

  for (guint i = 0; i < READY_SAMPLES; i++)
    for (guint c = 0; c < 2; c++)
      late[c][i] = ready_time_lateness (contexts[c], (ReadySource *) sources[c]);
  for (guint c = 0; c < 2; c++)
    {
      qsort (late[c], READY_SAMPLES, sizeof late[c][0], compare_gint64);
      g_test_message ("%s: late by %" G_GINT64_FORMAT " us (10th percentile), %" G_GINT64_FORMAT
                      " us (25th), %" G_GINT64_FORMAT " us (median)",
                      c == 0 ? "without lagwatch" : "with lagwatch   ", late[c][READY_SAMPLES / 10],
                      late[c][READY_SAMPLES / 4], late[c][READY_SAMPLES / 2]);
    }
  return late[1][READY_SAMPLES / 10] - late[0][READY_SAMPLES / 10] > READY_MAX_SHIFT_US
         && late[1][READY_SAMPLES / 4] - late[0][READY_SAMPLES / 4] > READY_MAX_SHIFT_US;
}

static void
test_ready_time (void)
{
  g_autoptr(GMainContext) bare = g_main_context_new ();
  g_autoptr(GMainContext) watched = g_main_context_new ();
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *contexts[2] = { bare, watched };
  GSource *sources[2];
  guint shifted = 0;
  LagWatch *watch;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 10000));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  watch = lagwatch_attach_full (watched, config, NULL);
  g_assert_nonnull (watch);
  for (guint c = 0; c < 2; c++)
    {
      sources[c] = g_source_new (&ready_source_funcs, sizeof (ReadySource));
      g_source_attach (sources[c], contexts[c]);
    }
  /* Warm up: the first iterations of the watched context run lagwatch's
   * own one-time work (the dispatch probe, the thread's adoption). */
  for (guint i = 0; i < 20; i++)
    for (guint c = 0; c < 2; c++)
      ready_time_lateness (contexts[c], (ReadySource *) sources[c]);
  while (shifted < READY_ROUNDS && ready_time_round_shifted (contexts, sources))
    shifted++;
  g_assert_cmpuint (shifted, <, READY_ROUNDS);
  for (guint c = 0; c < 2; c++)
    {
      g_source_destroy (sources[c]);
      g_source_unref (sources[c]);
    }
  lagwatch_detach (watch);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/side-effects/no-eintr/usleep", block_usleep, test_blocking_call);
  g_test_add_data_func ("/side-effects/no-eintr/nanosleep", block_nanosleep, test_blocking_call);
  g_test_add_data_func ("/side-effects/no-eintr/clock_nanosleep", block_clock_nanosleep, test_blocking_call);
  g_test_add_data_func ("/side-effects/no-eintr/poll", block_poll, test_blocking_call);
  g_test_add_data_func ("/side-effects/no-eintr/select", block_select, test_blocking_call);
  g_test_add_data_func ("/side-effects/no-eintr/epoll_wait", block_epoll_wait, test_blocking_call);
  g_test_add_func ("/side-effects/no-eintr/running-then-blocking", test_running_then_blocking);
  g_test_add_func ("/side-effects/lag-in-dlopen", test_lag_in_dlopen);
  g_test_add_func ("/side-effects/lag-in-malloc", test_lag_in_malloc);
  g_test_add_func ("/side-effects/signal-blocked", test_signal_blocked);
  g_test_add_func ("/side-effects/ready-time", test_ready_time);
  return g_test_run ();
}
