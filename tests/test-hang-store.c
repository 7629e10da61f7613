/* test-hang-store.c: the state directory of hang records, against a
 * hostile file system and a program that exits in the middle of a hang
 *
 * Symlinks planted in the directory's path, a FIFO or a forged record
 * planted in it, a disk that cannot take the record, and the two ways a
 * hanging program ends: exit() (not announced next run) and SIGKILL
 * (announced). Everything that could hang runs in a subprocess with a
 * deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lag-harness.h"
#include "lw-hang.h"
#include "lw-report.h"
#include "lw-reporter.h"
#include "lw-sink.h"
#include "lw-summary.h"

#define SUBPROCESS_TIMEOUT_US (60 * G_USEC_PER_SEC)

static char *tmp_dir;

/* The pid of a process that has exited: a record naming it is from a run
 * that is gone. */
static int
dead_pid (void)
{
  pid_t pid = fork ();

  if (pid == 0)
    _exit (0);
  g_assert_cmpint (waitpid (pid, NULL, 0), ==, pid);
  return pid;
}

static void
test_symlink_in_path (void)
{
  g_autofree char *base = g_build_filename (tmp_dir, "symlink-in-path", NULL);
  g_autofree char *elsewhere = g_build_filename (tmp_dir, "elsewhere", NULL);
  g_autofree char *link = g_build_filename (base, "link", NULL);
  g_autofree char *state = g_build_filename (link, "state", NULL);
  g_autofree char *planted = g_build_filename (elsewhere, "state", NULL);

  if (g_test_subprocess ())
    {
      g_assert_null (lw_hang_store_open (state));
      return;
    }
  g_assert_cmpint (g_mkdir (base, 0700), ==, 0);
  g_assert_cmpint (g_mkdir (elsewhere, 0700), ==, 0);
  g_assert_cmpint (symlink (elsewhere, link), ==, 0);
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*state directory*is not safe to use (\"link\": a symbolic link or not a directory)*");
  /* Nothing made through the link. */
  g_assert_false (g_file_test (planted, G_FILE_TEST_EXISTS));
}

/* A FIFO named like a record: reading it must not wait for a writer. */
static void
test_fifo_record (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "fifo-state", NULL);
  g_autofree char *fifo = g_build_filename (state, "hang-1-1.rec", NULL);

  if (g_test_subprocess ())
    {
      LwHangStore *store = lw_hang_store_open (state);
      g_autoptr(GPtrArray) found = NULL;

      g_assert_nonnull (store);
      found = lw_hang_store_take_previous (store);
      g_assert_cmpuint (found->len, ==, 0);
      lw_hang_store_close (store);
      return;
    }
  g_assert_cmpint (g_mkdir (state, 0700), ==, 0);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*invalid hang record \"hang-1-1.rec\" (not a regular file); removed*");
  g_assert_false (g_file_test (fifo, G_FILE_TEST_EXISTS));
}

typedef struct
{
  const char *name;
  const char *pid;      /* NULL: a dead process's */
  const char *json;
  const char *text;
  const char *why;      /* NULL: valid, reported */
} ForgedRecord;

static const ForgedRecord forged_records[] = {
  { "negative-pid", "-5", "{\"event\":\"hang\",\"id\":\"1-1\"}", "t\n", "no valid process id" },
  { "pid-overflow", "99999999999", "{\"event\":\"hang\"}", "t\n", "no valid process id" },
  { "pid-trailing", NULL, "{\"event\":\"hang\"}", "t\n", "no valid process id" },
  { "spliced", NULL, "{\"event\":\"hang\"},\"previous_pid\":1,\"x\":{\"a\":1}", "t\n",
    "its JSON line is not a valid hang record" },
  { "not-json", NULL, "\x1b[2J{", "t\n", "its JSON line is not a valid hang record" },
  { "raw-escape", NULL, "{\"event\":\"hang\",\"id\":\"\x1b[31m\"}", "t\n",
    "its JSON line is not a valid hang record" },
  { "not-a-hang", NULL, "{\"event\":\"lag\"}", "t\n", "its JSON line is not a valid hang record" },
  { "bad-pid-field", NULL, "{\"event\":\"hang\",\"pid\":-1}", "t\n", "its JSON line is not a valid hang record" },
  { "deep", NULL, NULL, "t\n", "its JSON line is not a valid hang record" },
  { "escapes", NULL, "{\"event\":\"hang\",\"id\":\"\\u001b]0;owned\\u0007\\ud83d\\ude00\",\"n\":[1.5e10,-0,null]}",
    "frame \x1b[31mred\x1b[0m \xc2\x9b""1m \xff end\n", NULL },
};

