/* lw-report.h: one finished lag, and its two renderings (text and JSON)
 *
 * Built on the watcher thread once the lag has ended, immutable afterwards,
 * handed to the sinks and the program's callback.
 */
#pragma once

#include "lagwatch.h"
#include "lw-symbols.h"

G_BEGIN_DECLS

struct _LagWatchReport
{
  gint      ref_count;       /* atomic */
  char     *id;
  guint     threshold_ms;
  double    duration_ms;
  gint64    start_time_us;   /* wall clock, µs since the epoch */
  int       pid;
  int       thread_id;
  char     *thread_name;     /* /proc comm, or NULL */
  gboolean  complete;        /* FALSE: still going when the watch was detached */
  double    caught_ms;       /* lag start to stack in hand; < 0 when no stack was taken */
  char     *stack_method;    /* "signal", "proc" (taken while the thread slept), or NULL */
  char     *stack_error;     /* why the stack is missing or short, or NULL */
  gboolean  stack_truncated; /* stopped at the frame limit or the end of the copy */
  LwFrame  *frames;
  guint     n_frames;
};

/* Watcher thread. A zeroed report holding one reference. */
LagWatchReport *lw_report_new (void);

G_END_DECLS
