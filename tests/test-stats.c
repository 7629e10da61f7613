/* test-stats: the latency profile of every iteration, and whose fault a lag
 * was
 *
 * Busy periods are wall time, and a loaded machine stretches a spin of
 * known CPU time by any amount: the profile test measures each busy period
 * itself, with a poll function of its own that lagwatch's wrapper calls
 * (so its busy periods contain lagwatch's, by the few instructions between
 * the two), and compares its own histogram with lagwatch's. Only a period
 * within a hair of a bucket limit may land on either side: those are
 * counted and allowed for, nothing else.
 */
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <linux/futex.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <locale.h>

#include <json-glib/json-glib.h>

#include "lag-harness.h"

/* ---- the profile ---- */

/* Bucket starts (ms), as lagwatch_stats_get_bucket_start_ms() gives them. */
static const double bucket_start_ms[] = { 0, 1, 2, 4, 8, 1000.0 / 60, 1000.0 / 30, 50, 100, 250, 500,
                                          1000, 2500, 5000, 10000 };
#define N_BUCKETS G_N_ELEMENTS (bucket_start_ms)
/* A period this close to a limit may be classed on either side of it:
 * lagwatch's stamps lie a few instructions inside the test's. Further by
 * as long as the thread waited for a CPU during the period (a preemption
 * between the two stamps moves them apart by its length). */
#define AMBIGUOUS_MS 0.05

/* The test's own view of the busy periods, taken in its poll function. */
static GPollFunc own_prev_poll;
static gint64    own_exit_ns;  /* 0: before the first poll */
static guint64   own_counts[N_BUCKETS];
static guint64   own_iterations, own_ambiguous;
static double    own_busy_ms, own_longest_ms;
static gboolean  own_spun;           /* a spin ran in the current busy period */
static guint64   own_spun_periods;   /* busy periods that held a spin */

static gint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

static double own_exit_wait_ms;  /* thread_wait_ms() when the last poll returned */

static gint
own_poll (GPollFD *fds, guint nfds, gint timeout)
{
  gint ret;

  if (own_exit_ns != 0)
    {
      double busy_ms = (double) (now_ns () - own_exit_ns) / 1e6;
      double waited_ms = thread_wait_ms (gettid ()) - own_exit_wait_ms;
      guint bucket = 0;

      while (bucket + 1 < N_BUCKETS && busy_ms >= bucket_start_ms[bucket + 1])
        bucket++;
      own_counts[bucket]++;
      own_iterations++;
      own_spun_periods += own_spun;
      own_spun = FALSE;
      own_busy_ms += busy_ms;
      own_longest_ms = MAX (own_longest_ms, busy_ms);
      /* Once per period: misclassified, it leaves one bucket for another. */
      for (guint i = 1; i < N_BUCKETS; i++)
        if (ABS (busy_ms - bucket_start_ms[i]) < AMBIGUOUS_MS + MAX (waited_ms, 0))
          {
            own_ambiguous++;
            break;
          }
    }
  ret = own_prev_poll (fds, nfds, timeout);
  own_exit_wait_ms = thread_wait_ms (gettid ());
  own_exit_ns = now_ns ();
  return ret;
}

/* The end of the bucket holding the @percent-th percentile, capped by the
 * longest period (the bucket of the 5 ms spins: 8 ms on a quiet machine). */
static double
percentile_from_buckets (LagWatchStats *stats, double percent)
{
  guint64 n = lagwatch_stats_get_iterations (stats), seen = 0;

  for (guint i = 0; i + 1 < N_BUCKETS; i++)
    {
      seen += lagwatch_stats_get_bucket_count (stats, i);
      if ((double) seen >= percent / 100 * (double) n)
        return i == 0 ? bucket_start_ms[1] : MIN (bucket_start_ms[i + 1], lagwatch_stats_get_longest_ms (stats));
    }
  return lagwatch_stats_get_longest_ms (stats);
}

static gboolean
spin_idle (gpointer data)
{
  spin_cpu_ms (data);
  own_spun = TRUE;
  return G_SOURCE_REMOVE;
}

/* 500 busy periods of 5 ms, 50 of 20 ms and 5 of 40 ms (of CPU time: at
 * least as much wall time), counted bucket by bucket against the test's
 * own measure of the same periods; then the "stats" event at detach. */
