/* test-calls.c: a lag's timeline and its call tree (lw-profile.h,
 * lw-call-tree.h, the "calls" of a report) */
#include <math.h>
#include <string.h>

#include "known-profile.h"
#include "lag-harness.h"
#include "lw-call-tree.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-profile.h"
#include "lw-report.h"
#include "lw-report-program.h"

#define MS ((int64_t) 1000000)

/* The profile keeps each sample's time and stack in order, and thins both
 * together. */
static void
test_profile_timeline (void)
{
  LwProfile *profile = lw_profile_new (8);
  uintptr_t x[2] = { 0x10, 0x100 }, y[2] = { 0x20, 0x100 };
  const LwProfileStack *first, *second;
  int64_t taken;

  for (guint i = 0; i < 7; i++)
    g_assert_false (lw_profile_add (profile, i % 3 == 2 ? y : x, 2, FALSE, (int64_t) (i + 1) * 10 * MS, FALSE,
                                    LW_LANG_MISSING_NONE));
  g_assert_true (lw_profile_add (profile, x, 2, FALSE, 80 * MS, FALSE, LW_LANG_MISSING_NONE));
  first = lw_profile_sample (profile, 0, &taken, NULL);
  g_assert_cmpint (taken, ==, 10 * MS);
  g_assert_cmpuint (first->ips[0], ==, 0x10);
  second = lw_profile_sample (profile, 2, &taken, NULL);
  g_assert_cmpint (taken, ==, 30 * MS);
  g_assert_cmpuint (second->ips[0], ==, 0x20);
  g_assert_true (lw_profile_sample (profile, 1, &taken, NULL) == first);

  /* Thinning keeps the later of each pair: samples 2, 4, 6, 8. */
  lw_profile_thin (profile);
  g_assert_cmpuint (lw_profile_n_samples (profile), ==, 4);
  for (guint i = 0; i < 4; i++)
    {
      const LwProfileStack *stack = lw_profile_sample (profile, i, &taken, NULL);

      g_assert_cmpint (taken, ==, (int64_t) (2 * i + 2) * 10 * MS);
      g_assert_cmpuint (stack->ips[0], ==, (2 * i + 1) % 3 == 2 ? 0x20 : 0x10);
    }
  lw_profile_free (profile);
}

/* A report built by hand: stacks of named frames (innermost first, as
 * captured) under a GLib dispatch frame, sampled at given times. */
typedef struct
{
  LagWatchReport *report;
  GPtrArray      *stacks;  /* of GStrv, outermost program frame first */
} Synthetic;

static void
synthetic_frame (LwFrame *frame, const char *symbol, uintptr_t ip, const char *module)
{
  frame->symbol = g_strcmp0 (symbol, "?") != 0 ? g_strdup (symbol) : NULL;
  frame->ip = ip;
  frame->symbol_offset = 4;
  frame->module = module;
}

/* Each stack a string like "cb a spin" ("?": a frame no symbol names): main, g_main_loop_run and
 * g_main_dispatch (GLib, platform) outside, g_usleep (GLib) inside. Each
 * function starts at its own address; each call site is fixed per
 * caller and callee. */
static void
synthetic_init (Synthetic *s, const char *const *stacks, guint n_stacks, const int64_t *times,
                const guint *which, guint n_samples, int64_t duration_ns)
{
  static const char program[] = "/usr/bin/program", glib[] = "/usr/lib/libglib-2.0.so.0";

  /* The stacks are /usr/bin/program's (the harness's tests judge this
   * test's own again: harness_init_with_config() below). */
  lw_report_program_set_executable (program, "");
  s->report = lw_report_new ();
  s->report->duration_ms = (double) duration_ns / 1e6;
  s->report->sampled = g_new0 (LwReportStack, n_stacks);
  s->report->n_sampled = n_stacks;
  for (guint i = 0; i < n_stacks; i++)
    {
      g_auto(GStrv) names = g_strsplit (stacks[i], " ", -1);
      guint n = g_strv_length (names), f = 0;
      LwReportStack *stack = &s->report->sampled[i];

      stack->n_frames = n + 4;
      stack->frames = g_new0 (LwFrame, stack->n_frames);
      synthetic_frame (&stack->frames[f++], "g_usleep", 0x9000 + 4, glib);
      for (guint k = n; k-- > 0;)
        synthetic_frame (&stack->frames[f++], names[k], (uintptr_t) names[k][0] * 0x100 + 4, program);
      synthetic_frame (&stack->frames[f++], "g_main_dispatch", 0x8000 + 4, glib);
      synthetic_frame (&stack->frames[f++], "g_main_loop_run", 0x8100 + 4, glib);
      synthetic_frame (&stack->frames[f++], "main", 0x7000 + 4, program);
    }
  s->report->timeline = g_new0 (LwReportSample, n_samples);
  s->report->n_timeline = n_samples;
  for (guint i = 0; i < n_samples; i++)
    s->report->timeline[i] = (LwReportSample) { times[i], which[i] };
}

