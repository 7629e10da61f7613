/* test-stress.c: everything a host program does, at once, for a bounded time
 *
 * While a loop thread runs a watched context through a fixed schedule of
 * lags (busy, sleeping in usleep and in poll, hangs past the hang threshold
 * so the all-threads snapshot runs, and dlopen() of a library whose
 * constructor lags), other threads concurrently: attach a second watch to
 * a second context, lag on it and detach, over and over; fork() children
 * that do a little and exit(); dlopen() and dlclose() the lagging library;
 * and spin with every signal blocked (as GLib's own worker threads do).
 *
 * Then every lag the test caused long enough must have been reported
 * exactly once (callback reports matched to the caused lags by thread and
 * time), with a stack naming the lagging function (or, if it was taken
 * after that function returned while the thread stayed busy, the thread's
 * own function) or a stated reason (stack_error); every report of the first watch is in its JSON Lines file
 * exactly once, and each hang left a "hang" record with the other threads'
 * stacks; every child exited in time with status 0.
 *
 * The whole run happens in a subprocess with a deadline. Its findings go to
 * a file the test prints (g_test_message), whether it passed or not.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lag-harness.h"
#include "report-json.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#define THRESHOLD_MS      100
#define HANG_MS           500
/* A caused lag measured at least this long (around the lagging call, so
 * the busy period was longer) must be reported: well past the threshold. */
#define MUST_REPORT_MS    (THRESHOLD_MS + 60)
/* Between two lags the loop polls this long: each report overlaps one. */
#define GAP_MS            60
#define ROUNDS            4
#define CHILD_DEADLINE_US (10 * G_USEC_PER_SEC)
#define RUN_DEADLINE_US   (150 * G_USEC_PER_SEC)

/* A lag the test caused, on the watched loop or the second watch's. */
typedef struct
{
  const char *scenario;
  const char *culprit;   /* the function that must be in its stack */
  const char *thread_func;  /* the function of the thread that caused it */
  pid_t       tid;
  gint64      start_us;  /* wall clock, around the lagging call */
  gint64      end_us;
} CausedLag;

typedef struct
{
  LagWatchReport *report;
  const char     *watch;  /* "loop" or "second" */
} Received;

typedef struct
{
  GMutex          lock;
  GArray         *caused;    /* of CausedLag, guarded by lock */
  GArray         *received;  /* of Received, guarded by lock */
  GPtrArray      *problems;  /* of char *, guarded by lock */
  GPtrArray      *notes;     /* of char *, guarded by lock */
  GArray         *oversleeps;  /* of gint64: when lagwatch dropped a lag as "stopped", guarded by lock */
  _Atomic gboolean stop;
  const char     *slow_library;
  char           *dir;

  /* Counts, for the notes. */
  _Atomic guint   attach_cycles;
  _Atomic guint   forks;
  _Atomic guint   noisy_children;  /* children that wrote to stderr */
  _Atomic guint   dl_cycles;
  _Atomic guint   blocked_spins;
} Stress;

/* Any thread. Adds the formatted text to @list, one of @s's. */
static void G_GNUC_PRINTF (3, 0)
stress_add (Stress *s, GPtrArray *list, const char *format, va_list args)
{
  char *text = g_strdup_vprintf (format, args);

  g_mutex_lock (&s->lock);
  g_ptr_array_add (list, text);
  g_mutex_unlock (&s->lock);
}

/* Any thread. */
static void G_GNUC_PRINTF (2, 3)
stress_problem (Stress *s, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  stress_add (s, s->problems, format, args);
  va_end (args);
}

/* Any thread. */
static void G_GNUC_PRINTF (2, 3)
stress_note (Stress *s, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  stress_add (s, s->notes, format, args);
  va_end (args);
}

/* Any thread. lagwatch says why it drops a lag in a debug message: kept
 * as a note (those about lags and signals, and a watcher that ran late),
 * so a lag found missing can be told apart. */
static void
stress_on_log (const char *domain, GLogLevelFlags level, const char *message, gpointer user_data)
{
  Stress *s = user_data;

  if (strstr (message, "woke far too late") != NULL)
    {
      gint64 now = g_get_real_time ();

      g_mutex_lock (&s->lock);
      g_array_append_val (s->oversleeps, now);
      g_mutex_unlock (&s->lock);
    }
  if (strstr (message, "lag") != NULL || strstr (message, "drop") != NULL || strstr (message, "signal") != NULL
      || strstr (message, "late") != NULL || strstr (message, "has not run") != NULL)
    stress_note (s, "lagwatch: %s", message);
}

