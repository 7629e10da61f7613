/* test-text-fold: the text report of made-up lags, line by line: the
 * culprit in the header, runs of unnamed frames and cycles folded, one
 * "also" line per function, the share of the heaviest stack, and the call
 * tree's recursion on one line.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include "lw-report.h"
#include "lw-report-program.h"
#include "lw-report-text.h"
#include "lw-stats-read.h"

#define PROGRAM "/opt/app/bin/editor"
#define GTK     "/usr/lib/x86_64-linux-gnu/libgtk-4.so.1"
#define GLIB    "/lib/x86_64-linux-gnu/libglib-2.0.so.0"

/* Test thread. A frame of @module at @offset, named @symbol (NULL: none),
 * at @file:@line when @file is not NULL. */
static LwFrame
frame (const char *module, uintptr_t offset, const char *symbol, const char *file, guint line)
{
  return (LwFrame) { .ip = 0x400000 + offset, .module = module, .module_offset = offset,
                     .symbol = g_strdup (symbol), .symbol_offset = symbol != NULL ? 4 : 0,
                     .file = g_strdup (file), .line = line };
}

/* Test thread. A copy of @frames, as the report owns them. */
static LwFrame *
frames_copy (const LwFrame *frames, guint n)
{
  LwFrame *copy = g_new0 (LwFrame, MAX (n, 1));

  for (guint i = 0; i < n; i++)
    {
      copy[i] = frames[i];
      copy[i].symbol = g_strdup (frames[i].symbol);
      copy[i].file = g_strdup (frames[i].file);
    }
  return copy;
}

/* Test thread. A lag of 300 ms in GSource "busy" whose heaviest stack is
 * @frames (@n of them, taken over), with @samples samples in it of
 * @n_samples in all. */
static LagWatchReport *
report_new (LwFrame *frames, guint n, guint samples, guint n_samples)
{
  LagWatchReport *report = lw_report_new ();

  report->event = "lag";
  report->id = g_strdup ("7-1");
  report->complete = TRUE;
  report->duration_ms = 300;
  report->threshold_ms = 100;
  report->thread_id = 7;
  report->caught_ms = 10;
  report->stack_method = g_strdup ("signal");
  report->cpu_ms = -1;
  report->phase = "dispatch";
  report->source = g_strdup ("busy");
  report->source_known = TRUE;
  report->frames = frames;
  report->n_frames = n;
  report->n_samples = n_samples;
  report->stacks = g_new0 (LwReportStack, 8);
  report->stacks[0].samples = samples;
  report->stacks[0].frames = frames_copy (frames, n);
  report->stacks[0].n_frames = n;
  report->n_stacks = 1;
  return report;
}

/* Test thread. Adds a stack of @samples samples: @leaf called by @caller. */
static void
report_add_stack (LagWatchReport *report, const char *leaf, const char *caller, guint samples)
{
  LwReportStack *stack = &report->stacks[report->n_stacks++];

  stack->samples = samples;
  stack->frames = g_new0 (LwFrame, 2);
  stack->frames[0] = frame (PROGRAM, 0x1000, leaf, "lag.c", 5);
  stack->frames[1] = frame (PROGRAM, 0x2000 + 0x10 * report->n_stacks, caller, "lag.c", 9);
  stack->n_frames = 2;
}

static void
test_unnamed_run (void)
{
  LwFrame *frames = g_new0 (LwFrame, 19);
  g_autofree char *text = NULL;
  LagWatchReport *report;

  frames[0] = frame (PROGRAM, 0x1000, "spin", "lag.c", 12);
  for (guint i = 1; i <= 16; i++)
    frames[i] = frame (GTK, 0x9000 + 0x40 * i, NULL, NULL, 0);
  frames[17] = frame (GLIB, 0x5465f, NULL, NULL, 0);
  frames[18] = frame (GLIB, 0x5466f, NULL, NULL, 0);
  report = report_new (frames, 19, 10, 10);
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "\n  #1-16 ?? x16 in libgtk-4.so.1\n"));
  /* Two unnamed frames keep their lines and offsets. */
  g_assert_nonnull (strstr (text, "\n  #17 0x000000000045465f  ??  (libglib-2.0.so.0 +0x5465f)\n"
                                  "  #18 0x000000000045466f  ??  (libglib-2.0.so.0 +0x5466f)\n"));
  lagwatch_report_unref (report);
}

