/* lw-report-text.c: a report as text, for stderr and the journal */
#include "lw-report-text.h"
#include "lw-report.h"
#include "lw-report-program.h"
#include "lw-say.h"

#include "lw-call-tree.h"

#include <inttypes.h>
#include <string.h>

#define LW_REPORT_SHORT_NAME 80

/* Any thread. The length of the operator's symbol after "operator" at @p
 * ("<<", "->", "<=>"...), whose angle brackets are no template's. */
static gsize
lw_report_operator_length (const char *name, const char *p)
{
  gsize n = 0;

  if (!g_str_has_prefix (p, "operator") ||
      (p > name && (g_ascii_isalnum (p[-1]) || p[-1] == '_')))
    return 0;
  n = strlen ("operator");
  while (p[n] != '\0' && strchr ("<>=-", p[n]) != NULL)
    n++;
  return n;
}

/* Any thread. */
char *
lw_report_short_name (const char *name)
{
  GString *out;
  int depth = 0;

  g_return_val_if_fail (name != NULL, NULL);
  if (strlen (name) <= LW_REPORT_SHORT_NAME)
    return g_strdup (name);

  out = g_string_sized_new (LW_REPORT_SHORT_NAME);
  for (const char *p = name; *p != '\0'; p++)
    {
      gsize operator_length = depth == 0 ? lw_report_operator_length (name, p) : 0;

      if (operator_length > 0)
        {
          g_string_append_len (out, p, (gssize) operator_length);
          p += operator_length - 1;
        }
      else if (*p == '<')
        {
          if (depth++ == 0)
            g_string_append (out, "<...");
        }
      else if (*p == '>' && depth > 0)
        {
          if (--depth == 0)
            g_string_append_c (out, '>');
        }
      else if (depth == 0)
        g_string_append_c (out, *p);
    }

  /* Still long: the parameters go too, "(...)", the list whose ")" is the
   * last one (a "const" may follow it). */
  if (out->len > LW_REPORT_SHORT_NAME)
    {
      char *close = strrchr (out->str, ')');
      int level = 0;

      for (char *p = close; p != NULL && p >= out->str; p--)
        {
          if (*p == ')')
            level++;
          else if (*p == '(' && --level == 0)
            {
              if (close - p > 4)
                {
                  gsize at = (gsize) (p - out->str) + 1;

                  g_string_erase (out, (gssize) at, close - p - 1);
                  g_string_insert (out, (gssize) at, "...");
                }
              break;
            }
        }
    }
  return g_string_free (out, FALSE);
}

/* Any thread. */
char *
lw_report_stack_label (const LwFrame *frames,
                       guint          n_frames)
{
  g_autofree char *base = NULL;
  const LwFrame *program = lw_report_program_frame (frames, n_frames);

  if (program != NULL)
    return lw_report_short_name (program->symbol);
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].symbol != NULL)
      return lw_report_short_name (frames[i].symbol);
  if (n_frames == 0)
    return g_strdup ("(no stack)");
  base = frames[0].module != NULL ? g_path_get_basename (frames[0].module) : g_strdup ("??");
  return g_strdup_printf ("%s+0x%" PRIxPTR, base, frames[0].module_offset);
}

/* Any thread. @text as the text report shows it, for a terminal: control
 * bytes as \xNN (a name can hold anything: a GSource's, a thread's, a
 * Python function's). The copy is kept in @keep; NULL stays NULL. */
static const char *
lw_text_safe (GPtrArray *keep, const char *text)
{
  char *escaped = lw_text_escape (text);

  if (escaped != NULL)
    g_ptr_array_add (keep, escaped);
  return escaped;
}

/* A frame of an interpreted language: "function (file.py:12)  [python]",
 * no address (it is not one); "(file.js)" when the line is not known. */
static void
lw_text_language_frame (GString *out, guint index, const LwFrame *frame)
{
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *file = frame->file ? g_path_get_basename (frame->file) : g_strdup ("?");

  g_string_append_printf (out, "  #%-2u %s (%s", index,
                          frame->symbol ? lw_text_safe (keep, frame->symbol) : "??", lw_text_safe (keep, file));
  if (frame->line > 0)
    g_string_append_printf (out, ":%u", frame->line);
  g_string_append_printf (out, ")  [%s]\n", lw_text_safe (keep, frame->lang));
}

