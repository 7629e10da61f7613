/* lw-sink.h: where reports go (LAGWATCH_OUTPUT)
 *
 * A spec is a comma-separated list: "stderr", "json:PATH" (JSON Lines
 * appended to PATH, one write() per record), "none". PATH cannot contain a
 * comma.
 */
#pragma once

#include "lagwatch.h"

G_BEGIN_DECLS

typedef struct _LwSinks LwSinks;

/* Any thread. TRUE when @spec is well formed; otherwise @error says what. */
gboolean  lw_sink_spec_validate (const char     *spec,
                                 GError        **error);

/* Any thread. Opens the sinks of a valid @spec. A JSON file that cannot be
 * opened is named in one warning and replaced by stderr. */
LwSinks  *lw_sinks_open         (const char     *spec);

/* Watcher thread. Writes @report to every sink. */
void      lw_sinks_write        (LwSinks        *sinks,
                                 LagWatchReport *report);

void      lw_sinks_free         (LwSinks        *sinks);

G_END_DECLS
