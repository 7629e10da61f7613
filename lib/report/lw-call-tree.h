/* lw-call-tree.h: a lag's call tree, from its samples in time order
 *
 * The rule. Each sample's stack is cut to its program part: the frames
 * inside the GLib dispatch frame (g_main_dispatch and its kin, known by
 * name or by address: lw_call_tree_frame_is_dispatch(); the whole stack
 * when there is none), outermost first, with the platform's frames
 * (libc, GLib, lagwatch: lw_report_frame_is_platform()) and the frames no
 * symbol names (a library's internal functions) left out, so that their
 * time counts for the named function that called them. Depth 1 is
 * the outermost remaining frame. Consecutive samples that have, at a
 * depth, the same function called from the same call site (and the same
 * frames outside it) are one call of that function. A call lasts from its
 * first sample to its last, extended by half the sampling interval on each
 * side (clamped to the lag): a call seen by n samples lasts n intervals,
 * which is its expected length when samples are evenly spaced. So a
 * duration is right within one interval, a start within half of one; a
 * call shorter than one interval may be missed or merged with a
 * neighbour of the same function.
 *
 * The sampling interval is the median gap between consecutive samples
 * (the profile doubles it when it thins a long lag).
 */
#pragma once

#include "lw-calls.h"
#include "lw-report.h"

G_BEGIN_DECLS

/* Any thread. TRUE when @frame is GLib's dispatch of a source: by name
 * (g_main_dispatch and its kin) where GLib's static functions have names,
 * else by address: the return address into GLib's dispatch code that
 * lagwatch's probe learned (lw_dispatch_get_call_site()). */
gboolean lw_call_tree_frame_is_dispatch (const LwFrame *frame);

/* Reporting thread, after the frames of @report->sampled are named. The
 * call tree of @report's timeline: a root standing for the lag (no name,
 * start 0, the lag's duration) whose children are the outermost calls.
 * Calls shorter than @min_ns (0: seen by fewer than two samples, which is
 * two sampling intervals by the rule) are left out with what they called; so are calls deeper than @max_depth (0: any depth).
 * @fallback_interval_ns serves when the timeline has one sample. NULL when
 * the timeline is empty. */
LwCall  *lw_call_tree_from_samples (const LagWatchReport *report,
                                    int64_t               min_ns,
                                    guint                 max_depth,
                                    int64_t               fallback_interval_ns);

G_END_DECLS
