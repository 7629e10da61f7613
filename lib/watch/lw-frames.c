/* lw-frames.c: GTK 4 windows' frame clocks, followed without linking GTK */
#include "lw-frames.h"

#include <dlfcn.h>
#include <glib-object.h>
#include <stdatomic.h>
#include <string.h>

#include "lw-clock.h"
#include "lw-json.h"
#include "lw-report.h"
#include "lw-say.h"

/* GTK, GDK, GIO and GObject entry points, looked up in libgtk-4 (dlsym on
 * its handle searches its dependencies too). lib/ builds without GTK's or
 * GIO's headers, and must not pull libgobject into programs without it:
 * GTK objects are plain pointers here, and the GObject functions are
 * called through pointers of their own type, never linked. */
typedef struct
{
  gboolean (*gtk_is_initialized) (void);
  void *(*gtk_window_get_toplevels) (void);
  const char *(*gtk_window_get_title) (void *window);
  gboolean (*gtk_widget_get_mapped) (void *widget);
  void *(*gtk_native_get_surface) (void *native);
  void *(*gdk_surface_get_frame_clock) (void *surface);
  gint64 (*gdk_frame_clock_get_frame_time) (void *clock);
  void (*gdk_frame_clock_get_refresh_info) (void *clock, gint64 base_time,
                                            gint64 *refresh_interval, gint64 *presentation_time);
  guint (*g_list_model_get_n_items) (void *list);
  void *(*g_list_model_get_item) (void *list, guint position);
  __typeof__ (g_object_unref) *g_object_unref;
  __typeof__ (g_signal_connect_data) *g_signal_connect_data;
  __typeof__ (g_signal_handler_disconnect) *g_signal_handler_disconnect;
} LwGtk;

typedef enum
{
  LW_PHASE_UPDATE,
  LW_PHASE_LAYOUT,
  LW_PHASE_PAINT,
  LW_N_PHASES
} LwPhase;

static const char *const lw_phase_names[LW_N_PHASES] = { "update", "layout", "paint" };

/* One toplevel window. Freed with its LwFrames. */
typedef struct
{
  LwFrames *frames;
  void     *window;       /* NULL once finalized (loop thread writes, under lock) */
  char     *title;        /* under the lock */
  gboolean  mapped;       /* under the lock */
  gulong    ids[4];       /* realize, map, unmap, notify::title */
} LwFramesWindow;

/* The frame clock of one realized window surface. Freed with its LwFrames. */
typedef struct
{
  LwFramesWindow *window;
  void           *clock;  /* NULL once finalized (loop thread writes, under lock) */
  gulong          ids[5]; /* before-paint, update, layout, paint, after-paint */

  /* Loop thread only: this frame's phase ends, 0 for a phase not run. */
  int64_t         frame_start_ns;
  int64_t         phase_end_ns[LW_N_PHASES];

  /* Under the lock. */
  int64_t         refresh_ns;
  guint64         n_frames;
  guint64         n_slow;
  guint64         slow_by_phase[LW_N_PHASES];
} LwFramesClock;

struct _LwFrames
{
  gint             ref_count;    /* atomic: the watch's, the connector's, one per handler */
  GMutex           lock;
  void            *gtk;          /* dlopen handle on the loaded libgtk-4 */
  LwGtk            fn;
  GSource         *connector;
  _Atomic guint    threshold_ms;
  _Atomic gboolean stopped;
  GThread         *loop_thread;  /* set by the connector, under the lock */
  void            *toplevels;    /* GTK's list of toplevels (never freed by GTK) */
  gulong           toplevels_id;
  GPtrArray       *windows;      /* LwFramesWindow, under the lock */
  GPtrArray       *clocks;       /* LwFramesClock, under the lock */
};

/* Any thread. */
static LwFrames *
lw_frames_ref (LwFrames *frames)
{
  g_atomic_int_inc (&frames->ref_count);
  return frames;
}

static void
lw_frames_window_free (gpointer data)
{
  LwFramesWindow *window = data;

  g_free (window->title);
  g_free (window);
}

