/* lw-summary.h: lags grouped by fingerprint, back-off and the summary table
 *
 * Every lag is counted. The human-facing sink (stderr) shows a fingerprint's
 * 1st, 2nd, 3rd, 5th, 8th, 13th... occurrence (Fibonacci back-off, as
 * Tencent Matrix does); JSON Lines and the program's callback get every lag.
 * The summary table (count, total and worst duration per fingerprint) is
 * printed at detach and at exit.
 *
 * Thread safety: internally locked; any thread, normal context.
 */
#pragma once

#include "lw-report.h"

G_BEGIN_DECLS

typedef struct _LwSummary LwSummary;

LwSummary *lw_summary_new     (void);
void       lw_summary_free    (LwSummary      *summary);

/* Counts @report (its fingerprint must be set) and sets its occurrence.
 * Returns TRUE when a human-facing sink should show it; *@skipped says how
 * many lags like it were not shown since the last one that was. */
gboolean   lw_summary_record  (LwSummary      *summary,
                               LagWatchReport *report,
                               guint          *skipped);

/* Any thread. The line the table starts with ("lagwatch: this run: @line"):
 * the latency profile's counts; NULL for none. */
void       lw_summary_set_run_line (LwSummary  *summary,
                                    const char *line);

/* Any thread. The line on the lags seen only after they ended (no report
 * was made of them), shown under the table; NULL for none. */
void       lw_summary_set_missed_line (LwSummary  *summary,
                                       const char *line);

/* The table, the missed lags' line, and a line for each kind of report
 * lost (@dropped_stalled: a sink stalled; @dropped_behind: the reporting
 * thread fell behind), or NULL when no lag was recorded, missed or lost. */
char      *lw_summary_to_text (LwSummary      *summary,
                               guint64         dropped_stalled,
                               guint64         dropped_behind);

/* TRUE when @n is a Fibonacci number (1, 2, 3, 5, 8, ...). */
gboolean   lw_summary_is_fibonacci (guint n);

G_END_DECLS
