/* lagwatch-gobject.h: lagwatch for GObject Introspection (Python, JavaScript)
 *
 * The C API of lagwatch.h, as types every language binding of the GNOME
 * platform understands:
 *
 *  - #LagWatchMonitor: a GObject that attaches lagwatch to a main context
 *    and emits #LagWatchMonitor::report for every lag, on the main context
 *    the monitor was created in (never on lagwatch's own threads, where
 *    Python would need the GIL and GJS cannot run JavaScript at all). It
 *    is an abstract type made only by lagwatch_monitor_new(), which
 *    attaches first and fails with a #GError: `LagWatch.Monitor()` raises a
 *    TypeError in Python and `new LagWatch.Monitor()` throws in GJS
 *    (measured with PyGObject 3.42 to 3.58 and GJS 1.74 to 1.90), where a
 *    constructor that cannot fail would give a monitor that watches
 *    nothing. (Neither binding calls GInitable's init() from a
 *    constructor, so GInitable would not have prevented that.);
 *  - #LagWatchReport and #LagWatchConfig as boxed types;
 *  - #LagWatchFrame: one frame of a report's stack, a boxed struct.
 *
 * Errors: every failure is a #GError of %LAGWATCH_ERROR, a `GLib.Error` in
 * Python and GJS. The #LagWatchConfig setters that answer %FALSE in C are
 * replaced for bindings by their lagwatch_config_try_set_*() twins, which
 * take the same names there (`config.set_threshold_ms(0)` raises), and
 * the monitor's threshold changes through a method that can fail, its
 * property being read-only. Getters that take an index (a frame, a
 * window, a call) answer an empty value (%NULL, 0, %FALSE) out of range,
 * without a critical warning.
 *
 * From Python:
 *
 *   from gi.repository import LagWatch
 *   monitor = LagWatch.Monitor.new(None, None)
 *   monitor.connect("report", lambda m, r: print(r.get_id(), r.get_duration_ms()))
 *
 * From GJS:
 *
 *   const LagWatch = imports.gi.LagWatch;
 *   const monitor = LagWatch.Monitor.new(null, null);
 *   monitor.connect('report', (m, r) => print(r.get_id()));
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib-object.h>

#include "lagwatch.h"

G_BEGIN_DECLS

/**
 * LAGWATCH_TYPE_REPORT:
 *
 * The #GType of #LagWatchReport, a boxed type (copying takes a reference).
 *
 * Since: 0.1
 */
#define LAGWATCH_TYPE_REPORT (lagwatch_report_get_type ())
LAGWATCH_API GType lagwatch_report_get_type (void) G_GNUC_CONST;

/**
 * LAGWATCH_TYPE_CONFIG:
 *
 * The #GType of #LagWatchConfig, a boxed type (copying copies the settings).
 *
 * Since: 0.1
 */
#define LAGWATCH_TYPE_CONFIG (lagwatch_config_get_type ())
LAGWATCH_API GType lagwatch_config_get_type (void) G_GNUC_CONST;

/**
 * LagWatchFrame:
 * @ip: the frame's instruction address
 * @module: (nullable): absolute path of the module the address is in
 * @build_id: (nullable): the module's build-id, in hex
 * @module_offset: the address relative to the module's load bias (for
 *   `addr2line -e MODULE 0xOFFSET` offline)
 * @symbol: (nullable): the function's name, demangled
 * @symbol_offset: the address's offset into @symbol
 * @file: (nullable): the source file, from debug info
 * @line: the source line, 0 when unknown
 * @language: the frame's language: "python" or "javascript" for a frame of
 *   an interpreted language (@symbol its function, @file its script),
 *   "native" for machine code; as lagwatch_report_get_frame_language()
 *   (since 0.2)
 * @inlined: %TRUE for a call the compiler inlined into the next frame, a
 *   logical frame from debug info that shares its @ip; as
 *   lagwatch_report_get_frame_inlined() (since 0.2)
 * @is_program: %TRUE when the frame is the program's own code, not libc,
 *   GLib, the C++ standard library or an interpreter's machinery: the rule
 *   behind the summary's "innermost program frame"; as
 *   lagwatch_report_get_frame_is_program() (since 0.2)
 *
 * One frame of a report's stack, copied out of the report.
 *
 * Since: 0.1
 */
