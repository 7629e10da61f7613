/* lw-report-text.h: a report as text, for stderr and the journal */
#pragma once

#include "lagwatch.h"
#include "lw-symbols.h"

G_BEGIN_DECLS

/* Any thread. @name (a demangled C++ name) as the text report shows it:
 * whole up to 80 bytes; longer, with template arguments elided
 * ("std::__introsort_loop<...>(...)"), then the parameters too if still
 * longer, keeping the function's own name and its class. */
char *lw_report_short_name (const char *name);

/* Any thread. The label of a stack in the text report and the summary:
 * the innermost program frame's name (shortened), else the innermost
 * named frame's, else "module+0xoffset" of the innermost frame, else
 * "(no stack)" when there are no frames. */
char *lw_report_stack_label (const LwFrame *frames,
                             guint          n_frames);

/* Any thread. The heaviest stack's share of @report's lag, in percent:
 * the samples of its heaviest stack (stacks[0], the JSON record's
 * "stacks"[0]) over all the samples taken during the lag (the record's
 * "samples"), not over the samples of the stacks the record keeps (at most
 * a few). Two samples are one stack when lw_profile_group() says so. The
 * text report, the JSON record and lagwatch-report give this one number;
 * 0 when the lag has no samples. */
double lw_report_heaviest_share (const LagWatchReport *report);

/* Reporting thread. The report as text; @skipped_since_shown: lags like it
 * the back-off kept off stderr since the last one shown (0: none). */
char *lw_report_to_text_full (LagWatchReport *report,
                              guint           skipped_since_shown);

/* Any thread. Where in the loop the lag happened, as a phrase that
 * completes "It happened ...": 'in GSource "name" (priority 0)', 'in
 * g_timeout_add callback fn (unnamed GSource, priority 0)', "in the loop's
 * prepare phase, outside any GSource"; never NULL. Control bytes escaped. */
char *lw_report_where_to_text (LagWatchReport *report);

/* Any thread. @frames as the text report shows them, one line each. */
char *lw_report_stack_to_text (const LwFrame *frames,
                               guint          n_frames);

G_END_DECLS