static void
assert_call (const LwCall *call, const char *name, int64_t start_ms, int64_t duration_ms, guint n_children)
{
  g_assert_cmpstr (call->name, ==, name);
  g_assert_cmpint (call->start_ns, ==, start_ms * MS);
  g_assert_cmpint (call->duration_ns, ==, duration_ms * MS);
  g_assert_cmpuint (call->children ? call->children->len : 0, ==, n_children);
}

#define CHILD(call, i) ((const LwCall *) (call)->children->pdata[i])

/* The rule, on samples every 10 ms: a call lasts from its first sample to
 * its last, half an interval more each side; platform frames fold into
 * their caller; the main() outside dispatch is not a call; a call shorter
 * than two intervals is left out; depth is limited on demand. */
static void
test_tree_rule (void)
{
  static const char *const stacks[] = { "cb a", "cb b c", "cb b", "cb x" };
  /* a 0-30, b 40-150 with c 40-130, x at 160 only, a again 170-190. */
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS, 60 * MS, 70 * MS,
                                   80 * MS, 90 * MS, 100 * MS, 110 * MS, 120 * MS, 130 * MS, 140 * MS,
                                   150 * MS, 160 * MS, 170 * MS, 180 * MS, 190 * MS };
  static const guint which[] = { 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 0, 0, 0 };
  Synthetic s;
  LwCall *root, *cb;

  synthetic_init (&s, stacks, G_N_ELEMENTS (stacks), times, which, G_N_ELEMENTS (times), 195 * MS);
  g_assert_cmpint (lw_report_sample_interval (s.report, 99 * MS), ==, 10 * MS);

  root = lw_call_tree_from_samples (s.report, 0, 0, 99 * MS);
  assert_call (root, NULL, 0, 195, 1);
  cb = root->children->pdata[0];
  assert_call (cb, "cb", 0, 195, 4);  /* clamped to the lag at both ends */
  assert_call (CHILD (cb, 0), "a", 0, 35, 0);
  assert_call (CHILD (cb, 1), "b", 35, 120, 1);
  assert_call (CHILD (CHILD (cb, 1), 0), "c", 35, 100, 0);
  /* x, one sample (10 ms), is too short to time: a summary of one call. */
  assert_call (CHILD (cb, 2), "x", 155, 10, 0);
  g_assert_cmpuint (CHILD (cb, 2)->short_calls, ==, 1);
  g_assert_cmpuint (CHILD (cb, 2)->samples, ==, 1);
  assert_call (CHILD (cb, 3), "a", 165, 30, 0);
  g_assert_cmpuint (CHILD (cb, 3)->short_calls, ==, 0);
  g_assert_cmpuint (CHILD (cb, 3)->samples, ==, 3);
  lw_call_free (root);

  /* Any call of 10 ms or more, down to depth 1 only. */
  root = lw_call_tree_from_samples (s.report, 10 * MS, 2, 99 * MS);
  cb = root->children->pdata[0];
  assert_call (cb, "cb", 0, 195, 4);
  assert_call (CHILD (cb, 1), "b", 35, 120, 0);
  assert_call (CHILD (cb, 2), "x", 155, 10, 0);
  lw_call_free (root);

  /* In the report: pre-order with depths, JSON, text. */
  lw_report_set_calls (s.report, lw_call_tree_from_samples (s.report, 0, 0, 99 * MS), FALSE);
  {
    guint depth;
    double start, duration;
    g_autofree char *json = lagwatch_report_to_json (s.report);
    g_autofree char *text = lagwatch_report_to_text (s.report);

    guint n_calls;
    double share;

    g_assert_cmpuint (lagwatch_report_get_n_calls (s.report), ==, 6);
    g_assert_false (lagwatch_report_get_call_summary (s.report, 2, &n_calls, &share));
    g_assert_cmpuint (n_calls, ==, 1);
    g_assert_cmpfloat_with_epsilon (share, 12.0 / 20, 1e-9);
    g_assert_true (lagwatch_report_get_call_summary (s.report, 4, &n_calls, &share));
    g_assert_cmpuint (n_calls, ==, 1);
    g_assert_cmpfloat_with_epsilon (share, 1.0 / 20, 1e-9);
    g_assert_false (lagwatch_report_get_call_summary (s.report, 6, NULL, NULL));
    g_assert_cmpstr (lagwatch_report_get_call (s.report, 2, &depth, &start, &duration), ==, "b");
    g_assert_cmpuint (depth, ==, 1);
    g_assert_cmpfloat (start, ==, 35.0);
    g_assert_cmpfloat (duration, ==, 120.0);
    g_assert_cmpstr (lagwatch_report_get_call (s.report, 3, &depth, NULL, NULL), ==, "c");
    g_assert_cmpuint (depth, ==, 2);
    g_assert_null (lagwatch_report_get_call (s.report, 6, NULL, NULL, NULL));
    g_assert_false (lagwatch_report_get_calls_exact (s.report));
    g_assert_nonnull (strstr (json, ",\"calls\":[{\"name\":\"cb\",\"start_ms\":0.0,\"duration_ms\":195.0,"
                                    "\"samples\":20,\"children\":[{\"name\":\"a\",\"start_ms\":0.0,"
                                    "\"duration_ms\":35.0,\"samples\":4,\"children\":[]},{\"name\":\"b\""));
    g_assert_nonnull (strstr (json, "{\"name\":\"x\",\"start_ms\":155.0,\"duration_ms\":10.0,\"samples\":1,"
                                    "\"short_calls\":1,\"children\":[]}"));
    g_assert_nonnull (strstr (json, ",\"calls_exact\":false,\"calls_samples\":20"));
    g_assert_nonnull (strstr (text, "  calls, in order (from 20 samples ~10 ms apart: each within about that; "
                                    "time taken, from the lag's start):\n"
                                    "    cb  195 ms, from +0 ms\n"
                                    "      a  35 ms, from +0 ms\n"
                                    "      b  120 ms, from +35 ms\n"
                                    "        c  100 ms, from +35 ms\n"
                                    "      x: 1 call seen, ~5% of the lag (too short to time one by one)\n"
                                    "      a  30 ms, from +165 ms\n"));
  }

  /* An exact tree wins over a sampled one, whichever comes first. */
  lw_report_set_calls (s.report, lw_call_new (NULL, 0, 0, 195 * MS), TRUE);
  g_assert_true (lagwatch_report_get_calls_exact (s.report));
  g_assert_cmpuint (lagwatch_report_get_n_calls (s.report), ==, 0);
  lw_report_set_calls (s.report, lw_call_tree_from_samples (s.report, 0, 0, 99 * MS), FALSE);
  g_assert_true (lagwatch_report_get_calls_exact (s.report));
  g_assert_cmpuint (lagwatch_report_get_n_calls (s.report), ==, 0);
  lagwatch_report_unref (s.report);
}