/* Any thread. The last reference frees every window and clock record. */
static void
lw_frames_unref (LwFrames *frames)
{
  if (!g_atomic_int_dec_and_test (&frames->ref_count))
    return;
  g_ptr_array_unref (frames->clocks);
  g_ptr_array_unref (frames->windows);
  g_mutex_clear (&frames->lock);
  dlclose (frames->gtk);
  g_free (frames);
}

/* Loop thread: a handler's closure is gone (disconnected, or its object
 * finalized). */
static void
lw_frames_handler_gone (gpointer data, GClosure *closure)
{
  LwFramesWindow *window = data;

  lw_frames_unref (window->frames);
}

static void
lw_frames_window_gone (gpointer data, GClosure *closure)
{
  LwFramesWindow *window = data;
  LwFrames *frames = window->frames;

  g_mutex_lock (&frames->lock);
  window->window = NULL;
  g_mutex_unlock (&frames->lock);
  lw_frames_unref (frames);
}

static void
lw_frames_clock_handler_gone (gpointer data, GClosure *closure)
{
  LwFramesClock *clock = data;

  lw_frames_unref (clock->window->frames);
}

static void
lw_frames_clock_gone (gpointer data, GClosure *closure)
{
  LwFramesClock *clock = data;
  LwFrames *frames = clock->window->frames;

  g_mutex_lock (&frames->lock);
  clock->clock = NULL;
  g_mutex_unlock (&frames->lock);
  lw_frames_unref (frames);
}

/* Loop thread. Connects @handler to @instance's @signal, holding a
 * reference on @frames until the handler is gone. */
static gulong
lw_frames_connect (LwFrames *frames, void *instance, const char *signal, GCallback handler,
                   gpointer data, GClosureNotify gone, gboolean after)
{
  lw_frames_ref (frames);
  return frames->fn.g_signal_connect_data (instance, signal, handler, data, gone,
                                           after ? G_CONNECT_AFTER : 0);
}

/* Loop thread. The refresh interval @clock reports, in ns (GDK's default,
 * 1/60 s, until the display says otherwise). */
static int64_t
lw_frames_refresh_ns (LwFrames *frames, void *clock)
{
  gint64 interval_us = 0, presentation_us = 0;

  frames->fn.gdk_frame_clock_get_refresh_info (clock, frames->fn.gdk_frame_clock_get_frame_time (clock),
                                               &interval_us, &presentation_us);
  return interval_us * 1000;
}

/* Loop thread: the frame clock starts a frame. */
static void
lw_frames_on_before_paint (void *instance, gpointer data)
{
  LwFramesClock *clock = data;

  if (atomic_load (&clock->window->frames->stopped))
    return;
  clock->frame_start_ns = lw_clock_now_ns ();
  memset (clock->phase_end_ns, 0, sizeof clock->phase_end_ns);
}

/* Loop thread, after every other handler of the phase: its end. */
static void
lw_frames_stamp (LwFramesClock *clock, LwPhase phase)
{
  if (!atomic_load (&clock->window->frames->stopped))
    clock->phase_end_ns[phase] = lw_clock_now_ns ();
}

static void
lw_frames_on_update (void *instance, gpointer data)
{
  lw_frames_stamp (data, LW_PHASE_UPDATE);
}

static void
lw_frames_on_layout (void *instance, gpointer data)
{
  lw_frames_stamp (data, LW_PHASE_LAYOUT);
}

static void
lw_frames_on_paint (void *instance, gpointer data)
{
  lw_frames_stamp (data, LW_PHASE_PAINT);
}

/* Loop thread: the frame is done. A frame longer than the refresh interval
 * (but under the threshold: longer ones are lags) is slow; its slowest phase
 * is the one to blame. */