/* TRUE when lagwatch said it dropped a lag because its watcher woke far
 * too late, while @lag went on (or just after). */
static gboolean
stress_dropped_as_oversleep (Stress *s, const CausedLag *lag)
{
  for (guint i = 0; i < s->oversleeps->len; i++)
    {
      gint64 at = g_array_index (s->oversleeps, gint64, i);

      if (at >= lag->start_us && at <= lag->end_us + G_USEC_PER_SEC)
        return TRUE;
    }
  return FALSE;
}

/* ---- the lags ---- */

/* The lags: each runs on the thread that runs its context, in a dispatch,
 * and stays a frame of its own in the stack. */
static LAGGY void
stress_busy (gpointer data)
{
  spin_ms (data);
  __asm__ volatile ("" ::: "memory");  /* not a tail call: keep this frame */
}

/* Sleeps to the end even if a signal cuts a sleep short (the detection
 * signal's documented window): the lag is the length the test asked for. */
static LAGGY void
stress_usleep (gpointer data)
{
  gint64 end = g_get_monotonic_time () + GPOINTER_TO_INT (data) * 1000;
  gint64 left;

  while ((left = end - g_get_monotonic_time ()) > 0)
    usleep ((useconds_t) left);
  __asm__ volatile ("" ::: "memory");
}

static LAGGY void
stress_poll (gpointer data)
{
  gint64 end = g_get_monotonic_time () + GPOINTER_TO_INT (data) * 1000;
  gint64 left;

  while ((left = end - g_get_monotonic_time ()) > 0)
    poll (NULL, 0, (int) ((left + 999) / 1000));
  __asm__ volatile ("" ::: "memory");
}

static LAGGY void
stress_hang (gpointer data)
{
  spin_ms (data);
  __asm__ volatile ("" ::: "memory");
}

/* The run in progress, for what gets no user data of its own: the report
 * callbacks (whose user data names the watch) and stress_dlopen. */
static Stress *stress_current;

/* glibc does not take its exit-handler lock across fork(), and dlclose()
 * holds it (__cxa_finalize): a child forked meanwhile waits for it forever
 * in exit() (seen: __lll_lock_wait_private in __run_exit_handlers, 2 runs
 * in 15). Not lagwatch's doing: forks are kept apart from dlopen() and
 * dlclose() here, as a program that forks without exec must. */
static GMutex stress_dl_fork_lock;

static LAGGY void
stress_dlopen (gpointer data)
{
  void *library;

  g_mutex_lock (&stress_dl_fork_lock);
  library = dlopen (data, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL)
    stress_problem (stress_current, "dlopen on the loop: %s", dlerror ());
  else
    dlclose (library);
  g_mutex_unlock (&stress_dl_fork_lock);
  __asm__ volatile ("" ::: "memory");
}

static LAGGY void
stress_second_busy (gpointer data)
{
  spin_ms (data);
  __asm__ volatile ("" ::: "memory");
}

typedef struct
{
  HarnessLagFunc func;
  gpointer       data;
  CausedLag      lag;
  gboolean       done;
} LagRun;

/* The thread that runs the context, in a dispatch: the lag, timed. */
static gboolean
run_lag_cb (gpointer user_data)
{
  LagRun *run = user_data;

  run->lag.start_us = g_get_real_time ();
  run->func (run->data);
  run->lag.end_us = g_get_real_time ();
  run->done = TRUE;
  return G_SOURCE_REMOVE;
}

/* The thread that runs the context: the gap after a lag is over. */
static gboolean
set_flag_cb (gpointer user_data)
{
  *(gboolean *) user_data = TRUE;
  return G_SOURCE_REMOVE;
}

/* The thread that runs @context. Runs @func in a dispatch of @context,
 * records it as a caused lag, then polls for GAP_MS. */
