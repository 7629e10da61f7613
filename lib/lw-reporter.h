/* lw-reporter.h: the reporting thread of a watch
 *
 * The watcher must never be busy when a lag starts, so everything slow
 * about a report happens here instead: naming every frame (symbol tables
 * are built on first use, DWARF opened for file:line), fingerprints and
 * back-off, the durable hang copy, writing to the sinks, and the program's
 * callback. The watcher hands over reports whose frames hold addresses
 * only; this thread fills in the rest, in the order they were handed over.
 * It sleeps on its queue with no timeout: no wake-ups while nothing lags.
 */
#pragma once

#include "lw-report.h"

G_BEGIN_DECLS

typedef struct _LwReporter LwReporter;

/* Any thread. Starts the reporting thread of @watch (all signals blocked). */
LwReporter *lw_reporter_start  (LagWatch        *watch,
                                GError         **error);

typedef enum
{
  LW_REPORT_LAG,          /* a finished (or detached) lag */
  LW_REPORT_LAG_AFTER_HANG, /* ... that was also a hang: its state copy goes */
  LW_REPORT_HANG,         /* a hang in progress: durable, kept for the next run */
  LW_REPORT_DROPPED_AFTER_HANG, /* a hang whose lag was not reported: only its copy goes */
} LwReportKind;

/* Watcher thread. Hands over @report (transfer full), its frames holding
 * only their addresses. */
void        lw_reporter_submit (LwReporter      *reporter,
                                LagWatchReport  *report,
                                LwReportKind     kind);

/* Any thread but the reporter's own. Delivers what was handed over, then
 * stops the thread and frees @reporter. */
void        lw_reporter_stop   (LwReporter      *reporter);

/* The reporting thread itself, as it finishes a watch detached from one of
 * its callbacks: drops what is still queued and frees @reporter. */
void        lw_reporter_abandon (LwReporter     *reporter);

/* Any thread. TRUE on the reporting thread itself (a callback). */
gboolean    lw_reporter_is_current (LwReporter  *reporter);

G_END_DECLS