static void
lw_frames_on_after_paint (void *instance, gpointer data)
{
  LwFramesClock *clock = data;
  LwFrames *frames = clock->window->frames;
  int64_t now_ns = lw_clock_now_ns ();
  int64_t total_ns = now_ns - clock->frame_start_ns;
  int64_t refresh_ns, previous_ns = clock->frame_start_ns, slowest_ns = -1;
  LwPhase slowest = LW_PHASE_UPDATE;

  if (atomic_load (&frames->stopped) || clock->frame_start_ns == 0)
    return;
  for (int phase = 0; phase < LW_N_PHASES; phase++)
    if (clock->phase_end_ns[phase] != 0)
      {
        if (clock->phase_end_ns[phase] - previous_ns > slowest_ns)
          {
            slowest_ns = clock->phase_end_ns[phase] - previous_ns;
            slowest = phase;
          }
        previous_ns = clock->phase_end_ns[phase];
      }
  refresh_ns = lw_frames_refresh_ns (frames, instance);

  g_mutex_lock (&frames->lock);
  clock->refresh_ns = refresh_ns;
  clock->n_frames++;
  if (refresh_ns > 0 && total_ns > refresh_ns && slowest_ns >= 0
      && total_ns < (int64_t) atomic_load (&frames->threshold_ms) * LW_NSEC_PER_MSEC)
    {
      clock->n_slow++;
      clock->slow_by_phase[slowest]++;
    }
  g_mutex_unlock (&frames->lock);
  clock->frame_start_ns = 0;
}

/* Loop thread. Follows the frame clock of @window's surface, if realized. */
static void
lw_frames_follow_clock (LwFramesWindow *window)
{
  LwFrames *frames = window->frames;
  void *surface = frames->fn.gtk_native_get_surface (window->window);
  void *instance = surface != NULL ? frames->fn.gdk_surface_get_frame_clock (surface) : NULL;
  LwFramesClock *clock;

  if (instance == NULL)
    return;
  for (guint i = 0; i < frames->clocks->len; i++)
    if (((LwFramesClock *) frames->clocks->pdata[i])->clock == instance)
      return;
  clock = g_new0 (LwFramesClock, 1);
  clock->window = window;
  clock->clock = instance;
  clock->refresh_ns = lw_frames_refresh_ns (frames, instance);
  g_ptr_array_add (frames->clocks, clock);
  clock->ids[0] = lw_frames_connect (frames, instance, "before-paint", G_CALLBACK (lw_frames_on_before_paint),
                                     clock, lw_frames_clock_handler_gone, FALSE);
  clock->ids[1] = lw_frames_connect (frames, instance, "update", G_CALLBACK (lw_frames_on_update),
                                     clock, lw_frames_clock_handler_gone, TRUE);
  clock->ids[2] = lw_frames_connect (frames, instance, "layout", G_CALLBACK (lw_frames_on_layout),
                                     clock, lw_frames_clock_handler_gone, TRUE);
  clock->ids[3] = lw_frames_connect (frames, instance, "paint", G_CALLBACK (lw_frames_on_paint),
                                     clock, lw_frames_clock_handler_gone, TRUE);
  clock->ids[4] = lw_frames_connect (frames, instance, "after-paint", G_CALLBACK (lw_frames_on_after_paint),
                                     clock, lw_frames_clock_gone, TRUE);
}

/* Loop thread: a window got a surface (its first, or a new one). */
static void
lw_frames_on_realize (void *instance, gpointer data)
{
  LwFramesWindow *window = data;
  LwFrames *frames = window->frames;

  if (atomic_load (&frames->stopped))
    return;
  g_mutex_lock (&frames->lock);
  lw_frames_follow_clock (window);
  g_mutex_unlock (&frames->lock);
}

/* Loop thread, under the lock. */
static void
lw_frames_take_title (LwFramesWindow *window)
{
  const char *title = window->frames->fn.gtk_window_get_title (window->window);

  if (g_strcmp0 (title, window->title) != 0)
    {
      g_free (window->title);
      window->title = g_strdup (title);
    }
}

static void
lw_frames_on_title (void *instance, GParamSpec *pspec, gpointer data)
{
  LwFramesWindow *window = data;

  if (atomic_load (&window->frames->stopped))
    return;
  g_mutex_lock (&window->frames->lock);
  lw_frames_take_title (window);
  g_mutex_unlock (&window->frames->lock);
}

