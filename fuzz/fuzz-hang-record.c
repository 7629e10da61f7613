/* fuzz-hang-record.c: the hang-record reader on arbitrary bytes
 *
 * A record in the state directory may have been planted or damaged: the
 * reader must never crash, and what it accepts must be safe to pass on:
 * a positive pid, JSON that json-glib parses to an object with
 * "event":"hang", and text that is valid UTF-8 without control characters
 * but \n and \t.
 */
#include <json-glib/json-glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "lw-hang.h"

/* The program the seeds' "exe=" lines name. */
#define FUZZ_EXE "/usr/bin/fuzzed"

static void
fuzz_check_text (const char *text)
{
  if (!g_utf8_validate (text, -1, NULL))
    abort ();
  for (const char *p = text; *p != '\0'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c < 0xa0))
        abort ();
    }
}

static void
fuzz_check_json (const char *json)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonNode *root;
  JsonObject *object;

  if (strchr (json, '\n') != NULL || !json_parser_load_from_data (parser, json, -1, NULL))
    abort ();
  root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_OBJECT (root))
    abort ();
  object = json_node_get_object (root);
  if (g_strcmp0 (json_object_get_string_member_with_default (object, "event", NULL), "hang") != 0)
    abort ();
  if (json_object_has_member (object, "pid") && json_object_get_int_member (object, "pid") <= 0)
    abort ();
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  LwPreviousHang *hang = NULL;
  const char *why = NULL;
  LwHangRecordStatus status;

  status = lw_hang_record_parse ((const char *) data, size, FUZZ_EXE, &hang, &why);
  if (status == LW_HANG_RECORD_OK)
    {
      if (hang == NULL || hang->pid <= 0)
        abort ();
      fuzz_check_json (hang->json);
      fuzz_check_text (hang->text);
      lw_previous_hang_free (hang);
    }
  else if (hang != NULL || (status == LW_HANG_RECORD_INVALID && why == NULL))
    abort ();
  return 0;
}