/* Any thread. The share of the lag the process stood still, the share its
 * cgroup's quota held it back, the machine's share, and waiting input. */
static void
lw_text_whose_fault (GString *out, const LagWatchReport *report)
{
  if (report->stopped_ms >= 1)
    g_string_append_printf (out, "  stopped for %.0f ms (SIGSTOP, a frozen cgroup): the program did not run "
                            "then, not its doing\n", report->stopped_ms);
  if (report->throttled_ms >= 1 && report->duration_ms > 0)
    g_string_append_printf (out, "  throttled by its cgroup for %.0f ms (%.0f%% of the lag): its CPU quota "
                            "was used up\n", report->throttled_ms,
                            MIN (100.0 * report->throttled_ms / report->duration_ms, 100.0));
  if (report->run_delay_ms >= 1 && report->duration_ms > 0
      && (report->cpu_starved || report->run_delay_ms >= report->duration_ms / 10))
    g_string_append_printf (out, "  waiting for a CPU: %.0f ms (%.0f%% of the lag)%s\n", report->run_delay_ms,
                            MIN (100.0 * report->run_delay_ms / report->duration_ms, 100.0),
                            report->cpu_starved ? ": the machine was busy" : "");
  if (report->input_pending)
    g_string_append (out, "  input was waiting: a file descriptor the loop polls was readable during the lag\n");
}

static void
lw_text_frames (GString *out, const LwFrame *frames, guint n_frames, guint limit)
{
  for (guint i = 0; i < n_frames && i < limit; i++)
    {
      const LwFrame *frame = &frames[i];
      g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
      g_autofree char *base = frame->module ? g_path_get_basename (frame->module) : g_strdup ("?");

      if (frame->lang != NULL)
        {
          lw_text_language_frame (out, i, frame);
          continue;
        }
      g_string_append_printf (out, "  #%-2u 0x%016" PRIxPTR "  ", i, frame->ip);
      if (frame->symbol != NULL)
        {
          g_autofree char *name = lw_report_short_name (frame->symbol);

          if (frame->inlined)
            g_string_append_printf (out, "%s (inlined)", lw_text_safe (keep, name));
          else if (i > 0 && frame->symbol_offset == 0)
            /* A return address is never a function's start: a frame
             * named by its address alone (GLib's dispatch), offset unknown. */
            g_string_append (out, lw_text_safe (keep, name));
          else
            g_string_append_printf (out, "%s+0x%" PRIxPTR, lw_text_safe (keep, name), frame->symbol_offset);
        }
      else
        g_string_append (out, "??");
      g_string_append_printf (out, "  (%s +0x%" PRIxPTR ")", lw_text_safe (keep, base), frame->module_offset);
      if (frame->file != NULL)
        {
          g_autofree char *file = g_path_get_basename (frame->file);

          g_string_append_printf (out, "  at %s:%u", lw_text_safe (keep, file), frame->line);
        }
      g_string_append_c (out, '\n');
    }
}

static const char *
lw_text_ordinal_suffix (guint n)
{
  if (n % 100 >= 11 && n % 100 <= 13)
    return "th";
  switch (n % 10)
    {
    case 1: return "st";
    case 2: return "nd";
    case 3: return "rd";
    default: return "th";
    }
}

/* One line per GTK window that missed frames during the lag. */
static void
lw_text_frames_missed (GString *out, LagWatchReport *report)
{
  for (guint i = 0; i < report->n_windows; i++)
    {
      const LwReportWindow *window = &report->windows[i];

      g_autofree char *title = lw_text_escape (window->title);

      if (window->frames_missed == 0)
        continue;
      if (title != NULL)
        g_string_append_printf (out, "  the window '%s'", title);
      else
        g_string_append (out, "  a window with no title");
      g_string_append_printf (out, " missed %u frame%s (one every %.1f ms)\n", window->frames_missed,
                              window->frames_missed == 1 ? "" : "s", window->refresh_interval_ms);
    }
}

/* Calls listed on stderr: a tree is read at a glance or not at all. */
#define LW_TEXT_CALLS 40

