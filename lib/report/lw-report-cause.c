/* lw-report-cause.c: a lag's cause: the stack that names it, and its fingerprints
 *
 * The stacks of a lag are summed by their innermost program frame's
 * function (lw-report-program.c says which frames are the program's); the
 * heaviest function is the cause, and its heaviest whole stack becomes
 * the report's. The fingerprints key on that function and the callback
 * that ran it, never on an address or a line.
 */
#include "lw-report-cause.h"

#include <inttypes.h>
#include <string.h>

#include "lw-report-program.h"

/* Any thread. @frame's function as a fingerprint keys it:
 * "module-basename!symbol" (a Python or JavaScript frame's module is its
 * file), never its address or line; "module!+0xoffset" without a name. */
static char *
lw_report_frame_key (const LwFrame *frame)
{
  const char *base = frame->module ? strrchr (frame->module, '/') : NULL;

  base = base ? base + 1 : (frame->module ? frame->module : "?");
  return frame->symbol ? g_strdup_printf ("%s!%s", base, frame->symbol)
                       : g_strdup_printf ("%s!+0x%" PRIxPTR, base, frame->module_offset);
}

/* Any thread. The index of @stack's first interpreted frame at or after
 * @from, or its frame count. */
static guint
lw_report_next_lang_frame (const LwReportStack *stack, guint from)
{
  while (from < stack->n_frames && stack->frames[from].lang == NULL)
    from++;
  return from;
}

/* Any thread. TRUE when @part's interpreted frames are fewer than
 * @whole's and the same functions (name and file; a line moves as a
 * function runs) as @whole's innermost ones: a sample whose outer
 * interpreted frames were not read. A JavaScript sample whose profiling
 * stack, read after the capture while the thread ran on, no longer fitted
 * it keeps only the compiled frames the signal handler took: jsSpinFor
 * alone, where the whole sample has jsSpinFor, jsSlowHandler and the
 * script's top level. */
static gboolean
lw_report_stack_lang_cut (const LwReportStack *part, const LwReportStack *whole)
{
  guint a = lw_report_next_lang_frame (part, 0), b = lw_report_next_lang_frame (whole, 0);

  for (; a < part->n_frames && b < whole->n_frames;
       a = lw_report_next_lang_frame (part, a + 1), b = lw_report_next_lang_frame (whole, b + 1))
    if (g_strcmp0 (part->frames[a].symbol, whole->frames[b].symbol) != 0
        || g_strcmp0 (part->frames[a].file, whole->frames[b].file) != 0)
      return FALSE;
  /* @part's all matched, and @whole has more. */
  return a >= part->n_frames && b < whole->n_frames;
}

/* Reporting thread. The index of the stack that names @report's cause:
 * the stacks are summed by their innermost named program frame's function
 * (samples at different lines of one Python function, or in different
 * platform leaves below one program function, are one function's), and
 * the heaviest function wins (ties: the one with the heavier stack). Its
 * stack is the heaviest one whose interpreted frames are not a cut copy
 * of another of its stacks' (lw_report_stack_lang_cut()): the report
 * names the callers a cut sample lost. -1 when no stack has a program
 * frame. */
static int
lw_report_cause_stack (const LagWatchReport *report)
{
  g_autoptr(GHashTable) weight = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  int best = -1;
  guint best_weight = 0;

  for (guint i = 0; i < report->n_stacks; i++)
    {
      const LwReportStack *stack = &report->stacks[i];
      const LwFrame *program = lw_report_program_frame (stack->frames, stack->n_frames);
      char *key = program != NULL ? lw_report_frame_key (program) : NULL;
      guint sum = 0;

      g_ptr_array_add (keys, key);
      if (key == NULL)
        continue;
      sum = GPOINTER_TO_UINT (g_hash_table_lookup (weight, key)) + MAX (stack->samples, 1);
      g_hash_table_insert (weight, g_strdup (key), GUINT_TO_POINTER (sum));
    }
  /* Stacks are heaviest first: the first of the heaviest function is its
   * heaviest stack. */
  for (guint i = 0; i < report->n_stacks; i++)
    {
      const char *key = keys->pdata[i];
      guint sum = key != NULL ? GPOINTER_TO_UINT (g_hash_table_lookup (weight, key)) : 0;

      if (sum > best_weight)
        {
          best = (int) i;
          best_weight = sum;
        }
    }
  for (guint i = best >= 0 ? (guint) best : report->n_stacks; i < report->n_stacks; i++)
    {
      gboolean cut = FALSE;

      if (g_strcmp0 (keys->pdata[i], keys->pdata[best]) != 0)
        continue;
      for (guint j = 0; j < report->n_stacks && !cut; j++)
        cut = g_strcmp0 (keys->pdata[j], keys->pdata[best]) == 0
              && lw_report_stack_lang_cut (&report->stacks[i], &report->stacks[j]);
      if (!cut)
        return (int) i;
    }
  return best;
}

/* Any thread. A copy of @frame. */
static LwFrame
lw_frame_copy (const LwFrame *frame)
{
  LwFrame copy = *frame;

  copy.symbol = g_strdup (frame->symbol);
  copy.file = g_strdup (frame->file);
  return copy;
}

