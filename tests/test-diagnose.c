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
 * callback get all; the summary counts all. (On a loaded machine the
 * watcher may wake only after a lag ended: that lag is reported without a
 * stack, under another fingerprint. Lags are run until six had a stack.) */
static void
test_backoff_and_summary (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      guint with_stack = 0, run = 0;
      Harness h;

      lagwatch_config_set_output (config, "stderr", NULL);
      harness_init_with_config (&h, config);
      while (with_stack < 6)
        {
          g_assert_cmpuint (run, <, 30);
          harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
          harness_wait_reports (&h, ++run);
          with_stack += lagwatch_report_get_n_frames (harness_report (&h, run - 1)) > 0;
        }
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

/* The JSON record of @report, parsed. */
static JsonObject *
report_json (LagWatchReport *report, JsonParser *parser)
{
  g_autofree char *json = lagwatch_report_to_json (report);

  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  return json_node_get_object (json_parser_get_root (parser));
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
      double wait_ms;
      gint64 second_us;
      LagWatchReport *second;
      g_autofree char *second_text = NULL;
      guint n;
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
      wait_ms = thread_wait_ms (getpid ());  /* the loop runs on the main thread */
      harness_run_lag (&h, spin_while_stopped, &plan);
      wait_ms = wait_ms >= 0 ? thread_wait_ms (getpid ()) - wait_ms : 0;
      waitpid (stopper, NULL, 0);
      second_us = g_get_real_time ();
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
      /* The second lag's report, whatever came before it: the first to
       * begin after second_us (a record's start is the watcher's wall
       * clock less the lag's monotonic age, read in that order: never
       * early). Not found by its stack: on a starved machine the watcher
       * may wake only after the loop came back, and the record then has
       * neither stack nor GSource, only the reason. */
      for (n = 1;; n++)
        {
          harness_wait_reports (&h, n);
          if (lagwatch_report_get_start_time (harness_report (&h, n - 1)) >= second_us)
            break;
        }
      second = harness_report (&h, n - 1);
      second_text = lagwatch_report_to_text (second);
      g_test_message ("the second lag's record:\n%s", second_text);
      if (lagwatch_report_get_n_frames (second) > 0)
        g_assert_true (harness_stack_has (second, "spin_ms", NULL));
      else
        g_assert_nonnull (strstr (second_text, "(the loop came back before the stack could be taken)"));
      /* The stopped callback is no lag, unless the loop thread also waited
       * for a CPU longer than the threshold leaves over the 60 ms spun (a
       * loaded machine): then it is one of the machine's, and its record
       * names the stop. */
      for (guint i = 0; i + 1 < n; i++)
        {
          g_autoptr(JsonParser) parser = json_parser_new ();
          JsonObject *record = report_json (harness_report (&h, i), parser);
          g_autofree char *text = lagwatch_report_to_text (harness_report (&h, i));

          g_test_message ("the stopped callback reported, the loop thread having waited %.0f ms for a CPU:\n%s",
                          wait_ms, text);
          g_assert_cmpfloat (wait_ms, >, 100.0 - 60.0);
          g_assert_true (json_object_has_member (record, "stopped_ms"));
          g_assert_cmpfloat (json_object_get_double_member (record, "stopped_ms"), >=, 300.0);
        }
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}


/* ---- the process stood still, or its cgroup held it back, during a lag ---- */

/* A lag of 600 ms of CPU time; half-way, it tells the helper process at
 * @data (a StopPlan) to stop it. */
static LAGGY void
spin_told_half_way (gpointer data)
{
  StopPlan *plan = data;
  char byte = 1;

  spin_cpu_ms (GINT_TO_POINTER (300));
  g_assert_cmpint (write (plan->to_stopper, &byte, 1), ==, 1);
  spin_cpu_ms (GINT_TO_POINTER (300));
  KEEP_FRAME ();
}


/* The lag as reported when the process stood still for @stood_ms of it
 * (as the helper measured): reported, its whole duration, the stop named
 * and not blamed on the machine. */
static void
check_stopped_lag (LagWatchReport *report, double stood_ms)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autofree char *text = lagwatch_report_to_text (report);
  JsonObject *record = report_json (report, parser);
  double duration = lagwatch_report_get_duration_ms (report);
  double stopped = json_object_get_double_member (record, "stopped_ms");

  g_test_message ("lag %.0f ms, stood still %.0f ms (helper), stopped_ms %.0f, cpu_ms %.0f:\n%s",
                  duration, stood_ms, stopped, lagwatch_report_get_cpu_ms (report), text);
  g_assert_true (harness_stack_has (report, "spin_told_half_way", NULL));
  /* 600 ms of CPU time, and the stop. */
  g_assert_cmpfloat (duration, >=, 600.0 + stood_ms - 20);
  /* The stop as the helper timed it from the outside (signal delivery
   * and the watcher's own wake-up take a little off); never the spin. */
  g_assert_cmpfloat (stopped, >=, stood_ms - 60);
  g_assert_cmpfloat (stopped, <=, duration - 540);
  g_assert_nonnull (strstr (text, "stopped for"));
  /* Not blamed on the machine: what waiting for a CPU accounts for is
   * the rest (a loaded machine makes that much). */
  g_assert_cmpfloat (lagwatch_report_get_run_delay_ms (report), <=,
                     duration - stopped - lagwatch_report_get_cpu_ms (report) + 10);
}

