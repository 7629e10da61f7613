/* lw-sink-fd.h: the sinks that write to a descriptor: stderr and a JSON
 * Lines file (the rules they keep are in lw-sink.h)
 */
#pragma once

#include "lw-sink-private.h"

G_BEGIN_DECLS

/* Any thread. The stderr sink: text reports and records. */
LwSink   *lw_sink_stderr_new  (void);

/* Any thread. A JSON Lines sink appending to @path, or NULL with @error
 * when the file cannot be opened or is not safe to write
 * (lw_sink_open_file()). */
LwSink   *lw_sink_json_open   (const char  *path,
                               GError     **error);

/* Any thread. TRUE for a sink made by lw_sink_stderr_new(). */
gboolean  lw_sink_is_stderr   (const LwSink *sink);

/* Any thread. Opens @path for @what without blocking (a FIFO nobody
 * reads fails with ENXIO instead of waiting for a reader) and without
 * following a symlink planted in its place; -1 with @error set when it is
 * not a file this user may safely write to. JSON Lines are appended, to a
 * regular file or a FIFO; a new capture (@capture) needs a regular file,
 * truncated once it is known to be ours. */
int       lw_sink_open_file   (const char  *path,
                               const char  *what,
                               gboolean     capture,
                               GError     **error);

/* Any thread. @text on stderr, bounded in time like the stderr sink, for
 * a process that has none. */
void      lw_stderr_say       (const char  *text);

G_END_DECLS