static void
test_recursion (void)
{
  LwFrame *frames = g_new0 (LwFrame, 62);
  g_autofree char *text = NULL;
  LagWatchReport *report;

  frames[0] = frame (PROGRAM, 0x1000, "spin", "lag.c", 12);
  for (guint i = 1; i <= 58; i++)
    frames[i] = frame (PROGRAM, 0x1100, "recurse", "lag.c", 20);
  for (guint i = 59; i <= 60; i++)
    frames[i] = frame (PROGRAM, 0x1200 + 0x10 * (i - 59), i == 59 ? "ping" : "pong", "lag.c", 30);
  frames[61] = frame (PROGRAM, 0x1300, "main", "main.c", 3);
  report = report_new (frames, 62, 10, 10);
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "\n  #1-58 0x0000000000401100  recurse+0x4  (editor +0x1100)  at lag.c:20  x58\n"));
  g_assert_null (strstr (text, "#2 "));
  lagwatch_report_unref (report);

  /* A cycle: ping calls pong calls ping... */
  frames = g_new0 (LwFrame, 42);
  frames[0] = frame (PROGRAM, 0x1000, "spin", "lag.c", 12);
  for (guint i = 1; i <= 40; i++)
    frames[i] = frame (PROGRAM, i % 2 ? 0x1200 : 0x1210, i % 2 ? "ping" : "pong", "lag.c", 30);
  frames[41] = frame (PROGRAM, 0x1300, "main", "main.c", 3);
  report = report_new (frames, 42, 10, 10);
  g_clear_pointer (&text, g_free);
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "\n  #1-40 the 2 frames below, x20 (recursion):\n"
                                  "  #1  0x0000000000401200  ping+0x4  (editor +0x1200)  at lag.c:30\n"
                                  "  #2  0x0000000000401210  pong+0x4  (editor +0x1210)  at lag.c:30\n"
                                  "  #41 0x0000000000401300  main+0x4  (editor +0x1300)  at main.c:3\n"));
  lagwatch_report_unref (report);
}

static void
test_header_share_and_also (void)
{
  LwFrame *frames = g_new0 (LwFrame, 3);
  g_autofree char *text = NULL;
  LagWatchReport *report;

  frames[0] = frame (GLIB, 0x5000, "g_hash_table_lookup", NULL, 0);
  frames[1] = frame (PROGRAM, 0x1000, "spin_for_ms", "/src/lag.c", 12);
  frames[2] = frame (PROGRAM, 0x2000, "on_timeout", "/src/lag.c", 40);
  report = report_new (frames, 3, 5, 101);
  report_add_stack (report, "spin_for_ms", "on_idle", 4);
  report_add_stack (report, "spin_for_ms", "on_key", 3);
  report_add_stack (report, "tick", "on_timeout", 2);
  report_add_stack (report, "spin_for_ms", "on_draw", 1);
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_true (g_str_has_prefix (text, "lagwatch: lag of 300.0 ms: spin_for_ms (lag.c:12), "
                                         "in GSource \"busy\" (priority 0) [7-1]\n"));
  g_assert_nonnull (strstr (text, "\n  heaviest stack: 5 of 101 samples (5%), first taken 10.0 ms in"));
  g_assert_cmpfloat (lw_report_heaviest_share (report), ==, 100.0 * 5 / 101);
  g_assert_nonnull (strstr (text, "\n  also 8% in spin_for_ms by other callers\n  also 2% in tick\n"
                                  "  the other 85% in lighter stacks, not kept\n"));
  g_assert_null (strstr (strstr (text, "also 8% in spin_for_ms") + 1, "also 8% in spin_for_ms"));
  g_assert_null (strstr (text, "on_idle"));
  lagwatch_report_unref (report);
}

/* Stacks in the heaviest stack's function that differ from it only inside
 * that function (another line, another callee) are not "other callers". */
static void
test_also_same_callers (void)
{
  LwFrame *frames = g_new0 (LwFrame, 3);
  g_autofree char *text = NULL;
  LagWatchReport *report;

  frames[0] = frame (GLIB, 0x5000, "g_get_monotonic_time", NULL, 0);
  frames[1] = frame (PROGRAM, 0x1000, "spin_for_ms", "/src/lag.c", 12);
  frames[2] = frame (PROGRAM, 0x2000, "on_timeout", "/src/lag.c", 40);
  report = report_new (frames, 3, 5, 10);
  /* spin_for_ms at line 5 called by on_timeout (from another line: lines
   * of callers are not compared), and called by on_key. */
  report_add_stack (report, "spin_for_ms", "on_timeout", 4);
  report_add_stack (report, "spin_for_ms", "on_key", 1);
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "\n  also 40% in spin_for_ms by the same callers\n"
                                  "  also 10% in spin_for_ms by other callers\n"));
  lagwatch_report_unref (report);
}

