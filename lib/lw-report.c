/* lw-report.c: LagWatchReport, its accessors and its renderings */
#include "lw-report.h"

#include <inttypes.h>

LagWatchReport *
lw_report_new (void)
{
  LagWatchReport *report = g_new0 (LagWatchReport, 1);

  report->ref_count = 1;
  report->caught_ms = -1;
  return report;
}

LagWatchReport *
lagwatch_report_ref (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  g_atomic_int_inc (&report->ref_count);
  return report;
}

void
lagwatch_report_unref (LagWatchReport *report)
{
  g_return_if_fail (report != NULL);
  if (!g_atomic_int_dec_and_test (&report->ref_count))
    return;
  for (guint i = 0; i < report->n_frames; i++)
    lw_frame_clear (&report->frames[i]);
  g_free (report->frames);
  g_free (report->id);
  g_free (report->thread_name);
  g_free (report->stack_method);
  g_free (report->stack_error);
  g_free (report);
}

const char *
lagwatch_report_get_id (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->id;
}

double
lagwatch_report_get_duration_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->duration_ms;
}

guint
lagwatch_report_get_threshold_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->threshold_ms;
}

gint64
lagwatch_report_get_start_time (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->start_time_us;
}

int
lagwatch_report_get_thread_id (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->thread_id;
}

gboolean
lagwatch_report_get_complete (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->complete;
}

guint
lagwatch_report_get_n_frames (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_frames;
}

guint64
lagwatch_report_get_frame (LagWatchReport *report,
                           guint           index,
                           const char    **module,
                           const char    **build_id,
                           guint64        *module_offset,
                           const char    **symbol,
                           guint64        *symbol_offset)
{
  const LwFrame *frame;

  g_return_val_if_fail (report != NULL, 0);
  if (index >= report->n_frames)
    return 0;
  frame = &report->frames[index];
  if (module != NULL)
    *module = frame->module;
  if (build_id != NULL)
    *build_id = frame->build_id;
  if (module_offset != NULL)
    *module_offset = frame->module_offset;
  if (symbol != NULL)
    *symbol = frame->symbol;
  if (symbol_offset != NULL)
    *symbol_offset = frame->symbol_offset;
  return frame->ip;
}

/* "2026-11-21T15:40:12.345Z" */
static char *
lw_report_format_time (gint64 time_us)
{
  g_autoptr(GDateTime) utc = g_date_time_new_from_unix_utc (time_us / G_USEC_PER_SEC);
  g_autofree char *seconds = NULL;

  if (utc == NULL)
    return g_strdup ("1970-01-01T00:00:00.000Z");
  seconds = g_date_time_format (utc, "%Y-%m-%dT%H:%M:%S");
  return g_strdup_printf ("%s.%03dZ", seconds, (int) (time_us % G_USEC_PER_SEC / 1000));
}

/* A JSON string, or null. Invalid UTF-8 (a path is only bytes) is repaired
 * so the line stays valid JSON. */
static void
lw_json_string (GString *out, const char *text)
{
  g_autofree char *valid = NULL;

  if (text == NULL)
    {
      g_string_append (out, "null");
      return;
    }
  valid = g_utf8_make_valid (text, -1);
  g_string_append_c (out, '"');
  for (const char *p = valid; *p != '\0'; p++)
    {
      unsigned char c = (unsigned char) *p;

      if (c == '"' || c == '\\')
        g_string_append_printf (out, "\\%c", c);
      else if (c == '\n')
        g_string_append (out, "\\n");
      else if (c == '\t')
        g_string_append (out, "\\t");
      else if (c < 0x20)
        g_string_append_printf (out, "\\u%04x", c);
      else
        g_string_append_c (out, (char) c);
    }
  g_string_append_c (out, '"');
}

/* A number with one decimal, locale-independent. */
static void
lw_json_ms (GString *out, double ms)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append (out, g_ascii_formatd (buf, sizeof buf, "%.1f", ms));
}

