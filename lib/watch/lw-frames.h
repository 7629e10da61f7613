/* lw-frames.h: the frames of a GTK 4 program's windows
 *
 * When GTK 4 is already loaded in the process (libgtk-4.so.1, looked up with
 * RTLD_NOLOAD: liblagwatch never links or loads GTK), lagwatch follows the
 * GdkFrameClock of every toplevel window of the watched loop. All GTK,
 * GObject and GIO calls are looked up at run time with dlsym, so a program
 * without GTK pays nothing: no lookup beyond one dlopen(RTLD_NOLOAD), no
 * source, no signal.
 *
 * GTK may only be called on its own thread, the thread of the default main
 * context: a GSource attached to that context connects the handlers from the
 * loop thread once GTK is initialized, then for each new toplevel (the
 * toplevels list's "items-changed") and each realized surface (the window's
 * "realize"). The frame clock's handlers stamp each frame's phases (update,
 * layout, paint) into memory the other threads read under a lock.
 *
 * During a lag: how many frames each window missed, at its refresh interval
 * (lw_frames_fill_report, watcher thread). Below the threshold: the frames
 * that took longer than the refresh interval, by slowest phase
 * (lw_frames_append_json, any thread).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lagwatch.h"

G_BEGIN_DECLS

typedef struct _LwFrames LwFrames;

/* Any thread. Starts following the windows of @context when GTK 4 is loaded
 * and @context is the default context (GTK's); NULL otherwise, with nothing
 * looked up or attached. @threshold_ms: frames this long or longer are lags,
 * not counted as slow frames. */
LwFrames *lw_frames_start (GMainContext *context,
                           guint         threshold_ms);

/* Any thread. Stops following: on the loop thread (or before the first
 * connection) every handler is disconnected at once; on another thread the
 * handlers become no-ops, freed with their window. Drops the caller's
 * reference. NULL is fine. */
void      lw_frames_stop (LwFrames *frames);

/* Any thread. The new lag threshold: frames at least this long are lags. */
void      lw_frames_set_threshold_ms (LwFrames *frames,
                                      guint     threshold_ms);

/* Watcher thread (any thread but the loop's). Fills @report's windows: the
 * frames each followed window missed during a lag of @duration_ns, at its
 * refresh interval. NULL @frames leaves @report without windows. */
void      lw_frames_fill_report (LwFrames       *frames,
                                 LagWatchReport *report,
                                 int64_t         duration_ns);

/* Any thread. Appends `,"frames":[...]` to @json: per window followed, its
 * title, refresh interval, frames drawn, and frames slower than the refresh
 * interval but under the threshold, by slowest phase; counts since attach.
 * NULL @frames appends nothing. */
void      lw_frames_append_json (LwFrames *frames,
                                 GString  *json);

G_END_DECLS
