/* test-diagnose.c: what a report says about a lag, beyond its stack
 *
 * Sampling through the lag and the heaviest stack, the GSource and the
 * loop phase, CPU against waiting, hangs (durable, with every thread, and
 * reported by the next run after a SIGKILL), fingerprints with back-off and
 * the summary table, and the cases that must not be reported at all: a
 * debugger, SIGSTOP, pause, declared long work. Every number checked comes
 * from the run itself.
 */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lag-harness.h"
#include "report-json.h"

#define KEEP_FRAME() __asm__ volatile ("" ::: "memory")  /* no tail call: keep the caller's frame */

/* The first phase holds the threshold (100 ms) and lasts 130 ms of wall
 * time: a handful of samples at most, whatever the load. The second spins
 * for CPU time: a running thread is sampled per 10 ms of its CPU (and,
 * when the watcher finds it preempted, through /proc by wall time), so
 * the lag gets tens of samples (30 to 45 beside two busy loops), where
 * wall-clock spins on a loaded machine got 4 in all: too few to say which
 * phase was heavier. Were the first to spin for CPU time too, a loaded
 * machine could stretch it, and its samples by wall time, past the
 * second's. */
static LAGGY void
first_phase (int ms)
{
  spin_ms (GINT_TO_POINTER (ms));
  KEEP_FRAME ();
}

static LAGGY void
second_phase (int ms)
{
  spin_cpu_ms (GINT_TO_POINTER (ms));
  KEEP_FRAME ();
}

static LAGGY void
two_phases (gpointer data)
{
  first_phase (130);
  second_phase (470);
  KEEP_FRAME ();
}

/* The stack that held the thread longest, not the one at the threshold. */
static void
test_heaviest_stack (void)
{
  Harness h;
  LagWatchReport *report;

  harness_init (&h, 100);
  harness_run_lag (&h, two_phases, NULL);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_test_message ("%u samples", lagwatch_report_get_n_samples (report));
  g_assert_true (harness_stack_has (report, "second_phase", NULL));
  g_assert_false (harness_stack_has (report, "first_phase", NULL));
  g_assert_cmpuint (lagwatch_report_get_n_samples (report), >=, 10);
  harness_clear (&h);
}

static LAGGY void
sleep_ms (gpointer data)
{
  g_usleep (GPOINTER_TO_UINT (data) * 1000);
  KEEP_FRAME ();
}

static LAGGY void
running_half (void)
{
  /* CPU time, not wall time: the running half is sampled per 10 ms of the
   * thread's CPU, which a loaded machine would otherwise give it less of. */
  spin_cpu_ms (GINT_TO_POINTER (400));
  KEEP_FRAME ();
}

static LAGGY void
sleeping_half (void)
{
  sleep_ms (GINT_TO_POINTER (400));
  KEEP_FRAME ();
}

static LAGGY void
run_then_sleep (gpointer data)
{
  running_half ();
  sleeping_half ();
  KEEP_FRAME ();
}

/* The samples of the report's stacks that name @symbol. */
static guint
samples_naming (JsonArray *stacks, const char *symbol)
{
  guint n = 0;

  for (guint i = 0; i < json_array_get_length (stacks); i++)
    {
      JsonObject *stack = json_array_get_object_element (stacks, i);

      if (json_frames_have (json_object_get_array_member (stack, "stack"), symbol))
        n += json_object_get_int_member (stack, "samples");
    }
  return n;
}

/* A lag that runs, then sleeps, each for 400 ms: the running part is
 * sampled by the thread's CPU-time timer, the sleeping part by the
 * watcher through /proc. Both halves get their share of the samples
 * (about 30 and 40 past the 100 ms threshold), neither is left out. */
static void
test_running_and_sleeping_halves (void)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autofree char *json = NULL;
  LagWatchReport *report;
  JsonArray *stacks;
  guint running, sleeping, total;
  Harness h;

  harness_init (&h, 100);
  harness_run_lag (&h, run_then_sleep, NULL);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  json = lagwatch_report_to_json (report);
  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  stacks = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "stacks");
  running = samples_naming (stacks, "running_half");
  sleeping = samples_naming (stacks, "sleeping_half");
  total = lagwatch_report_get_n_samples (report);
  g_test_message ("%u samples: %u running, %u sleeping", total, running, sleeping);
  g_assert_cmpuint (running, >=, total / 4);
  g_assert_cmpuint (sleeping, >=, total / 4);
  g_assert_cmpuint (running + sleeping, >=, 50);
  harness_clear (&h);
}

