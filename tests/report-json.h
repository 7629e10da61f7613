/* report-json.h: reading lagwatch's JSON Lines records in tests */
#pragma once

#include <json-glib/json-glib.h>

/* TRUE when a frame of @stack (a record's "stack" array) is named @symbol. */
static inline gboolean
json_frames_have (JsonArray *stack, const char *symbol)
{
  for (guint i = 0; i < json_array_get_length (stack); i++)
    {
      JsonObject *frame = json_array_get_object_element (stack, i);

      if (!json_object_get_null_member (frame, "symbol")
          && g_strcmp0 (json_object_get_string_member (frame, "symbol"), symbol) == 0)
        return TRUE;
    }
  return FALSE;
}