/* Test thread. A call of @name at @start_ms lasting @ms, with @child. */
static LwCall *
call (const char *name, int64_t start_ms, int64_t ms, LwCall *child)
{
  LwCall *c = lw_call_new (name, 0, start_ms * 1000000, ms * 1000000);

  if (child != NULL)
    lw_call_add (c, child);
  return c;
}

static void
test_call_tree_recursion (void)
{
  LwFrame *frames = g_new0 (LwFrame, 1);
  g_autofree char *text = NULL;
  LagWatchReport *report;
  LwCall *inner = call ("leaf", 100, 200, NULL);
  LwCall *root;

  for (guint level = 0; level < 40; level++)
    {
      LwCall *up = call ("recurse", 94, 206, NULL);

      lw_call_add (up, call ("tick", 94 + level, 1, NULL));
      lw_call_add (up, inner);
      inner = up;
    }
  root = call (NULL, 0, 300, call ("on_timeout", 0, 300, inner));
  frames[0] = frame (PROGRAM, 0x1000, "leaf", "lag.c", 12);
  report = report_new (frames, 1, 10, 10);
  lw_report_set_calls (report, root, TRUE);
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "  calls, in order (exact, from the tracer; time taken, from the lag's start):\n"
                                  "    on_timeout  300 ms, from +0 ms\n"
                                  "      recurse x40 (recursion)  206 ms, from +94 ms\n"
                                  "        tick: 40 calls along the recursion, 40 ms in all\n"
                                  "        leaf  200 ms, from +100 ms\n"));
  g_assert_null (strstr (text, "more call"));
  lagwatch_report_unref (report);
}

/* Calls each the only call of the one before, over the same time: one line. */
static void
test_call_tree_short_chain (void)
{
  LwFrame *frames = g_new0 (LwFrame, 1);
  g_autofree char *text = NULL;
  LagWatchReport *report;
  LwCall *leaf = call ("xcb_wait_for_reply64", 20, 10, NULL);
  LwCall *reply = call ("_XReply", 20, 10, leaf);
  LwCall *query = call ("XQueryExtension", 20, 10, reply);
  LwCall *root;

  leaf->samples = reply->samples = query->samples = 1;
  leaf->short_calls = reply->short_calls = query->short_calls = 1;
  root = call (NULL, 0, 300, call ("gdk_display_open", 0, 300, query));
  /* Two timed calls over the same time, each the only call of the one
   * before: one line too. */
  lw_call_add (root, call ("gtk_widget_realize", 200, 44, call ("XIGetClientPointer", 200, 44,
                                                                call ("_XReply", 200, 44, NULL))));
  root->samples = 20;
  frames[0] = frame (PROGRAM, 0x1000, "leaf", "lag.c", 12);
  report = report_new (frames, 1, 10, 10);
  lw_report_set_calls (report, root, FALSE);
  report->calls->samples = 20;
  text = lagwatch_report_to_text (report);
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, "    gdk_display_open  300 ms, from +0 ms\n"
                                  "      XQueryExtension > _XReply > xcb_wait_for_reply64: 1 call seen, ~5% of the lag "
                                  "(too short to time one by one)\n"
                                  "    gtk_widget_realize > XIGetClientPointer > _XReply  44 ms, from +200 ms\n"));
  g_assert_null (strstr (text, "more call"));
  lagwatch_report_unref (report);
}

/* The run's line of the summary says "1 iteration", "1 lag". */
static void
test_run_line_plurals (void)
{
  LagWatchStats stats = { .iterations = 1, .lags = 1 };
  g_autofree char *one = NULL;
  g_autofree char *two = NULL;

  stats.counts[0] = 1;
  one = lw_stats_to_text (&stats);
  g_assert_true (g_str_has_prefix (one, "1 iteration, p99 "));
  g_assert_true (g_str_has_suffix (one, ", 1 lag"));
  stats.iterations = 2;
  stats.counts[0] = 2;
  stats.lags = 2;
  two = lw_stats_to_text (&stats);
  g_assert_true (g_str_has_prefix (two, "2 iterations, p99 "));
  g_assert_true (g_str_has_suffix (two, ", 2 lags"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* The stacks are PROGRAM's: its code is the program's, GTK's is not. */
  lw_report_program_set_executable (PROGRAM, NULL);
  g_test_add_func ("/text/unnamed-run", test_unnamed_run);
  g_test_add_func ("/text/recursion", test_recursion);
  g_test_add_func ("/text/header-share-and-also", test_header_share_and_also);
  g_test_add_func ("/text/also-same-callers", test_also_same_callers);
  g_test_add_func ("/text/call-tree-recursion", test_call_tree_recursion);
  g_test_add_func ("/text/call-tree-short-chain", test_call_tree_short_chain);
  g_test_add_func ("/text/run-line-plurals", test_run_line_plurals);
  return g_test_run ();
}