static char *
forged_contents (const ForgedRecord *r, const char *exe)
{
  g_autofree char *pid = r->pid ? g_strdup (r->pid) : g_strdup_printf ("%d", dead_pid ());
  g_autofree char *json = NULL;

  if (g_str_equal (r->name, "pid-trailing"))
    {
      char *spaced = g_strconcat (pid, " ", NULL);

      g_free (pid);
      pid = spaced;
    }
  if (r->json != NULL)
    json = g_strdup (r->json);
  else
    {
      GString *deep = g_string_new ("{\"event\":\"hang\",\"x\":");

      for (int i = 0; i < 10000; i++)
        g_string_append_c (deep, '[');
      json = g_string_free (deep, FALSE);
    }
  return g_strdup_printf ("lagwatch-hang 1\nexe=%s\npid=%s\njson=%s\ntext:\n%s", exe, pid, json, r->text);
}

/* Forged records in the state directory: the invalid ones named and
 * removed, the valid one re-encoded, its text made safe for a terminal. */
static void
test_forged_records (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "forged-state", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      LwHangStore *store;
      g_autoptr(GPtrArray) found = NULL;
      g_autoptr(JsonParser) parser = json_parser_new ();
      g_autoptr(GError) error = NULL;
      const LwPreviousHang *hang;

      g_assert_cmpint (g_mkdir (state, 0700), ==, 0);
      for (guint i = 0; i < G_N_ELEMENTS (forged_records); i++)
        {
          const ForgedRecord *r = &forged_records[i];
          g_autofree char *name = g_strdup_printf ("hang-%s.rec", r->name);
          g_autofree char *path = g_build_filename (state, name, NULL);
          g_autofree char *contents = forged_contents (r, exe);

          g_assert_true (g_file_set_contents (path, contents, -1, NULL));
        }
      store = lw_hang_store_open (state);
      g_assert_nonnull (store);
      found = lw_hang_store_take_previous (store);
      lw_hang_store_close (store);
      g_assert_cmpuint (found->len, ==, 1);
      hang = found->pdata[0];
      g_assert_cmpint (hang->pid, >, 0);
      g_assert_null (strchr (hang->json, '\x1b'));
      g_assert_true (json_parser_load_from_data (parser, hang->json, -1, &error));
      g_assert_no_error (error);
      g_assert_cmpstr (json_object_get_string_member (json_node_get_object (json_parser_get_root (parser)), "id"),
                       ==, "\x1b]0;owned\x07\xf0\x9f\x98\x80");
      g_assert_cmpstr (hang->text, ==, "frame ?[31mred?[0m ?1m \xef\xbf\xbd end\n");
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  for (guint i = 0; i < G_N_ELEMENTS (forged_records); i++)
    {
      const ForgedRecord *r = &forged_records[i];
      g_autofree char *pattern = g_strdup_printf ("*invalid hang record \"hang-%s.rec\" (%s); removed*",
                                                  r->name, r->why);

      if (r->why != NULL)
        g_test_trap_assert_stderr (pattern);
    }
  g_test_trap_assert_stderr_unmatched ("*hang-escapes.rec*");
}