/* The call tree after the heaviest stack, one call a line, indented by depth. */
static void
lw_text_calls (GString *out, LagWatchReport *report)
{
  if (report->n_calls == 0)
    return;
  if (report->calls_exact)
    g_string_append (out, "  calls, in order (exact, from the tracer):\n");
  else
    g_string_append_printf (out, "  calls, in order (from %u samples ~%.0f ms apart: each within about that):\n",
                            report->n_timeline, (double) lw_report_sample_interval (report, 0) / 1e6);
  for (guint i = 0; i < report->n_calls && i < LW_TEXT_CALLS; i++)
    {
      const LwCall *call = report->call_list[i];
      g_autofree char *name = lw_text_escape (call->name);

      g_string_append_printf (out, "    %*s%s  %.0f ms  (at %.0f ms)\n", 2 * report->call_depth[i], "",
                              name != NULL ? name : "??", (double) call->duration_ns / 1e6,
                              (double) call->start_ns / 1e6);
    }
  if (report->n_calls > LW_TEXT_CALLS)
    g_string_append_printf (out, "    ... (%u more calls)\n", report->n_calls - LW_TEXT_CALLS);
}

char *
lw_report_to_text_full (LagWatchReport *report, guint skipped_since_shown)
{
  GString *out = g_string_sized_new (512 + 100 * report->n_frames);
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *time = lw_report_format_time (report->start_time_us);
  const char *what;

  if (g_str_equal (report->event, "hang"))
    what = "HANG, still going after";
  else if (g_str_equal (report->event, "hang-killed"))
    what = "the previous run was killed during a hang, after";
  else
    what = report->complete ? "lag of"
           : g_strcmp0 (report->stopped_by, "exit") == 0 ? "lag still running at exit, after"
           : "lag still running at detach, after";
  g_string_append_printf (out, "lagwatch: %s %.1f ms (threshold %u ms) on thread %d",
                          what, report->duration_ms, report->threshold_ms, report->thread_id);
  if (report->thread_name != NULL)
    g_string_append_printf (out, " \"%s\"", lw_text_safe (keep, report->thread_name));
  g_string_append_printf (out, ", began %s [%s]\n", time, lw_text_safe (keep, report->id));
  if (report->previous_exe != NULL)
    g_string_append_printf (out, "  program: %s (pid %d)\n", lw_text_safe (keep, report->previous_exe),
                            report->pid);

  if (report->phase != NULL)
    {
      g_string_append (out, "  ");
      if (g_str_equal (report->phase, "dispatch"))
        {
          if (report->source != NULL)
            g_string_append_printf (out, "in GSource \"%s\" (priority %d)", lw_text_safe (keep, report->source),
                                    report->priority);
          else if (report->source_callback != NULL)
            g_string_append_printf (out, "in %s callback %s (unnamed GSource, priority %d)",
                                    report->source_callback_kind != NULL
                                    ? lw_text_safe (keep, report->source_callback_kind) : "GSource",
                                    lw_text_safe (keep, report->source_callback), report->priority);
          else
            g_string_append_printf (out, "in an unnamed GSource (priority %d)", report->priority);
        }
      else if (g_str_equal (report->phase, "starved"))
        g_string_append (out, "the loop kept iterating without polling: its input was starved");
      else
        g_string_append_printf (out, "in the loop's %s phase", lw_text_safe (keep, report->phase));
      g_string_append (out, "\n");
    }
  if (report->cpu_ms >= 0 && report->duration_ms > 0)
    {
      double share = 100.0 * report->cpu_ms / report->duration_ms;

      if (share >= 50)
        g_string_append_printf (out, "  computing: %.1f ms on CPU (%.0f%% of the lag)\n",
                                report->cpu_ms, MIN (share, 100.0));
      else if (g_strcmp0 (report->thread_state, "running") == 0)
        {
          /* What kept it off the CPU most: not the machine when the
           * process stood still or its cgroup's quota held it back. */
          double rest = report->duration_ms - report->cpu_ms;

          g_string_append_printf (out, "  runnable: %.1f ms on CPU (%.0f%%), %s\n", report->cpu_ms, share,
                                  report->stopped_ms >= rest / 2 ? "the process was stopped most of the rest"
                                  : report->throttled_ms >= rest / 2 ? "its cgroup's CPU quota held it back"
                                  : "the CPU was busy elsewhere");
        }
      else
        {
          g_string_append_printf (out, "  waiting: %.1f ms on CPU (%.0f%%)", report->cpu_ms, share);
          if (report->thread_state != NULL)
            g_string_append_printf (out, ", %s", report->thread_state);
          if (report->syscall != NULL)
            g_string_append_printf (out, " in %s()", report->syscall);
          if (report->wchan != NULL)
            g_string_append_printf (out, " [kernel: %s]", lw_text_safe (keep, report->wchan));
          g_string_append (out, "\n");
        }
    }
  lw_text_frames_missed (out, report);
  lw_text_whose_fault (out, report);
  if (report->n_samples > 0 && report->n_stacks > 0)
    g_string_append_printf (out, "  %u sample%s; heaviest stack (%.0f%%)", report->n_samples,
                            report->n_samples == 1 ? "" : "s",
                            100.0 * report->stacks[0].samples / report->n_samples);
  if (report->caught_ms >= 0)
    g_string_append_printf (out, "%sfirst taken %.1f ms in, %s:\n",
                            report->n_samples > 0 ? ", " : "  ", report->caught_ms,
                            g_strcmp0 (report->stack_method, "signal") == 0
                              ? "by signal (the thread was running)"
                              : "from /proc (the thread was sleeping in a system call)");
  else if (report->n_samples > 0)
    g_string_append (out, ":\n");
  if (report->stack_error != NULL)
    g_string_append_printf (out, "  (%s)\n", lw_text_safe (keep, report->stack_error));
  lw_text_frames (out, report->frames, report->n_frames, G_MAXUINT);
  if (report->stack_truncated && report->stack_at_limit)
    g_string_append (out, "  ... (more frames not shown: the frame limit)\n");
  else if (report->stack_truncated && report->n_frames > 0)
    g_string_append (out, "  ... (the unwind stopped here: no way to step past this frame; "
                          "the stack may be incomplete)\n");
  for (guint i = 1; i < report->n_stacks && i < 4; i++)
    {
      g_autofree char *label = lw_report_stack_label (report->stacks[i].frames,
                                                      report->stacks[i].n_frames);

      g_string_append_printf (out, "  also %.0f%% in %s\n",
                              100.0 * report->stacks[i].samples / MAX (report->n_samples, 1),
                              lw_text_safe (keep, label));
    }
  lw_text_calls (out, report);
  for (guint i = 0; i < report->n_threads; i++)
    {
      const LwReportStack *thread = &report->threads[i];

      const char *error = lw_report_thread_stack_error (report, i);

      g_string_append_printf (out, "  thread %d \"%s\" (%s):\n", thread->thread_id,
                              thread->thread_name ? lw_text_safe (keep, thread->thread_name) : "?",
                              thread->thread_state ? lw_text_safe (keep, thread->thread_state) : "?");
      if (error != NULL)
        {
          g_string_append_printf (out, "    (no stack: %s)\n", lw_text_safe (keep, error));
          continue;
        }
      lw_text_frames (out, thread->frames, thread->n_frames, 12);
      if (thread->n_frames > 12)
        g_string_append_printf (out, "  ... (%u more frames not shown here: all are in the JSON)\n",
                                thread->n_frames - 12);
    }
  if (report->occurrence > 1)
    {
      g_string_append_printf (out, "  (the %u%s lag with this stack", report->occurrence,
                              lw_text_ordinal_suffix (report->occurrence));
      if (skipped_since_shown > 0)
        g_string_append_printf (out, "; %u like it not shown since the last one", skipped_since_shown);
      g_string_append (out, ")\n");
    }
  return g_string_free (out, FALSE);
}

char *
lagwatch_report_to_text (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return lw_report_to_text_full (report, 0);
}

char *
lw_report_stack_to_text (const LwFrame *frames, guint n_frames)
{
  GString *out = g_string_sized_new (100 * n_frames);

  lw_text_frames (out, frames, n_frames, G_MAXUINT);
  return g_string_free (out, FALSE);
}
