/* lw-sink-journal.h: the journald sink (LAGWATCH_OUTPUT=journal)
 *
 * One structured journal entry per lag, hang and hang-killed record,
 * written with libsystemd's sd_journal_sendv(): MESSAGE (the report's
 * header line), MESSAGE_ID (one per event kind, explained by
 * data/lagwatch.catalog for `journalctl -x`), PRIORITY, CODE_FUNC/FILE/LINE
 * of the innermost program frame, and the LAGWATCH_* fields, among them
 * LAGWATCH_RECORD, the JSON Lines record itself.
 */
#pragma once

#include "lagwatch.h"
#include "lw-sink-private.h"

G_BEGIN_DECLS

/* MESSAGE_ID of each event kind: made once with `systemd-id128 new`, never
 * to change (users filter on them, the catalog is keyed by them). */
#define LW_JOURNAL_ID_LAG         "3802ef6738634daaa06b6a88b4eb11d8"
#define LW_JOURNAL_ID_HANG        "b70a2ceed6854326a92aae67153d7fe0"
#define LW_JOURNAL_ID_HANG_KILLED "a969dfa4320e48a0bd6a632d473137a7"

/* Any thread. The journal sink (lw-sink-private.h): a report or a record
 * the journal refuses goes to stderr instead, the first refusal named in
 * one warning. NULL with one warning saying why (no journald socket, no
 * libsystemd): the caller then writes to stderr. */
LwSink *lw_sink_journal_open (void);

G_END_DECLS
