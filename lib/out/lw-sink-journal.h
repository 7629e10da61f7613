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

G_BEGIN_DECLS

/* MESSAGE_ID of each event kind: made once with `systemd-id128 new`, never
 * to change (users filter on them, the catalog is keyed by them). */
#define LW_JOURNAL_ID_LAG         "3802ef6738634daaa06b6a88b4eb11d8"
#define LW_JOURNAL_ID_HANG        "b70a2ceed6854326a92aae67153d7fe0"
#define LW_JOURNAL_ID_HANG_KILLED "a969dfa4320e48a0bd6a632d473137a7"

typedef struct _LwJournal LwJournal;

/* Any thread. The journal writer, or NULL with one warning saying why
 * (no journald socket, no libsystemd): the caller then writes to stderr. */
LwJournal *lw_journal_open       (void);

/* Reporting thread. One entry for @report. FALSE when the journal refused
 * it: the caller writes the report elsewhere; the first failure is named in
 * one warning. */
gboolean   lw_journal_write      (LwJournal      *journal,
                                  LagWatchReport *report);

/* Any thread. One entry for a ready-made record (a hang-killed record):
 * @json is its JSON line (no newline), @text its text block. It carries
 * MESSAGE, MESSAGE_ID, PRIORITY, LAGWATCH_EVENT, LAGWATCH_RECORD and the
 * hang's LAGWATCH_ID. FALSE as for lw_journal_write(). */
gboolean   lw_journal_write_raw  (LwJournal      *journal,
                                  const char     *json,
                                  const char     *text);

void       lw_journal_close      (LwJournal      *journal);

G_END_DECLS
