/* lw-report-text.c: a report as text, for stderr and the journal */
#include "lw-report-text.h"
#include "lw-report.h"
#include "lw-json.h"
#include "lw-report-program.h"
#include "lw-say.h"

#include "lw-report-text-calls.h"

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

/* Any thread. The index of the frame a stack's label names: its innermost
 * program frame, else its first named frame, else its first (0 for no
 * frame at all). */
static guint
lw_report_label_index (const LwFrame *frames,
                       guint          n_frames)
{
  const LwFrame *program = lw_report_program_frame (frames, n_frames);

  if (program != NULL)
    return program - frames;
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].symbol != NULL)
      return i;
  return 0;
}

/* Any thread. */
char *
lw_report_stack_label (const LwFrame *frames,
                       guint          n_frames)
{
  g_autofree char *base = NULL;
  const LwFrame *label;

  if (n_frames == 0)
    return g_strdup ("(no stack)");
  label = &frames[lw_report_label_index (frames, n_frames)];
  if (label->symbol != NULL)
    return lw_report_short_name (label->symbol);
  base = label->module != NULL ? g_path_get_basename (label->module) : g_strdup ("??");
  return g_strdup_printf ("%s+0x%" PRIxPTR, base, label->module_offset);
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

/* Any thread. TRUE when @a and @b read the same in a folded stack: an
 * interpreted frame by its function and line; a native frame with a name
 * by its address and name (a recursive call returns to one call site);
 * a native frame with none ("??") by its module alone, so that a run of a
 * library's unnamed internal functions folds into one line. */
static gboolean
lw_text_same_frame (const LwFrame *a, const LwFrame *b)
{
  if (a->lang != NULL || b->lang != NULL)
    return g_strcmp0 (a->lang, b->lang) == 0 && g_strcmp0 (a->symbol, b->symbol) == 0
           && g_strcmp0 (a->file, b->file) == 0 && a->line == b->line;
  if (a->symbol == NULL || b->symbol == NULL)
    return a->symbol == NULL && b->symbol == NULL && g_strcmp0 (a->module, b->module) == 0;
  return a->ip == b->ip && a->inlined == b->inlined && g_str_equal (a->symbol, b->symbol);
}

/* Unnamed frames of one module fold into one line from this many on. */
#define LW_TEXT_MIN_UNNAMED_RUN 3

/* Longest cycle of frames the text report folds (a calls b calls a...). */
#define LW_TEXT_MAX_CYCLE 8

/* Any thread. The fold of @frames at @at: the cycle of *@period frames
 * that repeats the most frames from there (shortest cycle on a tie);
 * returns how many times it repeats, 1 when nothing repeats. */
static guint
lw_text_repeats (const LwFrame *frames, guint n_frames, guint at, guint *period)
{
  guint best = 1, best_period = 1;

  for (guint length = 1; length <= LW_TEXT_MAX_CYCLE && at + 2 * length <= n_frames; length++)
    {
      guint times = 1;

      for (;; times++)
        {
          guint next = at + times * length;
          gboolean same = next + length <= n_frames;

          for (guint k = 0; same && k < length; k++)
            same = lw_text_same_frame (&frames[next + k], &frames[at + k]);
          if (!same)
            break;
        }
      if (times >= 2 && times * length > best * best_period)
        {
          best = times;
          best_period = length;
        }
    }
  *period = best_period;
  return best;
}

/* Any thread. One frame's line after its @label ("#3", "#3-60"). */
static void
lw_text_frame (GString *out, const char *label, gboolean innermost, const LwFrame *frame)
{
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *base = frame->module ? g_path_get_basename (frame->module) : g_strdup ("?");

  if (frame->lang != NULL)
    {
      /* An interpreted language's frame: "function (file.py:12)  [python]",
       * no address (it is not one); "(file.js)" when the line is not known. */
      g_autofree char *file = frame->file ? g_path_get_basename (frame->file) : g_strdup ("?");

      g_string_append_printf (out, "  %-3s %s (%s", label,
                              frame->symbol ? lw_text_safe (keep, frame->symbol) : "??", lw_text_safe (keep, file));
      if (frame->line > 0)
        g_string_append_printf (out, ":%u", frame->line);
      g_string_append_printf (out, ")  [%s]", lw_text_safe (keep, frame->lang));
      return;
    }
  g_string_append_printf (out, "  %-3s 0x%016" PRIxPTR "  ", label, frame->ip);
  if (frame->symbol != NULL)
    {
      g_autofree char *name = lw_report_short_name (frame->symbol);

      if (frame->inlined)
        g_string_append_printf (out, "%s (inlined)", lw_text_safe (keep, name));
      else if (!innermost && frame->symbol_offset == 0)
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
}

/* Any thread. @frames, innermost first, in at most @max_lines lines
 * (G_MAXUINT: all); returns how many frames they show. Folded: a run of
 * unnamed frames of one module is one line, "#5-20 ?? x16 in
 * libgtk-4.so.1"; a frame repeated by recursion is one line ending in
 * "x58"; a cycle of frames repeated (a calls b calls a...) is a line
 * saying so, then the cycle once. lagwatch-report folds its stacks by the
 * same rule (tools/lagwatch_report/folding.py). Every frame is in the
 * JSON record. */
static guint
lw_text_frames_folded (GString *out, const LwFrame *frames, guint n_frames, guint max_lines)
{
  guint lines = 0, i = 0;

  while (i < n_frames && lines < max_lines)
    {
      guint period, times = lw_text_repeats (frames, n_frames, i, &period);
      guint last = i + times * period - 1;
      g_autofree char *label = times > 1 ? g_strdup_printf ("#%u-%u", i, last) : g_strdup_printf ("#%u", i);

      if (times > 1 && times < LW_TEXT_MIN_UNNAMED_RUN && period == 1 && frames[i].symbol == NULL
          && frames[i].lang == NULL)
        {
          /* A short run of unnamed frames keeps their offsets. */
          times = 1;
          last = i;
          g_free (label);
          label = g_strdup_printf ("#%u", i);
        }
      if (times > 1 && period == 1 && frames[i].symbol == NULL && frames[i].lang == NULL)
        {
          g_autofree char *base = frames[i].module ? g_path_get_basename (frames[i].module) : g_strdup ("?");
          g_autofree char *safe = lw_text_escape (base);

          g_string_append_printf (out, "  %-3s ?? x%u in %s\n", label, times, safe);
        }
      else if (times > 1 && period == 1)
        {
          lw_text_frame (out, label, i == 0, &frames[i]);
          g_string_append_printf (out, "  x%u\n", times);
        }
      else if (times > 1)
        {
          g_string_append_printf (out, "  %-3s the %u frames below, x%u (recursion):\n", label, period, times);
          for (guint k = 0; k < period; k++)
            {
              g_autofree char *one = g_strdup_printf ("#%u", i + k);

              lw_text_frame (out, one, i + k == 0, &frames[i + k]);
              g_string_append_c (out, '\n');
            }
          lines += period;
        }
      else
        {
          lw_text_frame (out, label, i == 0, &frames[i]);
          g_string_append_c (out, '\n');
        }
      lines++;
      i = last + 1;
    }
  return i;
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

char *
lw_report_where_to_text (LagWatchReport *report)
{
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);

  if (report->phase == NULL)
    return g_strdup ("at a point of the loop lagwatch could not tell");
  if (g_str_equal (report->phase, "dispatch"))
    {
      if (report->source != NULL)
        return g_strdup_printf ("in GSource \"%s\" (priority %d)", lw_text_safe (keep, report->source),
                                report->priority);
      if (report->source_callback != NULL)
        return g_strdup_printf ("in %s callback %s (unnamed GSource, priority %d)",
                                report->source_callback_kind != NULL
                                ? lw_text_safe (keep, report->source_callback_kind) : "GSource",
                                lw_text_safe (keep, report->source_callback), report->priority);
      return g_strdup_printf ("in an unnamed GSource (priority %d)", report->priority);
    }
  if (g_str_equal (report->phase, "starved"))
    return g_strdup ("while the loop kept iterating without polling: its input was starved");
  return g_strdup_printf ("in the loop's %s phase, outside any GSource", lw_text_safe (keep, report->phase));
}

/* Any thread. */
double
lw_report_heaviest_share (const LagWatchReport *report)
{
  if (report->n_samples == 0 || report->n_stacks == 0)
    return 0;
  return MIN (100.0 * report->stacks[0].samples / report->n_samples, 100.0);
}

/* Any thread. One line for the samples that ran Python without their
 * Python frames, with why, when there are any. */
static void
lw_text_python_missing (GString *out, const LagWatchReport *report)
{
  guint moved = lw_report_python_missing (report, LW_LANG_MISSING_MOVED);
  guint unreadable = lw_report_python_missing (report, LW_LANG_MISSING_UNREADABLE);

  if (moved + unreadable == 0)
    return;
  g_string_append_printf (out, "  (%u sample%s ran Python without its Python frames:", moved + unreadable,
                          moved + unreadable == 1 ? "" : "s");
  if (moved > 0)
    g_string_append_printf (out, " %u read after the thread had returned or called on", moved);
  if (unreadable > 0)
    g_string_append_printf (out, "%s %u whose frames changed while read", moved > 0 ? ";" : "", unreadable);
  g_string_append (out, ")\n");
}

/* Any thread. The culprit the header names: the innermost program frame
 * of the heaviest stack (lw_report_program_frame()), "name (file:line)"
 * when its line is known; else the innermost named frame, else NULL when
 * the report has no stack. Control bytes escaped. */
static char *
lw_text_culprit (const LagWatchReport *report)
{
  const LwFrame *frame = lw_report_program_frame (report->frames, report->n_frames);
  g_autofree char *label = NULL;
  g_autofree char *safe = NULL;

  if (report->n_frames == 0)
    return NULL;
  label = frame != NULL ? lw_report_short_name (frame->symbol)
                        : lw_report_stack_label (report->frames, report->n_frames);
  safe = lw_text_escape (label);
  if (frame != NULL && frame->file != NULL)
    {
      g_autofree char *file = g_path_get_basename (frame->file);
      g_autofree char *safe_file = lw_text_escape (file);

      if (frame->line > 0)
        return g_strdup_printf ("%s (%s:%u)", safe, safe_file, frame->line);
      return g_strdup_printf ("%s (%s)", safe, safe_file);
    }
  return g_steal_pointer (&safe);
}

/* Lines "also N% in FUNC" after the heaviest stack. */
#define LW_TEXT_ALSO 3

/* Any thread. TRUE when @a and @b reached the frames their labels name
 * through the same chain of calling functions: every frame outer than
 * those, compared by name (an unnamed one by its module and offset). Lines
 * are left out: an interpreter's own frames stand at another line in every
 * sample. */
static gboolean
lw_text_same_callers (const LwReportStack *a, const LwReportStack *b)
{
  guint i = lw_report_label_index (a->frames, a->n_frames) + 1;
  guint j = lw_report_label_index (b->frames, b->n_frames) + 1;

  if (a->n_frames - MIN (i, a->n_frames) != b->n_frames - MIN (j, b->n_frames))
    return FALSE;
  for (; i < a->n_frames; i++, j++)
    {
      const LwFrame *x = &a->frames[i], *y = &b->frames[j];

      if (x->symbol != NULL || y->symbol != NULL
          ? g_strcmp0 (x->symbol, y->symbol) != 0
          : g_strcmp0 (x->module, y->module) != 0 || x->module_offset != y->module_offset)
        return FALSE;
    }
  return TRUE;
}

/* Any thread. Where the samples outside the heaviest stack were: one line
 * per function (the stacks' labels, lw_report_stack_label()), the shares of
 * every kept stack of that function added, heaviest first. The function
 * the heaviest stack is in too gets up to two lines: "by the same callers"
 * (its stacks that differ from the heaviest only inside that function: at
 * another line, or in what it called) and "by other callers". Then the
 * share of the samples in stacks the report does not keep (it keeps the
 * heaviest few). */
static void
lw_text_also (GString *out, const LagWatchReport *report)
{
  g_autoptr(GPtrArray) places = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GArray) samples = g_array_new (FALSE, TRUE, sizeof (guint));
  g_autofree char *heaviest = NULL;
  guint kept = 0;

  if (report->n_stacks < 1)
    return;
  heaviest = lw_report_stack_label (report->stacks[0].frames, report->stacks[0].n_frames);
  for (guint i = 1; i < report->n_stacks; i++)
    {
      g_autofree char *label = lw_report_stack_label (report->stacks[i].frames, report->stacks[i].n_frames);
      char *place;
      guint at = 0;

      if (!g_str_equal (label, heaviest))
        place = g_strdup (label);
      else if (lw_text_same_callers (&report->stacks[i], &report->stacks[0]))
        place = g_strconcat (label, " by the same callers", NULL);
      else
        place = g_strconcat (label, " by other callers", NULL);
      while (at < places->len && !g_str_equal (places->pdata[at], place))
        at++;
      if (at == places->len)
        {
          g_ptr_array_add (places, place);
          g_array_set_size (samples, places->len);
        }
      else
        g_free (place);
      g_array_index (samples, guint, at) += report->stacks[i].samples;
    }
  for (guint shown = 0; shown < LW_TEXT_ALSO && shown < places->len; shown++)
    {
      guint best = shown;
      g_autofree char *safe = NULL;

      /* Heaviest first, the first seen on a tie: a selection sort of a few. */
      for (guint j = shown + 1; j < places->len; j++)
        if (g_array_index (samples, guint, j) > g_array_index (samples, guint, best))
          best = j;
      if (best != shown)
        {
          gpointer place = places->pdata[best];
          guint n = g_array_index (samples, guint, best);

          memmove (&places->pdata[shown + 1], &places->pdata[shown], (best - shown) * sizeof (gpointer));
          places->pdata[shown] = place;
          memmove (&g_array_index (samples, guint, shown + 1), &g_array_index (samples, guint, shown),
                   (best - shown) * sizeof (guint));
          g_array_index (samples, guint, shown) = n;
        }
      safe = lw_text_escape (places->pdata[shown]);
      g_string_append_printf (out, "  also %.0f%% in %s\n",
                              100.0 * g_array_index (samples, guint, shown) / MAX (report->n_samples, 1), safe);
    }
  for (guint i = 0; i < report->n_stacks; i++)
    kept += report->stacks[i].samples;
  if (report->n_samples > kept)
    g_string_append_printf (out, "  the other %.0f%% in lighter stacks, not kept\n",
                            100.0 * (report->n_samples - kept) / report->n_samples);
}

char *
lw_report_to_text_full (LagWatchReport *report, guint skipped_since_shown)
{
  GString *out = g_string_sized_new (512 + 100 * report->n_frames);
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *time = lw_json_format_time (report->start_time_us);
  g_autofree char *culprit = NULL;
  const char *what;

  if (g_str_equal (report->event, "hang"))
    what = "HANG, still going after";
  else if (g_str_equal (report->event, "hang-killed"))
    what = "the previous run was killed during a hang, after";
  else
    what = report->complete ? "lag of"
           : g_strcmp0 (report->stopped_by, "exit") == 0 ? "lag still running at exit, after"
           : "lag still running at detach, after";
  culprit = lw_text_culprit (report);
  g_string_append_printf (out, "lagwatch: %s %.1f ms", what, report->duration_ms);
  if (culprit != NULL)
    g_string_append_printf (out, ": %s", culprit);
  if (report->phase != NULL)
    {
      g_autofree char *where = lw_report_where_to_text (report);

      g_string_append_printf (out, "%s%s", culprit != NULL ? ", " : ": ", where);
    }
  g_string_append_printf (out, " [%s]\n", lw_text_safe (keep, report->id));
  g_string_append_printf (out, "  on thread %d", report->thread_id);
  if (report->thread_name != NULL)
    g_string_append_printf (out, " \"%s\"", lw_text_safe (keep, report->thread_name));
  g_string_append_printf (out, ", began %s, threshold %u ms\n", time, report->threshold_ms);
  if (report->previous_exe != NULL)
    g_string_append_printf (out, "  program: %s (pid %d)\n", lw_text_safe (keep, report->previous_exe),
                            report->pid);
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
    g_string_append_printf (out, "  heaviest stack: %u of %u sample%s (%.0f%%)", report->stacks[0].samples,
                            report->n_samples, report->n_samples == 1 ? "" : "s",
                            lw_report_heaviest_share (report));
  if (report->caught_ms >= 0)
    g_string_append_printf (out, "%sfirst taken %.1f ms in, %s:\n",
                            report->n_samples > 0 && report->n_stacks > 0 ? ", " : "  ", report->caught_ms,
                            g_strcmp0 (report->stack_method, "signal") == 0
                              ? "by signal (the thread was running)"
                              : "from /proc (the thread was sleeping in a system call)");
  else if (report->n_samples > 0 && report->n_stacks > 0)
    g_string_append (out, ":\n");
  if (report->stack_error != NULL)
    g_string_append_printf (out, "  (%s)\n", lw_text_safe (keep, report->stack_error));
  lw_text_frames_folded (out, report->frames, report->n_frames, G_MAXUINT);
  if (report->stack_truncated && report->stack_at_limit)
    g_string_append (out, "  ... (more frames not shown: the frame limit)\n");
  else if (report->stack_truncated && report->n_frames > 0)
    g_string_append (out, "  ... (the unwind stopped here: no way to step past this frame; "
                          "the stack may be incomplete)\n");
  lw_text_also (out, report);
  lw_text_python_missing (out, report);
  lw_text_calls (out, report);
  for (guint i = 0; i < report->n_threads; i++)
    {
      const LwReportStack *thread = &report->threads[i];

      const char *error = lw_report_thread_stack_error (report, i);
      guint shown;

      g_string_append_printf (out, "  thread %d \"%s\" (%s):\n", thread->thread_id,
                              thread->thread_name ? lw_text_safe (keep, thread->thread_name) : "?",
                              thread->thread_state ? lw_text_safe (keep, thread->thread_state) : "?");
      if (error != NULL)
        {
          g_string_append_printf (out, "    (no stack: %s)\n", lw_text_safe (keep, error));
          continue;
        }
      shown = lw_text_frames_folded (out, thread->frames, thread->n_frames, 12);
      if (shown < thread->n_frames)
        g_string_append_printf (out, "  ... (%u more frames not shown here: all are in the JSON)\n",
                                thread->n_frames - shown);
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

  lw_text_frames_folded (out, frames, n_frames, G_MAXUINT);
  return g_string_free (out, FALSE);
}
