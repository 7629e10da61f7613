/* test-launcher-self.c: the launcher never takes another process for the
 * program, and a program that attaches lagwatch itself keeps its own watch
 *
 * Runs self-attach (self-attach.c) under the launcher
 * (LW_TEST_LAUNCHER, LW_TEST_SELF_ATTACH) and counts the reports of its
 * 300 ms freezes: in the program's callback, in the JSON file, on stderr.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct
{
  char *dir;
  char *json;
  char *out;
  char *err;
  int   status;
} Run;

static void
run_clear (Run *run)
{
  g_unlink (run->json);
  g_rmdir (run->dir);
  g_free (run->dir);
  g_free (run->json);
  g_free (run->out);
  g_free (run->err);
}

/* Runs @argv (NULL-terminated) with LW_TEST_JSON naming a fresh file. */
static void
run_spawn (Run *run, const char *const *argv)
{
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) env = g_get_environ ();
  const char *asan = g_getenv ("LW_ASAN_RUNTIME");
  int wait_status;

  memset (run, 0, sizeof *run);
  run->dir = g_dir_make_tmp ("lagwatch-self-XXXXXX", &error);
  g_assert_no_error (error);
  run->json = g_build_filename (run->dir, "lags.jsonl", NULL);
  env = g_environ_setenv (env, "LW_TEST_JSON", run->json, TRUE);
  env = g_environ_unsetenv (env, "LAGWATCH_OUTPUT");
  env = g_environ_unsetenv (env, "LAGWATCH_THRESHOLD_MS");
  env = g_environ_unsetenv (env, "LAGWATCH_LAUNCHER_PROCESS");
  /* The preload library needs ASan's runtime first in an ASan build. */
  if (asan != NULL && asan[0] != '\0')
    {
      env = g_environ_setenv (env, "LD_PRELOAD", asan, TRUE);
      env = g_environ_setenv (env, "ASAN_OPTIONS", "detect_leaks=0", TRUE);
    }
  g_spawn_sync (NULL, (char **) argv, env, G_SPAWN_SEARCH_PATH, NULL, NULL,
                &run->out, &run->err, &wait_status, &error);
  g_assert_no_error (error);
  run->status = WIFEXITED (wait_status) ? WEXITSTATUS (wait_status) : 128;
  g_test_message ("stdout:\n%s\nstderr:\n%s", run->out, run->err);
}

/* The line of @run's stdout that starts with @start, NULL when none. */
static char *
output_line (Run *run, const char *start)
{
  const char *found = strstr (run->out, start);

  return found != NULL ? g_strndup (found, strcspn (found, "\n")) : NULL;
}

/* The lag records of the JSON file whose source is @source. */
static guint
count_json_lags (Run *run, const char *source)
{
  g_autofree char *text = NULL;
  g_autofree char *needle = g_strdup_printf ("\"source\":\"%s\"", source);
  g_auto(GStrv) lines = NULL;
  guint n = 0;

  if (!g_file_get_contents (run->json, &text, NULL, NULL))
    return 0;
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (strstr (lines[i], "\"event\":\"lag\"") != NULL && strstr (lines[i], needle) != NULL)
      n++;
  return n;
}

/* Lag reports on stderr. */
static guint
count_stderr_lags (Run *run)
{
  guint n = 0;

  for (const char *p = run->err; (p = strstr (p, "lagwatch: lag of ")) != NULL; p++)
    n++;
  return n;
}

/* The program attaches in @mode under the launcher: its attach succeeds,
 * its callback gets each freeze, its own output (the JSON file) has each
 * once, and the launcher's watch (stderr) reports none. */
static void
check_own_watch (const char *mode, guint freezes)
{
  const char *argv[] = { g_getenv ("LW_TEST_LAUNCHER"), "--", g_getenv ("LW_TEST_SELF_ATTACH"), mode, NULL };
  g_autofree char *expected = g_strdup_printf ("callback reports: %u of %u", freezes, freezes);
  g_autofree char *line = NULL;
  Run run;

  run_spawn (&run, argv);
  line = output_line (&run, "callback reports:");
  g_assert_cmpstr (line, ==, expected);
  g_assert_cmpint (run.status, ==, 0);
  g_assert_cmpuint (count_json_lags (&run, "self-attach: freeze"), ==, freezes);
  g_assert_cmpuint (count_stderr_lags (&run), ==, 0);
  run_clear (&run);
}

