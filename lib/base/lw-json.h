/* lw-json.h: JSON strings as lagwatch writes them, and JSON read back from
 * a file anyone may have written
 *
 * Every string lagwatch writes in a record goes through one escaper,
 * lw_json_append_string(), which the reader below uses too: what is read
 * back is written again exactly as lagwatch would have written it.
 *
 * A strict reader (RFC 8259) that writes back what it read, re-encoded, so
 * that what lagwatch passes on is never the bytes it found: strings
 * re-escaped by lw_json_append_string() (UTF-8 checked, no NUL), numbers
 * checked and bounded (an integer part of at most 18 digits, an exponent
 * of at most 2), nesting at most 64 deep, nothing after the value.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Any thread. Appends @text to @out as a JSON string (null for NULL):
 * bytes that are not UTF-8 (a path is only bytes) replaced by U+FFFD, the
 * quote and the backslash escaped, newline and tab as \n and \t, the other
 * C0 controls, DEL and the C1 controls U+0080..U+009F as \u00XX (a record
 * shown on a terminal cannot drive it), everything else as it is. */
void  lw_json_append_string   (GString           *out,
                               const char        *text);

/* Any thread. One member of the top-level object, as re-encoded: @key with
 * its quotes, @value the member's JSON text. FALSE refuses the document. */
typedef gboolean (*LwJsonMemberCheck) (const char *key,
                                       const char *value,
                                       gpointer    data);

/* Any thread. The @len bytes of @json (any bytes) re-encoded on one line
 * when they hold exactly one JSON object whose top-level members @check
 * accepts; NULL otherwise. */
char *lw_json_reencode_object (const char        *json,
                               gsize              len,
                               LwJsonMemberCheck  check,
                               gpointer           data);

G_END_DECLS