static void
lw_frames_set_mapped (LwFramesWindow *window, gboolean mapped)
{
  if (atomic_load (&window->frames->stopped))
    return;
  g_mutex_lock (&window->frames->lock);
  window->mapped = mapped;
  g_mutex_unlock (&window->frames->lock);
}

static void
lw_frames_on_map (void *instance, gpointer data)
{
  lw_frames_set_mapped (data, TRUE);
}

static void
lw_frames_on_unmap (void *instance, gpointer data)
{
  lw_frames_set_mapped (data, FALSE);
}

/* Loop thread, under the lock. Follows a new toplevel @instance. */
static void
lw_frames_follow_window (LwFrames *frames, void *instance)
{
  LwFramesWindow *window = g_new0 (LwFramesWindow, 1);

  window->frames = frames;
  window->window = instance;
  window->mapped = frames->fn.gtk_widget_get_mapped (instance);
  g_ptr_array_add (frames->windows, window);
  lw_frames_take_title (window);
  window->ids[0] = lw_frames_connect (frames, instance, "realize", G_CALLBACK (lw_frames_on_realize),
                                      window, lw_frames_handler_gone, TRUE);
  window->ids[1] = lw_frames_connect (frames, instance, "map", G_CALLBACK (lw_frames_on_map),
                                      window, lw_frames_handler_gone, TRUE);
  window->ids[2] = lw_frames_connect (frames, instance, "unmap", G_CALLBACK (lw_frames_on_unmap),
                                      window, lw_frames_handler_gone, TRUE);
  window->ids[3] = lw_frames_connect (frames, instance, "notify::title", G_CALLBACK (lw_frames_on_title),
                                      window, lw_frames_window_gone, TRUE);
  lw_frames_follow_clock (window);
}

/* Loop thread, under the lock. Follows the toplevels at @position ..
 * @position + @added - 1 of GTK's list. */
static void
lw_frames_follow_windows (LwFrames *frames, guint position, guint added)
{
  for (guint i = position; i < position + added; i++)
    {
      void *instance = frames->fn.g_list_model_get_item (frames->toplevels, i);

      if (instance == NULL)
        continue;
      lw_frames_follow_window (frames, instance);
      frames->fn.g_object_unref (instance);  /* the list holds it; its handlers tell us when it goes */
    }
}

/* Loop thread: toplevels were added to GTK's list (a new window is added
 * as it is created, before it is realized or mapped). */
static void
lw_frames_on_toplevels_changed (void *list, guint position, guint removed, guint added, gpointer data)
{
  LwFrames *frames = data;

  if (atomic_load (&frames->stopped))
    return;
  g_mutex_lock (&frames->lock);
  lw_frames_follow_windows (frames, position, added);
  g_mutex_unlock (&frames->lock);
}

static void
lw_frames_toplevels_gone (gpointer data, GClosure *closure)
{
  lw_frames_unref (data);
}

/* The connector: ready once GTK is initialized (no window exists before),
 * then connects on the loop thread and goes. Its prepare is one call per
 * iteration until then; no wake-up of its own. */
typedef struct
{
  GSource   source;
  LwFrames *frames;
} LwFramesConnector;

static gboolean
lw_frames_connector_prepare (GSource *source, gint *timeout)
{
  LwFrames *frames = ((LwFramesConnector *) source)->frames;

  *timeout = -1;
  return frames->fn.gtk_is_initialized ();
}

/* Loop thread. Follows the toplevels there are, and those to come. */
static gboolean
lw_frames_connector_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  LwFrames *frames = ((LwFramesConnector *) source)->frames;

  g_mutex_lock (&frames->lock);
  if (!atomic_load (&frames->stopped))
    {
      frames->loop_thread = g_thread_self ();
      frames->toplevels = frames->fn.gtk_window_get_toplevels ();
      frames->toplevels_id = lw_frames_connect (frames, frames->toplevels, "items-changed",
                                                G_CALLBACK (lw_frames_on_toplevels_changed), frames,
                                                lw_frames_toplevels_gone, FALSE);
      lw_frames_follow_windows (frames, 0, frames->fn.g_list_model_get_n_items (frames->toplevels));
    }
  g_mutex_unlock (&frames->lock);
  return G_SOURCE_REMOVE;
}

