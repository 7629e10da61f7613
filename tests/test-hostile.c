/* test-hostile.c: lagwatch never harms the program it runs in
 *
 * The program is a GTest program, as many are: g_test_init() makes every
 * warning fatal, as G_DEBUG=fatal-warnings does (set here too, for the
 * subprocesses). Whatever lagwatch meets at run time (a JSON file it cannot
 * open, a garbage record in its state directory, names full of terminal
 * escapes, a program that closes or reuses lagwatch's descriptors, no
 * descriptor left, no /proc) it must say in its own words on stderr and
 * carry on; never kill, never write into the program's files. Everything
 * runs in a subprocess with a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lag-harness.h"

#define SUBPROCESS_TIMEOUT_US (60 * G_USEC_PER_SEC)

static char *tmp_dir;

/* Removes @path and all it holds, never following a symlink. */
static void
remove_tree (const char *path)
{
  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_SYMLINK) && (dir = g_dir_open (path, 0, NULL)) != NULL)
    while ((name = g_dir_read_name (dir)) != NULL)
      {
        g_autofree char *child = g_build_filename (path, name, NULL);

        remove_tree (child);
      }
  g_remove (path);
}

/* A config with no output of its own but @output, and a state directory
 * in the test's directory. */
static LagWatchConfig *
config_new (const char *output, const char *state_dir)
{
  LagWatchConfig *config = lagwatch_config_new ();

  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  lagwatch_config_set_state_dir (config, state_dir);
  return config;
}

/* A JSON Lines path that cannot be opened: said on stderr, reports go to
 * stderr, the program lives on. */
static void
test_json_unopenable (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (tmp_dir, "unopenable-state", NULL);
      g_autoptr(LagWatchConfig) config = config_new ("json:/nonexistent-lagwatch-dir/x.jsonl", state);
      LagWatch *watch = lagwatch_attach_with_config (NULL, config);

      g_assert_nonnull (watch);
      lagwatch_detach (watch);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: LAGWATCH_OUTPUT: cannot open \"/nonexistent-lagwatch-dir/x.jsonl\""
                             "*writing reports to stderr instead\n*");
  g_test_trap_assert_stderr_unmatched ("*WARNING*");
}

/* Garbage named like a hang record in the state directory: removed, said,
 * and the program lives on. */
static void
test_garbage_record (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "garbage-state", NULL);
  g_autofree char *record = g_build_filename (state, "hang-1-1.rec", NULL);

  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = config_new ("none", state);
      LagWatch *watch = lagwatch_attach_with_config (NULL, config);

      g_assert_nonnull (watch);
      lagwatch_detach (watch);
      return;
    }
  g_assert_cmpint (g_mkdir (state, 0700), ==, 0);
  g_assert_true (g_file_set_contents (record, "garbage\x1b[2J\n", -1, NULL));
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: the state directory *garbage-state holds an invalid hang record "
                             "\"hang-1-1.rec\"*; removed\n*");
  g_assert_false (g_file_test (record, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
  int status;

  /* The subprocesses start with every warning fatal, as a GNOME harness
   * runs a program; g_test_init() makes them fatal in this process too. */
  g_setenv ("G_DEBUG", "fatal-warnings", TRUE);
  g_unsetenv ("LAGWATCH_OUTPUT");
  g_unsetenv ("LAGWATCH_STATE_DIR");
  g_test_init (&argc, &argv, NULL);
  /* The subprocesses find the parent's directory in the environment. */
  tmp_dir = g_strdup (g_getenv ("LW_TEST_HOSTILE_DIR"));
  if (tmp_dir == NULL)
    {
      tmp_dir = g_dir_make_tmp ("lagwatch-hostile-XXXXXX", NULL);
      g_setenv ("LW_TEST_HOSTILE_DIR", tmp_dir, TRUE);
    }
  g_test_add_func ("/hostile/fatal-warnings/json-unopenable", test_json_unopenable);
  g_test_add_func ("/hostile/fatal-warnings/garbage-record", test_garbage_record);
  status = g_test_run ();
  if (!g_test_subprocess ())
    remove_tree (tmp_dir);
  return status;
}