static void
stress_cause_lag (Stress *s, GMainContext *context, const char *thread_func, const char *scenario,
                  const char *culprit, HarnessLagFunc func, gpointer data)
{
  LagRun run = { func, data, { scenario, culprit, thread_func, gettid (), 0, 0 }, FALSE };
  GSource *source = g_idle_source_new ();
  gboolean gap_over = FALSE;

  g_source_set_name (source, scenario);
  g_source_set_callback (source, run_lag_cb, &run, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
  while (!run.done)
    g_main_context_iteration (context, TRUE);
  g_mutex_lock (&s->lock);
  g_array_append_val (s->caused, run.lag);
  g_mutex_unlock (&s->lock);

  source = g_timeout_source_new (GAP_MS);
  g_source_set_callback (source, set_flag_cb, &gap_over, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
  while (!gap_over)
    g_main_context_iteration (context, TRUE);
}

/* Reporting threads of both watches. */
static void
stress_on_report (LagWatchReport *report, gpointer user_data)
{
  Stress *s = stress_current;
  Received received = { lagwatch_report_ref (report), user_data };

  g_mutex_lock (&s->lock);
  g_array_append_val (s->received, received);
  g_mutex_unlock (&s->lock);
}

/* ---- the threads ---- */

typedef struct
{
  Stress       *s;
  GMainContext *context;
} LoopThread;

/* One round of the watched loop's schedule. */
static const struct
{
  const char    *scenario;
  const char    *culprit;
  HarnessLagFunc func;
  int            ms;  /* its length; the dlopen lag is the constructor's */
} loop_schedule[] = {
  { "busy",   "stress_busy",   stress_busy,   150 },
  { "usleep", "stress_usleep", stress_usleep, 200 },
  { "poll",   "stress_poll",   stress_poll,   180 },
  { "hang",   "stress_hang",   stress_hang,   HANG_MS + 300 },
  { "dlopen", "stress_dlopen", stress_dlopen, 0 },
  { "busy",   "stress_busy",   stress_busy,   250 },
};

/* The watched loop's thread: the schedule, ROUNDS times, then the others
 * stop. */
static gpointer
loop_thread (gpointer data)
{
  LoopThread *loop = data;
  Stress *s = loop->s;

  g_main_context_push_thread_default (loop->context);
  for (guint round = 0; round < ROUNDS; round++)
    for (guint i = 0; i < G_N_ELEMENTS (loop_schedule); i++)
      stress_cause_lag (s, loop->context, "loop_thread", loop_schedule[i].scenario, loop_schedule[i].culprit,
                        loop_schedule[i].func,
                        loop_schedule[i].func == stress_dlopen ? (gpointer) s->slow_library
                                                               : GINT_TO_POINTER (loop_schedule[i].ms));
  g_main_context_pop_thread_default (loop->context);
  atomic_store (&s->stop, TRUE);
  return NULL;
}

/* A second watch, attached and detached over and over on a context of its
 * own: a lag in each cycle, and cycles without one. */
static gpointer
second_watch_thread (gpointer data)
{
  Stress *s = data;
  GMainContext *context = g_main_context_new ();
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *state = g_build_filename (s->dir, "state", NULL);

  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  g_assert_true (lagwatch_config_set_state_dir (config, state));
  g_main_context_push_thread_default (context);
  while (!atomic_load (&s->stop))
    {
      LagWatch *watch = lagwatch_attach_with_config (context, config);

      if (watch == NULL)
        {
          stress_problem (s, "second watch: attach failed");
          break;
        }
      lagwatch_set_report_func (watch, stress_on_report, (gpointer) "second", NULL);
      stress_cause_lag (s, context, "second_watch_thread", "second-watch", "stress_second_busy", stress_second_busy,
                        GINT_TO_POINTER (150));
      lagwatch_detach (watch);
      for (guint i = 0; i < 3 && watch != NULL; i++)
        {
          watch = lagwatch_attach_with_config (context, config);
          if (watch == NULL)
            stress_problem (s, "second watch: attach failed");
          else
            {
              g_main_context_iteration (context, FALSE);
              lagwatch_detach (watch);
            }
        }
      atomic_fetch_add (&s->attach_cycles, 1);
    }
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);
  return NULL;
}

/* Where the stuck process @pid is: its stack by eu-stack (elfutils) when
 * installed, else the kernel's wait point. */
static char *
stress_describe_stuck (pid_t pid)
{
  g_autofree char *eu_stack = g_find_program_in_path ("eu-stack");
  g_autofree char *wchan_path = g_strdup_printf ("/proc/%d/wchan", (int) pid);
  g_autofree char *wchan = NULL;
  char *out = NULL;

  if (eu_stack != NULL)
    {
      g_autofree char *pid_text = g_strdup_printf ("%d", (int) pid);
      const char *argv[] = { eu_stack, "-p", pid_text, NULL };

      if (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, NULL,
                        NULL) && out != NULL && out[0] != '\0')
        {
          g_strdelimit (out, "\n", '|');
          return out;
        }
      g_free (out);
    }
  g_file_get_contents (wchan_path, &wchan, NULL, NULL);
  return g_strdup_printf ("waiting in the kernel at %s", wchan != NULL ? wchan : "(unknown)");
}

