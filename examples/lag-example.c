/* lag-example: a GLib program that freezes its main loop three ways, with
 * lagwatch attached, so each lag is reported on stderr as it ends.
 *
 *   busy: 250 ms of computation in a timeout callback
 *   sleep: 300 ms in usleep() (taken from /proc: no signal, no EINTR)
 *   qsort: 200 ms sorting with a slow comparator
 */
#include <stdlib.h>
#include <unistd.h>

#include "lagwatch.h"

static GMainLoop *loop;

static __attribute__ ((noipa)) void
spin_for_ms (int ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

static __attribute__ ((noipa)) int
compare_slowly (const void *a, const void *b)
{
  spin_for_ms (2);
  return *(const int *) a - *(const int *) b;
}

static gboolean
freeze_busy (gpointer data)
{
  spin_for_ms (250);
  return G_SOURCE_REMOVE;
}

static gboolean
freeze_sleeping (gpointer data)
{
  usleep (300 * 1000);
  return G_SOURCE_REMOVE;
}

static gboolean
freeze_sorting (gpointer data)
{
  int values[24];

  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    values[i] = (int) (G_N_ELEMENTS (values) - i);
  qsort (values, G_N_ELEMENTS (values), sizeof values[0], compare_slowly);
  return G_SOURCE_REMOVE;
}

/* A timeout with a name: reports say which GSource was running. */
static void
add_named_timeout (guint ms, GSourceFunc func, const char *name)
{
  GSource *source = g_timeout_source_new (ms);

  g_source_set_name (source, name);
  g_source_set_callback (source, func, NULL, NULL);
  g_source_attach (source, NULL);
  g_source_unref (source);
}

static gboolean
quit (gpointer data)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (void)
{
  LagWatch *watch = lagwatch_attach (NULL);

  loop = g_main_loop_new (NULL, FALSE);
  add_named_timeout (100, freeze_busy, "example: busy");
  add_named_timeout (600, freeze_sleeping, "example: sleeping");
  add_named_timeout (1100, freeze_sorting, "example: sorting");
  g_timeout_add (1600, quit, NULL);
  g_main_loop_run (loop);
  g_main_loop_unref (loop);
  lagwatch_detach (watch);
  return 0;
}