/* The helper process: on a byte from @from_lag, runs @stop, sleeps
 * @stop_ms, runs @resume, and writes back how long the process stood
 * still (from the end of @stop to the start of @resume) as a double.
 * Never returns. */
typedef void (*StopFunc) (pid_t pid, const char *arg);

static void
stopper_run (int from_lag, int to_lag, pid_t pid, StopFunc stop, StopFunc resume, const char *arg,
             guint stop_ms)
{
  char byte;
  gint64 stopped_at;
  double stood_ms;

  if (read (from_lag, &byte, 1) != 1)
    _exit (1);
  stop (pid, arg);
  stopped_at = g_get_monotonic_time ();
  g_usleep (stop_ms * 1000);
  stood_ms = (g_get_monotonic_time () - stopped_at) / 1000.0;
  resume (pid, arg);
  if (write (to_lag, &stood_ms, sizeof stood_ms) != sizeof stood_ms)
    _exit (1);
  _exit (0);
}

static void
send_sigstop (pid_t pid, const char *arg)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) pid);

  kill (pid, SIGSTOP);
  /* Stopped once its state says so ("PID (comm) T ..."). */
  for (int i = 0; i < 5000; i++)
    {
      g_autofree char *stat = NULL;
      const char *paren;

      if (g_file_get_contents (path, &stat, NULL, NULL) && (paren = strrchr (stat, ')')) != NULL
          && paren[1] == ' ' && paren[2] == 'T')
        return;
      g_usleep (1000);
    }
}

static void
send_sigcont (pid_t pid, const char *arg)
{
  kill (pid, SIGCONT);
}

/* Where a cgroup file system of @fstype ("cgroup2", or "cgroup" with the
 * controller @controller) is mounted, or NULL. */
static char *
cgroup_mount (const char *fstype, const char *controller)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/self/mountinfo", &text, NULL, NULL))
    return NULL;
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) halves = g_strsplit (lines[i], " - ", 2);
      g_auto(GStrv) left = NULL, right = NULL;

      if (g_strv_length (halves) != 2)
        continue;
      left = g_strsplit (halves[0], " ", -1);
      right = g_strsplit (halves[1], " ", -1);
      if (g_strv_length (left) < 5 || g_strv_length (right) < 3 || !g_str_equal (right[0], fstype)
          || !g_str_equal (left[3], "/"))
        continue;
      if (controller != NULL)
        {
          g_auto(GStrv) options = g_strsplit (right[2], ",", -1);

          if (!g_strv_contains ((const char *const *) options, controller))
            continue;
        }
      return g_strdup (left[4]);
    }
  return NULL;
}

/* Writes @value to @dir/@file; FALSE (and a message) when it cannot. */
static gboolean
cgroup_write (const char *dir, const char *file, const char *value)
{
  g_autofree char *path = g_build_filename (dir, file, NULL);
  g_autoptr(GError) error = NULL;

  if (g_file_set_contents_full (path, value, -1, G_FILE_SET_CONTENTS_NONE, 0644, &error))
    return TRUE;
  g_test_message ("%s: %s", path, error->message);
  return FALSE;
}

/* A new child cgroup under @mount for this test, or NULL (and a reason in
 * *@why) when none can be made: no such mount, not root, read-only. */
