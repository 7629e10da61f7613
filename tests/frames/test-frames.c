/* test-frames.c: GTK 4 windows' frames, on a real X server (Xvfb, started
 * by run-frames-test.sh)
 *
 * /frames/missed: a window animating at its refresh interval, frozen by a
 * 400 ms busy callback: the lag report counts the frames it missed, the
 * freeze as measured over the refresh interval GDK reports (± 2); a second
 * window, realized but hidden, draws nothing and is not counted.
 * /frames/slow-phases: below the threshold, frames longer than the refresh
 * interval are counted by their slowest phase: a tick callback that spins
 * (update), a draw function that spins (paint).
 *
 * Every wait is on a condition with a generous deadline.
 */
#include <glib/gstdio.h>
#include <gtk/gtk.h>
#include <time.h>
#include <unistd.h>
#include <json-glib/json-glib.h>

#include "lagwatch.h"
#include "lw-frames.h"

#define DEADLINE_US (60 * G_USEC_PER_SEC)
#define FREEZE_MS   400

/* Loop thread. Spins for @ms of wall time. */
static void
spin_ms (guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

/* Loop thread. Spins for @ms of this thread's CPU time: on a loaded
 * machine the phase that spins then stays the frame's longest, however
 * long the thread waits for a CPU in the others (a wall-time spin of 60 ms
 * lost to a paint phase the scheduler stretched past it: the soak saw 7
 * slow updates for 8 spun ticks). */
static void
spin_cpu_ms (guint ms)
{
  struct timespec now;
  gint64 end;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  end = now.tv_sec * G_USEC_PER_SEC + now.tv_nsec / 1000 + ms * 1000;
  do
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  while (now.tv_sec * G_USEC_PER_SEC + now.tv_nsec / 1000 < end);
}

/* Loop thread. Runs the default context until *@flag, or fails after the
 * deadline. */
static void
iterate_until (const gboolean *flag, const char *what)
{
  gint64 end = g_get_monotonic_time () + DEADLINE_US;

  while (!*flag)
    {
      if (g_get_monotonic_time () > end)
        g_error ("timed out waiting for %s", what);
      g_main_context_iteration (NULL, TRUE);
    }
}

typedef struct
{
  GtkWidget *window;
  GtkWidget *area;
  guint      frames;         /* tick callbacks run */
  guint      spin_ticks;     /* the next ticks spin for spin_ms */
  guint      spin_draws;     /* the next draws spin for spin_ms */
  guint      spin_ms;        /* of the thread's CPU time */
  gboolean   enough;         /* frames reached the wait's target */
  guint      target;
} Animated;

static gboolean
animated_tick (GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  Animated *animated = data;

  animated->frames++;
  if (animated->spin_ticks > 0)
    {
      animated->spin_ticks--;
      spin_cpu_ms (animated->spin_ms);
    }
  if (animated->frames >= animated->target)
    animated->enough = TRUE;
  gtk_widget_queue_draw (animated->area);
  return G_SOURCE_CONTINUE;
}

static void
animated_draw (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
  Animated *animated = data;

  if (animated->spin_draws > 0)
    {
      animated->spin_draws--;
      spin_cpu_ms (animated->spin_ms);
    }
  cairo_set_source_rgb (cr, (animated->frames % 60) / 60.0, 0.3, 0.5);
  cairo_paint (cr);
}

/* Loop thread. A shown window that draws on every frame. */
static void
animated_show (Animated *animated, const char *title)
{
  animated->window = gtk_window_new ();
  gtk_window_set_title (GTK_WINDOW (animated->window), title);
  gtk_window_set_default_size (GTK_WINDOW (animated->window), 200, 150);
  animated->area = gtk_drawing_area_new ();
  gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (animated->area), animated_draw, animated, NULL);
  gtk_window_set_child (GTK_WINDOW (animated->window), animated->area);
  gtk_widget_add_tick_callback (animated->area, animated_tick, animated, NULL);
  gtk_window_present (GTK_WINDOW (animated->window));
}

/* Loop thread. Runs until @animated has drawn @more frames. */
static void
animated_wait_frames (Animated *animated, guint more)
{
  animated->target = animated->frames + more;
  animated->enough = FALSE;
  iterate_until (&animated->enough, "frames");
}

/* Loop thread. The refresh interval GDK reports for @widget's surface, ms. */
static double
refresh_interval_ms (GtkWidget *widget)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (widget);
  gint64 interval_us = 0, presentation_us = 0;

  gdk_frame_clock_get_refresh_info (clock, gdk_frame_clock_get_frame_time (clock),
                                    &interval_us, &presentation_us);
  return interval_us / 1000.0;
}

