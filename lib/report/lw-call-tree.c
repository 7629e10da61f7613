/* lw-call-tree.c: a lag's call tree from its samples (lw-call-tree.h) */
#include "lw-report-program.h"
#include "lw-call-tree.h"
#include "lw-dispatch.h"

#include <stdlib.h>
#include <string.h>

/* One frame of a sample's program part, as calls are matched by. */
typedef struct
{
  uintptr_t      function;   /* the function's start */
  uintptr_t      call_site;  /* the return address in the frame outside it */
  const LwFrame *frame;
} LwPathStep;

/* A call still open while the samples are walked. */
typedef struct
{
  LwPathStep step;
  int64_t    first_ns;
  int64_t    last_ns;
  guint      samples;   /* that held it */
  guint      pending;   /* samples since the last, which lacked its frames */
  LwCall    *call;
} LwOpenCall;

static const char *const lw_dispatch_symbols[] = {
  "g_main_dispatch", "g_main_context_dispatch", "g_main_context_dispatch_unlocked",
};

gboolean
lw_call_tree_frame_is_dispatch (const LwFrame *frame)
{
  uintptr_t call_site = lw_dispatch_get_call_site ();

  if (call_site != 0 && frame->ip == call_site && frame->lang == NULL)
    return TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS (lw_dispatch_symbols); i++)
    if (g_strcmp0 (frame->symbol, lw_dispatch_symbols[i]) == 0)
      return TRUE;
  return FALSE;
}

/* Any thread. Fills @path (room for @stack's frames) with @stack's program
 * part, outermost first; returns its length, at most @max_depth.
 * @anchored: set to whether a dispatch frame bounded it (else the path
 * begins at the stack's outermost frame, which a truncated stack lacks). */
static guint
lw_call_tree_path (const LwReportStack *stack, guint max_depth, LwPathStep *path, gboolean *anchored)
{
  guint outer = stack->n_frames, n = 0, innermost_lang = 0;
  /* A stack with interpreted frames is the script's: its functions, and
   * the C functions its innermost one called (zlib's deflate), not the
   * interpreter's machinery between them (lw_report_frame_is_machinery()). */
  gboolean interpreted = lw_report_frames_interpreted (stack->frames, stack->n_frames);

  while (interpreted && stack->frames[innermost_lang].lang == NULL)
    innermost_lang++;

  *anchored = FALSE;
  /* Frames are innermost first: the innermost dispatch frame bounds them. */
  for (guint i = 0; i < stack->n_frames; i++)
    if (lw_call_tree_frame_is_dispatch (&stack->frames[i]))
      {
        outer = i;
        *anchored = TRUE;
        break;
      }
  for (guint i = outer; i-- > 0 && n < max_depth;)
    {
      const LwFrame *frame = &stack->frames[i];

      if (frame->symbol == NULL || lw_report_frame_is_platform (frame)
          || (interpreted && frame->lang == NULL && (i > innermost_lang || lw_report_frame_is_machinery (frame))))
        continue;
      path[n].function = frame->ip - frame->symbol_offset;
      path[n].call_site = i + 1 < stack->n_frames ? stack->frames[i + 1].ip : 0;
      path[n].frame = frame;
      n++;
    }
  return n;
}

/* Reporting thread. Moves @call (taken over, no longer in any tree) into
 * the summary of its function among @parent's children, which it becomes
 * when there is none yet; what @call called is summarised under that
 * summary the same way. */
static void
lw_call_tree_summarise (LwCall *parent, LwCall *call, int64_t interval_ns)
{
  LwCall *summary = NULL;
  GPtrArray *children = g_steal_pointer (&call->children);
  guint n_calls = MAX (call->short_calls, 1);

  for (guint i = 0; parent->children != NULL && i < parent->children->len && summary == NULL; i++)
    {
      LwCall *sibling = parent->children->pdata[i];

      if (sibling->short_calls > 0 && sibling->ip == call->ip && g_strcmp0 (sibling->name, call->name) == 0)
        summary = sibling;
    }
  if (summary == NULL)
    {
      call->short_calls = n_calls;
      call->duration_ns = (int64_t) call->samples * interval_ns;
      lw_call_add (parent, call);
      summary = call;
    }
  else
    {
      summary->short_calls += n_calls;
      summary->samples += call->samples;
      summary->duration_ns = (int64_t) summary->samples * interval_ns;
      lw_call_free (call);
    }
  if (children == NULL)
    return;
  g_ptr_array_set_free_func (children, NULL);
  for (guint i = 0; i < children->len; i++)
    lw_call_tree_summarise (summary, children->pdata[i], interval_ns);
  g_ptr_array_unref (children);
}

/* Reporting thread. Closes @open, the last call of @parent: its times
 * become the call's, by the rule of lw-call-tree.h. A call seen by fewer
 * than @min_samples samples, or shorter than @min_ns, is too short to
 * time: it joins its function's summary among @parent's children. */
static void
lw_call_tree_close (LwCall *parent, LwOpenCall *open, int64_t interval_ns, int64_t lag_ns,
                    guint min_samples, int64_t min_ns)
{
  int64_t start = MAX (open->first_ns - interval_ns / 2, 0);
  int64_t end = MIN (open->last_ns + interval_ns / 2, lag_ns);
  LwCall *call = open->call;

  call->start_ns = start;
  call->duration_ns = MAX (end - start, 0);
  call->samples = open->samples;
  if (open->samples < min_samples || call->duration_ns < min_ns)
    {
      g_ptr_array_steal_index (parent->children, parent->children->len - 1);
      lw_call_tree_summarise (parent, call, interval_ns);
    }
}