static void
test_attach_before_loop (void)
{
  check_own_watch ("before", 1);
}

static void
test_attach_in_loop (void)
{
  check_own_watch ("loop", 1);
}

static void
test_attach_in_startup (void)
{
  check_own_watch ("startup", 1);
}


/* The report callback detaches its watch and attaches the same context
 * again: the attach succeeds and the new watch reports the second freeze. */
static void
test_reattach_from_callback (void)
{
  g_autofree char *line = NULL;
  const char *argv[] = { g_getenv ("LW_TEST_LAUNCHER"), "--", g_getenv ("LW_TEST_SELF_ATTACH"), "reattach", NULL };
  Run run;

  check_own_watch ("reattach", 2);
  /* The same program directly, with no launcher's watch to replace. */
  run_spawn (&run, argv + 2);
  line = output_line (&run, "re-attach from the callback:");
  g_assert_cmpstr (line, ==, "re-attach from the callback: attached");
  g_assert_cmpint (run.status, ==, 0);
  g_assert_cmpuint (count_json_lags (&run, "self-attach: freeze"), ==, 2);
  run_clear (&run);
}

/* The launcher as pid 1 of a pid namespace; the program starts a child in
 * a new pid namespace, where it is pid 1 too: only the program is
 * watched. */
static void
test_child_in_pid_namespace (void)
{
  g_autofree char *unshare = g_find_program_in_path ("unshare");
  Run run;

  if (geteuid () != 0 || unshare == NULL)
    {
      g_test_skip (unshare == NULL ? "no unshare program" : "new pid namespaces need root here");
      return;
    }
  {
    const char *probe[] = { unshare, "--pid", "--fork", "--mount-proc", "true", NULL };

    run_spawn (&run, probe);
    if (run.status != 0)
      {
        g_autofree char *why = g_strdup_printf ("unshare --pid --fork --mount-proc fails here: %s", run.err);

        g_test_skip (why);
        run_clear (&run);
        return;
      }
    run_clear (&run);
  }
  {
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp ("lagwatch-ns-XXXXXX", &error);
    g_autofree char *json = NULL;
    g_autofree char *spec = NULL;

    g_assert_no_error (error);
    json = g_build_filename (dir, "lags.jsonl", NULL);
    spec = g_strconcat ("json:", json, NULL);
    {
      const char *argv[] = { unshare, "--pid", "--fork", "--mount-proc", g_getenv ("LW_TEST_LAUNCHER"),
                             "--threshold", "100", "--output", spec, "--",
                             g_getenv ("LW_TEST_SELF_ATTACH"), "ns-parent", NULL };

      run_spawn (&run, argv);
      g_free (run.json);
      run.json = g_strdup (json);
      g_autofree char *line = output_line (&run, "child exit status");

      g_assert_cmpstr (line, ==, "child exit status 0");
      g_assert_cmpint (run.status, ==, 0);
      g_assert_cmpuint (count_json_lags (&run, "self-attach: freeze"), ==, 1);
      g_assert_cmpuint (count_json_lags (&run, "self-attach: child freeze"), ==, 0);
      g_unlink (json);
      g_rmdir (dir);
      run_clear (&run);
    }
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_assert_nonnull (g_getenv ("LW_TEST_LAUNCHER"));
  g_assert_nonnull (g_getenv ("LW_TEST_SELF_ATTACH"));
  g_test_add_func ("/launcher/pid-namespace/child", test_child_in_pid_namespace);
  g_test_add_func ("/launcher/self-attach/before-loop", test_attach_before_loop);
  g_test_add_func ("/launcher/self-attach/in-loop", test_attach_in_loop);
  g_test_add_func ("/launcher/self-attach/gapplication-startup", test_attach_in_startup);
  g_test_add_func ("/launcher/self-attach/reattach-from-callback", test_reattach_from_callback);
  return g_test_run ();
}
