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
  guint      samples;
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
 * part, outermost first; returns its length, at most @max_depth. */
static guint
lw_call_tree_path (const LwReportStack *stack, guint max_depth, LwPathStep *path)
{
  guint outer = stack->n_frames, n = 0, innermost_lang = 0;
  /* A stack with interpreted frames is the script's: its functions, and
   * the program's C functions its innermost one called, not the
   * interpreter between them (the summary's rule). */
  gboolean interpreted = lw_report_frames_interpreted (stack->frames, stack->n_frames);

  while (interpreted && stack->frames[innermost_lang].lang == NULL)
    innermost_lang++;

  /* Frames are innermost first: the innermost dispatch frame bounds them. */
  for (guint i = 0; i < stack->n_frames; i++)
    if (lw_call_tree_frame_is_dispatch (&stack->frames[i]))
      {
        outer = i;
        break;
      }
  for (guint i = outer; i-- > 0 && n < max_depth;)
    {
      const LwFrame *frame = &stack->frames[i];

      if (frame->symbol == NULL || lw_report_frame_is_platform (frame)
          || (interpreted && frame->lang == NULL && (i > innermost_lang || !lw_report_frame_is_program (frame))))
        continue;
      path[n].function = frame->ip - frame->symbol_offset;
      path[n].call_site = i + 1 < stack->n_frames ? stack->frames[i + 1].ip : 0;
      path[n].frame = frame;
      n++;
    }
  return n;
}

/* Closes @open, the last call of @parent: its times become the call's, by
 * the rule of lw-call-tree.h; with @min_samples, a call seen by fewer
 * samples is dropped with its own calls. */
static void
lw_call_tree_close (LwCall *parent, LwOpenCall *open, int64_t half_ns, int64_t lag_ns, guint min_samples)
{
  int64_t start = MAX (open->first_ns - half_ns, 0);
  int64_t end = MIN (open->last_ns + half_ns, lag_ns);

  if (open->samples < min_samples)
    {
      g_ptr_array_remove_index (parent->children, parent->children->len - 1);
      if (parent->children->len == 0)
        g_clear_pointer (&parent->children, g_ptr_array_unref);
      return;
    }
  open->call->start_ns = start;
  open->call->duration_ns = MAX (end - start, 0);
}

/* Drops the calls under @parent shorter than @min_ns, with their calls. */
static void
lw_call_tree_prune (LwCall *parent, int64_t min_ns)
{
  if (parent->children == NULL)
    return;
  for (guint i = parent->children->len; i-- > 0;)
    {
      LwCall *child = parent->children->pdata[i];

      if (child->duration_ns < min_ns)
        g_ptr_array_remove_index (parent->children, i);
      else
        lw_call_tree_prune (child, min_ns);
    }
  if (parent->children->len == 0)
    g_clear_pointer (&parent->children, g_ptr_array_unref);
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
  /* By default, calls seen by two samples or more: two intervals by the
   * rule, counted in samples so that a loaded machine, which spaces the
   * samples of a CPU-time timer further apart, does not drop them. */
  if (min_ns == 0)
    min_samples = 2;
  for (guint i = 0; i < report->n_sampled; i++)
    room = MAX (room, report->sampled[i].n_frames);
  path = g_new (LwPathStep, MAX (room, 1));
  open = g_new0 (LwOpenCall, MAX (room, 1));
  root = lw_call_new (NULL, 0, 0, lag_ns);

  for (guint s = 0; s < report->n_timeline; s++)
    {
      const LwReportSample *sample = &report->timeline[s];
      guint n, same = 0;

      if (sample->stack >= report->n_sampled)
        continue;
      n = lw_call_tree_path (&report->sampled[sample->stack], max_depth, path);
      while (same < n && same < n_open && open[same].step.function == path[same].function
             && open[same].step.call_site == path[same].call_site)
        same++;
      /* Innermost first: dropping a call drops the calls open inside it. */
      for (guint d = n_open; d-- > same;)
        lw_call_tree_close (d == 0 ? root : open[d - 1].call, &open[d], interval_ns / 2, lag_ns, min_samples);
      for (guint d = 0; d < same; d++)
        {
          open[d].last_ns = sample->offset_ns;
          open[d].samples++;
        }
      for (guint d = same; d < n; d++)
        {
          const LwFrame *frame = path[d].frame;

          open[d] = (LwOpenCall) { path[d], sample->offset_ns, sample->offset_ns, 1,
                                   lw_call_new (frame->symbol, path[d].function, 0, 0) };
          lw_call_add (d == 0 ? root : open[d - 1].call, open[d].call);
        }
      n_open = n;
    }
  for (guint d = n_open; d-- > 0;)
    lw_call_tree_close (d == 0 ? root : open[d - 1].call, &open[d], interval_ns / 2, lag_ns, min_samples);
  if (min_ns > 0)
    lw_call_tree_prune (root, min_ns);
  return root;
}
