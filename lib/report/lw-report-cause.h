/* lw-report-cause.h: a lag's cause: the stack that names it, and its fingerprints */
#pragma once

#include "lagwatch.h"
#include "lw-report.h"

G_BEGIN_DECLS

/* Reporting thread, once the stacks are named. Makes the report's stack
 * (and the first of its stacks) the one that names the lag's cause: the
 * heaviest stack of the program function that holds the most samples,
 * the stacks summed by their innermost program frame's function. So a
 * Python loop whose samples fall on many lines, or a program function
 * whose samples fall in many platform leaves, is named and fingerprinted
 * after that function, not after whichever single stack got one sample
 * more. Leaves the report's stack alone when the heaviest stack is that
 * one. Then keeps at most @keep stacks (that one first, the heaviest of
 * the others after it): the cause is chosen from every stack, so that a
 * function's samples spread over many stacks (a Python loop over twenty
 * lines calling a different builtin on each) count whole, not only those
 * of the few stacks a report lists. */
void lw_report_choose_cause_stack (LagWatchReport *report,
                                   guint           keep);

/* Reporting thread. Computes the fingerprints from the report's stack
 * and callback: fingerprint2 keys on the innermost program frame's
 * function ("module-basename!function", never an address or a line);
 * fingerprint on that and the callback that ran it (the outermost program
 * frame inside GLib's, else the source's callback). Without a program
 * frame, on the innermost four named frames. */
void lw_report_compute_fingerprints (LagWatchReport *report);

G_END_DECLS