static void
test_known_busy_periods (void)
{
  static const struct { int ms, n; } plan[] = { { 5, 500 }, { 20, 50 }, { 40, 5 } };
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-stats-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "out.json", NULL);
  g_autofree char *spec = g_strconcat ("json:", path, NULL);
  g_autofree char *json = NULL;
  g_autoptr(LagWatchStats) stats = NULL;
  GMainContext *context = g_main_context_new ();
  LagWatch *watch;
  guint64 over_4ms = 0, diff = 0;
  char *line;

  g_main_context_push_thread_default (context);
  own_prev_poll = g_main_context_get_poll_func (context);
  g_main_context_set_poll_func (context, own_poll);
  g_assert_true (lagwatch_config_set_threshold_ms (config, 10000));
  g_assert_true (lagwatch_config_set_output (config, spec, NULL));
  watch = lagwatch_attach_with_config (context, config);
  g_assert_nonnull (watch);
  stats = lagwatch_get_stats (watch);
  g_assert_nonnull (stats);
  g_assert_cmpuint (lagwatch_stats_get_iterations (stats), ==, 0);
  g_clear_pointer (&stats, lagwatch_stats_free);

  for (guint p = 0; p < G_N_ELEMENTS (plan); p++)
    for (int i = 0; i < plan[p].n; i++)
      {
        g_autoptr(GSource) idle = g_idle_source_new ();

        g_source_set_callback (idle, spin_idle, GINT_TO_POINTER (plan[p].ms), NULL);
        g_source_attach (idle, context);
        /* One spin per busy period: the next idle only once this one ran. */
        while (g_source_get_context (idle) != NULL && !g_source_is_destroyed (idle))
          g_main_context_iteration (context, TRUE);
      }
  /* Polls until the last spin's busy period is closed (GLib may dispatch
   * an idle one iteration after it was attached). */
  for (int i = 0; i < 100 && own_spun_periods < 555; i++)
    g_main_context_iteration (context, FALSE);
  stats = lagwatch_get_stats (watch);

  g_test_message ("own: %" G_GUINT64_FORMAT " iterations, %.1f ms busy, longest %.1f ms, %"
                  G_GUINT64_FORMAT " near a limit", own_iterations, own_busy_ms, own_longest_ms, own_ambiguous);
  g_assert_cmpuint (lagwatch_stats_get_n_buckets (stats), ==, N_BUCKETS);
  for (guint i = 0; i < N_BUCKETS; i++)
    {
      guint64 got = lagwatch_stats_get_bucket_count (stats, i);

      g_test_message ("bucket from %.1f ms: lagwatch %" G_GUINT64_FORMAT ", own %" G_GUINT64_FORMAT,
                      bucket_start_ms[i], got, own_counts[i]);
      g_assert_cmpfloat_with_epsilon (lagwatch_stats_get_bucket_start_ms (stats, i), bucket_start_ms[i], 1e-5);
      diff += got > own_counts[i] ? got - own_counts[i] : own_counts[i] - got;
      if (i >= 3)
        over_4ms += got;
    }
  /* Each period misclassified shows twice: out of one bucket, into another. */
  g_assert_cmpuint (diff, <=, 2 * own_ambiguous);
  g_assert_cmpuint (lagwatch_stats_get_iterations (stats), ==, own_iterations);
  /* Whatever the load: every spin is at least its CPU time long. */
  g_assert_cmpuint (own_spun_periods, ==, 555);
  g_assert_cmpuint (over_4ms, >=, 555);
  g_assert_cmpuint (lagwatch_stats_get_over_60hz_frame (stats), >=, 55);
  g_assert_cmpuint (lagwatch_stats_get_over_30hz_frame (stats), >=, 5);
  /* lagwatch's periods lie inside the test's, a few instructions shorter. */
  g_assert_cmpfloat (lagwatch_stats_get_busy_ms (stats), <=, own_busy_ms);
  g_assert_cmpfloat (lagwatch_stats_get_busy_ms (stats), >=, own_busy_ms * 0.99 - 5);
  g_assert_cmpfloat (lagwatch_stats_get_longest_ms (stats), <=, own_longest_ms + 0.01);
  g_assert_cmpfloat (lagwatch_stats_get_longest_ms (stats), >=, MAX (own_longest_ms - 1, 40));
  g_assert_cmpfloat_with_epsilon (lagwatch_stats_get_percentile_ms (stats, 50), percentile_from_buckets (stats, 50), 1e-5);
  g_assert_cmpfloat_with_epsilon (lagwatch_stats_get_percentile_ms (stats, 99), percentile_from_buckets (stats, 99), 1e-5);
  g_assert_cmpuint (lagwatch_stats_get_lags (stats), ==, 0);

  lagwatch_detach (watch);
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);

  /* The "stats" event at detach, with the same counts. */
  g_assert_true (g_file_get_contents (path, &json, NULL, NULL));
  line = strstr (json, "{\"event\":\"stats\"");
  g_assert_nonnull (line);
  {
    g_autofree char *iterations = g_strdup_printf ("\"iterations\":%" G_GUINT64_FORMAT ",",
                                                   lagwatch_stats_get_iterations (stats));
    g_autofree char *bucket = g_strdup_printf ("{\"from_ms\":4,\"count\":%" G_GUINT64_FORMAT ",\"missed\":0}",
                                               lagwatch_stats_get_bucket_count (stats, 3));

    g_assert_nonnull (strstr (line, iterations));
    g_assert_nonnull (strstr (line, bucket));
    g_assert_nonnull (strstr (line, "\"lags\":0"));
  }
  g_unlink (path);
  g_rmdir (dir);
}

