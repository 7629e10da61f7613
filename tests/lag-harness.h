/* lag-harness.h: run a GLib context with lagwatch attached, make it lag,
 * collect the reports.
 *
 * The harness owns a fresh context pushed as the thread's default, a watch
 * with the given threshold and no output, and the list of reports its
 * callback received (on the watcher thread, handed over under a lock).
 * Waiting is always on a condition with a generous deadline, never a sleep.
 */
#pragma once

#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <time.h>

#include "lagwatch.h"

#define HARNESS_DEADLINE_US (10 * G_USEC_PER_SEC)

/* Test thread, right after g_test_init(). GLib 2.78 and later make a test
 * subprocess non-dumpable (no core dumps of expected crashes), which makes
 * its own threads' /proc files root's: a non-root run could not read them.
 * A subprocess that tests lagwatch's /proc reads is made dumpable again,
 * as a program is. */
static G_GNUC_UNUSED void
harness_subprocess_dumpable (void)
{
  if (g_test_subprocess ())
    g_assert_cmpint (prctl (PR_SET_DUMPABLE, 1, 0, 0, 0), ==, 0);
}

/* Test thread. Removes @path and all it holds, never following a symlink. */
static G_GNUC_UNUSED void
harness_remove_tree (const char *path)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_SYMLINK) && (dir = g_dir_open (path, 0, NULL)) != NULL)
    while ((name = g_dir_read_name (dir)) != NULL)
      {
        g_autofree char *child = g_build_filename (path, name, NULL);

        harness_remove_tree (child);
      }
  g_remove (path);
}

/* Functions whose frames a test looks for in a stack: never inlined,
 * cloned or folded into their callers. */
#define LAGGY __attribute__ ((noipa))

/* A lag: @data (an int) milliseconds of CPU, in a function of this name. */
static LAGGY G_GNUC_UNUSED void
spin_ms (gpointer data)
{
  gint64 end = g_get_monotonic_time () + GPOINTER_TO_INT (data) * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

/* The CPU time of the calling thread, in ms. */
static G_GNUC_UNUSED double
thread_cpu_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6;
}

/* A lag of @data (an int) milliseconds of the thread's CPU time: the same
 * work however loaded the machine is. Tests that count samples or CPU use
 * it (a running thread is sampled per 10 ms of its CPU time); spin_ms()
 * would give a starved thread less CPU, and fewer samples, than asked. */
static LAGGY G_GNUC_UNUSED void
spin_cpu_ms (gpointer data)
{
  double end = thread_cpu_ms () + GPOINTER_TO_INT (data);

  while (thread_cpu_ms () < end)
    ;
}

/* Any thread. Thread @tid's scheduler statistics
 * (/proc/self/task/TID/schedstat: time on a CPU, time waiting for one, in
 * ns, and how many times it was put on one) into @fields; FALSE where the
 * kernel keeps none. */
static G_GNUC_UNUSED gboolean
thread_schedstat (pid_t tid, guint64 fields[3])
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/schedstat", (int) tid);
  g_autofree char *contents = NULL;

  return g_file_get_contents (path, &contents, NULL, NULL)
         && sscanf (contents, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
                    &fields[0], &fields[1], &fields[2]) == 3;
}

/* Any thread. How long thread @tid has waited for a CPU so far (its
 * run-queue delay), in ms; -1 where the kernel keeps no scheduler
 * statistics. */
static G_GNUC_UNUSED double
thread_wait_ms (pid_t tid)
{
  guint64 fields[3];

  return thread_schedstat (tid, fields) ? (double) fields[1] / 1e6 : -1;
}

/* Any thread. How many times thread @tid of this process has been put on
 * a CPU; -1 where the kernel keeps no scheduler statistics. A sleeping
 * thread that woke and ran counts one more. */
static G_GNUC_UNUSED gint64
thread_runs (pid_t tid)
{
  guint64 fields[3];

  return thread_schedstat (tid, fields) ? (gint64) fields[2] : -1;
}

/* Any thread, and the child of a fork() of a threaded process (only
 * snprintf(), open(), read() and strtol()). The system call thread @tid,
 * of any process, is in, from /proc/TID/syscall ("NR ARG1 ... SP PC"),
 * and its first two arguments in @args (nullable); -1 outside one
 * ("-1 SP PC"), on a CPU ("running") or where the file cannot be read. */
static G_GNUC_UNUSED long
thread_syscall (pid_t tid, unsigned long args[2])
{
  char path[64], text[256], *end;
  ssize_t n;
  long nr;
  int fd;

  snprintf (path, sizeof path, "/proc/%d/syscall", (int) tid);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  n = read (fd, text, sizeof text - 1);
  close (fd);
  if (n <= 0)
    return -1;
  text[n] = '\0';
  nr = strtol (text, &end, 10);
  if (end == text)
    return -1;
  if (args != NULL)
    {
      args[0] = strtoul (end, &end, 16);
      args[1] = strtoul (end, NULL, 16);
    }
  return nr;
}

/* Any thread. The thread named "lagwatch" (the watcher), or 0. */
static G_GNUC_UNUSED pid_t
watcher_tid (void)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *tid;

  while (dir != NULL && (tid = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
      g_autofree char *comm = NULL;

      if (g_file_get_contents (path, &comm, NULL, NULL) && g_str_equal (g_strstrip (comm), "lagwatch"))
        return (pid_t) g_ascii_strtoll (tid, NULL, 10);
    }
  return 0;
}