typedef struct
{
  GMutex          lock;
  LagWatchReport *report;
  gboolean        arrived;   /* read on the loop thread after the lock */
} Received;

/* Reporting thread. Keeps the first report, wakes the loop. */
static void
on_report (LagWatchReport *report, gpointer data)
{
  Received *received = data;

  g_mutex_lock (&received->lock);
  if (received->report == NULL)
    received->report = lagwatch_report_ref (report);
  g_mutex_unlock (&received->lock);
  g_main_context_wakeup (NULL);
}

/* Loop thread. Runs until a report came. */
static void
wait_report (Received *received)
{
  gint64 end = g_get_monotonic_time () + DEADLINE_US;

  for (;;)
    {
      g_mutex_lock (&received->lock);
      received->arrived = received->report != NULL;
      g_mutex_unlock (&received->lock);
      if (received->arrived)
        return;
      if (g_get_monotonic_time () > end)
        g_error ("timed out waiting for the lag report");
      g_main_context_iteration (NULL, TRUE);
    }
}

typedef struct
{
  gint64   spun_us;   /* the freeze as measured */
  gboolean done;
} Freeze;

static gboolean
freeze_once (gpointer data)
{
  Freeze *freeze = data;
  gint64 start = g_get_monotonic_time ();

  spin_ms (FREEZE_MS);
  freeze->spun_us = g_get_monotonic_time () - start;
  freeze->done = TRUE;
  return G_SOURCE_REMOVE;
}

static void
test_missed (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  Received received = { 0 };
  Animated shown = { 0 };
  GtkWidget *hidden;
  Freeze freeze = { 0 };
  LagWatch *watch;
  const char *title = NULL;
  double interval_ms = 0, gdk_interval_ms, expected;
  guint missed;
  g_autofree char *json = NULL;
  g_autofree char *text = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonArray *windows;
  JsonObject *window;

  g_autofree char *records_path = g_strdup_printf ("%s/lagwatch-frames-%d.jsonl", g_get_tmp_dir (), (int) getpid ());
  g_autofree char *output = g_strconcat ("json:", records_path, NULL);
  g_autofree char *records = NULL;
  g_auto(GStrv) lines = NULL;
  gboolean stats_seen = FALSE;

  g_mutex_init (&received.lock);
  g_assert_true (lagwatch_config_set_threshold_ms (config, 100));
  g_unlink (records_path);
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  watch = lagwatch_attach_with_config (NULL, config);
  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, on_report, &received, NULL);

  /* Created after the attach: found through GTK's list of toplevels. */
  hidden = gtk_window_new ();
  gtk_window_set_title (GTK_WINDOW (hidden), "hidden");
  gtk_widget_realize (hidden);
  animated_show (&shown, "frames test");
  animated_wait_frames (&shown, 30);
  gdk_interval_ms = refresh_interval_ms (shown.window);
  g_test_message ("GDK's refresh interval on this display: %.3f ms", gdk_interval_ms);
  g_assert_cmpfloat (gdk_interval_ms, >, 0);

  g_idle_add (freeze_once, &freeze);
  iterate_until (&freeze.done, "the freeze");
  wait_report (&received);

  text = lagwatch_report_to_text (received.report);
  json = lagwatch_report_to_json (received.report);
  g_test_message ("%s", text);
  g_assert_cmpuint (lagwatch_report_get_n_windows (received.report), ==, 1);
  missed = lagwatch_report_get_frames_missed (received.report, 0, &title, &interval_ms);
  g_assert_cmpstr (title, ==, "frames test");
  g_assert_cmpfloat_with_epsilon (interval_ms, gdk_interval_ms, 0.01);
  expected = (freeze.spun_us / 1000.0) / gdk_interval_ms;
  g_test_message ("froze %.1f ms: %u frames missed, %.1f expected at %.3f ms",
                  freeze.spun_us / 1000.0, missed, expected, interval_ms);
  g_assert_cmpfloat (missed, >=, expected - 2);
  g_assert_cmpfloat (missed, <=, expected + 2);
  g_assert_nonnull (strstr (text, "the window 'frames test' missed "));

  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  windows = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                          "frames_missed");
  g_assert_cmpuint (json_array_get_length (windows), ==, 1);
  window = json_array_get_object_element (windows, 0);
  g_assert_cmpstr (json_object_get_string_member (window, "title"), ==, "frames test");
  g_assert_cmpint (json_object_get_int_member (window, "frames_missed"), ==, missed);
  g_assert_cmpfloat_with_epsilon (json_object_get_double_member (window, "refresh_interval_ms"),
                                  gdk_interval_ms, 0.001);

  lagwatch_detach (watch);
  /* The stats record written at detach counts each window's frames. */
  g_assert_true (g_file_get_contents (records_path, &records, NULL, NULL));
  g_unlink (records_path);
  lines = g_strsplit (records, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_autoptr(JsonParser) stats_parser = json_parser_new ();
      JsonArray *counted;
      gboolean found = FALSE;

      if (!g_str_has_prefix (lines[i], "{\"event\":\"stats\""))
        continue;
      g_test_message ("%s", lines[i]);
      g_assert_true (json_parser_load_from_data (stats_parser, lines[i], -1, NULL));
      counted = json_object_get_array_member (json_node_get_object (json_parser_get_root (stats_parser)),
                                              "frames");
      g_assert_nonnull (counted);
      for (guint k = 0; k < json_array_get_length (counted); k++)
        {
          JsonObject *counts = json_array_get_object_element (counted, k);

          if (g_strcmp0 (json_object_get_string_member (counts, "title"), "frames test") != 0)
            continue;
          g_assert_cmpint (json_object_get_int_member (counts, "frames"), >=, 30);
          g_assert_true (json_object_has_member (counts, "slow_frames"));
          found = TRUE;
        }
      g_assert_true (found);
      stats_seen = TRUE;
    }
  g_assert_true (stats_seen);
  lagwatch_report_unref (received.report);
  g_mutex_clear (&received.lock);
  gtk_window_destroy (GTK_WINDOW (shown.window));
  gtk_window_destroy (GTK_WINDOW (hidden));
}

