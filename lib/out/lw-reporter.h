/* lw-reporter.h: the reporting thread of a watch
 *
 * The watcher must never be busy when a lag starts, so everything slow
 * about a report happens here instead: grouping the samples by function
 * and naming every frame (symbol tables are built on first use, DWARF
 * opened for file:line), fingerprints and back-off, the durable hang copy,
 * and the program's callback. The watcher hands over reports whose frames
 * hold addresses only; this thread fills in the rest, in the order they
 * were handed over, calls the callback, then passes each report to the
 * sink thread (lw-sink-queue.h), so that a stalled sink never delays the
 * callback. It sleeps on its queue with no timeout: no wake-ups while
 * nothing lags.
 *
 * The reporter knows nothing of the watch: it gets the sinks, the summary,
 * the hang store and a function that finishes a watch detached from a
 * report callback.
 */
#pragma once

#include "lw-hang.h"
#include "lw-report.h"
#include "lw-sink.h"
#include "lw-summary.h"

G_BEGIN_DECLS

typedef struct _LwReporter LwReporter;

/* Reports waiting for the reporting thread at most; beyond, the watcher
 * drops them (counted, and said) rather than let memory grow while the
 * program's callback is slow. */
#define LW_REPORTER_QUEUE_MAX 64

/* Reporting thread. Finishes the watch that was detached from a report
 * callback (lw_reporter_finish_soon()), once the callback running then
 * has returned (it calls lw_reporter_abandon()). */
typedef void (*LwReporterFinishFunc) (gpointer data);

/* Any thread. Starts the reporting thread (all signals blocked) and its
 * sink thread, which takes @sinks (transfer full). @summary and @hangs
 * (nullable) must outlive the reporter. NULL, @sinks freed, on failure. */
LwReporter *lw_reporter_start  (LwSinks             *sinks,
                                LwSummary           *summary,
                                LwHangStore         *hangs,
                                LwReporterFinishFunc finish,
                                gpointer             finish_data,
                                GError             **error);

typedef enum
{
  LW_REPORT_LAG,          /* a finished (or detached) lag */
  LW_REPORT_LAG_AFTER_HANG, /* ... that was also a hang: its state copy goes */
  LW_REPORT_HANG,         /* a hang in progress: durable, kept for the next run */
  LW_REPORT_DROPPED_AFTER_HANG, /* a hang whose lag was not reported: only its copy goes */
} LwReportKind;

/* Watcher thread. Hands over @report (transfer full), its frames holding
 * only their addresses and its stacks exact, not yet grouped by function.
 * Never waits: beyond LW_REPORTER_QUEUE_MAX waiting reports it is dropped
 * and counted. */
void        lw_reporter_submit (LwReporter      *reporter,
                                LagWatchReport  *report,
                                LwReportKind     kind);

/* Any thread. Sets the program's callback (see lagwatch_set_report_func()),
 * releasing the previous one. */
void        lw_reporter_set_report_func (LwReporter        *reporter,
                                         LagWatchReportFunc func,
                                         gpointer           user_data,
                                         GDestroyNotify     destroy);

/* Any thread. A ready-made record for the sinks (lw_sinks_write_raw()),
 * through the sink thread: never blocks on a stalled sink. */
void        lw_reporter_write_raw (LwReporter  *reporter,
                                   const char  *json,
                                   const char  *text);

/* Any thread but the reporter's own, at exit. Lets the reports handed
 * over reach the sinks, then prints the summary table (with the reports
 * dropped) on stderr, where stderr is a sink; waits for all of it
 * LW_SINK_QUEUE_STOP_MS at most: the process must not end before. Reports
 * still being made then are said lost (lw_say). */
void        lw_reporter_print_summary (LwReporter *reporter);

/* Any thread but the reporter's own. Delivers what was handed over to the
 * callback and the sinks, releases the callback, prints the summary, stops
 * both threads and frees @reporter. Waits for the sinks
 * LW_SINK_QUEUE_STOP_MS at most. */
void        lw_reporter_stop   (LwReporter      *reporter);

/* Any thread; never waits (a report callback, of this reporter or
 * another, calls it: waiting there for a reporting thread could wait on
 * itself, or on a thread whose callback waits on this one). From now on
 * no callback starts (but one starting at this very moment); once the one
 * running, if any, has returned, the thread hands what is still queued to
 * the sinks and calls the finish function. The watcher must have stopped:
 * nothing more is handed over. */
void        lw_reporter_finish_soon (LwReporter *reporter);

/* The reporting thread itself, from the finish function: drops what is
 * still queued, releases the callback, prints the summary, stops the sink
 * thread (bounded, as lw_reporter_stop()) and frees @reporter. */
void        lw_reporter_abandon (LwReporter     *reporter);

/* Any thread. TRUE on a reporting thread, of any watch (in a report
 * callback, or a callback's destroy notify). */
gboolean    lw_reporter_on_reporting_thread (void);

/* Any thread. Hands a "stats" event (@json, one line) to the JSON sinks,
 * after the reports handed over before it; never waits for them. */
void        lw_reporter_write_stats (LwReporter *reporter,
                                     const char *json);

G_END_DECLS
