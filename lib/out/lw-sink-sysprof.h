/* lw-sink-sysprof.h: lags for Sysprof, GNOME's profiler
 *
 * Two ways, both through Sysprof's own libsysprof-capture (linked
 * statically: its symbols stay hidden in liblagwatch):
 *  - marks: when the program runs under Sysprof (SYSPROF_CONTROL_FD set in
 *    its environment), every lag and hang becomes a mark of group
 *    "lagwatch" on Sysprof's timeline, beside GTK's frame-clock marks.
 *    Otherwise nothing is done (the check is made once, at attach).
 *  - a capture file ("syscap:PATH" in LAGWATCH_OUTPUT): the process, its
 *    memory maps with their build-ids, one mark per lag, and every sample
 *    taken during each lag as a Sysprof sample at the time it was taken,
 *    so Sysprof shows each lag on its timeline with its callgraph; Python,
 *    JavaScript and generated code named through JITMAP records, samples
 *    of a sleeping thread as samples in the kernel (docs/sysprof.md).
 */
#pragma once

#include "lagwatch.h"
#include "lw-build-config.h"
#include "lw-sink-private.h"

G_BEGIN_DECLS

#if LW_HAVE_SYSPROF

/* Any thread. TRUE: this build writes Sysprof capture files. */
static inline gboolean lw_sink_syscap_supported (void) { return TRUE; }

/* Any thread. The Sysprof marks sink when the program runs under Sysprof,
 * else NULL. */
LwSink *lw_sink_sysprof_marks_open (void);

/* Any thread. A sink writing a new capture to @path (checked as
 * lw_sink_open_file() checks it, truncated), with this process and its
 * memory maps; NULL with @error when the file or Sysprof's writer refuses. */
LwSink *lw_sink_syscap_open        (const char  *path,
                                    GError     **error);

#else  /* built without Sysprof's capture library: neither sink exists */

static inline gboolean lw_sink_syscap_supported (void) { return FALSE; }

static inline LwSink *lw_sink_sysprof_marks_open (void) { return NULL; }

static inline LwSink *
lw_sink_syscap_open (const char *path, GError **error)
{
  g_return_val_if_reached (NULL);
}

#endif

G_END_DECLS
