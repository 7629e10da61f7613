/* lw-sink-record.c: the records the sinks write themselves */
#include "lw-sink-record.h"

#include "lw-json.h"

/* Any thread. */
void
lw_sink_dropped_record (guint64 count, const char *reason, const char *text_reason, char **json,
                        char **text)
{
  GString *out = g_string_new (NULL);

  g_string_append_printf (out, "{\"event\":\"dropped\",\"count\":%" G_GUINT64_FORMAT ",\"reason\":", count);
  lw_json_append_string (out, reason);
  g_string_append_c (out, '}');
  *json = g_string_free (out, FALSE);
  *text = g_strdup_printf ("lagwatch: %" G_GUINT64_FORMAT " report%s dropped: %s\n", count,
                           count == 1 ? "" : "s", text_reason != NULL ? text_reason : reason);
}

/* Any thread. */
void
lw_sink_hang_killed_record (int previous_pid, const char *hang_json, const char *hang_text, char **json,
                            char **text)
{
  *json = g_strdup_printf ("{\"event\":\"hang-killed\",\"previous_pid\":%d,\"hang\":%s}", previous_pid,
                           hang_json);
  *text = g_strdup_printf ("lagwatch: the previous run (pid %d) was killed during a hang; its last record:\n%s",
                           previous_pid, hang_text);
}