/* A disk that cannot take the record (here RLIMIT_FSIZE): said once. */
static void
test_save_error_said (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "full-state", NULL);
  g_autofree char *record = g_build_filename (state, "hang-1-1.rec", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *big = g_strnfill (8192, 'x');
      struct rlimit limit = { 4096, 4096 };
      LwHangStore *store = lw_hang_store_open (state);

      g_assert_nonnull (store);
      signal (SIGXFSZ, SIG_IGN);
      g_assert_cmpint (setrlimit (RLIMIT_FSIZE, &limit), ==, 0);
      g_assert_false (lw_hang_store_save (store, "1-1", "{\"event\":\"hang\"}", big));
      g_assert_false (lw_hang_store_save (store, "1-2", "{\"event\":\"hang\"}", big));
      g_assert_false (g_file_test (record, G_FILE_TEST_EXISTS));  /* no half record left */
      lw_hang_store_close (store);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: cannot save hang records in *full-state (File too large); "
                             "a hang the program is killed in will not be reported by its next run\n");
}

/* A fork child that exits, or closes its copy of the store, leaves the
 * parent's running hang alone: it is the parent's to forget. */
static void
test_fork_child_leaves_records (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "fork-state", NULL);
  g_autofree char *record = g_build_filename (state, "hang-1-1.rec", NULL);
  LwHangStore *store = lw_hang_store_open (state);

  g_assert_nonnull (store);
  g_assert_true (lw_hang_store_save (store, "1-1", "{\"event\":\"hang\"}", "text\n"));
  for (int how = 0; how < 2; how++)
    {
      pid_t pid;
      int status;

      fflush (stdout);  /* the child's exit() must not print the parent's TAP again */
      pid = fork ();
      if (pid == 0)
        {
          if (how == 0)
            exit (0);
          lw_hang_store_close (store);
          _exit (0);
        }
      g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
      g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
      g_assert_true (g_file_test (record, G_FILE_TEST_EXISTS));
    }
  lw_hang_store_close (store);
  g_assert_false (g_file_test (record, G_FILE_TEST_EXISTS));
}

/* A record bigger than the reader takes, saved by an instance still
 * running (here a fork child of this program): not ours to judge, kept.
 * The still-running check comes before the size check. */
static void
test_running_big_record_kept (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "big-running-state", NULL);
  g_autofree char *record = g_build_filename (state, "hang-7-1.rec", NULL);
  g_autofree char *unreadable = g_build_filename (tmp_dir, "big-running-unreadable", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autofree char *padding = g_strnfill (LW_HANG_MAX_RECORD + 1, 'x');
      g_autofree char *contents = NULL;
      g_autoptr(GPtrArray) found = NULL;
      LwHangStore *store;
      pid_t other = fork ();

      if (other == 0)
        {
          pause ();
          _exit (0);
        }
      {
        /* The still-running check reads the other process's /proc exe
         * link, which the kernel hides where processes are not dumpable:
         * said to the parent through a file (a skip in a subprocess is a
         * failure to g_test_trap_assert_passed()). */
        g_autofree char *link = g_strdup_printf ("/proc/%d/exe", (int) other);
        g_autofree char *seen = g_file_read_link (link, NULL);

        if (seen == NULL)
          {
            kill (other, SIGKILL);
            waitpid (other, NULL, 0);
            g_assert_true (g_file_set_contents (unreadable, "", 0, NULL));
            return;
          }
      }
      contents = g_strdup_printf ("lagwatch-hang 1\nexe=%s\npid=%d\njson={\"event\":\"hang\"}\ntext:\n%s",
                                  exe, (int) other, padding);
      g_assert_cmpint (g_mkdir (state, 0700), ==, 0);
      g_assert_true (g_file_set_contents (record, contents, -1, NULL));
      store = lw_hang_store_open (state);
      g_assert_nonnull (store);
      found = lw_hang_store_take_previous (store);
      lw_hang_store_close (store);
      kill (other, SIGKILL);
      waitpid (other, NULL, 0);
      g_assert_cmpuint (found->len, ==, 0);
      g_assert_true (g_file_test (record, G_FILE_TEST_EXISTS));
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  if (g_unlink (unreadable) == 0)
    {
      g_test_skip ("another process's /proc exe link cannot be read here (not dumpable): "
                   "a running hang is not told apart");
      return;
    }
  g_test_trap_assert_stderr_unmatched ("*too big*");
}