/* Children that do a little and exit(); each must end in time, with
 * status 0, and write nothing (the parent's summary is not theirs). */
static gpointer
fork_thread (gpointer data)
{
  Stress *s = data;
  g_autofree char *err_path = g_build_filename (s->dir, "child-stderr", NULL);

  while (!atomic_load (&s->stop))
    {
      int err_fd = open (err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      gint64 deadline;
      pid_t pid, done;
      int status = 0;
      struct stat st;

      g_assert_cmpint (err_fd, >=, 0);
      g_mutex_lock (&stress_dl_fork_lock);
      pid = fork ();
      if (pid != 0)
        g_mutex_unlock (&stress_dl_fork_lock);
      if (pid == 0)
        {
          /* The child of a threaded process: async-signal-safe calls only
           * before exit(), whose handlers (lagwatch's among them) are what
           * is tested. A malloc() here could wait for an allocator lock
           * another thread of the parent held (ASan's allocator does). */
          dup2 (err_fd, STDERR_FILENO);
          exit (0);
        }
      g_assert_cmpint (pid, >, 0);
      deadline = g_get_monotonic_time () + CHILD_DEADLINE_US;
      while ((done = waitpid (pid, &status, WNOHANG)) == 0 && g_get_monotonic_time () < deadline)
        g_usleep (1000);
      if (done == 0)
        {
          g_autofree char *stack = stress_describe_stuck (pid);

          kill (pid, SIGKILL);
          waitpid (pid, &status, 0);
          stress_problem (s, "fork: child %d did not exit within %d s: %s", (int) pid,
                                (int) (CHILD_DEADLINE_US / G_USEC_PER_SEC), stack);
        }
      else if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
        stress_problem (s, "fork: child %d ended with wait status 0x%x", (int) pid, status);
      else if (fstat (err_fd, &st) == 0 && st.st_size > 0)
        {
          if (atomic_fetch_add (&s->noisy_children, 1) == 0)
            {
              g_autofree char *text = NULL;

              g_file_get_contents (err_path, &text, NULL, NULL);
              g_strdelimit (text, "\n", '|');
              stress_note (s, "fork: child %d wrote to stderr: %.160s", (int) pid, text != NULL ? text : "");
            }
        }
      close (err_fd);
      atomic_fetch_add (&s->forks, 1);
      g_usleep (20 * 1000);  /* paces the forks, other threads get their turn */
    }
  return NULL;
}

/* dlopen()/dlclose() of the lagging library, concurrently with the
 * watcher's unwinding and symbolizing. */
static gpointer
dl_thread (gpointer data)
{
  Stress *s = data;

  while (!atomic_load (&s->stop))
    {
      void *library;

      g_mutex_lock (&stress_dl_fork_lock);
      library = dlopen (s->slow_library, RTLD_NOW | RTLD_LOCAL);
      if (library != NULL)
        dlclose (library);
      g_mutex_unlock (&stress_dl_fork_lock);
      if (library == NULL)
        {
          stress_problem (s, "dlopen: %s", dlerror ());
          break;
        }
      atomic_fetch_add (&s->dl_cycles, 1);
      g_usleep (50 * 1000);
    }
  return NULL;
}

/* Runs with every signal blocked (as GLib's workers do), mostly on CPU: a
 * hang's all-threads snapshot finds it running. Checks at the end that no
 * real-time signal was left pending on it. */
static gpointer
blocked_thread (gpointer data)
{
  Stress *s = data;
  sigset_t all, pending;

  sigfillset (&all);
  pthread_sigmask (SIG_BLOCK, &all, NULL);
  while (!atomic_load (&s->stop))
    {
      spin_ms (GINT_TO_POINTER (40));
      g_usleep (5 * 1000);
      atomic_fetch_add (&s->blocked_spins, 1);
    }
  sigemptyset (&pending);
  sigpending (&pending);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
    if (sigismember (&pending, sig))
      stress_problem (s, "blocked thread: signal %d (SIGRTMIN+%d) left pending on it",
                            sig, sig - SIGRTMIN);
  return NULL;
}

/* ---- the checks ---- */

static gboolean
stress_stack_names (JsonObject *record, const char *symbol)
{
  JsonArray *stacks = json_object_get_array_member (record, "stacks");

  if (json_frames_have (json_object_get_array_member (record, "stack"), symbol))
    return TRUE;
  for (guint i = 0; i < json_array_get_length (stacks); i++)
    if (json_frames_have (json_object_get_array_member (json_array_get_object_element (stacks, i), "stack"),
                          symbol))
      return TRUE;
  return FALSE;
}

/* The frames of @report, innermost first, by name (or module+offset). */
static char *
stress_frames_text (LagWatchReport *report)
{
  GString *out = g_string_new (NULL);

  for (guint i = 0; i < lagwatch_report_get_n_frames (report); i++)
    {
      const char *symbol = NULL, *module = NULL;
      guint64 offset = 0;

      lagwatch_report_get_frame (report, i, &module, NULL, &offset, &symbol, NULL);
      if (symbol != NULL)
        g_string_append_printf (out, "%s%s", i ? " < " : "", symbol);
      else
        g_string_append_printf (out, "%s%s+0x%" G_GINT64_MODIFIER "x", i ? " < " : "",
                                module != NULL ? module : "?", offset);
    }
  return g_string_free (out, FALSE);
}

/* Each caused lag: reported at most once, and once if it was long enough;
 * each report: a stack naming the culprit, or a stated reason. */
static void
stress_check_reports (Stress *s)
{
  g_autoptr(GHashTable) ids = g_hash_table_new (g_str_hash, g_str_equal);
  g_autofree guint *matched = g_new0 (guint, s->received->len);
  guint with_stack = 0, with_reason = 0, required = 0;

  for (guint r = 0; r < s->received->len; r++)
    {
      const char *id = lagwatch_report_get_id (g_array_index (s->received, Received, r).report);

      if (!g_hash_table_add (ids, (gpointer) id))
        stress_problem (s, "report id %s given twice", id);
    }

  for (guint c = 0; c < s->caused->len; c++)
    {
      CausedLag *lag = &g_array_index (s->caused, CausedLag, c);
      double measured_ms = (double) (lag->end_us - lag->start_us) / 1000.0;
      guint n = 0, which = 0;

      for (guint r = 0; r < s->received->len; r++)
        {
          LagWatchReport *report = g_array_index (s->received, Received, r).report;
          gint64 start = lagwatch_report_get_start_time (report);
          gint64 end = start + (gint64) (lagwatch_report_get_duration_ms (report) * 1000.0);

          if (lagwatch_report_get_thread_id (report) == lag->tid && start < lag->end_us && end > lag->start_us)
            {
              n++;
              which = r;
              matched[r]++;
            }
        }
      if (measured_ms >= MUST_REPORT_MS)
        required++;
      if (n > 1)
        stress_problem (s, "lag %u (%s, %.0f ms) reported %u times", c, lag->scenario, measured_ms, n);
      else if (n == 0 && measured_ms >= MUST_REPORT_MS)
        {
          if (stress_dropped_as_oversleep (s, lag))
            stress_problem (s, "lag %u (%s, %.0f ms) not reported: dropped as 'the process "
                                  "was stopped' because the watcher woke over 250 ms late (a loaded "
                                  "machine, not a stop)", c, lag->scenario, measured_ms);
          else
            stress_problem (s, "lag %u (%s, %.0f ms) not reported", c, lag->scenario, measured_ms);
        }
      else if (n == 1)
        {
          LagWatchReport *report = g_array_index (s->received, Received, which).report;
          g_autofree char *json = lagwatch_report_to_json (report);
          g_autoptr(JsonParser) parser = json_parser_new ();
          JsonObject *record;

          g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
          record = json_node_get_object (json_parser_get_root (parser));
          if (lagwatch_report_get_n_frames (report) > 0)
            {
              with_stack++;
              gint64 after_ms = (lagwatch_report_get_start_time (report)
                                 + (gint64) (lagwatch_report_get_duration_ms (report) * 1000.0) - lag->end_us) / 1000;

              /* The busy period can go on after the lagging call returns
               * (GLib frees the dispatched source; malloc's locks are held
               * while another thread forks): a stack taken then names the
               * thread's own function, not the culprit. */
              if (!stress_stack_names (record, lag->culprit) && after_ms >= 10
                  && stress_stack_names (record, lag->thread_func))
                stress_note (s, "lag %u (%s, report %s): the busy period went on %" G_GINT64_FORMAT " ms after %s "
                             "returned, and the stack was taken then", c, lag->scenario,
                             lagwatch_report_get_id (report), after_ms, lag->culprit);
              else if (!stress_stack_names (record, lag->culprit)
                       && json_object_get_boolean_member (record, "stack_truncated"))
                {
                  g_autofree char *frames = stress_frames_text (report);

                  /* Stated: the walk stopped early (e.g. from /proc, pc
                   * and sp only, in the vDSO's fallback system call). */
                  stress_note (s, "lag %u (%s, report %s): a stack cut short, and said so (stack_truncated): %s",
                               c, lag->scenario, lagwatch_report_get_id (report), frames);
                }
              else if (!stress_stack_names (record, lag->culprit))
                {
                  g_autofree char *frames = stress_frames_text (report);

                  stress_problem (s, "lag %u (%s, report %s, %.0f ms, %u samples, by %s, stack_error %s): the "
                                  "stack does not name %s: %s", c, lag->scenario, lagwatch_report_get_id (report),
                                  lagwatch_report_get_duration_ms (report), lagwatch_report_get_n_samples (report),
                                  json_object_get_string_member_with_default (record, "stack_method", "?"),
                                  json_object_get_null_member (record, "stack_error")
                                  ? "null" : json_object_get_string_member (record, "stack_error"),
                                  lag->culprit, frames);
                }
            }
          else if (!json_object_get_null_member (record, "stack_error"))
            {
              const char *reason = json_object_get_string_member (record, "stack_error");

              with_reason++;
              /* The loop's thread takes the signal: a signal still queued
               * there is one sent to another thread (the blocked one) and
               * never taken back. */
              if (g_str_equal (reason, "an earlier signal is still queued"))
                stress_problem (s, "lag %u (%s, report %s): no stack: %s", c, lag->scenario,
                                      lagwatch_report_get_id (report), reason);
              else
                stress_note (s, "lag %u (%s, report %s): no stack: %s", c, lag->scenario,
                             lagwatch_report_get_id (report), reason);
            }
          else if (lagwatch_report_get_n_samples (report) == 0)
            stress_problem (s, "lag %u (%s, report %s, %.0f ms, complete %d): no sample was "
                                  "taken, and neither a stack nor a stated reason", c, lag->scenario,
                                  lagwatch_report_get_id (report), lagwatch_report_get_duration_ms (report),
                                  lagwatch_report_get_complete (report));
          else
            stress_problem (s, "lag %u (%s, report %s): neither a stack nor a stated reason", c,
                            lag->scenario, lagwatch_report_get_id (report));
        }
    }
  for (guint r = 0; r < s->received->len; r++)
    if (matched[r] == 0)
      {
        LagWatchReport *report = g_array_index (s->received, Received, r).report;

        /* A real stall the test did not cause (the machine is loaded): a
         * note, not a fault. */
        stress_note (s, "report %s (%s watch, %.0f ms) matches no caused lag", lagwatch_report_get_id (report),
                     g_array_index (s->received, Received, r).watch, lagwatch_report_get_duration_ms (report));
      }
  stress_note (s, "%u lags caused (%u long enough to be required), %u reports: %u with a stack, %u with a "
               "stated reason", s->caused->len, required, s->received->len, with_stack, with_reason);
}

/* The first watch's JSON Lines: each of its callback reports once as a
 * "lag" record; each "hang" record has the other threads' stacks and is
 * followed by its lag. */
static void
stress_check_json (Stress *s, const char *path)
{
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(GHashTable) lags = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) hangs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  guint loop_reports = 0;

  if (!g_file_get_contents (path, &contents, NULL, NULL))
    {
      stress_problem (s, "json: %s cannot be read", path);
      return;
    }
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL && lines[i][0] != '\0'; i++)
    {
      g_autoptr(JsonParser) parser = json_parser_new ();
      JsonObject *record;
      const char *event, *id;

      if (!json_parser_load_from_data (parser, lines[i], -1, NULL))
        {
          stress_problem (s, "json: line %u does not parse: %.120s", i + 1, lines[i]);
          continue;
        }
      record = json_node_get_object (json_parser_get_root (parser));
      event = json_object_get_string_member_with_default (record, "event", "");
      id = json_object_get_string_member_with_default (record, "id", "");
      if (g_str_equal (event, "lag"))
        {
          if (!g_hash_table_add (lags, g_strdup (id)))
            stress_problem (s, "json: lag %s written twice", id);
        }
      else if (g_str_equal (event, "hang"))
        {
          if (!json_object_has_member (record, "threads")
              || json_array_get_length (json_object_get_array_member (record, "threads")) < 2)
            stress_problem (s, "json: hang %s has no all-threads snapshot", id);
          g_hash_table_add (hangs, g_strdup (id));
        }
    }
  for (guint r = 0; r < s->received->len; r++)
    {
      Received *received = &g_array_index (s->received, Received, r);

      if (!g_str_equal (received->watch, "loop"))
        continue;
      loop_reports++;
      if (!g_hash_table_contains (lags, lagwatch_report_get_id (received->report)))
        stress_problem (s, "json: lag %s (callback) is not in the file", lagwatch_report_get_id (received->report));
    }
  if (g_hash_table_size (lags) != loop_reports)
    stress_problem (s, "json: %u lag records for %u callback reports", g_hash_table_size (lags), loop_reports);
  {
    GHashTableIter iter;
    gpointer id;

    g_hash_table_iter_init (&iter, hangs);
    while (g_hash_table_iter_next (&iter, &id, NULL))
      if (!g_hash_table_contains (lags, id) && s->oversleeps->len > 0)
        stress_problem (s, "json: hang %s has no lag record (a lag was dropped as 'stopped')",
                              (const char *) id);
      else if (!g_hash_table_contains (lags, id))
        stress_problem (s, "json: hang %s has no lag record", (const char *) id);
  }
  for (guint c = 0; c < s->caused->len; c++)
    {
      CausedLag *lag = &g_array_index (s->caused, CausedLag, c);

      if (g_str_equal (lag->scenario, "hang") && (lag->end_us - lag->start_us) / 1000 >= HANG_MS + 100)
        {
          gboolean found = FALSE;

          for (guint r = 0; r < s->received->len && !found; r++)
            {
              LagWatchReport *report = g_array_index (s->received, Received, r).report;
              gint64 start = lagwatch_report_get_start_time (report);

              found = lagwatch_report_get_thread_id (report) == lag->tid && start < lag->end_us
                      && g_hash_table_contains (hangs, lagwatch_report_get_id (report))
                      && start + (gint64) (lagwatch_report_get_duration_ms (report) * 1000.0) > lag->start_us;
            }
          if (!found && stress_dropped_as_oversleep (s, lag))
            stress_problem (s, "json: hang lag %u was dropped, its hang record stays alone", c);
          else if (!found)
            stress_problem (s, "json: hang lag %u has no hang record", c);
        }
    }
  stress_note (s, "json: %u lag records, %u hang records", g_hash_table_size (lags), g_hash_table_size (hangs));
}