/* Reporting thread. A sample holding the open call @open at its depth:
 * the call goes on to @offset_ns, with the samples between that lacked
 * its frames. */
static void
lw_call_tree_hold (LwOpenCall *open, int64_t offset_ns)
{
  open->last_ns = offset_ns;
  open->samples += 1 + open->pending;
  open->pending = 0;
}

/* Any thread. TRUE when a frame of the @n_open open calls is interpreted. */
static gboolean
lw_call_tree_open_interpreted (const LwOpenCall *open, guint n_open)
{
  for (guint d = 0; d < n_open; d++)
    if (open[d].step.frame->lang != NULL)
      return TRUE;
  return FALSE;
}

/* Any thread. TRUE when sample @s of @report's timeline exists and has
 * interpreted frames. */
static gboolean
lw_call_tree_sample_interpreted (const LagWatchReport *report, guint s)
{
  const LwReportStack *stack;

  if (s >= report->n_timeline || report->timeline[s].stack >= report->n_sampled)
    return FALSE;
  stack = &report->sampled[report->timeline[s].stack];
  return lw_report_frames_interpreted (stack->frames, stack->n_frames);
}

LwCall *
lw_call_tree_from_samples (const LagWatchReport *report, int64_t min_ns, guint max_depth,
                           int64_t fallback_interval_ns)
{
  int64_t interval_ns = lw_report_sample_interval (report, fallback_interval_ns);
  int64_t lag_ns = (int64_t) (report->duration_ms * 1e6);
  guint room = 0, n_open = 0, min_samples = 0;
  g_autofree LwPathStep *path = NULL;
  g_autofree LwOpenCall *open = NULL;
  LwCall *root;

  if (report->n_timeline == 0)
    return NULL;
  if (max_depth == 0)
    max_depth = G_MAXUINT;
  /* By default, calls seen by two samples or more are timed: two
   * intervals by the rule, counted in samples so that a loaded machine,
   * which spaces the samples of a CPU-time timer further apart, does not
   * turn them into summaries. */
  if (min_ns == 0)
    min_samples = 2;
  for (guint i = 0; i < report->n_sampled; i++)
    room = MAX (room, report->sampled[i].n_frames);
  /* Twice: a truncated stack's path goes on from the open calls. */
  room = 2 * MAX (room, 1);
  path = g_new (LwPathStep, room);
  open = g_new0 (LwOpenCall, room);
  root = lw_call_new (NULL, 0, 0, lag_ns);
  root->samples = report->n_timeline;

  for (guint s = 0; s < report->n_timeline; s++)
    {
      const LwReportSample *sample = &report->timeline[s];
      const LwReportStack *stack;
      guint n, same = 0;
      gboolean anchored, gap = FALSE;

      if (sample->stack >= report->n_sampled)
        continue;
      stack = &report->sampled[sample->stack];
      n = lw_call_tree_path (stack, max_depth, path, &anchored);
      /* A stack cut short of its dispatch frame holds only the inner part
       * of its calls: it goes on from the open call of its outermost
       * function, if one is open; else it tells nothing of them. */
      if (n_open > 0 && !anchored && stack->truncated && n > 0)
        {
          guint k = 0;

          guint limit = MIN (max_depth, room);

          while (k < n_open && open[k].step.function != path[0].function)
            k++;
          if (k == n_open || k >= limit)
            gap = TRUE;
          else
            {
              n = MIN (n, limit - k);
              memmove (path + k, path, n * sizeof *path);
              for (guint d = 0; d <= k; d++)
                path[d].call_site = open[d].step.call_site;
              for (guint d = 0; d < k; d++)
                path[d] = open[d].step;
              n += k;
            }
        }
      /* One stack without the script's frames between two that have them:
       * the interpreter was between frames, or its frames were not read. */
      if (n_open > 0 && !lw_call_tree_sample_interpreted (report, s)
          && lw_call_tree_open_interpreted (open, n_open) && lw_call_tree_sample_interpreted (report, s + 1))
        gap = TRUE;
      while (!gap && same < n && same < n_open && open[same].step.function == path[same].function
             && open[same].step.call_site == path[same].call_site)
        same++;
      /* No frames past the open calls' first few: the deeper ones go on if
       * a later sample holds them again, else they ended at their last. */
      if (!gap && same == n && n < n_open)
        gap = TRUE;
      if (gap)
        {
          for (guint d = 0; d < n_open; d++)
            if (d < same)
              lw_call_tree_hold (&open[d], sample->offset_ns);
            else
              open[d].pending++;
          continue;
        }
      /* Innermost first: a call's own calls are closed before it. */
      for (guint d = n_open; d-- > same;)
        lw_call_tree_close (d == 0 ? root : open[d - 1].call, &open[d], interval_ns, lag_ns, min_samples, min_ns);
      for (guint d = 0; d < same; d++)
        lw_call_tree_hold (&open[d], sample->offset_ns);
      for (guint d = same; d < n; d++)
        {
          const LwFrame *frame = path[d].frame;

          open[d] = (LwOpenCall) { path[d], sample->offset_ns, sample->offset_ns, 1, 0,
                                   lw_call_new (frame->symbol, path[d].function, 0, 0) };
          lw_call_add (d == 0 ? root : open[d - 1].call, open[d].call);
        }
      n_open = n;
    }
  for (guint d = n_open; d-- > 0;)
    lw_call_tree_close (d == 0 ? root : open[d - 1].call, &open[d], interval_ns, lag_ns, min_samples, min_ns);
  return root;
}
