/* lw-report-text-calls.c: a report's call tree as text lines (recursions
 * and single-call chains folded), for lw-report-text */
#include "lw-report-text-calls.h"
#include "lw-report.h"
#include "lw-json.h"
#include "lw-say.h"

#include "lw-call-tree.h"

#include <inttypes.h>
#include <string.h>

/* Call lines on stderr: a tree is read at a glance or not at all. */
#define LW_TEXT_CALLS 40

typedef struct
{
  GString              *out;
  const LagWatchReport *report;
  guint                 lines;    /* call lines written */
  guint                 shown;    /* calls those lines stand for */
} LwTextCalls;

/* Any thread. @call and every call under it. */
static guint
lw_text_calls_under (const LwCall *call)
{
  guint n = 1;

  for (guint i = 0; call->children != NULL && i < call->children->len; i++)
    n += lw_text_calls_under (call->children->pdata[i]);
  return n;
}

/* Any thread. The child of @call named @name, when it has exactly one. */
static const LwCall *
lw_text_only_child_named (const LwCall *call, const char *name)
{
  const LwCall *found = NULL;

  for (guint i = 0; call->children != NULL && i < call->children->len; i++)
    {
      const LwCall *child = call->children->pdata[i];

      if (g_strcmp0 (child->name, name) != 0)
        continue;
      if (found != NULL)
        return NULL;
      found = child;
    }
  return found;
}

/* Any thread. One call line: "name  206 ms, from +94 ms": how long the call
 * lasted, and when it began, from the start of the lag. @times > 1: the
 * call and the calls of itself nested in it (recursion), "name x58".
 * @path: what the line names instead of @call's name, or NULL. */
static void
lw_text_call_line (LwTextCalls *calls, guint depth, const LwCall *call, guint times, const char *path)
{
  g_autofree char *name = path != NULL ? g_strdup (path) : lw_text_escape (call->name);
  g_autofree char *repeated = times > 1 ? g_strdup_printf (" x%u (recursion)", times) : g_strdup ("");

  if (call->short_calls > 0)
    g_string_append_printf (calls->out, "    %*s%s%s: %u call%s seen, ~%.0f%% of the lag (too short to time one by one)\n",
                            2 * depth, "", name != NULL ? name : "??", repeated, call->short_calls,
                            call->short_calls == 1 ? "" : "s",
                            100.0 * call->samples / MAX (calls->report->calls->samples, 1));
  else
    g_string_append_printf (calls->out, "    %*s%s%s  %.0f ms, from +%.0f ms\n", 2 * depth, "",
                            name != NULL ? name : "??", repeated, (double) call->duration_ns / 1e6,
                            (double) call->start_ns / 1e6);
  calls->lines++;
}

static void lw_text_call_list (LwTextCalls *calls, guint depth, GPtrArray *children);

/* Any thread. @call at @depth, folded: a chain of calls of one function,
 * each made by the one before (recursion), is one line "name x58"; the
 * other calls made along the chain are listed under it, those of one
 * function at one line "name: 58 calls along the recursion, 290 ms in
 * all" when there are several. A chain of calls each the only call of
 * the one before, over the same time, is one line "a > b > c  44 ms, from
 * +1080 ms" ("a > b > c: 1 call seen" when too short to time). */