/* Calls shorter than the interval, interleaved: each call seen by one
 * sample joins its function's summary under the same parent, with what
 * it called; a call seen by two samples is timed. Every sample counts. */
static void
test_tree_short_calls (void)
{
  static const char *const stacks[] = { "cb f", "cb h", "cb f k" };
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS, 60 * MS, 70 * MS };
  static const guint which[] = { 0, 1, 0, 0, 1, 0, 1, 2 };
  Synthetic s;
  LwCall *root, *cb;
  const LwCall *f, *h;

  synthetic_init (&s, stacks, G_N_ELEMENTS (stacks), times, which, G_N_ELEMENTS (times), 75 * MS);
  root = lw_call_tree_from_samples (s.report, 0, 0, 99 * MS);
  g_assert_cmpuint (root->samples, ==, 8);
  cb = root->children->pdata[0];
  assert_call (cb, "cb", 0, 75, 3);
  g_assert_cmpuint (cb->samples, ==, 8);
  /* f at 0, 50 and 70 (calling k): one summary, three calls, 30 ms. */
  f = CHILD (cb, 0);
  assert_call (f, "f", 0, 30, 1);
  g_assert_cmpuint (f->short_calls, ==, 3);
  g_assert_cmpuint (f->samples, ==, 3);
  assert_call (CHILD (f, 0), "k", 65, 10, 0);
  g_assert_cmpuint (CHILD (f, 0)->short_calls, ==, 1);
  /* h at 10, 40 and 60. */
  h = CHILD (cb, 1);
  assert_call (h, "h", 5, 30, 0);
  g_assert_cmpuint (h->short_calls, ==, 3);
  g_assert_cmpuint (h->samples, ==, 3);
  /* f at 20 and 30: timed. */
  assert_call (CHILD (cb, 2), "f", 15, 20, 0);
  g_assert_cmpuint (CHILD (cb, 2)->short_calls, ==, 0);
  g_assert_cmpuint (CHILD (cb, 2)->samples, ==, 2);
  lw_call_free (root);
  lagwatch_report_unref (s.report);
}

