/* lw-tracing.h: exact call trees from liblagwatch-trace
 *
 * When the loop thread runs code built with -finstrument-functions and the
 * program links liblagwatch-trace (trace/lagwatch-trace.c), the watcher
 * has that thread record every call and return from the moment a lag is
 * caught until it ends; the reporting thread turns the events into the
 * lag's call tree. Without the tracer every function here is a no-op
 * returning NULL, and liblagwatch does not depend on it.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "lw-calls.h"

G_BEGIN_DECLS

typedef struct _LwTracing LwTracing;

/* Watcher thread, as it catches a lag on thread @tid. Starts recording its
 * calls: NULL when the tracer is not in the process or @tid never ran
 * instrumented code. */
LwTracing *lw_tracing_start (pid_t tid);

/* Watcher thread, once the lag ended at @end_ns (CLOCK_MONOTONIC) after
 * starting at @since_ns. Stops the recording: afterwards the traced thread
 * writes nothing more, and @tracing may go to another thread. */
void       lw_tracing_stop  (LwTracing *tracing,
                             int64_t    since_ns,
                             int64_t    end_ns);

/* Reporting thread (names functions). The lag's call tree: the root is the
 * part of the lag that was recorded (start: when it was caught, relative
 * to the lag's start; name NULL); its children are the calls made then, in
 * order, with their own. A call already running when the lag was caught
 * starts exactly at the root's start (its true start is earlier). When the
 * buffer overflowed, the root ends at the last event kept and calls still
 * open then end with it. */
LwCall    *lw_tracing_tree  (const LwTracing *tracing);

/* Any thread. Events that did not fit the buffer (0: none lost). */
guint64    lw_tracing_dropped (const LwTracing *tracing);

/* Any thread (after lw_tracing_stop()). */
void       lw_tracing_free  (LwTracing *tracing);

/* Any thread. Builds the tree of @n_events events (lw-trace-abi.h),
 * recorded from @start_ns, of a lag from @since_ns to @end_ns; @truncated:
 * events were dropped after the last one. Names nothing (LwCall.name NULL,
 * ip the function's entry). */
LwCall    *lw_tracing_build (const void *events,
                             guint64     n_events,
                             int64_t     since_ns,
                             int64_t     start_ns,
                             int64_t     end_ns,
                             gboolean    truncated);

G_END_DECLS