static char *
cgroup_make (const char *mount, char **why)
{
  char *dir;

  if (mount == NULL)
    {
      *why = g_strdup ("no such cgroup file system mounted");
      return NULL;
    }
  dir = g_strdup_printf ("%s/lagwatch-test-%d", mount, (int) getpid ());
  if (g_mkdir (dir, 0755) != 0)
    {
      *why = g_strdup_printf ("cannot create a cgroup (%s): %s", dir, g_strerror (errno));
      g_free (dir);
      return NULL;
    }
  return dir;
}

/* Removes the test's cgroup @dir once the subprocess that used it has
 * exited (its last task leaves a moment after). */
static void
cgroup_remove (const char *dir)
{
  for (int i = 0; i < 1000 && g_rmdir (dir) != 0 && errno == EBUSY; i++)
    g_usleep (1000);
}

/* Runs the lag spin_told_half_way() in this process, with a helper process
 * that stops it half-way by @stop and resumes it by @resume; checks the
 * report. With @cgroup, this process moves into that cgroup once the
 * helper is forked (the helper stays outside). */
static void
run_stopped_lag (StopFunc stop, StopFunc resume, const char *cgroup)
{
  int to_stopper[2], from_stopper[2];
  pid_t self = getpid (), stopper;
  double stood_ms = 0;
  StopPlan plan;
  Harness h;

  g_assert_cmpint (pipe (to_stopper), ==, 0);
  g_assert_cmpint (pipe (from_stopper), ==, 0);
  stopper = fork ();
  if (stopper == 0)
    stopper_run (to_stopper[0], from_stopper[1], self, stop, resume, cgroup, 1000);
  if (cgroup != NULL)
    {
      g_autofree char *pid = g_strdup_printf ("%d", (int) self);

      g_assert_true (cgroup_write (cgroup, "cgroup.procs", pid));
    }
  plan.to_stopper = to_stopper[1];
  harness_init (&h, 100);
  harness_run_lag (&h, spin_told_half_way, &plan);
  g_assert_cmpint (read (from_stopper[0], &stood_ms, sizeof stood_ms), ==, sizeof stood_ms);
  waitpid (stopper, NULL, 0);
  harness_wait_reports (&h, 1);
  g_assert_cmpuint (harness_n_reports (&h), ==, 1);
  check_stopped_lag (harness_report (&h, 0), stood_ms);
  harness_clear (&h);
}

/* SIGSTOP for a second in the middle of a 600 ms computing lag, then
 * SIGCONT: the lag is reported, its stop named. */
