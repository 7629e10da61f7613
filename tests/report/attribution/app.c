/* app.c: attribution-app LEAVES..., a GLib program whose lags are all in
 * its private library's churn() (churn.c), through the platform leaves
 * LEAVES (0 libc, 1 libm, 2 libz, 3 cairo). One 300 ms lag per leaf, one
 * after the other, from the same callback; it quits once the JSON output
 * ($LW_TEST_REPORT_FILE) holds one line per lag, or after 60 s.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib.h>
#include <stdlib.h>

void churn (int leaf, int ms);

static GMainLoop *loop;
static char **leaves;
static int next;
static int n_leaves;
static gint64 deadline;

static guint
lines_in (const char *path)
{
  g_autofree char *contents = NULL;
  guint n = 0;

  if (path == NULL || !g_file_get_contents (path, &contents, NULL, NULL))
    return 0;
  for (const char *p = contents; *p != '\0'; p++)
    n += *p == '\n';
  return n;
}

/* Loop thread. The callback of every lag. */
__attribute__ ((noipa)) gboolean
on_tick (gpointer data)
{
  (void) data;
  if (next < n_leaves)
    {
      churn (atoi (leaves[next]), 300);
      next++;
      return G_SOURCE_CONTINUE;
    }
  if (lines_in (g_getenv ("LW_TEST_REPORT_FILE")) >= (guint) n_leaves || g_get_monotonic_time () > deadline)
    {
      g_main_loop_quit (loop);
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  leaves = argv + 1;
  n_leaves = argc - 1;
  deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  loop = g_main_loop_new (NULL, FALSE);
  g_timeout_add (50, on_tick, NULL);
  g_main_loop_run (loop);
  g_main_loop_unref (loop);
  return 0;
}
