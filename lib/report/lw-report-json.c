/* lw-report-json.c: a report as a JSON Lines record */
#include "lw-report.h"
#include "lw-report-program.h"
#include "lw-json.h"

#include <inttypes.h>

/* A number with one decimal, locale-independent. */
static void
lw_json_ms (GString *out, double ms)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append (out, g_ascii_formatd (buf, sizeof buf, "%.1f", ms));
}

static void
lw_json_frames (GString *out, const LwFrame *frames, guint n_frames)
{
  gboolean interpreted = lw_report_frames_interpreted (frames, n_frames);

  g_string_append_c (out, '[');
  for (guint i = 0; i < n_frames; i++)
    {
      const LwFrame *frame = &frames[i];

      g_string_append_printf (out, "%s{\"ip\":\"0x%" PRIxPTR "\",\"module\":", i ? "," : "", frame->ip);
      lw_json_append_string (out, frame->module);
      g_string_append (out, ",\"build_id\":");
      lw_json_append_string (out, frame->build_id);
      g_string_append_printf (out, ",\"module_offset\":\"0x%" PRIxPTR "\",\"symbol\":", frame->module_offset);
      lw_json_append_string (out, frame->symbol);
      g_string_append_printf (out, ",\"symbol_offset\":%" PRIuPTR ",\"file\":", frame->symbol_offset);
      lw_json_append_string (out, frame->file);
      if (frame->file != NULL && frame->line > 0)
        g_string_append_printf (out, ",\"line\":%u", frame->line);
      else
        g_string_append (out, ",\"line\":null");
      /* Only frames of an interpreted language say which: native ones do not. */
      if (frame->lang != NULL)
        {
          g_string_append (out, ",\"lang\":");
          lw_json_append_string (out, frame->lang);
        }
      g_string_append_printf (out, ",\"inlined\":%s", frame->inlined ? "true" : "false");
      /* The rule behind the summary's innermost program frame, so that a
       * reader of the record names the same frame without its own copy. */
      g_string_append_printf (out, ",\"is_program\":%s}",
                              lw_report_frame_is_program_in (frame, interpreted) ? "true" : "false");
    }
  g_string_append_c (out, ']');
}

static void
lw_json_optional_ms (GString *out, const char *name, double ms)
{
  g_string_append_printf (out, ",\"%s\":", name);
  if (ms >= 0)
    lw_json_ms (out, ms);
  else
    g_string_append (out, "null");
}

/* "frames_missed": per GTK window, the frames it missed; only when GTK's
 * windows are followed. The refresh interval keeps three decimals: the
 * count is the lag over it, and 16.7 for 16.667 ms would be off by one in
 * a 400 ms lag. */
static void
lw_json_frames_missed (GString *out, LagWatchReport *report)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (!report->frames_followed)
    return;
  g_string_append (out, ",\"frames_missed\":[");
  for (guint i = 0; i < report->n_windows; i++)
    {
      g_string_append (out, i ? ",{\"title\":" : "{\"title\":");
      lw_json_append_string (out, report->windows[i].title);
      g_string_append_printf (out, ",\"refresh_interval_ms\":%s,\"frames_missed\":%u}",
                              g_ascii_formatd (buf, sizeof buf, "%.3f", report->windows[i].refresh_interval_ms),
                              report->windows[i].frames_missed);
    }
  g_string_append_c (out, ']');
}

static void
lw_json_call_list (GString *out, const LwCall *parent)
{
  g_string_append_c (out, '[');
  for (guint i = 0; parent->children != NULL && i < parent->children->len; i++)
    {
      const LwCall *call = parent->children->pdata[i];

      g_string_append (out, i ? ",{\"name\":" : "{\"name\":");
      lw_json_append_string (out, call->name);
      g_string_append (out, ",\"start_ms\":");
      lw_json_ms (out, (double) call->start_ns / 1e6);
      g_string_append (out, ",\"duration_ms\":");
      lw_json_ms (out, (double) call->duration_ns / 1e6);
      if (call->samples > 0)
        g_string_append_printf (out, ",\"samples\":%u", call->samples);
      if (call->short_calls > 0)
        g_string_append_printf (out, ",\"short_calls\":%u", call->short_calls);
      g_string_append (out, ",\"children\":");
      lw_json_call_list (out, call);
      g_string_append_c (out, '}');
    }
  g_string_append_c (out, ']');
}