/* ---- the run ---- */

static void
stress_write_findings (Stress *s, const char *path)
{
  GString *out = g_string_new (NULL);

  for (guint i = 0; i < s->notes->len; i++)
    g_string_append_printf (out, "note: %s\n", (char *) s->notes->pdata[i]);
  for (guint i = 0; i < s->problems->len; i++)
    g_string_append_printf (out, "PROBLEM: %s\n", (char *) s->problems->pdata[i]);
  g_assert_true (g_file_set_contents (path, out->str, -1, NULL));
  g_string_free (out, TRUE);
}

/* In the subprocess. */
static void
stress_run (const char *findings_path)
{
  Stress s = { 0 };
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *json_path = NULL, *spec = NULL, *state = NULL;
  LoopThread loop;
  GThread *threads[5];
  LagWatch *watch;
  gint64 started = g_get_monotonic_time ();

  g_mutex_init (&s.lock);
  s.caused = g_array_new (FALSE, TRUE, sizeof (CausedLag));
  s.received = g_array_new (FALSE, TRUE, sizeof (Received));
  s.problems = g_ptr_array_new_with_free_func (g_free);
  s.notes = g_ptr_array_new_with_free_func (g_free);
  s.oversleeps = g_array_new (FALSE, FALSE, sizeof (gint64));
  s.slow_library = g_getenv ("LW_SLOW_CONSTRUCTOR_LIB");
  s.dir = g_dir_make_tmp ("lagwatch-stress-XXXXXX", NULL);
  g_assert_nonnull (s.dir);
  stress_current = &s;
  g_log_set_handler ("lagwatch", G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO | G_LOG_LEVEL_MESSAGE, stress_on_log, &s);

  json_path = g_build_filename (s.dir, "lags.jsonl", NULL);
  spec = g_strdup_printf ("json:%s,stderr", json_path);
  /* Hang records go here, not to the user's state directory. */
  state = g_build_filename (s.dir, "state", NULL);
  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_hang_ms (config, HANG_MS));
  g_assert_true (lagwatch_config_set_output (config, spec, NULL));
  g_assert_true (lagwatch_config_set_state_dir (config, state));
  loop.s = &s;
  loop.context = g_main_context_new ();
  watch = lagwatch_attach_with_config (loop.context, config);
  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, stress_on_report, (gpointer) "loop", NULL);

  threads[0] = g_thread_new ("blocked", blocked_thread, &s);
  threads[1] = g_thread_new ("second watch", second_watch_thread, &s);
  threads[2] = g_thread_new ("fork", fork_thread, &s);
  threads[3] = g_thread_new ("dl", dl_thread, &s);
  threads[4] = g_thread_new ("loop", loop_thread, &loop);
  for (guint i = G_N_ELEMENTS (threads); i > 0; i--)
    g_thread_join (threads[i - 1]);
  lagwatch_detach (watch);
  g_main_context_unref (loop.context);

  stress_note (&s, "%.1f s; second watch: %u attach/detach cycles; %u forks; %u dlopen/dlclose cycles; "
               "blocked thread: %u spins", (double) (g_get_monotonic_time () - started) / G_USEC_PER_SEC,
               atomic_load (&s.attach_cycles), atomic_load (&s.forks), atomic_load (&s.dl_cycles),
               atomic_load (&s.blocked_spins));
  if (atomic_load (&s.noisy_children) > 0)
    stress_problem (&s, "fork: %u of %u children wrote to stderr (the parent's summary is not "
                          "theirs)", atomic_load (&s.noisy_children), atomic_load (&s.forks));
  stress_check_reports (&s);
  stress_check_json (&s, json_path);
  stress_write_findings (&s, findings_path);

  g_unlink (json_path);
  {
    g_autofree char *err_path = g_build_filename (s.dir, "child-stderr", NULL);

    g_unlink (err_path);
  }
  g_rmdir (state);
  g_rmdir (s.dir);
  g_assert_cmpuint (s.problems->len, ==, 0);
  for (guint r = 0; r < s.received->len; r++)
    lagwatch_report_unref (g_array_index (s.received, Received, r).report);
  g_array_unref (s.received);
  g_array_unref (s.caused);
  g_ptr_array_unref (s.problems);
  g_ptr_array_unref (s.notes);
  g_array_unref (s.oversleeps);
  g_free (s.dir);
  g_mutex_clear (&s.lock);
