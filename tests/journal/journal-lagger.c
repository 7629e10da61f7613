/* journal-lagger: a GLib program with lagwatch attached that lags on
 * demand, for the journal tests (run-journal-test.sh).
 *
 *   journal-lagger lag N   N lags of 300 ms in GSource "journal-test: spin"
 *   journal-lagger unnamed N  the same in an unnamed g_timeout_add() source
 *   journal-lagger hang    one lag that lasts until the process is killed
 *   journal-lagger quiet   attaches, iterates once, detaches: no lag
 *
 * Every lag spins in journal_test_spin(): the journal entry's CODE_FUNC.
 */
#include <stdlib.h>

#include "lagwatch.h"

static GMainLoop *loop;
static guint lags_left;

/* Loop thread. Spins for @ms, or forever when @ms < 0. */
static __attribute__ ((noipa)) void
journal_test_spin (int ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;

  while (ms < 0 || g_get_monotonic_time () < end)
    ;
}

/* Loop thread. */
static gboolean
quit (gpointer data)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

/* Loop thread. The quit comes from a later timeout: the loop polls in
 * between, which ends the last lag before the detach. */
static gboolean
lag_once (gpointer data)
{
  journal_test_spin (GPOINTER_TO_INT (data));
  if (--lags_left > 0)
    return G_SOURCE_CONTINUE;
  g_timeout_add (50, quit, NULL);
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  LagWatch *watch = lagwatch_attach (NULL);
  GSource *source;

  if (watch == NULL)
    return 1;
  loop = g_main_loop_new (NULL, FALSE);
  if ((g_str_equal (mode, "lag") || g_str_equal (mode, "unnamed")) && argc > 2)
    lags_left = (guint) atoi (argv[2]);
  else if (g_str_equal (mode, "hang"))
    lags_left = 1;
  else if (!g_str_equal (mode, "quiet"))
    {
      g_printerr ("usage: journal-lagger lag N | unnamed N | hang | quiet\n");
      return 2;
    }
  if (lags_left > 0 && g_str_equal (mode, "unnamed"))
    {
      g_timeout_add (50, lag_once, GINT_TO_POINTER (300));
      g_main_loop_run (loop);
    }
  else if (lags_left > 0)
    {
      source = g_timeout_source_new (50);
      g_source_set_name (source, "journal-test: spin");
      g_source_set_callback (source, lag_once,
                             GINT_TO_POINTER (g_str_equal (mode, "hang") ? -1 : 300), NULL);
      g_source_attach (source, NULL);
      g_source_unref (source);
      g_main_loop_run (loop);
    }
  else
    g_main_context_iteration (NULL, FALSE);
  g_main_loop_unref (loop);
  lagwatch_detach (watch);
  return 0;
}