static void
lw_text_call (LwTextCalls *calls, guint depth, const LwCall *call)
{
  g_autoptr(GPtrArray) chain = g_ptr_array_new ();
  g_autoptr(GPtrArray) others = g_ptr_array_new ();
  const LwCall *inner = call;

  if (calls->lines >= LW_TEXT_CALLS)
    return;
  g_ptr_array_add (chain, (gpointer) call);
  while (inner->name != NULL && (inner = lw_text_only_child_named (inner, call->name)) != NULL)
    g_ptr_array_add (chain, (gpointer) inner);
  inner = call;
  if (chain->len == 1)
    {
      /* Calls each the only call of the one before, over the same time
       * (a call that does its work in what it calls, an X round trip):
       * one line, "a > b > c  44 ms, from +1080 ms". */
      g_autoptr(GString) path = g_string_new (NULL);
      g_autofree char *first = lw_text_escape (call->name);

      g_string_append (path, first != NULL ? first : "??");
      while (inner->children != NULL && inner->children->len == 1)
        {
          const LwCall *only = inner->children->pdata[0];
          g_autofree char *name = NULL;

          /* A call that starts a recursion gets its own line, "x58". */
          if (only->short_calls != call->short_calls || only->samples != call->samples
              || only->start_ns != call->start_ns || only->duration_ns != call->duration_ns
              || g_strcmp0 (only->name, inner->name) == 0
              || (only->name != NULL && lw_text_only_child_named (only, only->name) != NULL))
            break;
          name = lw_text_escape (only->name);
          g_string_append_printf (path, " > %s", name != NULL ? name : "??");
          inner = only;
          calls->shown++;
        }
      lw_text_call_line (calls, depth, call, 1, path->str);
    }
  else
    lw_text_call_line (calls, depth, call, chain->len, NULL);
  calls->shown += chain->len;
  if (chain->len == 1)
    {
      lw_text_call_list (calls, depth + 1, inner->children);
      return;
    }
  /* The calls the chain's calls made besides the next one, by function,
   * in the order of their first call. */
  for (guint c = 0; c < chain->len; c++)
    {
      const LwCall *link = chain->pdata[c];
      const LwCall *next = c + 1 < chain->len ? chain->pdata[c + 1] : NULL;

      for (guint i = 0; link->children != NULL && i < link->children->len; i++)
        if (link->children->pdata[i] != next)
          g_ptr_array_add (others, link->children->pdata[i]);
    }
  for (guint i = 0; i < others->len && calls->lines < LW_TEXT_CALLS; i++)
    {
      const LwCall *first = others->pdata[i];
      guint n = 0, under = 0;
      int64_t total_ns = 0;
      gboolean seen_before = FALSE;

      for (guint j = 0; j < i && !seen_before; j++)
        seen_before = g_strcmp0 (((const LwCall *) others->pdata[j])->name, first->name) == 0;
      if (seen_before)
        continue;
      for (guint j = i; j < others->len; j++)
        {
          const LwCall *other = others->pdata[j];

          if (g_strcmp0 (other->name, first->name) != 0)
            continue;
          n += MAX (other->short_calls, 1);
          under += lw_text_calls_under (other);
          total_ns += other->duration_ns;
        }
      if (n == 1)
        {
          lw_text_call (calls, depth + 1, first);
          continue;
        }
      {
        g_autofree char *name = lw_text_escape (first->name);

        g_string_append_printf (calls->out, "    %*s%s: %u calls along the recursion, %.0f ms in all\n",
                                2 * (depth + 1), "", name != NULL ? name : "??", n, (double) total_ns / 1e6);
        calls->lines++;
        calls->shown += under;
      }
    }
}

/* Any thread. @children (LwCall*, may be NULL) in order, at @depth. */
static void
lw_text_call_list (LwTextCalls *calls, guint depth, GPtrArray *children)
{
  for (guint i = 0; children != NULL && i < children->len; i++)
    lw_text_call (calls, depth, children->pdata[i]);
}

/* Any thread. */
void
lw_text_calls (GString *out, LagWatchReport *report)
{
  LwTextCalls calls = { out, report, 0, 0 };

  if (report->n_calls == 0)
    return;
  if (report->calls_exact)
    g_string_append (out, "  calls, in order (exact, from the tracer; time taken, from the lag's start):\n");
  else
    g_string_append_printf (out, "  calls, in order (from %u samples ~%.0f ms apart: each within about that; "
                            "time taken, from the lag's start):\n",
                            report->n_timeline, (double) lw_report_sample_interval (report, 0) / 1e6);
  lw_text_call_list (&calls, 0, report->calls->children);
  if (calls.shown < report->n_calls)
    g_string_append_printf (out, "    ... (%u more call%s: all are in the JSON)\n", report->n_calls - calls.shown,
                            report->n_calls - calls.shown == 1 ? "" : "s");
}