/* The call tree, when the lag has one: "calls" (the outermost calls, each
 * with its children), "calls_exact" and, for a tree from samples,
 * "calls_samples" (the samples it was built from: a call's or a summary's
 * "samples" over it is its share of the lag). */
static void
lw_json_calls (GString *out, const LagWatchReport *report)
{
  if (report->calls == NULL)
    return;
  g_string_append (out, ",\"calls\":");
  lw_json_call_list (out, report->calls);
  g_string_append_printf (out, ",\"calls_exact\":%s", report->calls_exact ? "true" : "false");
  if (!report->calls_exact && report->calls->samples > 0)
    g_string_append_printf (out, ",\"calls_samples\":%u", report->calls->samples);
}

char *
lagwatch_report_to_json (LagWatchReport *report)
{
  GString *out;
  g_autofree char *time = NULL;

  g_return_val_if_fail (report != NULL, NULL);
  if (report->json != NULL && report->threads_left_out == 0)
    return g_strdup (report->json);
  out = g_string_sized_new (512 + 200 * report->n_frames);
  time = lw_json_format_time (report->start_time_us);

  g_string_append (out, "{\"event\":");
  lw_json_append_string (out, report->event);
  g_string_append (out, ",\"id\":");
  lw_json_append_string (out, report->id);
  g_string_append (out, ",\"time\":");
  lw_json_append_string (out, time);
  g_string_append (out, ",\"duration_ms\":");
  lw_json_ms (out, report->duration_ms);
  g_string_append_printf (out, ",\"threshold_ms\":%u,\"complete\":%s,\"pid\":%d,\"thread_id\":%d,"
                          "\"thread_name\":",
                          report->threshold_ms, report->complete ? "true" : "false",
                          report->pid, report->thread_id);
  lw_json_append_string (out, report->thread_name);
  lw_json_optional_ms (out, "caught_ms", report->caught_ms);
  g_string_append (out, ",\"source\":");
  lw_json_append_string (out, report->source);
  g_string_append (out, ",\"priority\":");
  if (report->phase != NULL && g_str_equal (report->phase, "dispatch") && report->source_known)
    g_string_append_printf (out, "%d", report->priority);
  else
    g_string_append (out, "null");
  g_string_append (out, ",\"phase\":");
  lw_json_append_string (out, report->phase);
  lw_json_optional_ms (out, "cpu_ms", report->cpu_ms);
  g_string_append (out, ",\"thread_state\":");
  lw_json_append_string (out, report->thread_state);
  g_string_append (out, ",\"syscall\":");
  lw_json_append_string (out, report->syscall);
  g_string_append (out, ",\"wchan\":");
  lw_json_append_string (out, report->wchan);
  g_string_append (out, ",\"fingerprint\":");
  lw_json_append_string (out, report->fingerprint);
  g_string_append (out, ",\"fingerprint2\":");
  lw_json_append_string (out, report->fingerprint2);
  g_string_append_printf (out, ",\"occurrence\":%u,\"samples\":%u", report->occurrence, report->n_samples);
  g_string_append (out, ",\"stack_method\":");
  lw_json_append_string (out, report->stack_method);
  g_string_append (out, ",\"stack_error\":");
  lw_json_append_string (out, report->stack_error);
  g_string_append_printf (out, ",\"stack_truncated\":%s,\"stack\":",
                          report->stack_truncated ? "true" : "false");
  lw_json_frames (out, report->frames, report->n_frames);
  g_string_append (out, ",\"stacks\":[");
  for (guint i = 0; i < report->n_stacks; i++)
    {
      const char *missing = lw_lang_missing_name (report->stacks[i].lang_missing);

      g_string_append_printf (out, "%s{\"samples\":%u,\"truncated\":%s,", i ? "," : "",
                              report->stacks[i].samples, report->stacks[i].truncated ? "true" : "false");
      /* Only on a stack that ran Python without its frames: why. */
      if (missing != NULL)
        g_string_append_printf (out, "\"python_frames_missing\":\"%s\",", missing);
      g_string_append (out, "\"stack\":");
      lw_json_frames (out, report->stacks[i].frames, report->stacks[i].n_frames);
      g_string_append_c (out, '}');
    }
  g_string_append_c (out, ']');
  {
    guint moved = lw_report_python_missing (report, LW_LANG_MISSING_MOVED);
    guint unreadable = lw_report_python_missing (report, LW_LANG_MISSING_UNREADABLE);

    /* Only when some sample ran Python without its frames. */
    if (moved + unreadable > 0)
      g_string_append_printf (out, ",\"samples_python_missing\":{\"moved\":%u,\"unreadable\":%u}", moved,
                              unreadable);
  }
  /* A hang's other threads: [] when it has none (a single-threaded
   * program), so a reader tells "none" from "not a hang record". */
  if (report->threads != NULL || g_strcmp0 (report->event, "hang") == 0)
    {
      g_string_append (out, ",\"threads\":[");
      for (guint i = 0; i < report->n_threads; i++)
        {
          const LwReportStack *thread = &report->threads[i];

          g_string_append_printf (out, "%s{\"id\":%d,\"name\":", i ? "," : "", thread->thread_id);
          lw_json_append_string (out, thread->thread_name);
          g_string_append (out, ",\"state\":");
          lw_json_append_string (out, thread->thread_state);
          g_string_append (out, ",\"stack_error\":");
          lw_json_append_string (out, lw_report_thread_stack_error (report, i));
          g_string_append (out, ",\"stack\":");
          if (lw_report_thread_left_out (report, i))
            g_string_append (out, "[]");
          else
            lw_json_frames (out, thread->frames, thread->n_frames);
          g_string_append_c (out, '}');
        }
      g_string_append_c (out, ']');
      if (report->threads_left_out > 0)
        g_string_append_printf (out, ",\"threads_stacks_left_out\":%u", report->threads_left_out);
    }
  if (report->previous_exe != NULL)
    {
      g_string_append (out, ",\"exe\":");
      lw_json_append_string (out, report->previous_exe);
    }
  lw_json_frames_missed (out, report);
  /* Why "stack" ends where it does: its outermost frame, the frame limit,
   * or a frame the unwinder could not step past. */
  g_string_append (out, ",\"stack_end\":");
  lw_json_append_string (out, !report->stack_truncated ? "outermost"
                       : report->stack_at_limit ? "frame-limit" : "unwind-stopped");
  lw_json_optional_ms (out, "run_delay_ms", report->run_delay_ms);
  lw_json_optional_ms (out, "stopped_ms", report->stopped_ms);
  lw_json_optional_ms (out, "throttled_ms", report->throttled_ms);
  g_string_append_printf (out, ",\"cpu_starved\":%s,\"input_pending\":%s",
                          report->cpu_starved ? "true" : "false", report->input_pending ? "true" : "false");
  if (report->source_callback != NULL)
    {
      g_string_append (out, ",\"source_callback\":");
      lw_json_append_string (out, report->source_callback);
      g_string_append (out, ",\"source_callback_kind\":");
      lw_json_append_string (out, report->source_callback_kind);
    }
  lw_json_calls (out, report);
  if (report->stopped_by != NULL)
    {
      g_string_append (out, ",\"stopped_by\":");
      lw_json_append_string (out, report->stopped_by);
    }
  g_string_append_c (out, '}');
  return g_string_free (out, FALSE);
}