/* A sample lacking a call's frames does not split it: one with no frame
 * at its depth, one with none past the callback, a truncated one (no
 * dispatch frame, its outer frames lost). g stays one call throughout,
 * and so does f. */
static void
test_tree_gaps (void)
{
  static const char *const stacks[] = { "cb f g", "cb f", "cb", "f g" };
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS, 60 * MS, 70 * MS };
  static const guint which[] = { 0, 1, 0, 2, 0, 3, 0, 2 };
  LwReportStack *truncated;
  Synthetic s;
  LwCall *root, *cb;
  const LwCall *f;

  synthetic_init (&s, stacks, G_N_ELEMENTS (stacks), times, which, G_N_ELEMENTS (times), 75 * MS);
  /* Stack 3 stops at f: g_usleep, g, f, and nothing outside. */
  truncated = &s.report->sampled[3];
  for (guint i = 3; i < truncated->n_frames; i++)
    g_clear_pointer (&truncated->frames[i].symbol, g_free);
  truncated->n_frames = 3;
  truncated->truncated = TRUE;

  root = lw_call_tree_from_samples (s.report, 0, 0, 99 * MS);
  cb = root->children->pdata[0];
  assert_call (cb, "cb", 0, 75, 1);
  g_assert_cmpuint (cb->samples, ==, 8);
  /* The last sample holds no f: f ended at 60 ms, its sixth sample. */
  f = CHILD (cb, 0);
  assert_call (f, "f", 0, 65, 1);
  g_assert_cmpuint (f->samples, ==, 7);
  assert_call (CHILD (f, 0), "g", 0, 65, 0);
  g_assert_cmpuint (CHILD (f, 0)->samples, ==, 7);
  lw_call_free (root);
  lagwatch_report_unref (s.report);
}

/* One stack of a script without the script's frames, between two with
 * them, does not split the script's calls. */
static void
test_tree_script_gap (void)
{
  static const char *const stacks[] = { "caller handler deflate", "caller handler deflate" };
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS, 40 * MS };
  static const guint which[] = { 0, 0, 1, 0, 0 };
  Synthetic s;
  LwCall *root;
  const LwCall *caller;

  synthetic_init (&s, stacks, 2, times, which, 5, 45 * MS);
  for (guint k = 0; k < 2; k++)
    for (guint i = 0; i < s.report->sampled[k].n_frames; i++)
      {
        LwFrame *frame = &s.report->sampled[k].frames[i];

        if (g_str_equal (frame->symbol, "deflate"))
          frame->module = "/usr/lib/x86_64-linux-gnu/libz.so.1";
        else if (k == 0 && (g_str_equal (frame->symbol, "handler") || g_str_equal (frame->symbol, "caller")))
          {
            frame->module = "/app/app.py";
            frame->lang = "python";
          }
      }
  root = lw_call_tree_from_samples (s.report, 0, 0, 99 * MS);
  assert_call (root, NULL, 0, 45, 1);
  caller = root->children->pdata[0];
  assert_call (caller, "caller", 0, 45, 1);
  g_assert_cmpuint (caller->samples, ==, 5);
  assert_call (CHILD (caller, 0), "handler", 0, 45, 1);
  lw_call_free (root);
  lagwatch_report_unref (s.report);
}

