/* lw-sink.h: where reports go (LAGWATCH_OUTPUT)
 *
 * A spec is a comma-separated list: "stderr", "json:PATH" (JSON Lines
 * appended to PATH, one write() per record), "journal" (one structured entry
 * per record, lw-sink-journal.h), "none". PATH cannot contain a comma.
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

/* Watcher thread. Writes @report to every JSON sink, and to stderr when
 * @show_human (the back-off decides; @skipped lags like it were not shown).
 * @durable: fsync the JSON files (a hang record must survive a kill). */
void      lw_sinks_write        (LwSinks        *sinks,
                                 LagWatchReport *report,
                                 gboolean        show_human,
                                 guint           skipped,
                                 gboolean        durable);

/* Watcher or any thread. Writes one ready-made record: @json to the JSON
 * sinks (one line, no newline), @text to stderr. */
void      lw_sinks_write_raw    (LwSinks        *sinks,
                                 const char     *json,
                                 const char     *text);

/* Any thread. Writes all of @data to @fd, retrying on EINTR and partial
 * writes. FALSE on an error. */
gboolean  lw_write_all          (int         fd,
                                 const char *data,
                                 gsize       len);

/* Any thread. Writes @text to stderr as one write(). */
void      lw_sinks_write_raw_stderr (const char *text);

/* Any thread. TRUE when reports go to stderr. */
gboolean  lw_sinks_has_stderr   (LwSinks        *sinks);

void      lw_sinks_free         (LwSinks        *sinks);

G_END_DECLS
