/* test-privilege.c: a setgid program does not let its caller choose
 * lagwatch's files
 *
 * A copy of this test is made setgid to a group ("users") that may write a
 * directory no one else can, and run by an unprivileged user (nobody) with
 * LAGWATCH_OUTPUT and LAGWATCH_STATE_DIR pointing into that directory. The
 * kernel marks the process AT_SECURE; lagwatch must ignore the environment
 * (and say so in one line), so nothing appears there. Needs root (to make
 * the setgid copy and to switch users); skipped otherwise.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-private.h"

#define NOBODY 65534

/* Under ASan: LeakSanitizer cannot inspect a setgid (non-dumpable) process,
 * nor read ASAN_OPTIONS there (/proc/self/environ is root's), and fails
 * it. The runtime asks this hook; the setgid child has no leak check. */
int __lsan_is_turned_off (void);

int
__lsan_is_turned_off (void)
{
  return lw_process_secure ();
}

/* Child: the setgid copy, run by nobody. */
static int
child_secure (void)
{
  LagWatch *watch;

  printf ("secure=%d\n", lw_process_secure ());
  fflush (stdout);
  watch = lagwatch_attach (NULL);
  if (watch != NULL)
    lagwatch_detach (watch);
  return 0;
}

/* Runs @copy (setgid) as nobody in @dir with @env; it must succeed. */
static void
run_as_nobody (const char *dir, const char *copy, char **env, char **out, char **err)
{
  g_autofree char *setpriv = g_find_program_in_path ("setpriv");
  g_autofree char *reuid = g_strdup_printf ("--reuid=%d", NOBODY);
  g_autofree char *regid = g_strdup_printf ("--regid=%d", NOBODY);
  char *argv[] = { setpriv, reuid, regid, (char *) "--clear-groups", (char *) copy,
                   (char *) "--child-secure", NULL };
  g_autoptr(GError) error = NULL;
  int status;

  g_assert_true (g_spawn_sync (dir, argv, env, 0, NULL, NULL, out, err, &status, &error));
  g_assert_no_error (error);
  g_test_message ("child stdout: %s", *out);
  g_test_message ("child stderr: %s", *err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
}

static void
test_setgid_ignores_environment (void)
{
  static const char *const variables[] = {
    "LAGWATCH_OUTPUT", "LAGWATCH_STATE_DIR", "LAGWATCH_THRESHOLD_MS", "LAGWATCH_DEBUG_DIRS",
  };
  g_autofree char *dir = NULL;
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *copy = NULL, *group_dir = NULL, *out = NULL, *state = NULL, *output = NULL;
  g_autofree char *contents = NULL, *child_out = NULL, *child_err = NULL;
  g_autofree char *setpriv = g_find_program_in_path ("setpriv");
  g_auto(GStrv) env = g_get_environ ();
  g_autoptr(GError) error = NULL;
  struct group *users = getgrnam ("users");
  const char *first;
  gsize len;

  if (geteuid () != 0)
    {
      g_test_skip ("needs root: to make a setgid copy of this test and run it as another user");
      return;
    }
  if (setpriv == NULL || users == NULL)
    {
      g_test_skip ("needs setpriv (util-linux) and a \"users\" group");
      return;
    }
  dir = g_dir_make_tmp ("lagwatch-privilege-XXXXXX", &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_chmod (dir, 0755), ==, 0);

  copy = g_build_filename (dir, "setgid-program", NULL);
  g_assert_true (g_file_get_contents (self, &contents, &len, NULL));
  g_assert_true (g_file_set_contents (copy, contents, len, NULL));
  g_assert_cmpint (chown (copy, 0, users->gr_gid), ==, 0);
  g_assert_cmpint (g_chmod (copy, 02755), ==, 0);

  /* Only the group may write here: what the caller must not reach. */
  group_dir = g_build_filename (dir, "group-only", NULL);
  g_assert_cmpint (g_mkdir (group_dir, 0770), ==, 0);
  g_assert_cmpint (chown (group_dir, 0, users->gr_gid), ==, 0);
  g_assert_cmpint (g_chmod (group_dir, 0770), ==, 0);
  out = g_build_filename (group_dir, "chosen.jsonl", NULL);
  state = g_build_filename (group_dir, "state", NULL);
  output = g_strconcat ("json:", out, NULL);
  env = g_environ_setenv (env, "LAGWATCH_OUTPUT", output, TRUE);
  env = g_environ_setenv (env, "LAGWATCH_STATE_DIR", state, TRUE);
  env = g_environ_setenv (env, "LAGWATCH_THRESHOLD_MS", "abc", TRUE);
  env = g_environ_setenv (env, "LAGWATCH_DEBUG_DIRS", "relative", TRUE);

  run_as_nobody (dir, copy, env, &child_out, &child_err);
  g_assert_cmpstr (child_out, ==, "secure=1\n");  /* the setup worked: the kernel set AT_SECURE */

  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (state, G_FILE_TEST_EXISTS));
  first = strstr (child_err, "runs setuid or setgid (AT_SECURE)");
  g_assert_nonnull (first);
  g_assert_null (strstr (first + 1, "runs setuid or setgid (AT_SECURE)"));  /* one line */
  g_assert_null (strstr (child_err, "LAGWATCH_THRESHOLD_MS"));
  g_assert_null (strstr (child_err, "LAGWATCH_DEBUG_DIRS"));

  /* No LAGWATCH_* variable: nothing ignored, nothing said. */
  g_clear_pointer (&child_out, g_free);
  g_clear_pointer (&child_err, g_free);
  for (guint i = 0; i < G_N_ELEMENTS (variables); i++)
    env = g_environ_unsetenv (env, variables[i]);
  run_as_nobody (dir, copy, env, &child_out, &child_err);
  g_assert_cmpstr (child_out, ==, "secure=1\n");
  g_assert_null (strstr (child_err, "AT_SECURE"));

  g_remove (out);
  g_rmdir (state);
  g_rmdir (group_dir);
  g_remove (copy);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  if (argc == 2 && g_str_equal (argv[1], "--child-secure"))
    return child_secure ();
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/privilege/setgid-ignores-environment", test_setgid_ignores_environment);
  return g_test_run ();
}