/* Any thread. The "frames" member of lw_frames_append_json's output, for
 * the window titled @title. */
static JsonObject *
frames_window (LwFrames *frames, JsonParser *parser, const char *title)
{
  g_autoptr(GString) json = g_string_new ("{\"x\":0");
  JsonArray *windows;

  lw_frames_append_json (frames, json);
  g_string_append_c (json, '}');
  g_test_message ("%s", json->str);
  g_assert_true (json_parser_load_from_data (parser, json->str, -1, NULL));
  windows = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "frames");
  for (guint i = 0; i < json_array_get_length (windows); i++)
    {
      JsonObject *window = json_array_get_object_element (windows, i);

      if (g_strcmp0 (json_object_get_string_member (window, "title"), title) == 0)
        return window;
    }
  g_error ("no window \"%s\" in the frames", title);
}

static void
test_slow_phases (void)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  Animated shown = { 0 };
  JsonObject *window;
  LwFrames *frames;
  gint64 slow_update, slow_paint, slow;
  const guint n_spins = 8;

  /* GTK's windows live on the default context only. */
  {
    GMainContext *other = g_main_context_new ();

    g_assert_null (lw_frames_start (other, 1000));
    g_main_context_unref (other);
  }

  /* Shown before following starts: found among the existing toplevels. */
  animated_show (&shown, "slow phases");
  animated_wait_frames (&shown, 10);
  /* Spins of 60 ms: over any refresh interval, under the 1 s threshold. */
  shown.spin_ms = 60;
  frames = lw_frames_start (g_main_context_default (), 1000);
  g_assert_nonnull (frames);
  animated_wait_frames (&shown, 5);

  window = frames_window (frames, parser, "slow phases");
  g_assert_cmpint (json_object_get_int_member (window, "frames"), >=, 5);
  slow_update = json_object_get_int_member (window, "slow_update");
  slow_paint = json_object_get_int_member (window, "slow_paint");

  shown.spin_ticks = n_spins;
  animated_wait_frames (&shown, n_spins + 2);
  window = frames_window (frames, parser, "slow phases");
  g_assert_cmpint (json_object_get_int_member (window, "slow_update") - slow_update, >=, n_spins);
  slow_update = json_object_get_int_member (window, "slow_update");

  shown.spin_draws = n_spins;
  animated_wait_frames (&shown, n_spins + 2);
  g_assert_cmpuint (shown.spin_draws, ==, 0);
  window = frames_window (frames, parser, "slow phases");
  g_assert_cmpint (json_object_get_int_member (window, "slow_paint") - slow_paint, >=, n_spins);
  slow = json_object_get_int_member (window, "slow_frames");
  g_assert_cmpint (slow, >=, json_object_get_int_member (window, "slow_update")
                             + json_object_get_int_member (window, "slow_paint"));
  g_assert_cmpint (json_object_get_int_member (window, "slow_update"), >=, slow_update);

  /* On the loop thread: every handler goes at once. */
  lw_frames_stop (frames);
  gtk_window_destroy (GTK_WINDOW (shown.window));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  gtk_init ();
  g_test_add_func ("/frames/missed", test_missed);
  g_test_add_func ("/frames/slow-phases", test_slow_phases);
  return g_test_run ();
}