/* The same function called twice in a row from two call sites is two
 * calls; samples from one call site are one. */
static void
test_tree_call_sites (void)
{
  static const char *const stacks[] = { "cb a", "cb a" };
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS };
  static const guint which[] = { 0, 0, 0, 1, 1, 1 };
  Synthetic s;
  LwCall *root, *cb;

  synthetic_init (&s, stacks, 2, times, which, 6, 55 * MS);
  /* cb's return address: another call site in the same function. */
  s.report->sampled[1].frames[2].ip += 8;
  s.report->sampled[1].frames[2].symbol_offset += 8;
  root = lw_call_tree_from_samples (s.report, 0, 0, 99 * MS);
  cb = root->children->pdata[0];
  assert_call (cb, "cb", 0, 55, 2);
  assert_call (CHILD (cb, 0), "a", 0, 25, 0);
  assert_call (CHILD (cb, 1), "a", 25, 30, 0);
  lw_call_free (root);
  g_assert_null (lw_call_tree_from_samples (&(LagWatchReport) { 0 }, 0, 0, 10 * MS));
  lagwatch_report_unref (s.report);
}

/* A frame no symbol names (a library's internal function) is folded into
 * the named function that called it. */
static void
test_tree_unnamed_folded (void)
{
  static const char *const stacks[] = { "cb ? a", "cb ? ?" };
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS };
  static const guint which[] = { 0, 0, 1, 1 };
  Synthetic s;
  LwCall *root, *cb;

  synthetic_init (&s, stacks, 2, times, which, 4, 35 * MS);
  root = lw_call_tree_from_samples (s.report, 1, 0, 99 * MS);
  cb = root->children->pdata[0];
  assert_call (cb, "cb", 0, 35, 1);
  assert_call (CHILD (cb, 0), "a", 0, 15, 0);
  lw_call_free (root);
  lagwatch_report_unref (s.report);
}

/* A stack with Python frames: the tree is the Python functions, and the
 * C functions the innermost one called (zlib's deflate); never the
 * interpreter's frames between them (_PyEval_EvalFrameDefault,
 * _PyFunction_Vectorcall), as the summary and the fingerprint read it. */
static void
test_tree_interpreted (void)
{
  static const char *const stacks[] = { "caller _PyFunction_Vectorcall handler _PyEval_EvalFrameDefault deflate" };
  static const int64_t times[] = { 0, 10 * MS, 20 * MS, 30 * MS };
  static const guint which[] = { 0, 0, 0, 0 };
  LwReportStack *stack;
  Synthetic s;
  const LwCall *caller, *handler;
  LwCall *root;

  synthetic_init (&s, stacks, 1, times, which, 4, 35 * MS);
  stack = &s.report->sampled[0];
  for (guint i = 0; i < stack->n_frames; i++)
    {
      LwFrame *frame = &stack->frames[i];

      frame->ip = 0x10000 * (i + 1) + 4;  /* a function each */
      if (g_str_has_prefix (frame->symbol, "_Py"))
        frame->module = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
      else if (g_str_equal (frame->symbol, "deflate"))
        frame->module = "/usr/lib/x86_64-linux-gnu/libz.so.1";
      else if (g_str_equal (frame->symbol, "handler") || g_str_equal (frame->symbol, "caller"))
        {
          frame->module = "/app/app.py";
          frame->lang = "python";
        }
    }
  root = lw_call_tree_from_samples (s.report, 0, 0, 99 * MS);
  assert_call (root, NULL, 0, 35, 1);
  caller = root->children->pdata[0];
  assert_call (caller, "caller", 0, 35, 1);
  handler = CHILD (caller, 0);
  assert_call (handler, "handler", 0, 35, 1);
  assert_call (CHILD (handler, 0), "deflate", 0, 35, 0);
  lw_call_free (root);
  lagwatch_report_unref (s.report);
}

/* The known sequence, lagged for real. Each function records when it
 * began and ended (CLOCK_MONOTONIC, the clock of the report's start_ns). */
typedef struct
{
  int64_t begin_ns, end_ns;
} Span;

static Span span_a1, span_b, span_c, span_a2;
/* Written after the last call of a function: no call is a tail call, whose
 * caller's frame would be gone from the stack. */
static volatile int calls_returned;

