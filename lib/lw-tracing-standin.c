/* lw-tracing-standin.c: lw_report_set_calls() until the sampled call
 * tree's branch (which owns it, with the calls and calls_exact fields of
 * LagWatchReport) is merged; then this file goes. */
#include "lw-report.h"

void
lw_report_set_calls (LagWatchReport *report, LwCall *root, gboolean exact)
{
  lw_call_free (report->calls);
  report->calls = root;
  report->calls_exact = exact;
}