char *
lagwatch_report_to_json (LagWatchReport *report)
{
  GString *out = g_string_sized_new (256 + 200 * report->n_frames);
  g_autofree char *time = NULL;

  g_return_val_if_fail (report != NULL, NULL);
  time = lw_report_format_time (report->start_time_us);

  g_string_append (out, "{\"event\":\"lag\",\"id\":");
  lw_json_string (out, report->id);
  g_string_append (out, ",\"time\":");
  lw_json_string (out, time);
  g_string_append (out, ",\"duration_ms\":");
  lw_json_ms (out, report->duration_ms);
  g_string_append_printf (out, ",\"threshold_ms\":%u,\"complete\":%s,\"pid\":%d,\"thread_id\":%d,"
                          "\"thread_name\":",
                          report->threshold_ms, report->complete ? "true" : "false",
                          report->pid, report->thread_id);
  lw_json_string (out, report->thread_name);
  g_string_append (out, ",\"caught_ms\":");
  if (report->caught_ms >= 0)
    lw_json_ms (out, report->caught_ms);
  else
    g_string_append (out, "null");
  g_string_append (out, ",\"stack_method\":");
  lw_json_string (out, report->stack_method);
  g_string_append (out, ",\"stack_error\":");
  lw_json_string (out, report->stack_error);
  g_string_append_printf (out, ",\"stack_truncated\":%s,\"stack\":[",
                          report->stack_truncated ? "true" : "false");
  for (guint i = 0; i < report->n_frames; i++)
    {
      const LwFrame *frame = &report->frames[i];

      g_string_append_printf (out, "%s{\"ip\":\"0x%" PRIxPTR "\",\"module\":", i ? "," : "", frame->ip);
      lw_json_string (out, frame->module);
      g_string_append (out, ",\"build_id\":");
      lw_json_string (out, frame->build_id);
      g_string_append_printf (out, ",\"module_offset\":\"0x%" PRIxPTR "\",\"symbol\":", frame->module_offset);
      lw_json_string (out, frame->symbol);
      g_string_append_printf (out, ",\"symbol_offset\":%" PRIuPTR "}", frame->symbol_offset);
    }
  g_string_append (out, "]}");
  return g_string_free (out, FALSE);
}

char *
lagwatch_report_to_text (LagWatchReport *report)
{
  GString *out = g_string_sized_new (256 + 100 * report->n_frames);
  g_autofree char *time = NULL;

  g_return_val_if_fail (report != NULL, NULL);
  time = lw_report_format_time (report->start_time_us);

  g_string_append_printf (out, "lagwatch: %s of %.1f ms (threshold %u ms) on thread %d",
                          report->complete ? "lag" : "lag still running at detach",
                          report->duration_ms, report->threshold_ms, report->thread_id);
  if (report->thread_name != NULL)
    g_string_append_printf (out, " \"%s\"", report->thread_name);
  g_string_append_printf (out, ", began %s [%s]\n", time, report->id);
  if (report->caught_ms >= 0)
    g_string_append_printf (out, "  stack taken %.1f ms in, %s:\n", report->caught_ms,
                            g_strcmp0 (report->stack_method, "signal") == 0
                              ? "by signal (the thread was running)"
                              : "from /proc (the thread was sleeping in a system call)");
  if (report->stack_error != NULL)
    g_string_append_printf (out, "  (%s)\n", report->stack_error);
  for (guint i = 0; i < report->n_frames; i++)
    {
      const LwFrame *frame = &report->frames[i];
      g_autofree char *base = frame->module ? g_path_get_basename (frame->module) : g_strdup ("?");

      g_string_append_printf (out, "  #%-2u 0x%016" PRIxPTR "  ", i, frame->ip);
      if (frame->symbol != NULL)
        g_string_append_printf (out, "%s+0x%" PRIxPTR, frame->symbol, frame->symbol_offset);
      else
        g_string_append (out, "??");
      g_string_append_printf (out, "  (%s +0x%" PRIxPTR ")\n", base, frame->module_offset);
    }
  if (report->stack_truncated)
    g_string_append (out, "  ... (more frames not shown)\n");
  return g_string_free (out, FALSE);
}