static void
lw_frames_connector_finalize (GSource *source)
{
  lw_frames_unref (((LwFramesConnector *) source)->frames);
}

static GSourceFuncs lw_frames_connector_funcs = {
  .prepare = lw_frames_connector_prepare,
  .dispatch = lw_frames_connector_dispatch,
  .finalize = lw_frames_connector_finalize,
};

/* Any thread. Looks up every entry point; FALSE when one is missing (not
 * the GTK 4 this file was written for). */
static gboolean
lw_frames_resolve (void *gtk, LwGtk *fn)
{
#define LW_RESOLVE(name) ((*(void **) &fn->name = dlsym (gtk, #name)) != NULL)
  return LW_RESOLVE (gtk_is_initialized) && LW_RESOLVE (gtk_window_get_toplevels)
         && LW_RESOLVE (gtk_window_get_title) && LW_RESOLVE (gtk_widget_get_mapped)
         && LW_RESOLVE (gtk_native_get_surface)
         && LW_RESOLVE (gdk_surface_get_frame_clock) && LW_RESOLVE (gdk_frame_clock_get_frame_time)
         && LW_RESOLVE (gdk_frame_clock_get_refresh_info) && LW_RESOLVE (g_list_model_get_n_items)
         && LW_RESOLVE (g_list_model_get_item) && LW_RESOLVE (g_object_unref)
         && LW_RESOLVE (g_signal_connect_data) && LW_RESOLVE (g_signal_handler_disconnect);
#undef LW_RESOLVE
}