typedef struct
{
  guint64   ip;
  char     *module;
  char     *build_id;
  guint64   module_offset;
  char     *symbol;
  guint64   symbol_offset;
  char     *file;
  guint     line;
  char     *language;
  gboolean  inlined;
  gboolean  is_program;
} LagWatchFrame;

/**
 * LAGWATCH_TYPE_FRAME:
 *
 * The #GType of #LagWatchFrame, a boxed type.
 *
 * Since: 0.1
 */
#define LAGWATCH_TYPE_FRAME (lagwatch_frame_get_type ())
LAGWATCH_API GType lagwatch_frame_get_type (void) G_GNUC_CONST;

/**
 * lagwatch_frame_copy:
 * @frame: a frame
 *
 * Returns: (transfer full): a copy of @frame
 * Since: 0.1
 */
LAGWATCH_API LagWatchFrame *lagwatch_frame_copy (const LagWatchFrame *frame);

/**
 * lagwatch_frame_free:
 * @frame: (transfer full): a frame
 *
 * Frees @frame and its strings.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_frame_free (LagWatchFrame *frame);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (LagWatchFrame, lagwatch_frame_free)

/**
 * lagwatch_report_get_frame_info:
 * @report: a report
 * @index: 0 (innermost) to lagwatch_report_get_n_frames() - 1
 *
 * A frame of the reported stack (the one most samples shared), copied with
 * its name, source position, language, and whether it is inlined and the
 * program's own code. Any thread.
 *
 * Returns: (transfer full) (nullable): the frame, or %NULL when @index is
 *   out of range
 * Since: 0.1
 */
LAGWATCH_API LagWatchFrame *lagwatch_report_get_frame_info (LagWatchReport *report,
                                                            guint           index);

/**
 * LAGWATCH_TYPE_MONITOR:
 *
 * The #GType of #LagWatchMonitor.
 *
 * Since: 0.1
 */
#define LAGWATCH_TYPE_MONITOR (lagwatch_monitor_get_type ())
LAGWATCH_API
G_DECLARE_FINAL_TYPE (LagWatchMonitor, lagwatch_monitor, LAGWATCH, MONITOR, GObject)

LAGWATCH_API LagWatchMonitor *lagwatch_monitor_new                (GMainContext         *context,
                                                                   const LagWatchConfig *config,
                                                                   GError              **error);
LAGWATCH_API void             lagwatch_monitor_detach             (LagWatchMonitor      *self);
LAGWATCH_API gboolean         lagwatch_monitor_get_attached       (LagWatchMonitor      *self);
LAGWATCH_API guint            lagwatch_monitor_get_threshold_ms   (LagWatchMonitor      *self);
LAGWATCH_API gboolean         lagwatch_monitor_set_threshold_ms   (LagWatchMonitor      *self,
                                                                   guint                 threshold_ms);
LAGWATCH_API gboolean         lagwatch_monitor_try_set_threshold_ms (LagWatchMonitor    *self,
                                                                     guint               threshold_ms,
                                                                     GError            **error);
LAGWATCH_API GMainContext    *lagwatch_monitor_get_report_context (LagWatchMonitor      *self);

/**
 * LAGWATCH_TYPE_STATS:
 *
 * The #GType of #LagWatchStats, a boxed type (copying copies the snapshot).
 *
 * Since: 0.2
 */
#define LAGWATCH_TYPE_STATS (lagwatch_stats_get_type ())
LAGWATCH_API GType lagwatch_stats_get_type (void) G_GNUC_CONST;

LAGWATCH_API LagWatchStats   *lagwatch_monitor_get_stats          (LagWatchMonitor      *self);

G_END_DECLS
