/* lw-json.h: JSON read back from a file anyone may have written
 *
 * A strict reader (RFC 8259) that writes back what it read, re-encoded, so
 * that what lagwatch passes on is never the bytes it found: strings
 * re-escaped (control characters, DEL and C1 controls as \uXXXX, UTF-8
 * checked, no NUL), numbers checked and bounded (an integer part of at most
 * 18 digits, an exponent of at most 2), nesting at most 64 deep, nothing
 * after the value.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

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