/* A hang of a process with thousands of threads: its record is cut to the size
 * the next run reads back, the threads' stacks left out (the last ones
 * first) and counted, not refused nor written whole. */
static void
test_big_hang_capped (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "big-hang-state", NULL);
  g_autofree char *record = g_build_filename (state, "hang-9-1.rec", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autofree char *contents = NULL;
      g_autoptr(GError) error = NULL;
      LwHangStore *store = lw_hang_store_open (state);
      LwSummary *summary = lw_summary_new ();
      LagWatchReport *report = lw_report_new ();
      LwPreviousHang *hang = NULL;
      LwReporter *reporter;
      const char *why = NULL;
      gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US * 6;
      gsize len;

      g_assert_nonnull (store);
      reporter = lw_reporter_start (lw_sinks_open ("none"), summary, store, NULL, NULL, &error);
      g_assert_no_error (error);
      report->event = "hang";
      report->id = g_strdup ("9-1");
      report->pid = (int) getpid ();
      report->complete = FALSE;
      report->n_threads = 3000;
      report->threads = g_new0 (LwReportStack, report->n_threads);
      for (guint i = 0; i < report->n_threads; i++)
        {
          LwReportStack *thread = &report->threads[i];

          thread->thread_id = 100000 + (int) i;
          thread->thread_name = g_strdup ("worker");
          thread->thread_state = g_strdup ("sleeping");
          thread->n_frames = 8;
          thread->frames = g_new0 (LwFrame, thread->n_frames);
          for (guint f = 0; f < thread->n_frames; f++)
            thread->frames[f].ip = (uintptr_t) test_running_big_record_kept + f;  /* in a module: named fast */
        }
      lw_reporter_submit (reporter, report, LW_REPORT_HANG);
      while (!g_file_test (record, G_FILE_TEST_EXISTS))
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (10 * 1000);
        }
      lw_reporter_stop (reporter);
      g_assert_true (g_file_get_contents (record, &contents, &len, NULL));
      g_assert_cmpuint (len, <=, LW_HANG_MAX_RECORD);
      g_assert_cmpint (lw_hang_record_parse (contents, len, exe, &hang, &why), ==, LW_HANG_RECORD_OK);
      g_assert_nonnull (strstr (hang->json, "\"threads_stacks_left_out\":"));
      g_assert_nonnull (strstr (hang->json, "\"stack_error\":\"left out: the hang record would have "
                                            "exceeded its size limit\""));
      /* The first threads keep their stacks. */
      g_assert_nonnull (strstr (hang->json, "{\"id\":100000,\"name\":\"worker\",\"state\":\"sleeping\","
                                            "\"stack_error\":null,\"stack\":[{"));
      lw_previous_hang_free (hang);
      lw_hang_store_close (store);
      lw_summary_free (summary);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

#define N_SLEEPERS 4

/* Threads that stay busy (runnable) until told to stop. */
static atomic_int busy_stop;
/* The threads running their function: GLib names a thread in the thread
 * itself, before calling it, so a thread counted here has its name. */
static atomic_uint threads_started;

static gpointer
busy_thread (gpointer data)
{
  atomic_fetch_add (&threads_started, 1);
  while (!atomic_load (&busy_stop))
    spin_ms (GINT_TO_POINTER (1));
  return NULL;
}

