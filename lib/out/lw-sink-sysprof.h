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
 *    so Sysprof shows each lag on its timeline with its callgraph.
 */
#pragma once

#include "lagwatch.h"

G_BEGIN_DECLS

/* Any thread. TRUE when the process was started under Sysprof. */
gboolean lw_sysprof_collector_active (void);

/* Reporting thread. Adds @report as a Sysprof mark (under Sysprof only). */
void     lw_sysprof_mark             (LagWatchReport *report);

typedef struct _LwSyscap LwSyscap;

/* Any thread. Starts a capture in the file @fd (taken over: closed by
 * lw_syscap_close()), with this process and its memory maps. NULL with
 * @error when Sysprof's writer refuses it. */
LwSyscap *lw_syscap_open  (int              fd,
                           const char      *path,
                           GError         **error);

/* Reporting thread. Adds @report: its mark and its samples. FALSE when the
 * writer failed (the file is then said to be incomplete once). */
gboolean  lw_syscap_write (LwSyscap        *capture,
                           LagWatchReport  *report);

/* Any thread. Flushes and closes the capture. */
void      lw_syscap_close (LwSyscap        *capture);

G_END_DECLS