LwFrames *
lw_frames_start (GMainContext *context, guint threshold_ms)
{
  void *gtk;
  LwFrames *frames;
  GSource *source;

  if (context != g_main_context_default ())
    return NULL;  /* GTK runs on the default context only */
  gtk = dlopen ("libgtk-4.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (gtk == NULL)
    return NULL;

  frames = g_new0 (LwFrames, 1);
  if (!lw_frames_resolve (gtk, &frames->fn))
    {
      lw_say ("libgtk-4 is loaded but lacks a function lagwatch calls; its frames are not followed");
      dlclose (gtk);
      g_free (frames);
      return NULL;
    }
  frames->ref_count = 1;
  frames->gtk = gtk;
  g_mutex_init (&frames->lock);
  atomic_store (&frames->threshold_ms, threshold_ms);
  frames->windows = g_ptr_array_new_with_free_func (lw_frames_window_free);
  frames->clocks = g_ptr_array_new_with_free_func (g_free);

  source = g_source_new (&lw_frames_connector_funcs, sizeof (LwFramesConnector));
  ((LwFramesConnector *) source)->frames = lw_frames_ref (frames);
  g_source_set_priority (source, G_PRIORITY_HIGH);
  g_source_set_name (source, "lagwatch: frames");
  frames->connector = source;
  g_source_attach (source, context);
  return frames;
}

/* A handler to disconnect once the lock is released (disconnecting runs
 * the destroy notifies, which take the lock). */
typedef struct
{
  void  *instance;
  gulong id;
} LwHandler;

/* Loop thread, under the lock. */
static void
lw_frames_collect_handlers (LwFrames *frames, GArray *handlers)
{
  LwHandler handler;

  if (frames->toplevels_id != 0)
    {
      handler = (LwHandler) { frames->toplevels, frames->toplevels_id };
      g_array_append_val (handlers, handler);
    }
  for (guint i = 0; i < frames->windows->len; i++)
    {
      LwFramesWindow *window = frames->windows->pdata[i];

      for (guint j = 0; window->window != NULL && j < G_N_ELEMENTS (window->ids); j++)
        {
          handler = (LwHandler) { window->window, window->ids[j] };
          g_array_append_val (handlers, handler);
        }
    }
  for (guint i = 0; i < frames->clocks->len; i++)
    {
      LwFramesClock *clock = frames->clocks->pdata[i];

      for (guint j = 0; clock->clock != NULL && j < G_N_ELEMENTS (clock->ids); j++)
        {
          handler = (LwHandler) { clock->clock, clock->ids[j] };
          g_array_append_val (handlers, handler);
        }
    }
}

void
lw_frames_stop (LwFrames *frames)
{
  g_autoptr(GArray) handlers = g_array_new (FALSE, FALSE, sizeof (LwHandler));

  if (frames == NULL)
    return;
  g_source_destroy (frames->connector);
  g_source_unref (frames->connector);

  g_mutex_lock (&frames->lock);
  atomic_store (&frames->stopped, TRUE);
  /* Off the loop thread a window could be finalized while we disconnect:
   * its handlers are left to go with it, doing nothing. */
  if (frames->loop_thread == g_thread_self ())
    lw_frames_collect_handlers (frames, handlers);
  g_mutex_unlock (&frames->lock);

  for (guint i = 0; i < handlers->len; i++)
    {
      const LwHandler *handler = &g_array_index (handlers, LwHandler, i);

      frames->fn.g_signal_handler_disconnect (handler->instance, handler->id);
    }
  lw_frames_unref (frames);
}

void
lw_frames_set_threshold_ms (LwFrames *frames, guint threshold_ms)
{
  if (frames != NULL)
    atomic_store (&frames->threshold_ms, threshold_ms);
}

void
lw_frames_fill_report (LwFrames *frames, LagWatchReport *report, int64_t duration_ns)
{
  GArray *windows;

  if (frames == NULL)
    return;
  windows = g_array_new (FALSE, TRUE, sizeof (LwReportWindow));
  g_mutex_lock (&frames->lock);
  for (guint i = 0; i < frames->clocks->len; i++)
    {
      const LwFramesClock *clock = frames->clocks->pdata[i];
      LwReportWindow window;

      /* A hidden window shows no frame to miss; one whose refresh interval
       * is unknown cannot say how many. */
      if (clock->clock == NULL || clock->window->window == NULL || !clock->window->mapped
          || clock->refresh_ns <= 0)
        continue;
      window.title = g_strdup (clock->window->title);
      window.refresh_interval_ms = (double) clock->refresh_ns / LW_NSEC_PER_MSEC;
      /* The loop ran no frame clock during the lag: the window drew
       * nothing for every refresh interval the lag covered. */
      window.frames_missed = (guint) MIN (duration_ns / clock->refresh_ns, G_MAXUINT);
      g_array_append_val (windows, window);
    }
  g_mutex_unlock (&frames->lock);
  report->frames_followed = TRUE;
  report->n_windows = windows->len;
  report->windows = (LwReportWindow *) g_array_free (windows, FALSE);
}

void
lw_frames_append_json (LwFrames *frames, GString *json)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  gboolean first = TRUE;

  if (frames == NULL)
    return;
  g_string_append (json, ",\"frames\":[");
  g_mutex_lock (&frames->lock);
  for (guint i = 0; i < frames->clocks->len; i++)
    {
      const LwFramesClock *clock = frames->clocks->pdata[i];

      if (clock->clock == NULL || clock->window->window == NULL)
        continue;
      g_string_append (json, first ? "{\"title\":" : ",{\"title\":");
      first = FALSE;
      lw_json_append_string (json, clock->window->title);
      g_string_append_printf (json, ",\"refresh_interval_ms\":%s",
                              g_ascii_formatd (buf, sizeof buf, "%.3f",
                                               (double) clock->refresh_ns / LW_NSEC_PER_MSEC));
      g_string_append_printf (json, ",\"frames\":%" G_GUINT64_FORMAT ",\"slow_frames\":%" G_GUINT64_FORMAT,
                              clock->n_frames, clock->n_slow);
      for (int phase = 0; phase < LW_N_PHASES; phase++)
        g_string_append_printf (json, ",\"slow_%s\":%" G_GUINT64_FORMAT,
                                lw_phase_names[phase], clock->slow_by_phase[phase]);
      g_string_append_c (json, '}');
    }
  g_mutex_unlock (&frames->lock);
  g_string_append_c (json, ']');
}