static LAGGY void
calls_a (Span *span, int cpu_ms)
{
  span->begin_ns = lw_clock_now_ns ();
  spin_cpu_ms (GINT_TO_POINTER (cpu_ms));
  span->end_ns = lw_clock_now_ns ();
}

static LAGGY void
calls_c (void)
{
  span_c.begin_ns = lw_clock_now_ns ();
  spin_cpu_ms (GINT_TO_POINTER (100));
  span_c.end_ns = lw_clock_now_ns ();
}

static LAGGY void
calls_b (void)
{
  span_b.begin_ns = lw_clock_now_ns ();
  calls_c ();
  spin_cpu_ms (GINT_TO_POINTER (20));
  span_b.end_ns = lw_clock_now_ns ();
}

/* Spins past the threshold first: sampling starts once the lag is seen. */
static LAGGY void
calls_prelude (void)
{
  spin_cpu_ms (GINT_TO_POINTER (60));
  calls_returned++;
}

static LAGGY void
calls_sequence (gpointer data)
{
  calls_prelude ();
  calls_a (&span_a1, 40);
  calls_b ();
  calls_a (&span_a2, 30);
  calls_returned++;
}

/* How far a boundary at @offset_ns may be from the samples' estimate: one
 * sampling interval, or the gap between the samples around it when the
 * loaded machine spaced them further. Past the last sample, the lag's end
 * bounds it: a thread descheduled after its last sample is not sampled
 * again before the lag ends. */
static int64_t
boundary_tolerance (LagWatchReport *report, int64_t offset_ns, int64_t interval_ns)
{
  int64_t before = G_MININT64, after = (int64_t) (report->duration_ms * 1e6);

  for (guint i = 0; i < report->n_timeline; i++)
    {
      int64_t t = report->timeline[i].offset_ns;

      if (t <= offset_ns)
        before = MAX (before, t);
      else
        after = MIN (after, t);
    }
  if (before == G_MININT64 || after <= before)
    return interval_ns;
  return MAX (interval_ns, after - before);
}

/* The call among the pre-order walk's calls at @depth named @name, the
 * @nth one (0: the first). Returns its index. */
static guint
find_call (LagWatchReport *report, const char *name, guint nth)
{
  for (guint i = 0; i < lagwatch_report_get_n_calls (report); i++)
    if (g_strcmp0 (lagwatch_report_get_call (report, i, NULL, NULL, NULL), name) == 0 && nth-- == 0)
      return i;
  g_error ("no call %s in the tree", name);
}

static void
assert_span (LagWatchReport *report, guint index, const Span *span, guint depth, int64_t interval_ns)
{
  guint got_depth;
  double start_ms, duration_ms;
  int64_t begin = span->begin_ns - report->start_ns, end = span->end_ns - report->start_ns;
  int64_t tol_begin = boundary_tolerance (report, begin, interval_ns);
  int64_t tol_end = boundary_tolerance (report, end, interval_ns);

  lagwatch_report_get_call (report, index, &got_depth, &start_ms, &duration_ms);
  g_test_message ("%s: at %.1f ms for %.1f ms, measured at %.1f ms for %.1f ms (tolerance %.1f, %.1f)",
                  lagwatch_report_get_call (report, index, NULL, NULL, NULL), start_ms, duration_ms,
                  begin / 1e6, (end - begin) / 1e6, tol_begin / 1e6, tol_end / 1e6);
  g_assert_cmpuint (got_depth, ==, depth);
  g_assert_cmpfloat (fabs (start_ms * 1e6 - (double) begin), <=, (double) tol_begin);
  g_assert_cmpfloat (fabs (duration_ms * 1e6 - (double) (end - begin)), <=, (double) (tol_begin + tol_end));
}

/* A known sequence: a() 40 ms, b() 120 ms calling c() 100 ms,
 * a() 30 ms. The tree has them in order, c inside b, each within two
 * sampling intervals (wider only where the samples themselves were
 * further apart). */