#if defined(__SANITIZE_ADDRESS__)
  __lsan_do_leak_check ();
#endif
}

static void
test_everything_at_once (void)
{
  g_autofree char *findings = NULL;
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  if (g_getenv ("LW_SLOW_CONSTRUCTOR_LIB") == NULL)
    {
      g_test_skip ("LW_SLOW_CONSTRUCTOR_LIB is not set (meson test sets it)");
      return;
    }
  if (g_test_subprocess ())
    {
      stress_run (g_getenv ("LW_STRESS_FINDINGS"));
      return;
    }
  findings = g_build_filename (g_get_tmp_dir (), "lagwatch-stress-findings-XXXXXX", NULL);
  {
    int fd = g_mkstemp (findings);

    g_assert_cmpint (fd, >=, 0);
    close (fd);
  }
  g_setenv ("LW_STRESS_FINDINGS", findings, TRUE);
#if defined(__SANITIZE_ADDRESS__)
  {
    /* A forked child exits with the other threads' memory reachable only
     * from their stacks, which the child does not have: LeakSanitizer's
     * check at exit would call it leaked. The subprocess checks its own
     * leaks at the end of the run instead (stress_run). */
    g_autofree char *options = g_strdup_printf ("%s:leak_check_at_exit=0",
                                                g_getenv ("ASAN_OPTIONS") ? g_getenv ("ASAN_OPTIONS") : "");

    g_setenv ("ASAN_OPTIONS", options, TRUE);
  }
#endif
  g_test_trap_subprocess (NULL, RUN_DEADLINE_US, G_TEST_SUBPROCESS_DEFAULT);
  if (g_file_get_contents (findings, &text, NULL, NULL))
    {
      lines = g_strsplit (text, "\n", -1);
      for (guint i = 0; lines[i] != NULL; i++)
        if (lines[i][0] != '\0')
          g_test_message ("%s", lines[i]);
    }
  g_unlink (findings);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/stress/everything-at-once", test_everything_at_once);

  return g_test_run ();
}