static void
test_sigstop_in_lag (void)
{
  if (g_test_subprocess ())
    {
      run_stopped_lag (send_sigstop, send_sigcont, NULL);
      return;
    }
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

static void
freeze_cgroup (pid_t pid, const char *dir)
{
  g_autofree char *events = g_build_filename (dir, "cgroup.events", NULL);

  cgroup_write (dir, "cgroup.freeze", "1");
  /* Frozen once its events file says so. */
  for (int i = 0; i < 5000; i++)
    {
      g_autofree char *text = NULL;

      if (g_file_get_contents (events, &text, NULL, NULL) && strstr (text, "frozen 1") != NULL)
        return;
      g_usleep (1000);
    }
}

static void
thaw_cgroup (pid_t pid, const char *dir)
{
  cgroup_write (dir, "cgroup.freeze", "0");
}

/* The cgroup v2 freezer freezes the process for a second in the middle of
 * a 600 ms computing lag: the lag is reported, its stop named. */
static void
test_frozen_cgroup_in_lag (void)
{
  g_autofree char *mount = NULL, *dir = NULL, *why = NULL;

  if (g_test_subprocess ())
    {
      run_stopped_lag (freeze_cgroup, thaw_cgroup, g_getenv ("LW_TEST_CGROUP"));
      return;
    }
  mount = cgroup_mount ("cgroup2", NULL);
  dir = cgroup_make (mount, &why);
  if (dir == NULL)
    {
      g_test_skip (why);
      return;
    }
  g_setenv ("LW_TEST_CGROUP", dir, TRUE);
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  cgroup_remove (dir);
  g_test_trap_assert_passed ();
}


/* A cgroup with a CPU quota of 10% (10 ms per 100 ms period), made for
 * this test: cgroup v2 (cpu.max) where the cpu controller is enabled for
 * the root's children, else a v1 cpu hierarchy (cpu.cfs_quota_us); NULL,
 * and a reason in *@why, when neither can be made. */
static char *
cgroup_make_quota (char **why)
{
  g_autofree char *v2 = cgroup_mount ("cgroup2", NULL), *v1 = cgroup_mount ("cgroup", "cpu");
  g_autofree char *subtree_path = v2 ? g_build_filename (v2, "cgroup.subtree_control", NULL) : NULL;
  g_autofree char *subtree = NULL, *why_v2 = NULL;
  char *dir;

  if (subtree_path != NULL && g_file_get_contents (subtree_path, &subtree, NULL, NULL)
      && g_regex_match_simple ("(^| )cpu( |\n|$)", subtree, 0, 0))
    {
      if ((dir = cgroup_make (v2, &why_v2)) != NULL && cgroup_write (dir, "cpu.max", "10000 100000"))
        return dir;
      if (dir != NULL)
        cgroup_remove (dir);
    }
  else
    why_v2 = g_strdup ("cgroup v2 has no cpu controller for its children");
  if ((dir = cgroup_make (v1, why)) != NULL && cgroup_write (dir, "cpu.cfs_period_us", "100000")
      && cgroup_write (dir, "cpu.cfs_quota_us", "10000"))
    return dir;
  if (dir != NULL)
    {
      cgroup_remove (dir);
      *why = g_strdup ("cannot set a v1 cgroup's quota");
    }
  g_autofree char *v1_why = *why;
  *why = g_strdup_printf ("%s; v1 cpu: %s", why_v2, v1_why);
  return NULL;
}

/* A computing lag in a cgroup whose CPU quota (10%) runs out: its time is
 * named as the quota's (throttled), not the machine's. */
static void
test_cpu_quota_in_lag (void)
{
  g_autofree char *dir = NULL, *why = NULL;

  if (g_test_subprocess ())
    {
      g_autofree char *pid = g_strdup_printf ("%d", (int) getpid ());
      g_autoptr(JsonParser) parser = json_parser_new ();
      LagWatchReport *report;
      g_autofree char *text = NULL;
      JsonObject *record;
      double duration, throttled;
      Harness h;

      g_assert_true (cgroup_write (g_getenv ("LW_TEST_CGROUP"), "cgroup.procs", pid));
      harness_init (&h, 100);
      harness_run_lag (&h, spin_cpu_ms, GINT_TO_POINTER (60));
      harness_wait_reports (&h, 1);
      report = harness_report (&h, 0);
      text = lagwatch_report_to_text (report);
      record = report_json (report, parser);
      duration = lagwatch_report_get_duration_ms (report);
      throttled = json_object_get_double_member (record, "throttled_ms");
      g_test_message ("lag %.0f ms, cpu %.0f ms, throttled_ms %.0f, run_delay_ms %.0f, stopped_ms %.0f:\n%s",
                      duration, lagwatch_report_get_cpu_ms (report), throttled,
                      lagwatch_report_get_run_delay_ms (report),
                      json_object_get_double_member (record, "stopped_ms"), text);
      /* 60 ms of CPU at 10 ms per 100 ms: some 500 ms throttled. The
       * kernel counts a part of it (per CPU, from the throttle to the
       * unthrottle): a quarter of the lag at least. */
      g_assert_cmpfloat (duration, >=, 400.0);
      g_assert_cmpfloat (throttled, >=, duration / 4);
      g_assert_nonnull (strstr (text, "throttled by its cgroup for"));
      g_assert_cmpfloat (json_object_get_double_member (record, "stopped_ms"), <, duration / 4);
      harness_clear (&h);
      return;
    }
  dir = cgroup_make_quota (&why);
  if (dir == NULL)
    {
      g_test_skip (why);
      return;
    }
  g_setenv ("LW_TEST_CGROUP", dir, TRUE);
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  cgroup_remove (dir);
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
  g_test_add_func ("/diagnose/sigstop-in-lag", test_sigstop_in_lag);
  g_test_add_func ("/diagnose/frozen-cgroup-in-lag", test_frozen_cgroup_in_lag);
  g_test_add_func ("/diagnose/cpu-quota-in-lag", test_cpu_quota_in_lag);
  return g_test_run ();
}
