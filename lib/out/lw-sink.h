/* lw-sink.h: where reports go (LAGWATCH_OUTPUT)
 *
 * A spec is a comma-separated list: "stderr", "json:PATH" (JSON Lines
 * appended to PATH, one write() per record), "journal" (one structured entry
 * per record, lw-sink-journal.h), "none". PATH cannot contain a comma.
 *
 * No sink can block its caller without bound: a JSON file is opened
 * non-blocking, without following a symlink, created 0600, and refused
 * unless it is a regular file (one link) or a FIFO owned by this user; a
 * stderr that is a pipe, a FIFO or a terminal is written through a private
 * non-blocking description opened from /proc/self/fd/2 for each record (the
 * program's own fd 2 is never changed, nor held open), a socket with
 * MSG_DONTWAIT; a regular file or another device on fd 2 is written as it
 * is. A record a sink cannot take within
 * LW_SINK_WAIT_MS (at once once the sink has stalled) is dropped and
 * counted; the count is said on that sink before the next record that gets
 * through, and at close. A write error is said once per sink, on stderr.
 *
 * Each sink is one kind behind one small interface (lw-sink-private.h);
 * LwSinks hands every record to each, in order.
 */
#pragma once

#include "lagwatch.h"
#include "lw-sink-record.h"

G_BEGIN_DECLS


typedef struct _LwSinks LwSinks;

/* Any thread. TRUE when @spec is well formed; otherwise @error says what. */
gboolean  lw_sink_spec_validate (const char     *spec,
                                 GError        **error);

/* Any thread. Opens the sinks of a valid @spec. A JSON file that cannot be
 * opened, or is not safe to write (see above), is named in one lw_say() line and
 * replaced by stderr. */
LwSinks  *lw_sinks_open         (const char     *spec);

/* Any thread. lw_sinks_open(), the lw_say() lines naming @origin (where
 * @spec came from: "LAGWATCH_OUTPUT", or the program's configuration)
 * instead of "LAGWATCH_OUTPUT". */
LwSinks  *lw_sinks_open_from    (const char     *spec,
                                 const char     *origin);

/* Reporting thread. Writes @report to every JSON sink, and to stderr when
 * @show_human (the back-off decides; @skipped lags like it were not shown).
 * @durable: fsync the JSON files (a hang record must survive a kill). */
void      lw_sinks_write        (LwSinks        *sinks,
                                 LagWatchReport *report,
                                 gboolean        show_human,
                                 guint           skipped,
                                 gboolean        durable);

/* Any thread. A "stats" event: @json to the JSON sinks only; not to the
 * journal (its entries are lags and hangs). */
void      lw_sinks_write_stats  (LwSinks        *sinks,
                                 const char     *json);

/* Any thread. Writes one ready-made record: @json to the JSON sinks (one
 * line, no newline), @text to stderr, both to the journal. */
void      lw_sinks_write_raw    (LwSinks        *sinks,
                                 const char     *json,
                                 const char     *text);


/* Any thread. Records the sinks dropped (stalled or failing) since they
 * were opened, all sinks together. */
guint     lw_sinks_dropped      (LwSinks        *sinks);

/* Any thread. Writes all of @data to @fd (a file lagwatch opened for
 * itself), retrying on EINTR and partial writes. FALSE with errno set on an
 * error. */
gboolean  lw_write_all          (int         fd,
                                 const char *data,
                                 gsize       len);

/* Any thread. Writes @text (a summary, a note) to the stderr sink of
 * @sinks, after the count of the records that sink dropped; to stderr
 * directly, bounded alike, when @sinks has none. */
void      lw_sinks_write_stderr_text (LwSinks    *sinks,
                                      const char *text);


/* Any thread. TRUE when reports go to stderr. */
gboolean  lw_sinks_has_stderr   (LwSinks        *sinks);

/* Any thread, once the sinks' writers are gone. Says what each sink
 * dropped and not yet said, then closes them. */
void      lw_sinks_free         (LwSinks        *sinks);

G_END_DECLS