/* ---- lags the watcher did not see ---- */

/* Tracer child. TRUE when thread @tid sits in a semaphore wait: its
 * system call is futex() with FUTEX_WAIT_BITSET, which glibc's sem_wait()
 * and sem_clockwait() use and its mutexes and GLib's do not (they wait
 * with FUTEX_WAIT). That is where every state of the watcher ends,
 * holding no lock. A wait with a deadline that a stop interrupted is
 * restart_syscall() from then on, its arguments still the futex call's. */
static gboolean
in_semaphore_wait (pid_t tid)
{
  unsigned long args[2] = { 0, 0 };  /* the futex word's address, the operation */
  long nr = thread_syscall (tid, args);

  return (nr == SYS_futex || nr == SYS_restart_syscall) && (args[1] & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET;
}

/* Tracer child. Stops thread @watcher (PTRACE_INTERRUPT stops that one
 * thread, nothing else) in its semaphore wait. Stopped anywhere else it
 * may hold a lock the loop thread needs (a malloc arena's: measured, a
 * quarter of the stops taken at once landed inside malloc(); the context's,
 * in g_source_attach() of its starvation sentinel), and the loop would
 * never come round to the lags. A stop that lands elsewhere is let go,
 * and tried again once the thread sleeps. Never caught asleep within
 * STOP_DEADLINE_S is a failure, said as such rather than as the
 * subprocess's timeout. */
#define STOP_DEADLINE_S 20

/* What the tracer says through its pipe, one byte. */
typedef enum
{
  STOP_REFUSED = 0,      /* ptrace is not allowed here */
  STOP_DONE = 1,         /* stopped asleep until released */
  STOP_PENDING = 2,      /* (the test's own: nothing said yet) */
  STOP_NEVER_ASLEEP = 3,
} StopResult;

static StopResult
stop_asleep (pid_t watcher)
{
  struct timespec now, deadline;
  int status;

  if (ptrace (PTRACE_SEIZE, watcher, NULL, NULL) != 0)
    return STOP_REFUSED;
  clock_gettime (CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += STOP_DEADLINE_S;
  while (clock_gettime (CLOCK_MONOTONIC, &now) == 0 && now.tv_sec < deadline.tv_sec)
    {
      if (!in_semaphore_wait (watcher))
        {
          sched_yield ();
          continue;
        }
      if (ptrace (PTRACE_INTERRUPT, watcher, NULL, NULL) != 0 || waitpid (watcher, &status, __WALL) != watcher
          || !WIFSTOPPED (status))
        return STOP_REFUSED;
      if (in_semaphore_wait (watcher))
        return STOP_DONE;
      if (ptrace (PTRACE_CONT, watcher, NULL, NULL) != 0)
        return STOP_REFUSED;
    }
  return STOP_NEVER_ASLEEP;
}

/* Test's main thread. Forks a child that stops the watcher thread
 * @watcher asleep (stop_asleep()), writes what came of it to @stopped,
 * then lets it go when @release is written to or closed. */
static pid_t
stop_watcher (pid_t watcher, int stopped, int release)
{
  pid_t tracer = fork ();
  char result, byte;

  g_assert_cmpint (tracer, >=, 0);
  if (tracer > 0)
    return tracer;
  /* Gone with the test (it holds the test's output pipes open). */
  prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  result = (char) stop_asleep (watcher);
  if (write (stopped, &result, 1) != 1 || read (release, &byte, 1) < 0)
    _exit (1);
  if (result == STOP_DONE)
    ptrace (PTRACE_DETACH, watcher, NULL, NULL);
  _exit (0);
}

static gboolean
byte_arrived (gint fd, GIOCondition condition, gpointer data)
{
  char *byte = data;

  g_assert_cmpint (read (fd, byte, 1), ==, 1);
  return G_SOURCE_REMOVE;
}

/* Lags the watcher thread could not follow (here it is stopped; on a
 * loaded machine it gets no CPU before they end) are counted, each in its
 * bucket, in the stats snapshot, the "stats" record and the summary; a lag
 * it follows is reported and not counted missed. */
static void
test_missed_lags (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      g_autofree char *dir = g_dir_make_tmp ("lagwatch-missed-XXXXXX", NULL);
      g_autofree char *path = g_build_filename (dir, "lags.jsonl", NULL);
      g_autofree char *output = g_strconcat ("stderr,json:", path, NULL);
      g_autofree char *json = NULL;
      GSource *tick = g_timeout_source_new (50);  /* bounds each wait */
      GSource *arrived;
      int stopped[2], release[2];
      pid_t watcher, tracer;
      LagWatchStats *stats;
      guint64 over_frame = 0, missed, lags;
      char byte = STOP_PENDING;
      Harness h;
      const char *line;

      g_assert_true (lagwatch_config_set_threshold_ms (config, 20));
      g_assert_true (lagwatch_config_set_output (config, output, NULL));
      harness_init_with_config (&h, config);
      g_source_set_callback (tick, harness_tick, NULL, NULL);
      g_source_attach (tick, h.context);
      g_assert_cmpint (pipe (stopped), ==, 0);
      g_assert_cmpint (pipe (release), ==, 0);
      prctl (PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
      while ((watcher = watcher_tid ()) == 0)
        g_main_context_iteration (h.context, TRUE);
      tracer = stop_watcher (watcher, stopped[1], release[0]);
      /* The loop sits in poll meanwhile: no busy period but short ones. */
      arrived = g_unix_fd_source_new (stopped[0], G_IO_IN);
      g_source_set_callback (arrived, G_SOURCE_FUNC (byte_arrived), &byte, NULL);
      g_source_attach (arrived, h.context);
      g_source_unref (arrived);
      while (byte == STOP_PENDING)
        g_main_context_iteration (h.context, TRUE);
      g_assert_cmpint (byte, !=, STOP_NEVER_ASLEEP);
      if (byte == STOP_REFUSED)
        {
          /* Said to the parent through a file: a skip in a subprocess is
           * a failure to g_test_trap_assert_passed(). */
          g_autofree char *refused = g_strdup_printf ("%s/lagwatch-ptrace-refused-%d", g_get_tmp_dir (),
                                                      (int) getppid ());

          g_assert_cmpint (write (release[1], &byte, 1), ==, 1);
          waitpid (tracer, NULL, 0);
          harness_clear (&h);
          g_assert_true (g_file_set_contents (refused, "", 0, NULL));
          return;
        }

      /* Four lags while the watcher is stopped: 30, 30, 30 and 60 ms at
       * least (a loaded machine stretches them into later buckets). More
       * are counted when a dispatch of the test's own was preempted past
       * the 20 ms threshold meanwhile: every one of them missed, none
       * below 16.7 ms. */
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (30));
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (30));
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (30));
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (60));
      g_main_context_iteration (h.context, FALSE);  /* the poll entry that ends the last */
      stats = lagwatch_get_stats (h.watch);
      g_assert_nonnull (stats);
      missed = lagwatch_stats_get_lags_missed (stats);
      g_assert_cmpuint (missed, >=, 4);
      for (guint i = 0; i < lagwatch_stats_get_n_buckets (stats); i++)
        if (lagwatch_stats_get_bucket_start_ms (stats, i) >= 16)  /* from 16.7 ms */
          over_frame += lagwatch_stats_get_bucket_missed (stats, i);
      g_assert_cmpuint (over_frame, ==, missed);
      g_assert_cmpuint (lagwatch_stats_get_lags (stats), ==, 0);
      lagwatch_stats_free (stats);

      /* The watcher goes on: a lag it follows is reported, not missed; the
       * lags counted are the reports delivered (on a loaded machine,
       * another preempted dispatch may be one), and those missed no fewer
       * than before. */
      g_assert_cmpint (write (release[1], &byte, 1), ==, 1);
      g_assert_cmpint (waitpid (tracer, NULL, 0), ==, tracer);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (60));
      harness_wait_reports (&h, 1);
      g_source_destroy (tick);
      g_source_unref (tick);
      lagwatch_detach (g_steal_pointer (&h.watch));  /* its last reports delivered, its stats final */
      lags = harness_n_reports (&h);
      harness_clear (&h);

      g_assert_true (g_file_get_contents (path, &json, NULL, NULL));
      line = strstr (json, "{\"event\":\"stats\"");
      g_assert_nonnull (line);
      {
        g_autofree char *counts = NULL;
        g_autofree char *said = g_strdup_printf ("%s/lagwatch-missed-counts-%d", g_get_tmp_dir (), (int) getppid ());
        g_autofree char *expected = NULL;
        const char *key = strstr (line, "\"lags_missed\":");
        guint64 missed_at_end;

        g_assert_nonnull (key);
        missed_at_end = g_ascii_strtoull (key + strlen ("\"lags_missed\":"), NULL, 10);
        g_assert_cmpuint (missed_at_end, >=, missed);
        expected = g_strdup_printf ("\"lags\":%" G_GUINT64_FORMAT ",\"lags_missed\":%" G_GUINT64_FORMAT ",",
                                    lags, missed_at_end);
        g_test_message ("stats record: %s", expected);
        g_assert_nonnull (strstr (line, expected));
        /* The summary on stderr is the parent's to check, with these. */
        counts = g_strdup_printf ("%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, lags, missed_at_end);
        g_assert_true (g_file_set_contents (said, counts, -1, NULL));
      }
      g_unlink (path);
      g_rmdir (dir);
      return;
    }
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  {
    g_autofree char *refused = g_strdup_printf ("%s/lagwatch-ptrace-refused-%d", g_get_tmp_dir (), (int) getpid ());

    if (g_unlink (refused) == 0)
      {
        g_test_skip ("ptrace of the watcher thread is not allowed here: it cannot be stopped on purpose");
        return;
      }
  }
  {
    g_autofree char *said = g_strdup_printf ("%s/lagwatch-missed-counts-%d", g_get_tmp_dir (), (int) getpid ());
    g_autofree char *counts = NULL, *pattern = NULL;
    guint64 lags, missed;

    g_assert_true (g_file_get_contents (said, &counts, NULL, NULL));
    g_unlink (said);
    g_assert_cmpint (sscanf (counts, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &lags, &missed), ==, 2);
    pattern = g_strdup_printf ("*lagwatch: this run: * %" G_GUINT64_FORMAT " lag%s\n*"
                               "  %" G_GUINT64_FORMAT " lags were seen only after they ended, with no report (the "
                               "watcher got no CPU in time): *",
                               lags, lags == 1 ? "" : "s", missed);
    g_test_trap_assert_stderr (pattern);
  }
}