/* Loop thread. spin_ms() for 300 ms, counting the CPU time the thread got
 * (on a loaded machine, less than the wall time). */
/* What the loop thread measured around its spin: the CPU time it got, and
 * how long the watcher thread waited for a CPU meanwhile. */
typedef struct
{
  double cpu_ms;
  double watcher_wait_ms;
} SpinCount;

static LAGGY void
spin_counting_cpu (gpointer data)
{
  SpinCount *count = data;
  pid_t watcher = watcher_tid ();
  double start = thread_cpu_ms (), wait_start = thread_wait_ms (watcher);

  spin_ms (GINT_TO_POINTER (300));
  count->cpu_ms = thread_cpu_ms () - start;
  count->watcher_wait_ms = wait_start >= 0 ? thread_wait_ms (watcher) - wait_start : 0;
}

static void
test_cpu_and_state (void)
{
  Harness h;
  LagWatchReport *busy, *sleeping;
  double duration, spin_cpu, unseen_ms;
  SpinCount count = { 0, 0 };

  harness_init (&h, 100);
  harness_run_lag (&h, spin_counting_cpu, &count);
  spin_cpu = count.cpu_ms;
  harness_run_lag (&h, sleep_ms, GINT_TO_POINTER (300));
  harness_wait_reports (&h, 2);

  busy = harness_report (&h, 0);
  duration = lagwatch_report_get_duration_ms (busy);
  /* The report's CPU time is read from the watcher's first sight of the
   * lag and scaled up to the part before it, as if the thread had run at
   * the same rate then. The watcher is woken as the lag begins: that part
   * lasts its wake-up (microseconds) plus the time it waits for a CPU on a
   * loaded machine, when the loop thread's share of CPU may differ from
   * the rest of the lag. The thread's CPU in that part, unseen, is at most
   * its length: so much may be missed, or invented by the scaling. */
  unseen_ms = count.watcher_wait_ms + 1.0;
  g_test_message ("busy: %.1f ms, cpu %.1f ms (the thread counted %.1f ms; the watcher waited %.1f ms for a CPU)",
                  duration, lagwatch_report_get_cpu_ms (busy), spin_cpu, count.watcher_wait_ms);
  /* The CPU time the thread really got, which a loaded machine makes less
   * than the duration: the report must neither miss nor invent it. Within
   * 20% (and 10 ms) on an idle machine; past that by no more than what
   * the unseen part can hold. */
  g_assert_cmpfloat (lagwatch_report_get_cpu_ms (busy), >=, MIN (0.8 * spin_cpu, spin_cpu - unseen_ms));
  g_assert_cmpfloat (lagwatch_report_get_cpu_ms (busy), <=,
                     MAX (1.2 * spin_cpu + 10.0, spin_cpu * duration / MAX (duration - unseen_ms, 1.0)));
  g_assert_cmpfloat (lagwatch_report_get_cpu_ms (busy), <=, 1.05 * duration);
  g_assert_cmpstr (lagwatch_report_get_thread_state (busy), ==, "running");

  sleeping = harness_report (&h, 1);
  duration = lagwatch_report_get_duration_ms (sleeping);
  g_test_message ("sleeping: %.1f ms, cpu %.1f ms", duration, lagwatch_report_get_cpu_ms (sleeping));
  g_assert_cmpfloat (lagwatch_report_get_cpu_ms (sleeping), >=, 0.0);
  g_assert_cmpfloat (lagwatch_report_get_cpu_ms (sleeping), <, 0.05 * duration);
  g_assert_cmpstr (lagwatch_report_get_thread_state (sleeping), ==, "sleeping");
  g_assert_cmpstr (lagwatch_report_get_syscall (sleeping), ==, "clock_nanosleep");
  harness_clear (&h);
}