static void
test_lag_known_sequence (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  Harness h;
  LagWatchReport *report;
  int64_t interval_ns;
  guint seq, a1, b, c, a2, depth;

  /* Every call a sample saw: on a loaded machine the watcher, starved too,
   * can miss a sample, and the short a() may be seen once. The default
   * (two samples) is checked on known samples, in /calls/tree/rule. */
  config->calls_min_ms = 1;
  g_assert_true (lagwatch_config_set_threshold_ms (config, 20));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  lw_report_program_set_executable (NULL, NULL);
  harness_init_with_config (&h, config);
  harness_run_lag (&h, calls_sequence, NULL);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_cmpint (report->start_ns, >, 0);
  g_assert_cmpuint (report->n_timeline, ==, lagwatch_report_get_n_samples (report));
  g_assert_cmpuint (report->n_sampled, >=, 2);
  for (guint i = 1; i < report->n_timeline; i++)
    g_assert_cmpint (report->timeline[i].offset_ns, >=, report->timeline[i - 1].offset_ns);
  interval_ns = lw_report_sample_interval (report, 10 * MS);
  g_test_message ("%u samples, %.1f ms apart (median)", report->n_timeline, interval_ns / 1e6);
  for (guint i = 0; i < report->n_timeline; i++)
    g_test_message ("sample at %.1f ms", report->timeline[i].offset_ns / 1e6);

  seq = find_call (report, "calls_sequence", 0);
  a1 = find_call (report, "calls_a", 0);
  b = find_call (report, "calls_b", 0);
  c = find_call (report, "calls_c", 0);
  a2 = find_call (report, "calls_a", 1);
  g_assert_cmpuint (seq, <, a1);
  g_assert_cmpuint (a1, <, b);
  g_assert_cmpuint (b + 1, ==, c);  /* c is b's first call */
  g_assert_cmpuint (c, <, a2);
  lagwatch_report_get_call (report, seq, &depth, NULL, NULL);
  assert_span (report, a1, &span_a1, depth + 1, interval_ns);
  assert_span (report, b, &span_b, depth + 1, interval_ns);
  assert_span (report, c, &span_c, depth + 2, interval_ns);
  assert_span (report, a2, &span_a2, depth + 1, interval_ns);
  harness_clear (&h);
}

/* Calls shorter than the sampling interval, for real: each function's
 * share in the tree (timed calls and summaries) against the program's own
 * log of its calls, two ways.
 *
 * At the samples' instants: the share of the samples taken while the log
 * says a call of the function ran must be the tree's, within 2 points.
 * This is what the tree itself answers for (every sample counted for the
 * functions it holds) and load does not change it; the 2 points are for
 * a sample taken within microseconds of a call's start or end, on the
 * other side of the log's clock read (0.4 points a sample at ~240
 * samples).
 *
 * Over the lag: the share of the function's CPU time, within 5 points, or
 * 4 spreads of a share estimated from n samples, √(p(1−p)/n), where that
 * is wider. A running thread is sampled once per interval of its CPU time
 * and the work is counted in that same CPU time, so load changes neither;
 * what is left is sampling luck, with the order of the calls drawn anew
 * each run (known-profile.h). Measured over 70 runs of each variant in
 * random orders, (tree − CPU share) / spread had a mean within ±0.4 and a
 * standard deviation of 0.6 to 1.15, never past 2.7: the spread is the
 * right yardstick. At the worst of those (kp_c10, mean +0.4, deviation
 * 1.15), 4 spreads leave a run about one chance in 1,000 of failing on
 * luck; 3 left one in 100.
 * The lag is 2.4 s of CPU, twice the benchmark's, so that its ~240
 * samples keep 4 spreads below what 3 were at ~120 (7.8 points against
 * 8.3 for the 10% share): a sampler that favoured or missed a function by
 * that much still fails.
 *
 * Below 120 samples (the watcher itself starved of CPU, or the timer
 * lost), the test skips rather than judge. */