/* A thread asleep in read() until its pipe is closed. */
static gpointer
sleeper_thread (gpointer data)
{
  char byte;

  atomic_fetch_add (&threads_started, 1);
  while (read (GPOINTER_TO_INT (data), &byte, 1) < 0 && errno == EINTR)
    ;
  return NULL;
}

typedef struct
{
  const char *state;
  char       *record;   /* the first hang record found */
  gsize       len;
} RecordWait;

/* Freezes the loop until the hang's record is saved, then reads it. */
static LAGGY gboolean
freeze_until_record (gpointer data)
{
  RecordWait *wait = data;
  /* The reporting thread shares the CPUs with the busy threads. */
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US * 10;

  while (wait->record == NULL)
    {
      g_autoptr(GDir) dir = g_dir_open (wait->state, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        if (g_str_has_prefix (name, "hang-"))
          {
            g_autofree char *path = g_build_filename (wait->state, name, NULL);

            g_assert_true (g_file_get_contents (path, &wait->record, &wait->len, NULL));
          }
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      if (wait->record == NULL)
        spin_ms (GINT_TO_POINTER (10));
    }
  return G_SOURCE_REMOVE;
}

/* A hang with many busy threads (runnable, answering the signal only once
 * they get a CPU): every thread of the snapshot has a stack or says why
 * not, and the threads asleep in a system call all have one. LW_TEST_BUSY_THREADS changes the count (300 to measure); how many
 * got a stack is printed. */
static void
test_busy_threads_snapshot (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "busy-threads-state", NULL);

  if (g_test_subprocess ())
    {
      guint n_busy = g_getenv ("LW_TEST_BUSY_THREADS") ? (guint) atoi (g_getenv ("LW_TEST_BUSY_THREADS")) : 32;
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      g_autoptr(JsonParser) parser = json_parser_new ();
      g_autoptr(GError) error = NULL;
      GPtrArray *threads = g_ptr_array_new ();
      RecordWait wait = { state, NULL, 0 };
      LwPreviousHang *hang = NULL;
      const char *why = NULL;
      JsonArray *listed;
      guint with_stack = 0, found_busy = 0, found_sleepers = 0;
      int sleep_pipe[2];
      g_autoptr(GHashTable) reasons = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      GHashTableIter iter;
      gpointer key, value;
      LagWatch *watch;

      g_assert_true (lagwatch_config_set_threshold_ms (config, 100));
      g_assert_true (lagwatch_config_set_hang_ms (config, 200));
      g_assert_true (lagwatch_config_set_output (config, "none", NULL));
      g_assert_true (lagwatch_config_set_state_dir (config, state));
      watch = lagwatch_attach_with_config (NULL, config);
      g_assert_nonnull (watch);
      for (guint i = 0; i < n_busy; i++)
        g_ptr_array_add (threads, g_thread_new ("busy", busy_thread, NULL));
      /* Listed after the busy ones (thread ids grow): the budget may be
       * spent by then, but a sleeping thread costs only a look at /proc. */
      g_assert_cmpint (pipe (sleep_pipe), ==, 0);
      for (guint i = 0; i < N_SLEEPERS; i++)
        g_ptr_array_add (threads, g_thread_new ("sleeper", sleeper_thread, GINT_TO_POINTER (sleep_pipe[0])));
      /* Every thread named before the hang: on a loaded machine (or under
       * AddressSanitizer) one not yet scheduled would be listed under the
       * process's name. */
      while (atomic_load (&threads_started) < n_busy + N_SLEEPERS)
        g_usleep (1000);
      g_idle_add (freeze_until_record, &wait);
      while (wait.record == NULL)
        g_main_context_iteration (NULL, TRUE);
      atomic_store (&busy_stop, 1);
      close (sleep_pipe[1]);
      for (guint i = 0; i < threads->len; i++)
        g_thread_join (threads->pdata[i]);
      g_ptr_array_unref (threads);

      g_assert_cmpint (lw_hang_record_parse (wait.record, wait.len, exe, &hang, &why), ==, LW_HANG_RECORD_OK);
      g_assert_true (json_parser_load_from_data (parser, hang->json, -1, &error));
      g_assert_no_error (error);
      listed = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "threads");
      for (guint i = 0; i < json_array_get_length (listed); i++)
        {
          JsonObject *thread = json_array_get_object_element (listed, i);
          gboolean has_stack = json_array_get_length (json_object_get_array_member (thread, "stack")) > 0;

          if (g_strcmp0 (json_object_get_string_member (thread, "name"), "sleeper") == 0)
            {
              g_assert_cmpstr (json_object_get_string_member (thread, "stack_error"), ==, NULL);
              g_assert_true (has_stack);
              found_sleepers++;
              continue;
            }
          if (g_strcmp0 (json_object_get_string_member (thread, "name"), "busy") != 0)
            continue;
          found_busy++;
          with_stack += has_stack;
          if (!has_stack)
            {
              const char *reason = json_object_get_string_member (thread, "stack_error");

              g_hash_table_insert (reasons, g_strdup (reason),
                                   GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (reasons, reason)) + 1));
            }
          /* A stack, or why there is none. */
          g_assert_true (json_object_has_member (thread, "stack_error"));
          g_assert_true (has_stack || json_object_get_string_member (thread, "stack_error") != NULL);
        }
      g_assert_cmpuint (found_busy, ==, n_busy);
      g_assert_cmpuint (found_sleepers, ==, N_SLEEPERS);
      g_test_message ("%u busy threads: %u with a stack", n_busy, with_stack);
      printf ("# %u busy threads: %u with a stack\n", n_busy, with_stack);
      g_hash_table_iter_init (&iter, reasons);
      while (g_hash_table_iter_next (&iter, &key, &value))
        printf ("#   %u: %s\n", GPOINTER_TO_UINT (value), (const char *) key);
      lw_previous_hang_free (hang);
      g_free (wait.record);
      lagwatch_detach (watch);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US * 3, G_TEST_SUBPROCESS_INHERIT_STDOUT);
  g_test_trap_assert_passed ();
}