/* Reporting thread. Keeps the first @keep of @report's stacks. */
static void
lw_report_keep_stacks (LagWatchReport *report, guint keep)
{
  for (guint i = keep; i < report->n_stacks; i++)
    lw_report_stack_clear (&report->stacks[i]);
  report->n_stacks = MIN (report->n_stacks, keep);
}

/* Reporting thread. */
void
lw_report_choose_cause_stack (LagWatchReport *report, guint keep)
{
  int chosen = lw_report_cause_stack (report);

  if (chosen > 0)
    {
      LwReportStack stack = report->stacks[chosen];

      memmove (&report->stacks[1], &report->stacks[0], (gsize) chosen * sizeof (LwReportStack));
      report->stacks[0] = stack;
      for (guint i = 0; i < report->n_frames; i++)
        lw_frame_clear (&report->frames[i]);
      g_free (report->frames);
      report->frames = g_new0 (LwFrame, MAX (stack.n_frames, 1));
      for (guint i = 0; i < stack.n_frames; i++)
        report->frames[i] = lw_frame_copy (&stack.frames[i]);
      report->n_frames = stack.n_frames;
      report->stack_truncated = stack.truncated;
      report->stack_at_limit = stack.at_limit;
    }
  lw_report_keep_stacks (report, keep);
}

/* Any thread. 64-bit FNV-1a of @key's lines. */
static char *
lw_report_hash (GPtrArray *key)
{
  guint64 h = 1469598103934665603ULL;

  for (guint i = 0; i < key->len; i++)
    {
      for (const char *p = key->pdata[i]; *p; p++)
        h = (h ^ (guchar) *p) * 1099511628211ULL;
      h = (h ^ '\n') * 1099511628211ULL;
    }
  return g_strdup_printf ("%016" G_GINT64_MODIFIER "x", h);
}

/* Any thread. TRUE for a frame of GLib, GObject or GIO: the loop, and
 * the signal emissions and callbacks that call the program. */
static gboolean
lw_report_frame_is_glib (const LwFrame *frame)
{
  static const char *const glib[] = { "libglib-2.0.so", "libgobject-2.0.so", "libgio-2.0.so" };
  const char *base = frame->module != NULL ? strrchr (frame->module, '/') : NULL;

  base = base != NULL ? base + 1 : frame->module;
  for (gsize i = 0; base != NULL && i < G_N_ELEMENTS (glib); i++)
    if (g_str_has_prefix (base, glib[i]))
      return TRUE;
  return FALSE;
}

/* Any thread. The callback that ran the lag, on @frames: the outermost
 * named program frame inside the outermost GLib frame (main() runs the
 * loop, which calls the callback), or NULL. */
static const LwFrame *
lw_report_callback_frame (const LwFrame *frames, guint n_frames)
{
  gboolean interpreted = lw_report_frames_interpreted (frames, n_frames);
  gboolean in_loop = FALSE;

  for (guint i = n_frames; i-- > 0;)
    {
      if (lw_report_frame_is_glib (&frames[i]))
        in_loop = TRUE;
      else if (in_loop && frames[i].symbol != NULL && lw_report_frame_is_program_in (&frames[i], interpreted))
        return &frames[i];
    }
  return NULL;
}

/* Reporting thread. */
void
lw_report_compute_fingerprints (LagWatchReport *report)
{
  g_autoptr(GPtrArray) key = g_ptr_array_new_with_free_func (g_free);
  const LwFrame *program = lw_report_program_frame (report->frames, report->n_frames);
  const LwFrame *callback = lw_report_callback_frame (report->frames, report->n_frames);

  g_free (report->fingerprint);
  g_free (report->fingerprint2);
  if (program != NULL)
    g_ptr_array_add (key, lw_report_frame_key (program));
  else
    {
      /* No program frame: the innermost frames with a name (an unnamed
       * one is mostly a PLT stub a sample may or may not land in), or
       * else the innermost frames. */
      for (guint pass = 0; pass < 2 && key->len == 0; pass++)
        for (guint i = 0; i < report->n_frames && key->len < 4; i++)
          if (pass == 1 || report->frames[i].symbol != NULL)
            g_ptr_array_add (key, lw_report_frame_key (&report->frames[i]));
    }
  report->fingerprint2 = lw_report_hash (key);
  /* A lag has one callback, whatever each sample's stack reached: when
   * the report's own stack was cut before GLib's dispatch (an unwind that
   * stops in code without frame pointers, such as SpiderMonkey's baseline
   * interpreter's), the heaviest other stack that reaches it says which. */
  for (guint i = 0; callback == NULL && i < report->n_stacks; i++)
    callback = lw_report_callback_frame (report->stacks[i].frames, report->stacks[i].n_frames);
  /* The callback: one program function run by two callbacks is two
   * causes. The stack's callback frame names it for a named source as
   * for an unnamed one; the source's callback when no stack has one. */
  if (callback != NULL)
    g_ptr_array_add (key, g_strconcat ("callback ", callback->symbol, NULL));
  else
    g_ptr_array_add (key, g_strconcat ("callback ", report->source_callback != NULL
                                                      ? report->source_callback : "", NULL));
  report->fingerprint = lw_report_hash (key);
}
