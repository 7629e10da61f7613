/* lw-sink-private.h: one sink, behind a small interface
 *
 * LwSinks (lw-sink.h) holds a list of sinks; each is a table of four
 * functions (LwSinkClass) and its own state behind it. The kinds: stderr
 * and a JSON Lines file (lw-sink-fd.h), the journal (lw-sink-journal.h), a
 * Sysprof capture file and Sysprof marks (lw-sink-sysprof.h). A sink
 * ignores what it does not take: stderr writes a report only when the
 * back-off shows it, and text records; a JSON file JSON records; the
 * journal reports and records that come as both JSON and text; Sysprof
 * reports only.
 *
 * Every LwSinkClass function runs on the thread that holds the sinks' lock
 * (the sink thread, lw-sink-queue.h, or whoever writes to the sinks
 * directly).
 */
#pragma once

#include "lagwatch.h"

G_BEGIN_DECLS

/* A report on its way to the sinks: rendered once, by the first sink that
 * needs each rendering (lw_sink_report_json(), lw_sink_report_text()). */
typedef struct
{
  LagWatchReport *report;
  gboolean        show_human;  /* the back-off shows it on stderr */
  guint           skipped;     /* lags like it not shown since the last one */
  gboolean        durable;     /* fsync JSON files: a hang record must survive a kill */
  char           *json;        /* the JSON line with its newline, once made */
  char           *text;        /* the text block, once made */
} LwSinkReport;

/* Sinks' thread. @report's JSON line, newline included. */
const char *lw_sink_report_json (LwSinkReport *report);

/* Sinks' thread. @report's text block. */
const char *lw_sink_report_text (LwSinkReport *report);

typedef struct _LwSink LwSink;

typedef struct
{
  /* Writes @report. FALSE when the sink refused it (the journal): it
   * goes to stderr instead. */
  gboolean (*write_report) (LwSink       *sink,
                            LwSinkReport *report);
  /* Writes a ready-made record: @json (one line, no newline) for JSON
   * sinks, @text (ending in a newline) for text ones; either may be NULL:
   * not for those sinks. FALSE as for write_report. */
  gboolean (*write_raw)    (LwSink       *sink,
                            const char   *json,
                            const char   *text);
  /* Writes what the sink still holds (the count of the records it dropped
   * and has not said yet), before it is closed. */
  void     (*flush)        (LwSink       *sink);
  /* Closes the sink and frees it. */
  void     (*close)        (LwSink       *sink);
} LwSinkClass;

struct _LwSink
{
  const LwSinkClass *klass;
  guint              dropped_total;  /* records it lost since it was opened */
};

G_END_DECLS