static gboolean
slow_named_idle (gpointer data)
{
  spin_ms (GINT_TO_POINTER (200));
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

static void
test_source_name (void)
{
  Harness h;
  GSource *idle = g_idle_source_new ();
  gboolean done = FALSE;
  LagWatchReport *report;
  g_autofree char *json = NULL;

  harness_init (&h, 100);
  g_source_set_name (idle, "my slow idle");
  g_source_set_priority (idle, G_PRIORITY_DEFAULT_IDLE);
  g_source_set_callback (idle, slow_named_idle, &done, NULL);
  g_source_attach (idle, h.context);
  g_source_unref (idle);
  while (!done)
    g_main_context_iteration (h.context, TRUE);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_cmpstr (lagwatch_report_get_source (report), ==, "my slow idle");
  g_assert_cmpstr (lagwatch_report_get_phase (report), ==, "dispatch");
  json = lagwatch_report_to_json (report);
  g_assert_nonnull (strstr (json, "\"priority\":200"));
  harness_clear (&h);
}

/* A ready source of priority < 0 makes GLib skip poll: input starves. */
static gboolean
starving_idle (gpointer data)
{
  gint64 *until = data;

  spin_ms (GINT_TO_POINTER (1));
  return g_get_monotonic_time () < *until ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
test_starved (void)
{
  Harness h;
  GSource *idle = g_idle_source_new ();
  gint64 until;
  LagWatchReport *report;

  harness_init (&h, 100);
  /* A running loop first (watching starts at the first poll)... */
  g_main_context_iteration (h.context, FALSE);
  until = g_get_monotonic_time () + 400 * 1000;
  /* ...then a source that stays ready above priority 0. */
  g_source_set_priority (idle, G_PRIORITY_HIGH - 1);
  g_source_set_callback (idle, starving_idle, &until, NULL);
  g_source_attach (idle, h.context);
  g_source_unref (idle);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_cmpstr (lagwatch_report_get_phase (report), ==, "starved");
  g_assert_cmpfloat (lagwatch_report_get_duration_ms (report), >=, 300.0);
  harness_clear (&h);
}

/* Long hangs keep a bounded, evenly thinned set of samples. */
static void
test_sample_budget (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  LagWatchReport *report;
  Harness h;

  lagwatch_config_set_output (config, "none", NULL);
  lagwatch_config_set_sample_ms (config, 2);
  /* A loaded machine stretches the lag: no hang record for it. */
  lagwatch_config_set_hang_ms (config, 60000);
  harness_init_with_config (&h, config);
  harness_run_lag (&h, spin_cpu_ms, GINT_TO_POINTER (1500));
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_test_message ("%u samples over %.0f ms", lagwatch_report_get_n_samples (report),
                  lagwatch_report_get_duration_ms (report));
  g_assert_cmpuint (lagwatch_report_get_n_samples (report), <=, 256);
  g_assert_cmpuint (lagwatch_report_get_n_samples (report), >=, 100);
  harness_clear (&h);
}

/* A mutex the loop waits for, held by a worker that sleeps. */
typedef struct
{
  GMutex   lock;
  GMutex   sync;
  GCond    cond;
  gboolean held;
} Contended;

static LAGGY void
hold_lock_for_a_while (Contended *c)
{
  g_mutex_lock (&c->lock);
  g_mutex_lock (&c->sync);
  c->held = TRUE;
  g_cond_signal (&c->cond);
  g_mutex_unlock (&c->sync);
  g_usleep (700 * 1000);
  g_mutex_unlock (&c->lock);
  KEEP_FRAME ();
}

static gpointer
holder_thread (gpointer data)
{
  hold_lock_for_a_while (data);
  return NULL;
}

static LAGGY void
wait_for_holder (gpointer data)
{
  Contended *c = data;

  g_mutex_lock (&c->lock);
  g_mutex_unlock (&c->lock);
  KEEP_FRAME ();
}

static JsonObject *
find_event (JsonParser *parser, const char *contents, const char *event)
{
  g_auto(GStrv) lines = g_strsplit (contents, "\n", -1);

  for (guint i = 0; lines[i] != NULL; i++)
    {
      JsonObject *object;

      if (lines[i][0] == '\0' || !json_parser_load_from_data (parser, lines[i], -1, NULL))
        continue;
      object = json_node_get_object (json_parser_get_root (parser));
      if (g_strcmp0 (json_object_get_string_member (object, "event"), event) == 0)
        return object;
    }
  return NULL;
}

static void
test_hang_all_threads (void)
{
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-hang-XXXXXX", NULL);
  g_autofree char *json_path = g_build_filename (dir, "lags.jsonl", NULL);
  g_autofree char *state = g_build_filename (dir, "state", NULL);
  g_autofree char *spec = g_strdup_printf ("json:%s", json_path);
  g_autofree char *contents = NULL;
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(JsonParser) parser = json_parser_new ();
  Contended c = { 0 };
  JsonObject *hang, *lag;
  JsonArray *threads;
  gboolean holder_seen = FALSE;
  GThread *holder;
  Harness h;

  g_mutex_init (&c.lock);
  g_mutex_init (&c.sync);
  g_cond_init (&c.cond);
  lagwatch_config_set_output (config, spec, NULL);
  lagwatch_config_set_hang_ms (config, 300);
  lagwatch_config_set_state_dir (config, state);
  harness_init_with_config (&h, config);

  holder = g_thread_new ("holder", holder_thread, &c);
  g_mutex_lock (&c.sync);
  while (!c.held)
    g_cond_wait (&c.cond, &c.sync);
  g_mutex_unlock (&c.sync);
  harness_run_lag (&h, wait_for_holder, &c);
  g_thread_join (holder);
  harness_wait_reports (&h, 1);
  harness_clear (&h);

  g_assert_true (g_file_get_contents (json_path, &contents, NULL, NULL));
  hang = find_event (parser, contents, "hang");
  g_assert_nonnull (hang);
  g_assert_false (json_object_get_boolean_member (hang, "complete"));
  g_assert_cmpfloat (json_object_get_double_member (hang, "duration_ms"), >=, 300.0);
  threads = json_object_get_array_member (hang, "threads");
  for (guint i = 0; i < json_array_get_length (threads); i++)
    {
      JsonObject *thread = json_array_get_object_element (threads, i);

      if (json_frames_have (json_object_get_array_member (thread, "stack"), "hold_lock_for_a_while"))
        {
          holder_seen = TRUE;
          g_assert_cmpstr (json_object_get_string_member (thread, "name"), ==, "holder");
          g_assert_cmpstr (json_object_get_string_member (thread, "state"), ==, "sleeping");
        }
    }
  g_assert_true (holder_seen);
  {
    g_autofree char *hang_id = g_strdup (json_object_get_string_member (hang, "id"));
    g_autoptr(JsonParser) parser2 = json_parser_new ();

    lag = find_event (parser2, contents, "lag");
    g_assert_nonnull (lag);
    g_assert_cmpstr (json_object_get_string_member (lag, "id"), ==, hang_id);
  }
  /* The hang ended: its copy in the state directory is gone. */
  {
    g_autoptr(GDir) d = g_dir_open (state, 0, NULL);

    g_assert_nonnull (d);
    g_assert_null (g_dir_read_name (d));
  }
  g_mutex_clear (&c.lock);
  g_mutex_clear (&c.sync);
  g_cond_clear (&c.cond);
  g_unlink (json_path);
  g_rmdir (state);
  g_rmdir (dir);
}

static LAGGY gboolean
hang_until_killed (gpointer data)
{
  while (data == NULL)
    spin_ms (GINT_TO_POINTER (1000));
  return G_SOURCE_REMOVE;
}

/* Child of /diagnose/hang-survives-sigkill: hangs until killed. */
G_GNUC_NORETURN static void
child_hang_forever (void)
{
  LagWatch *watch = lagwatch_attach (NULL);

  g_assert_nonnull (watch);
  g_idle_add (hang_until_killed, NULL);
  for (;;)
    g_main_context_iteration (NULL, TRUE);
}

/* Child: attaches (finding the killed run's hang) and leaves. */
static int
child_attach_once (void)
{
  LagWatch *watch = lagwatch_attach (NULL);

  g_assert_nonnull (watch);
  lagwatch_detach (watch);
  return 0;
}

/* The whole lines of @path (up to its last newline) once one of them holds
 * @needle, or NULL at the deadline. The file grows while we read it: a
 * line still being written is never looked at, nor returned. */
static char *
read_until (const char *path, const char *needle, gint64 timeout_us)
{
  gint64 deadline = g_get_monotonic_time () + timeout_us;

  for (;;)
    {
      char *contents = NULL;

      if (g_file_get_contents (path, &contents, NULL, NULL))
        {
          char *end = strrchr (contents, '\n');

          if (end != NULL)
            {
              end[1] = '\0';
              if (strstr (contents, needle) != NULL)
                return contents;
            }
        }
      g_free (contents);
      if (g_get_monotonic_time () > deadline)
        return NULL;
      g_usleep (10 * 1000);
    }
}

/* read_until() matches only whole lines: a line written in two parts is
 * not found until its newline is there, and what it returns ends at a
 * newline. */
static void
test_read_until_whole_lines (void)
{
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-lines-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "growing.jsonl", NULL);
  g_autofree char *partial = NULL, *whole = NULL;
  FILE *file = fopen (path, "w");

  g_assert_nonnull (file);
  g_assert_cmpint (fputs ("{\"event\":\"lag\"}\n{\"event\":\"hang\",\"id\":", file), >=, 0);
  g_assert_cmpint (fflush (file), ==, 0);
  partial = read_until (path, "\"event\":\"hang\"", 100 * 1000);
  g_assert_null (partial);
  g_assert_cmpint (fputs ("\"1-1\"}\n", file), >=, 0);
  g_assert_cmpint (fclose (file), ==, 0);
  whole = read_until (path, "\"event\":\"hang\"", HARNESS_DEADLINE_US);
  g_assert_nonnull (whole);
  g_assert_true (g_str_has_suffix (whole, "{\"event\":\"hang\",\"id\":\"1-1\"}\n"));
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_hang_survives_sigkill (void)
{
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-kill-XXXXXX", NULL);
  g_autofree char *first = g_build_filename (dir, "first.jsonl", NULL);
  g_autofree char *second = g_build_filename (dir, "second.jsonl", NULL);
  g_autofree char *state = g_build_filename (dir, "state", NULL);
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *out1 = NULL, *out2 = NULL, *hang_id = NULL;
  g_autofree char *output1 = NULL, *output2 = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *hang, *killed;
  char *argv_hang[] = { self, (char *) "--child-hang", NULL };
  char *argv_again[] = { self, (char *) "--child-attach", NULL };
  g_auto(GStrv) env = g_get_environ ();
  g_autofree char *err2 = NULL;
  GPid pid;
  int status;

  env = g_environ_setenv (env, "LAGWATCH_STATE_DIR", state, TRUE);
  env = g_environ_setenv (env, "LAGWATCH_HANG_MS", "300", TRUE);
  output1 = g_strdup_printf ("json:%s", first);
  env = g_environ_setenv (env, "LAGWATCH_OUTPUT", output1, TRUE);
  g_assert_true (g_spawn_async (NULL, argv_hang, env, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  out1 = read_until (first, "\"event\":\"hang\"", HARNESS_DEADLINE_US);
  kill (pid, SIGKILL);
  waitpid (pid, &status, 0);
  g_spawn_close_pid (pid);
  g_assert_nonnull (out1);
  hang = find_event (parser, out1, "hang");
  g_assert_nonnull (hang);  /* a complete, parseable line: written at once, durable */
  hang_id = g_strdup (json_object_get_string_member (hang, "id"));

  output2 = g_strdup_printf ("json:%s,stderr", second);
  env = g_environ_setenv (env, "LAGWATCH_OUTPUT", output2, TRUE);
  g_assert_true (g_spawn_sync (NULL, argv_again, env, 0, NULL, NULL, NULL, &err2, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (err2, "the previous run"));
  g_assert_nonnull (strstr (err2, "was killed during a hang"));
  g_assert_nonnull (strstr (err2, "hang_until_killed"));
  g_assert_true (g_file_get_contents (second, &out2, NULL, NULL));
  killed = find_event (parser, out2, "hang-killed");
  g_assert_nonnull (killed);
  g_assert_cmpint (json_object_get_int_member (killed, "previous_pid"), ==, pid);
  g_assert_cmpstr (json_object_get_string_member (json_object_get_object_member (killed, "hang"), "id"),
                   ==, hang_id);

  /* Reported once: a third run finds nothing. */
  g_clear_pointer (&err2, g_free);
  g_assert_true (g_spawn_sync (NULL, argv_again, env, 0, NULL, NULL, NULL, &err2, &status, &error));
  g_assert_null (strstr (err2, "the previous run"));

  g_unlink (first);
  g_unlink (second);
  g_rmdir (state);
  g_rmdir (dir);
}

/* Identical lags: stderr shows the 1st, 2nd, 3rd and 5th; JSON and the
 * callback get all; the summary counts all. */
static void
test_backoff_and_summary (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      Harness h;

      lagwatch_config_set_output (config, "stderr", NULL);
      harness_init_with_config (&h, config);
      for (int i = 0; i < 6; i++)
        harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
      harness_wait_reports (&h, 6);
      g_assert_cmpuint (harness_n_reports (&h), ==, 6);
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lag of*lag of*the 2nd lag with this stack)*lag of*the 3rd lag*"
                             "lag of*the 5th lag with this stack; 1 like it not shown since the last one*");
  g_test_trap_assert_stderr_unmatched ("*the 4th lag*");
  g_test_trap_assert_stderr_unmatched ("*the 6th lag*");
  g_test_trap_assert_stderr ("*summary of this run's lags*      6  *spin_ms*");
}

static void
test_pause_resume_and_long_work (void)
{
  Harness h;

  harness_init (&h, 100);
  lagwatch_pause (h.watch);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (200));
  lagwatch_resume (h.watch);
  harness_run_lag (&h, (HarnessLagFunc) (void (*) (void)) lagwatch_begin_long_work, h.watch);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));  /* a new busy period: judged */
  harness_wait_reports (&h, 1);
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  harness_clear (&h);
}

