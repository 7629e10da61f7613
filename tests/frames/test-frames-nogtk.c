/* test-frames-nogtk.c: a program without GTK pays nothing for the frames:
 * nothing is followed and no GTK is loaded, and a report has no
 * "frames_missed" member. */
#include <dlfcn.h>
#include <string.h>

#include <glib.h>

#include "lagwatch.h"
#include "lw-frames.h"

static void
test_no_gtk (void)
{
  g_assert_null (lw_frames_start (g_main_context_default (), 100));
  g_assert_null (dlopen ("libgtk-4.so.1", RTLD_LAZY | RTLD_NOLOAD));
}

static gboolean
spin_150_ms (gpointer data)
{
  gint64 end = g_get_monotonic_time () + 150 * 1000;

  while (g_get_monotonic_time () < end)
    ;
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

static void
on_report (LagWatchReport *report, gpointer data)
{
  GAsyncQueue *reports = data;

  g_async_queue_push (reports, lagwatch_report_ref (report));
  g_main_context_wakeup (NULL);
}

/* A lag report of a program without GTK: no windows, no member. */
static void
test_report_without_windows (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GAsyncQueue *reports = g_async_queue_new ();
  gboolean spun = FALSE;
  LagWatchReport *report = NULL;
  g_autofree char *json = NULL;
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  LagWatch *watch;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  watch = lagwatch_attach_with_config (NULL, config);
  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, on_report, reports, NULL);
  g_idle_add (spin_150_ms, &spun);
  while ((report = g_async_queue_try_pop (reports)) == NULL)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_main_context_iteration (NULL, TRUE);
    }
  g_assert_true (spun);
  json = lagwatch_report_to_json (report);
  g_assert_cmpuint (lagwatch_report_get_n_windows (report), ==, 0);
  g_assert_null (strstr (json, "frames_missed"));
  lagwatch_report_unref (report);
  lagwatch_detach (watch);
  g_async_queue_unref (reports);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/frames/no-gtk", test_no_gtk);
  g_test_add_func ("/frames/report-without-windows", test_report_without_windows);
  return g_test_run ();
}
