/* lw-report-text-calls.h: a report's call tree in the text report */
#pragma once

#include <glib.h>

#include "lw-report.h"

G_BEGIN_DECLS

/* Any thread. Appends @report's call tree to @out, after the heaviest
 * stack: one call a line, indented by depth, at most a screenful of lines
 * (recursions and chains of single calls folded; the rest counted, all in
 * the JSON); nothing when it has no calls. */
void lw_text_calls (GString *out,
                    LagWatchReport *report);

G_END_DECLS