typedef struct
{
  GMainContext *context;
  LagWatch     *watch;
  GMutex        lock;
  GPtrArray    *reports;  /* of LagWatchReport, guarded by lock */
} Harness;

typedef void (*HarnessLagFunc) (gpointer data);

typedef struct
{
  HarnessLagFunc func;
  gpointer       data;
  gint64         measured_us;  /* how long func ran, measured around the call */
  gboolean       done;
} HarnessLag;

static void
harness_on_report (LagWatchReport *report, gpointer user_data)
{
  Harness *h = user_data;

  g_mutex_lock (&h->lock);
  g_ptr_array_add (h->reports, lagwatch_report_ref (report));
  g_mutex_unlock (&h->lock);
  g_main_context_wakeup (h->context);
}

/* A harness whose watch uses @config as it is. */
static inline void
harness_init_with_config (Harness *h, const LagWatchConfig *config)
{
  g_mutex_init (&h->lock);
  h->reports = g_ptr_array_new_with_free_func ((GDestroyNotify) lagwatch_report_unref);
  h->context = g_main_context_new ();
  g_main_context_push_thread_default (h->context);
  h->watch = lagwatch_attach_with_config (h->context, config);
  g_assert_nonnull (h->watch);
  lagwatch_set_report_func (h->watch, harness_on_report, h, NULL);
}

static inline void
harness_init (Harness *h, guint threshold_ms)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();

  g_assert_true (lagwatch_config_set_threshold_ms (config, threshold_ms));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  harness_init_with_config (h, config);
}

static inline void
harness_clear (Harness *h)
{
  if (h->watch != NULL)
    lagwatch_detach (h->watch);
  g_main_context_pop_thread_default (h->context);
  g_main_context_unref (h->context);
  g_ptr_array_unref (h->reports);
  g_mutex_clear (&h->lock);
}

static inline guint
harness_n_reports (Harness *h)
{
  guint n;

  g_mutex_lock (&h->lock);
  n = h->reports->len;
  g_mutex_unlock (&h->lock);
  return n;
}

static inline LagWatchReport *
harness_report (Harness *h, guint index)
{
  LagWatchReport *report;

  g_mutex_lock (&h->lock);
  g_assert_cmpuint (index, <, h->reports->len);
  report = h->reports->pdata[index];
  g_mutex_unlock (&h->lock);
  return report;
}

static gboolean
harness_run_lag_cb (gpointer user_data)
{
  HarnessLag *lag = user_data;
  gint64 start = g_get_monotonic_time ();

  lag->func (lag->data);
  lag->measured_us = g_get_monotonic_time () - start;
  lag->done = TRUE;
  return G_SOURCE_REMOVE;
}

static gboolean
harness_tick (gpointer user_data)
{
  return G_SOURCE_CONTINUE;
}

/* Iterates the context until @n reports arrived; the report callback wakes
 * the context, and a 50 ms tick bounds each wait. Fails the test at the
 * deadline. */
static inline void
harness_wait_reports (Harness *h, guint n)
{
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US;
  GSource *tick = g_timeout_source_new (50);

  g_source_set_callback (tick, harness_tick, NULL, NULL);
  g_source_attach (tick, h->context);
  while (harness_n_reports (h) < n)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (h->context, TRUE);
    }
  g_source_destroy (tick);
  g_source_unref (tick);
}

/* The first report whose GSource is named @source, waiting for it as
 * harness_wait_reports() does: on a loaded machine another dispatch (the
 * watch's own probe, say) may be preempted past the threshold and be
 * reported first. */
static inline LagWatchReport *
harness_wait_report_of_source (Harness *h, const char *source)
{
  for (guint n = 1;; n++)
    {
      LagWatchReport *report;

      harness_wait_reports (h, n);
      report = harness_report (h, n - 1);
      if (g_strcmp0 (lagwatch_report_get_source (report), source) == 0)
        return report;
    }
}

/* Runs @func inside a dispatch of the context and iterates until it has
 * returned. Returns how long it ran, in µs. */
static inline gint64
harness_run_lag (Harness *h, HarnessLagFunc func, gpointer data)
{
  HarnessLag lag = { func, data, 0, FALSE };
  GSource *idle = g_idle_source_new ();

  g_source_set_name (idle, "harness lag");
  g_source_set_callback (idle, harness_run_lag_cb, &lag, NULL);
  g_source_attach (idle, h->context);
  g_source_unref (idle);
  while (!lag.done)
    g_main_context_iteration (h->context, TRUE);
  return lag.measured_us;
}

/* TRUE when a frame of @report names @symbol. Counts them into @count. */
static inline gboolean
harness_stack_has (LagWatchReport *report, const char *symbol, guint *count)
{
  guint found = 0;

  for (guint i = 0; i < lagwatch_report_get_n_frames (report); i++)
    {
      const char *name = NULL;

      lagwatch_report_get_frame (report, i, NULL, NULL, NULL, &name, NULL);
      if (g_strcmp0 (name, symbol) == 0)
        found++;
    }
  if (count != NULL)
    *count = found;
  return found > 0;
}