static LAGGY gboolean
hang_then_exit (gpointer data)
{
  const char *state = data;
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US;

  /* Hang until the record is saved, then quit cleanly mid-hang. */
  for (;;)
    {
      g_autoptr(GDir) dir = g_dir_open (state, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        if (g_str_has_prefix (name, "hang-"))
          exit (0);
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      spin_ms (GINT_TO_POINTER (10));
    }
  return G_SOURCE_REMOVE;
}

static LAGGY gboolean
hang_forever (gpointer data)
{
  for (;;)
    spin_ms (GINT_TO_POINTER (100));
  return G_SOURCE_REMOVE;
}

/* Child: attaches and hangs, then exits (--child-exit) or waits to be
 * killed (--child-hang). */
G_GNUC_NORETURN static void
child_hang (const char *how)
{
  LagWatch *watch = lagwatch_attach (NULL);

  g_assert_nonnull (watch);
  g_idle_add (g_str_equal (how, "--child-exit") ? hang_then_exit : hang_forever,
              (gpointer) g_getenv ("LAGWATCH_STATE_DIR"));
  for (;;)
    g_main_context_iteration (NULL, TRUE);
}

/* Runs this program as "--child-attach" and returns its stderr. */
static char *
run_next (char **env)
{
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  char *argv[] = { self, (char *) "--child-attach", NULL };
  g_autoptr(GError) error = NULL;
  char *err = NULL;
  int status;

  g_assert_true (g_spawn_sync (NULL, argv, env, 0, NULL, NULL, NULL, &err, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  return err;
}

/* TRUE once @state holds a hang record, within the deadline. */
static gboolean
wait_for_record (const char *state)
{
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US;

  while (g_get_monotonic_time () < deadline)
    {
      g_autoptr(GDir) dir = g_dir_open (state, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        if (g_str_has_prefix (name, "hang-"))
          return TRUE;
      g_usleep (10 * 1000);
    }
  return FALSE;
}

static void
test_exit_during_hang (gconstpointer data)
{
  gboolean killed = GPOINTER_TO_INT (data);
  g_autofree char *state = g_build_filename (tmp_dir, killed ? "killed-state" : "exit-state", NULL);
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  char *argv[] = { self, (char *) (killed ? "--child-hang" : "--child-exit"), NULL };
  g_auto(GStrv) env = g_get_environ ();
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;
  GPid pid;
  int status;

  env = g_environ_setenv (env, "LAGWATCH_STATE_DIR", state, TRUE);
  env = g_environ_setenv (env, "LAGWATCH_HANG_MS", "300", TRUE);
  env = g_environ_setenv (env, "LAGWATCH_OUTPUT", "none", TRUE);
  g_assert_true (g_spawn_async (NULL, argv, env, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  if (killed)
    {
      g_assert_true (wait_for_record (state));
      kill (pid, SIGKILL);
    }
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_spawn_close_pid (pid);
  if (killed)
    g_assert_true (WIFSIGNALED (status));
  else
    g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);

  env = g_environ_setenv (env, "LAGWATCH_OUTPUT", "stderr", TRUE);
  err = run_next (env);
  g_test_message ("next run: %s", err);
  if (killed)
    g_assert_nonnull (strstr (err, "was killed during a hang"));
  else
    g_assert_null (strstr (err, "was killed during a hang"));
}

int
main (int argc, char **argv)
{
  int status;

  if (argc == 2 && (g_str_equal (argv[1], "--child-exit") || g_str_equal (argv[1], "--child-hang")))
    child_hang (argv[1]);
  if (argc == 2 && g_str_equal (argv[1], "--child-attach"))
    {
      lagwatch_detach (lagwatch_attach (NULL));
      return 0;
    }
  g_test_init (&argc, &argv, NULL);
  harness_subprocess_dumpable ();  /* (GLib 2.78+ makes test subprocesses not dumpable) */
  /* An unsafe directory or a forged record is named in a warning:
   * expected, not fatal. */
  g_log_set_always_fatal (G_LOG_FATAL_MASK);
  g_log_set_fatal_mask ("lagwatch", G_LOG_FATAL_MASK);
  /* The subprocesses find the parent's directory in the environment. */
  tmp_dir = g_strdup (g_getenv ("LW_TEST_HANG_DIR"));
  if (tmp_dir == NULL)
    {
      tmp_dir = g_dir_make_tmp ("lagwatch-hangs-XXXXXX", NULL);
      g_setenv ("LW_TEST_HANG_DIR", tmp_dir, TRUE);
    }
  g_test_add_func ("/hang-store/symlink-in-path", test_symlink_in_path);
  g_test_add_func ("/hang-store/fifo-record", test_fifo_record);
  g_test_add_func ("/hang-store/forged-records", test_forged_records);
  g_test_add_func ("/hang-store/save-error-said", test_save_error_said);
  g_test_add_func ("/hang-store/fork-child-leaves-records", test_fork_child_leaves_records);
  g_test_add_func ("/hang-store/running-big-record-kept", test_running_big_record_kept);
  g_test_add_func ("/hang-store/big-hang-capped", test_big_hang_capped);
  g_test_add_func ("/hang-store/busy-threads-snapshot", test_busy_threads_snapshot);
  g_test_add_data_func ("/hang-store/exit-during-hang", GINT_TO_POINTER (FALSE), test_exit_during_hang);
  g_test_add_data_func ("/hang-store/killed-during-hang", GINT_TO_POINTER (TRUE), test_exit_during_hang);
  status = g_test_run ();
  if (!g_test_subprocess ())
    {
      harness_remove_tree (tmp_dir);
      g_unsetenv ("LW_TEST_HANG_DIR");
    }
  return status;
}