static LAGGY void
declared_long (gpointer data)
{
  lagwatch_begin_long_work (data);
  spin_ms (GINT_TO_POINTER (300));
  lagwatch_end_long_work (data);
}

static void
test_declared_long_work (void)
{
  Harness h;

  harness_init (&h, 100);
  harness_run_lag (&h, declared_long, h.watch);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
  harness_wait_reports (&h, 1);
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  g_assert_true (harness_stack_has (harness_report (&h, 0), "spin_ms", NULL));
  g_assert_false (harness_stack_has (harness_report (&h, 0), "declared_long", NULL));
  harness_clear (&h);
}

/* While a debugger (here: a ptrace-seizing child) is attached, lags are
 * the debugger's doing: none is reported. */
static void
test_debugger_attached (void)
{
  if (g_test_subprocess ())
    {
      int go[2], done[2];
      pid_t tracer, self = getpid ();
      Harness h;
      char byte = 0;
      double wait_ms;

      g_assert_cmpint (pipe (go), ==, 0);
      g_assert_cmpint (pipe (done), ==, 0);
      prctl (PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
      tracer = fork ();
      if (tracer == 0)
        {
          /* Seize (no stop) every thread of the parent, say so, wait. */
          g_autofree char *tasks = g_strdup_printf ("/proc/%d/task", self);
          g_autoptr(GDir) dir = g_dir_open (tasks, 0, NULL);
          const char *entry;
          char result = 1;

          while ((entry = g_dir_read_name (dir)) != NULL)
            if (ptrace (PTRACE_SEIZE, atoi (entry), NULL, NULL) != 0)
              result = 0;
          if (write (go[1], &result, 1) != 1 || read (done[0], &byte, 1) < 0)
            _exit (1);
          _exit (0);
        }
      harness_init (&h, 100);
      g_assert_cmpint (read (go[0], &byte, 1), ==, 1);
      if (byte != 1)
        {
          g_test_skip ("ptrace is not allowed here");
          return;
        }
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (250));
      g_assert_cmpint (write (done[1], &byte, 1), ==, 1);
      waitpid (tracer, NULL, 0);
      wait_ms = thread_wait_ms (getpid ());  /* the loop runs on the main thread */
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
      wait_ms = wait_ms >= 0 ? thread_wait_ms (getpid ()) - wait_ms : 0;
      harness_wait_reports (&h, 1);
      g_assert_cmpuint (harness_n_reports (&h), ==, 1);
      /* The whole spin, timed from its own start: not the 250 ms one the
       * debugger saw. Its end is seen once the loop is back in poll, 15 ms
       * at most after the spin on an idle machine, later by as long as
       * the loop thread waited for a CPU on a loaded one. */
      g_assert_cmpfloat (lagwatch_report_get_duration_ms (harness_report (&h, 0)), >=, 150.0);
      g_assert_cmpfloat (lagwatch_report_get_duration_ms (harness_report (&h, 0)), <=, 165.0 + wait_ms);
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* SIGSTOP in the middle of a short callback, SIGCONT 600 ms later: the
 * callback's wall time is long, but the program did not lag. */
typedef struct
{
  int to_stopper;
} StopPlan;

static LAGGY void
spin_while_stopped (gpointer data)
{
  StopPlan *plan = data;
  char byte = 1;

  g_assert_cmpint (write (plan->to_stopper, &byte, 1), ==, 1);
  spin_ms (GINT_TO_POINTER (60));
  KEEP_FRAME ();
}

static void
test_sigstop (void)
{
  if (g_test_subprocess ())
    {
      int pipefd[2];
      pid_t self = getpid (), stopper;
      StopPlan plan;
      Harness h;

      g_assert_cmpint (pipe (pipefd), ==, 0);
      stopper = fork ();
      if (stopper == 0)
        {
          char byte;

          if (read (pipefd[0], &byte, 1) != 1)
            _exit (1);
          kill (self, SIGSTOP);
          g_usleep (600 * 1000);
          kill (self, SIGCONT);
          _exit (0);
        }
      plan.to_stopper = pipefd[1];
      harness_init (&h, 100);
      harness_run_lag (&h, spin_while_stopped, &plan);
      waitpid (stopper, NULL, 0);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
      harness_wait_reports (&h, 1);
      if (!harness_stack_has (harness_report (&h, 0), "spin_ms", NULL))
        {
          g_autofree char *text = lagwatch_report_to_text (harness_report (&h, 0));

          g_printerr ("unexpected report:\n%s", text);
        }
      g_assert_cmpuint (harness_n_reports (&h), ==, 1);
      g_assert_true (harness_stack_has (harness_report (&h, 0), "spin_ms", NULL));
      g_assert_false (harness_stack_has (harness_report (&h, 0), "spin_while_stopped", NULL));
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  if (argc == 2 && g_str_equal (argv[1], "--child-hang"))
    child_hang_forever ();
  if (argc == 2 && g_str_equal (argv[1], "--child-attach"))
    return child_attach_once ();

  g_test_init (&argc, &argv, NULL);
  harness_subprocess_dumpable ();
  g_test_add_func ("/diagnose/heaviest-stack", test_heaviest_stack);
  g_test_add_func ("/diagnose/cpu-and-state", test_cpu_and_state);
  g_test_add_func ("/diagnose/running-and-sleeping-halves", test_running_and_sleeping_halves);
  g_test_add_func ("/diagnose/source-name", test_source_name);
  g_test_add_func ("/diagnose/starved", test_starved);
  g_test_add_func ("/diagnose/sample-budget", test_sample_budget);
  g_test_add_func ("/diagnose/hang-all-threads", test_hang_all_threads);
  g_test_add_func ("/diagnose/read-until-whole-lines", test_read_until_whole_lines);
  g_test_add_func ("/diagnose/hang-survives-sigkill", test_hang_survives_sigkill);
  g_test_add_func ("/diagnose/backoff-and-summary", test_backoff_and_summary);
  g_test_add_func ("/diagnose/pause-resume", test_pause_resume_and_long_work);
  g_test_add_func ("/diagnose/declared-long-work", test_declared_long_work);
  g_test_add_func ("/diagnose/debugger-attached", test_debugger_attached);
  g_test_add_func ("/diagnose/sigstop", test_sigstop);
  return g_test_run ();
}
