/* lw-sink-queue.h: the sink thread of a watch, behind a bounded queue
 *
 * A sink can stall: stderr on a pipe nobody drains, a FIFO whose reader
 * stopped. Its write() then blocks, and only the sink thread waits in it.
 * The reporting thread hands records over without ever waiting: when
 * LW_SINK_QUEUE_MAX records are waiting, the next one is dropped and
 * counted, and the sinks say "N reports dropped: sink stalled" before the
 * next record they write. Stopping waits a bounded time
 * (LW_SINK_QUEUE_STOP_MS); a thread still stuck in a write then is left to
 * finish on its own, and frees the queue and the sinks itself.
 */
#pragma once

#include "lw-report.h"
#include "lw-sink.h"

G_BEGIN_DECLS

/* Records waiting for the sink thread at most (about 2.5 KB each as JSON). */
#define LW_SINK_QUEUE_MAX      32
/* How long stopping, or a flush, waits for the sinks. */
#define LW_SINK_QUEUE_STOP_MS  2000

typedef struct _LwSinkQueue LwSinkQueue;

/* Any thread. Starts the sink thread (all signals blocked), which takes
 * @sinks (transfer full). NULL, and @sinks freed, when it cannot start. */
LwSinkQueue *lw_sink_queue_start     (LwSinks        *sinks,
                                      GError        **error);

/* Reporting thread. Queues @report for the sinks (lw_sinks_write()
 * arguments); FALSE when it was dropped because the queue is full. */
gboolean     lw_sink_queue_report    (LwSinkQueue    *queue,
                                      LagWatchReport *report,
                                      gboolean        show_human,
                                      guint           skipped,
                                      gboolean        durable);

/* Any thread. Queues a "stats" event (@json, one line, no newline) for
 * the JSON sinks only. FALSE when it was dropped (queue full). */
gboolean     lw_sink_queue_stats     (LwSinkQueue    *queue,
                                      const char     *json);

/* Any thread. Queues a ready-made record (lw_sinks_write_raw()); FALSE
 * when it was dropped because the queue is full. */
gboolean     lw_sink_queue_raw       (LwSinkQueue    *queue,
                                      const char     *json,
                                      const char     *text);

/* Any thread. Queues @text for stderr, if it is a sink, even when the
 * queue is full (one summary table, not a stream). */
void         lw_sink_queue_stderr    (LwSinkQueue    *queue,
                                      const char     *text);

/* Any thread but the sink thread. Waits until what is queued now is
 * written, or until @deadline (g_get_monotonic_time()). */
void         lw_sink_queue_flush     (LwSinkQueue    *queue,
                                      gint64          deadline);

/* Any thread. Records dropped so far because the queue was full. */
guint64      lw_sink_queue_dropped   (LwSinkQueue    *queue);

/* Any thread. TRUE when stderr is a sink. */
gboolean     lw_sink_queue_has_stderr (LwSinkQueue   *queue);

/* Any thread but the sink thread. Lets the sink thread write what is
 * queued and end, waiting LW_SINK_QUEUE_STOP_MS at most; @queue is gone
 * afterwards either way. */
void         lw_sink_queue_stop      (LwSinkQueue    *queue);

G_END_DECLS