/* ---- whose fault ---- */

/* The calling thread's run-queue delay so far (schedstat's second field), ms. */
static double
own_run_delay_ms (void)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/schedstat", (int) gettid ());
  g_autofree char *text = NULL;
  g_auto(GStrv) fields = NULL;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return -1;
  fields = g_strsplit (text, " ", 0);
  g_assert_cmpuint (g_strv_length (fields), >=, 2);
  return g_ascii_strtod (fields[1], NULL) / 1e6;
}

typedef struct
{
  int     cpu_ms;
  double  delay_ms;  /* the test's own measure around the spin */
  double  wall_ms;
} FaultLag;

static void
fault_lag (gpointer data)
{
  FaultLag *lag = data;
  double delay = own_run_delay_ms ();
  gint64 start = g_get_monotonic_time ();

  spin_cpu_ms (GINT_TO_POINTER (lag->cpu_ms));
  lag->wall_ms = (double) (g_get_monotonic_time () - start) / 1000;
  lag->delay_ms = own_run_delay_ms () - delay;
}

static gint hogs_stop;
static gint hogs_running;

static gpointer
hog (gpointer data)
{
  cpu_set_t cpus;

  CPU_ZERO (&cpus);
  CPU_SET (0, &cpus);
  g_assert_cmpint (sched_setaffinity (0, sizeof cpus, &cpus), ==, 0);
  g_atomic_int_inc (&hogs_running);
  while (!g_atomic_int_get (&hogs_stop))
    ;
  return NULL;
}

