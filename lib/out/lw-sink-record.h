/* lw-sink-record.h: the records the sinks write themselves
 *
 * Beside the reports, the sinks write two records of their own: "dropped"
 * (records lost to a stalled or failing sink) and "hang-killed" (the
 * previous run was killed during a hang). One writer of each, used by
 * every sink kind (lw-sink-fd.c, lw-sink-journal.c) and by LwSinks
 * (lw-sink.c); apart from lw-sink.h so that the sink kinds need not include
 * the set of sinks that holds them.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* How long a record may wait for a slow reader before it is dropped. */
#define LW_SINK_WAIT_MS 200

/* Any thread. The one writer of the "dropped" record, which says that
 * @count records were lost: *@json, {"event":"dropped","count":N,
 * "reason":@reason} on one line without its newline; *@text, "lagwatch: N
 * reports dropped: @text_reason" (NULL: @reason) and a newline. */
void      lw_sink_dropped_record (guint64        count,
                                  const char    *reason,
                                  const char    *text_reason,
                                  char         **json,
                                  char         **text);

/* Any thread. The one writer of the "hang-killed" record, which says that
 * the run @previous_pid was killed during a hang: *@json,
 * {"event":"hang-killed","previous_pid":N,"hang":@hang_json} on one line
 * without its newline (@hang_json: that hang's record, as read back and
 * re-encoded); *@text, a line saying so followed by @hang_text. */
void      lw_sink_hang_killed_record (int         previous_pid,
                                      const char *hang_json,
                                      const char *hang_text,
                                      char      **json,
                                      char      **text);

G_END_DECLS
