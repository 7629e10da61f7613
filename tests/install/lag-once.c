/* lag-once: a GLib program that holds its main loop once, in usleep(),
 * then quits. The install test builds it twice, the way a user would:
 *  - plain, against glib-2.0 only: the launcher attaches lagwatch to it;
 *  - with -DLAG_ONCE_ATTACH, against lagwatch's pkg-config file: it
 *    attaches lagwatch itself, quits when the report arrives, and prints
 *    "reported lag of N ms". Exit status 1 if no report came in 60 s.
 */
#include <stdio.h>
#include <unistd.h>

#include <glib.h>
#ifdef LAG_ONCE_ATTACH
#include <lagwatch.h>
#endif

#define LAG_ONCE_MS 300

static GMainLoop *loop;
static gint reported_ms = -1;   /* (atomic) */

/* Loop thread. Not inlined: the report names it. */
static G_GNUC_NO_INLINE void
lag_once_freeze (void)
{
  usleep (LAG_ONCE_MS * 1000);
}

/* Loop thread. */
static gboolean
lag_once_idle (gpointer data)
{
  lag_once_freeze ();
#ifndef LAG_ONCE_ATTACH
  g_main_loop_quit (loop);
#endif
  return G_SOURCE_REMOVE;
}

/* Loop thread: the report never came. */
static gboolean
lag_once_give_up (gpointer data)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

#ifdef LAG_ONCE_ATTACH
/* lagwatch's reporting thread. g_main_loop_quit() may be called from any
 * thread. */
static void
lag_once_on_report (LagWatchReport *report, gpointer user_data)
{
  g_atomic_int_set (&reported_ms, (gint) lagwatch_report_get_duration_ms (report));
  g_main_loop_quit (loop);
}
#endif

int
main (void)
{
  GSource *source;

  loop = g_main_loop_new (NULL, FALSE);
  source = g_idle_source_new ();
  g_source_set_name (source, "lag-once: freeze");
  g_source_set_callback (source, lag_once_idle, NULL, NULL);
  g_source_attach (source, NULL);
  g_source_unref (source);
  g_timeout_add_seconds (60, lag_once_give_up, NULL);

#ifdef LAG_ONCE_ATTACH
  LagWatch *watch = lagwatch_attach (NULL);

  if (watch == NULL)
    return 1;
  lagwatch_set_report_func (watch, lag_once_on_report, NULL, NULL);
  g_main_loop_run (loop);
  lagwatch_detach (watch);
  if (g_atomic_int_get (&reported_ms) < 0)
    {
      fprintf (stderr, "lag-once: no report within 60 s\n");
      return 1;
    }
  printf ("reported lag of %d ms\n", g_atomic_int_get (&reported_ms));
#else
  g_main_loop_run (loop);
#endif
  g_main_loop_unref (loop);
  return 0;
}