/* A 200 ms CPU-bound lag, with @n_hogs threads spinning beside it on its
 * CPU; checks the report's run_delay_ms against the test's own measure. */
static void
check_run_delay (guint n_hogs)
{
  Harness h;
  GThread *hogs[3];
  FaultLag lag = { 200, 0, 0 };
  LagWatchReport *report;
  cpu_set_t cpus;
  double run_delay, duration;

  if (!g_file_test ("/proc/self/schedstat", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("the kernel keeps no scheduler statistics (/proc/PID/schedstat)");
      return;
    }
  if (g_get_num_processors () < 2)
    {
      g_test_skip ("one CPU only: a lag alone on its CPU cannot be set apart from one beside a hog");
      return;
    }
  CPU_ZERO (&cpus);
  CPU_SET (0, &cpus);
  g_assert_cmpint (sched_setaffinity (0, sizeof cpus, &cpus), ==, 0);
  harness_init (&h, 50);
  g_atomic_int_set (&hogs_stop, 0);
  g_atomic_int_set (&hogs_running, 0);
  for (guint i = 0; i < n_hogs; i++)
    hogs[i] = g_thread_new ("hog", hog, NULL);
  while ((guint) g_atomic_int_get (&hogs_running) < n_hogs)
    g_thread_yield ();
  harness_run_lag (&h, fault_lag, &lag);
  g_atomic_int_set (&hogs_stop, 1);
  for (guint i = 0; i < n_hogs; i++)
    g_thread_join (hogs[i]);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  run_delay = lagwatch_report_get_run_delay_ms (report);
  duration = lagwatch_report_get_duration_ms (report);
  g_test_message ("%u hogs: lag %.0f ms (own %.0f), run delay %.1f ms (own %.1f), cpu_starved %d", n_hogs,
                  duration, lag.wall_ms, run_delay, lag.delay_ms, lagwatch_report_get_cpu_starved (report));
  /* The watcher measures from its first sight of the busy period to the
   * report, the test around the spin alone: close, not equal. */
  g_assert_cmpfloat (run_delay, >=, 0);
  g_assert_cmpfloat (ABS (run_delay - lag.delay_ms), <=, 0.25 * lag.delay_ms + 30);
  if (lag.delay_ms >= 0.6 * lag.wall_ms)
    g_assert_true (lagwatch_report_get_cpu_starved (report));
  else if (lag.delay_ms <= 0.3 * lag.wall_ms)
    g_assert_false (lagwatch_report_get_cpu_starved (report));
  if (n_hogs > 0)
    g_assert_cmpfloat (lag.delay_ms, >=, 100);  /* the hogs took their share */
  {
    g_autofree char *json = lagwatch_report_to_json (report);
    g_autofree char *text = lagwatch_report_to_text (report);

    g_assert_nonnull (strstr (json, "\"run_delay_ms\":"));
    if (lagwatch_report_get_cpu_starved (report))
      {
        g_assert_nonnull (strstr (json, "\"cpu_starved\":true"));
        g_assert_nonnull (strstr (text, "waiting for a CPU: "));
        g_assert_nonnull (strstr (text, "the machine was busy"));
      }
  }
  harness_clear (&h);
  CPU_ZERO (&cpus);
  for (guint i = 0; i < (guint) g_get_num_processors () && i < CPU_SETSIZE; i++)
    CPU_SET (i, &cpus);
  sched_setaffinity (0, sizeof cpus, &cpus);
}

static void
test_run_delay_beside_hogs (void)
{
  check_run_delay (3);
}

static void
test_run_delay_alone (void)
{
  check_run_delay (0);
}

static gboolean
drain_pipe (gint fd, GIOCondition condition, gpointer data)
{
  char byte;

  g_assert_cmpint (read (fd, &byte, 1), ==, 1);
  return G_SOURCE_CONTINUE;
}

typedef struct
{
  int  fd;   /* the pipe's write end, -1: write nothing */
} InputLag;

static void
input_lag (gpointer data)
{
  InputLag *lag = data;

  if (lag->fd >= 0)
    g_assert_cmpint (write (lag->fd, "x", 1), ==, 1);
  spin_cpu_ms (GINT_TO_POINTER (150));
}

/* A lag while an input fd of the context (a pipe watched with
 * g_unix_fd_add) is readable reports input_pending; one without does not. */
static void
test_input_pending (void)
{
  Harness h;
  int fds[2];
  InputLag quiet = { -1 }, typed;
  GSource *source;

  harness_init (&h, 50);
  g_assert_true (g_unix_open_pipe (fds, FD_CLOEXEC, NULL));
  typed.fd = fds[1];
  /* g_unix_fd_add(), on the watched context rather than the default one. */
  source = g_unix_fd_source_new (fds[0], G_IO_IN);
  g_source_set_callback (source, G_SOURCE_FUNC (drain_pipe), NULL, NULL);
  g_source_set_name (source, "input pipe");
  g_source_attach (source, h.context);
  /* A busy period of 1 ms or more: the wrapper's slow path copies the
   * context's poll records, the pipe among them. */
  harness_run_lag (&h, spin_cpu_ms, GINT_TO_POINTER (3));

  harness_run_lag (&h, input_lag, &quiet);
  harness_wait_reports (&h, 1);
  harness_run_lag (&h, input_lag, &typed);
  harness_wait_reports (&h, 2);
  g_assert_false (lagwatch_report_get_input_pending (harness_report (&h, 0)));
  g_assert_true (lagwatch_report_get_input_pending (harness_report (&h, 1)));
  {
    g_autofree char *json0 = lagwatch_report_to_json (harness_report (&h, 0));
    g_autofree char *json1 = lagwatch_report_to_json (harness_report (&h, 1));
    g_autofree char *text1 = lagwatch_report_to_text (harness_report (&h, 1));

    g_assert_nonnull (strstr (json0, "\"input_pending\":false"));
    g_assert_nonnull (strstr (json1, "\"input_pending\":true"));
    g_assert_nonnull (strstr (text1, "input was waiting"));
  }
  g_source_destroy (source);
  g_source_unref (source);
  close (fds[0]);
  close (fds[1]);
  harness_clear (&h);
}

/* The periodic and exit events and the summary line: lags are counted. */
static void
test_counts_lags (void)
{
  Harness h;
  g_autoptr(LagWatchStats) stats = NULL;

  harness_init (&h, 50);
  harness_run_lag (&h, spin_cpu_ms, GINT_TO_POINTER (120));
  harness_wait_reports (&h, 1);
  stats = lagwatch_get_stats (h.watch);
  g_assert_cmpuint (lagwatch_stats_get_lags (stats), ==, 1);
  g_assert_cmpuint (lagwatch_stats_get_over_30hz_frame (stats), >=, 1);
  g_assert_cmpfloat (lagwatch_stats_get_longest_ms (stats), >=, 120);
  harness_clear (&h);
}

/* A locale that writes numbers with a decimal comma, made in @dir with
 * localedef (none but C and POSIX is installed on a minimal system) and
 * set for LC_ALL; FALSE with the reason in @why when none can be had. */
static gboolean
set_decimal_comma_locale (const char *dir, char **why)
{
  static const char *const names[] = { "de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "fr_FR" };
  g_autofree char *target = g_build_filename (dir, "de_DE.UTF-8", NULL);
  const char *argv[] = { "localedef", "-i", "de_DE", "-f", "UTF-8", target, NULL };
  g_autofree char *err = NULL;
  int status = -1;

  /* An installed one first; else one made here, found through LOCPATH
   * (which glibc reads at each setlocale()). */
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    if (setlocale (LC_ALL, names[i]) != NULL)
      return TRUE;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL,
                     NULL, NULL, NULL, &err, &status, NULL))
    {
      *why = g_strdup ("localedef is not installed (Debian package libc-bin)");
      return FALSE;
    }
  g_setenv ("LOCPATH", dir, TRUE);
  if (setlocale (LC_ALL, "de_DE.UTF-8") != NULL)
    return TRUE;
  *why = g_strdup_printf ("no decimal-comma locale (Debian package locales has localedef's sources): "
                          "localedef -i de_DE ended with status %d: %s", status,
                          err != NULL ? g_strstrip (err) : "");
  return FALSE;
}