static void
test_lag_known_profile (gconstpointer data)
{
  KpVariant longer = *(const KpVariant *) data, *v = &longer;
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  double truth[KP_MAX_FUNCTIONS], at_samples[KP_MAX_FUNCTIONS], tree[KP_MAX_FUNCTIONS];
  double samples[KP_MAX_FUNCTIONS];
  Harness h;
  LagWatchReport *report;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 20));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  lw_report_program_set_executable (NULL, NULL);
  harness_init_with_config (&h, config);
  /* From GTest's seed, which the output gives ("random seed"): --seed
   * with it repeats this order. */
  kp_seed = (guint32) g_test_rand_int ();
  g_test_message ("order of the calls: seed %u", kp_seed);
  longer.cpu_ms = 2400;
  harness_run_lag (&h, known_profile_run, v);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_test_message ("%u samples, %.1f ms apart (median), %u calls logged", report->n_timeline,
                  lw_report_sample_interval (report, 0) / 1e6, kp_n_log);
  if (report->n_timeline < 120)
    {
      g_autofree char *why = g_strdup_printf ("only %u samples of a 2.4 s lag (120 needed): the watcher or "
                                              "its timer was starved of CPU", report->n_timeline);

      g_test_skip (why);
      harness_clear (&h);
      return;
    }
  if (g_test_verbose ())
    {
      g_autofree char *text = lagwatch_report_to_text (report);

      g_test_message ("%s", text);
    }
  g_assert_true (known_profile_shares (report, v, truth, at_samples, tree, samples));
  for (guint f = 0; f < v->n_functions; f++)
    {
      double spread = sqrt (truth[f] * (1 - truth[f]) / report->n_timeline);

      g_test_message ("%s: %.1f%% in the tree, %.1f%% of the samples; in the log %.1f%% at the samples, "
                      "%.1f%% of the CPU (tolerance %.1f)", v->functions[f], 100 * tree[f], 100 * samples[f],
                      100 * at_samples[f], 100 * truth[f], 100 * MAX (0.05, 4 * spread));
      g_assert_cmpfloat (fabs (tree[f] - at_samples[f]), <=, 0.02);
      g_assert_cmpfloat (fabs (tree[f] - truth[f]), <=, MAX (0.05, 4 * spread));
    }
  harness_clear (&h);
}

/* LAGWATCH_CALLS_DEPTH reaches the reporting thread: with 2, the tree
 * stops at the calls the outermost function made. */
static void
test_lag_depth_setting (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  Harness h;
  LagWatchReport *report;
  guint deepest = 0;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 20));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  g_setenv ("LAGWATCH_CALLS_DEPTH", "2", TRUE);
  lw_report_program_set_executable (NULL, NULL);
  harness_init_with_config (&h, config);
  g_unsetenv ("LAGWATCH_CALLS_DEPTH");
  harness_run_lag (&h, calls_sequence, NULL);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_cmpuint (lagwatch_report_get_n_calls (report), >=, 2);
  for (guint i = 0; i < lagwatch_report_get_n_calls (report); i++)
    {
      guint depth;

      lagwatch_report_get_call (report, i, &depth, NULL, NULL);
      deepest = MAX (deepest, depth);
    }
  g_assert_cmpuint (deepest, ==, 1);
  harness_clear (&h);
}

/* The two settings from the environment; a bad value is named, and the
 * default kept. */
static void
test_config_environment (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();

      g_log_set_always_fatal (G_LOG_FATAL_MASK);
      g_log_set_fatal_mask ("lagwatch", G_LOG_FATAL_MASK);
      g_setenv ("LAGWATCH_CALLS_MIN_MS", "30", TRUE);
      g_setenv ("LAGWATCH_CALLS_DEPTH", "three", TRUE);
      lw_config_apply_environment (config);
      g_assert_cmpuint (config->calls_min_ms, ==, 30);
      g_assert_cmpuint (config->calls_depth, ==, 0);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*LAGWATCH_CALLS_DEPTH=\"three\" is not valid*using 0*");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/calls/profile/timeline", test_profile_timeline);
  g_test_add_func ("/calls/tree/rule", test_tree_rule);
  g_test_add_func ("/calls/tree/call-sites", test_tree_call_sites);
  g_test_add_func ("/calls/tree/short-calls", test_tree_short_calls);
  g_test_add_func ("/calls/tree/gaps", test_tree_gaps);
  g_test_add_func ("/calls/tree/script-gap", test_tree_script_gap);
  g_test_add_func ("/calls/tree/unnamed-folded", test_tree_unnamed_folded);
  g_test_add_func ("/calls/tree/interpreted", test_tree_interpreted);
  g_test_add_func ("/calls/lag/known-sequence", test_lag_known_sequence);
  g_test_add_func ("/calls/lag/depth-setting", test_lag_depth_setting);
  g_test_add_data_func ("/calls/lag/known-profile/interleaved", &kp_variants[0], test_lag_known_profile);
  g_test_add_data_func ("/calls/lag/known-profile/blocks", &kp_variants[1], test_lag_known_profile);
  g_test_add_func ("/calls/config/environment", test_config_environment);
  return g_test_run ();
}