/* Loop thread: a busy period of about 1 ms. */
static void
sleep_1ms (gpointer data)
{
  g_usleep (1000);
}

/* The stats record is JSON under any locale: a GTK program calls
 * setlocale (LC_ALL, ""), and under a decimal-comma one printf ("%.1f")
 * writes "812,5". */
static void
test_json_ignores_locale (void)
{
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-locale-XXXXXX", NULL);
  g_autofree char *why = NULL;
  g_autofree char *sample = NULL;
  g_autofree char *path = g_build_filename (dir != NULL ? dir : ".", "records.jsonl", NULL);
  g_autofree char *output = g_strconcat ("json:", path, NULL);
  g_autofree char *text = NULL;
  g_autofree char *cmd = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  LagWatch *watch;
  guint records = 0;

  g_assert_nonnull (dir);
  if (!set_decimal_comma_locale (dir, &why))
    {
      g_test_skip (why);
      goto out;
    }
  sample = g_strdup_printf ("%.1f", 0.5);
  g_test_message ("locale %s writes 0.5 as \"%s\"", setlocale (LC_NUMERIC, NULL), sample);
  if (!g_str_equal (sample, "0,5"))
    {
      g_test_skip ("the locale made writes no decimal comma");
      goto out;
    }
  /* A few iterations, then detach: the watcher writes the stats record. */
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  watch = lagwatch_attach_with_config (NULL, config);
  g_assert_nonnull (watch);
  for (int i = 0; i < 5; i++)
    {
      g_idle_add_once (sleep_1ms, NULL);
      g_main_context_iteration (NULL, TRUE);
    }
  lagwatch_detach (watch);
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_autoptr(JsonParser) parser = json_parser_new ();
      g_autoptr(GError) error = NULL;
      JsonObject *record;

      if (!g_str_has_prefix (lines[i], "{\"event\":\"stats\""))
        continue;
      g_test_message ("%s", lines[i]);
      json_parser_load_from_data (parser, lines[i], -1, &error);
      g_assert_no_error (error);
      record = json_node_get_object (json_parser_get_root (parser));
      g_assert_cmpint (json_node_get_value_type (json_object_get_member (record, "busy_ms")), ==, G_TYPE_DOUBLE);
      g_assert_cmpint (json_node_get_value_type (json_object_get_member (record, "p99_ms")), ==, G_TYPE_DOUBLE);
      records++;
    }
  g_assert_cmpuint (records, ==, 1);
out:
  setlocale (LC_ALL, "C");
  cmd = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  harness_subprocess_dumpable ();  /* (GLib 2.78+ makes test subprocesses not dumpable) */
  /* First: it sets LOCPATH, before any other test starts a thread. */
  g_test_add_func ("/stats/json-ignores-locale", test_json_ignores_locale);
  g_test_add_func ("/stats/known-busy-periods", test_known_busy_periods);
  g_test_add_func ("/stats/counts-lags", test_counts_lags);
  g_test_add_func ("/stats/missed-lags", test_missed_lags);
  g_test_add_func ("/whose-fault/run-delay-beside-hogs", test_run_delay_beside_hogs);
  g_test_add_func ("/whose-fault/run-delay-alone", test_run_delay_alone);
  g_test_add_func ("/whose-fault/input-pending", test_input_pending);
  return g_test_run ();
}
