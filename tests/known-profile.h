/* known-profile.h: a lag of known profile, and its shares three ways
 *
 * The lag (known_profile_run(), on the watched thread) is a run of short
 * calls, each 3 to 9 ms of the thread's CPU time, shorter than the 10 ms
 * sampling interval:
 * - "interleaved": kp_f_heavy (5-9 ms) and kp_h_light (3-5 ms), in an
 *   irregular order;
 * - "blocks": kp_a60, kp_b30, kp_c10, 60/30/10% of the CPU: 30 ms cycles
 *   of a 18, b 9, c 3 ms, each split into calls of 3 to 9 ms and shuffled.
 * The order comes from kp_seed, which the caller sets anew for each run:
 * with one fixed order, the samples (evenly spaced in the thread's CPU
 * time, on the kernel's 4 ms ticks) fell at the same few points of the
 * sequence run after run, and a run that overcounted one function did so
 * every time it took that phase (kp_c10 at 18.6% against 10.2%, twice with
 * identical counts). Each call logs its thread CPU time and its
 * CLOCK_MONOTONIC end: the truth. CPU time, not wall time, drives the work, so a loaded machine
 * changes neither the profile nor, since a running thread is sampled per
 * interval of its CPU time, the samples' view of it.
 *
 * Used by tests/test-calls.c and bench/bench-calltree.c; reaches into the
 * report (its timeline) for the per-sample shares.
 */
#pragma once

#include <string.h>

#include "lag-harness.h"
#include "lw-clock.h"
#include "lw-report.h"

#define KP_MAX_FUNCTIONS 3
#define KP_MAX_CALLS     1024

typedef struct
{
  const char *name;
  guint       n_functions;
  const char *functions[KP_MAX_FUNCTIONS];
  int         cpu_ms;                      /* the lag's whole CPU */
} KpVariant;

static const KpVariant kp_variants[] = {
  { "interleaved", 2, { "kp_f_heavy", "kp_h_light" }, 1200 },
  { "blocks", 3, { "kp_a60", "kp_b30", "kp_c10" }, 1200 },
};

typedef struct
{
  guint   function;  /* index into the variant's functions */
  double  cpu_ms;
  int64_t begin_ns;  /* CLOCK_MONOTONIC, the report's clock */
  int64_t end_ns;
} KpCall;

static KpCall kp_log[KP_MAX_CALLS];
static guint  kp_n_log;

/* The seed of the next run's order; set by the caller, which says it, so
 * that a run can be repeated. */
static guint32 kp_seed = 12345;

/* Watched thread. @ms of CPU, logged as a call of function @function. */
static LAGGY void
kp_work (guint function, int ms)
{
  int64_t begin_ns = lw_clock_now_ns ();
  double begin = thread_cpu_ms (), now = begin;

  while (now < begin + ms)
    now = thread_cpu_ms ();
  if (kp_n_log < KP_MAX_CALLS)
    kp_log[kp_n_log++] = (KpCall) { function, now - begin, begin_ns, lw_clock_now_ns () };
}

/* Written after each call: no call is a tail call, whose caller's frame
 * would be gone from the stack. */
static volatile guint kp_returned;

/* One named function each, so that the stack names it (noipa: never
 * inlined). */
static LAGGY void kp_f_heavy (int ms) { kp_work (0, ms); kp_returned++; }
static LAGGY void kp_h_light (int ms) { kp_work (1, ms); kp_returned++; }
static LAGGY void kp_a60 (int ms) { kp_work (0, ms); kp_returned++; }
static LAGGY void kp_b30 (int ms) { kp_work (1, ms); kp_returned++; }
static LAGGY void kp_c10 (int ms) { kp_work (2, ms); kp_returned++; }

/* Watched thread: the lag of @variant (a KpVariant *). */
static LAGGY G_GNUC_UNUSED void
known_profile_run (gpointer variant)
{
  const KpVariant *v = variant;
  double end = thread_cpu_ms () + v->cpu_ms;
  guint32 r = kp_seed;

  kp_n_log = 0;
  if (g_str_equal (v->name, "interleaved"))
    while (thread_cpu_ms () < end)
      {
        r = r * 1103515245u + 12345u;
        if ((r >> 16) % 3 != 0)
          kp_f_heavy (5 + (int) ((r >> 8) % 5));
        else
          kp_h_light (3 + (int) ((r >> 8) % 3));
      }
  else
    while (thread_cpu_ms () < end)
      {
        /* 30 ms: a 18, b 9, c 3, split and shuffled anew each cycle: a
         * fixed cycle would alias with the evenly spaced samples. */
        static const int a_splits[][3] = { { 9, 9, 0 }, { 6, 6, 6 }, { 5, 6, 7 }, { 4, 5, 9 } };
        static const int b_splits[][2] = { { 4, 5 }, { 3, 6 }, { 9, 0 } };
        int piece_ms[6], piece_fn[6], n = 0;
        guint a, b;

        r = r * 1103515245u + 12345u;
        a = (r >> 16) % G_N_ELEMENTS (a_splits);
        b = (r >> 20) % G_N_ELEMENTS (b_splits);
        for (guint i = 0; i < 3; i++)
          if (a_splits[a][i] > 0)
            piece_ms[n] = a_splits[a][i], piece_fn[n++] = 0;
        for (guint i = 0; i < 2; i++)
          if (b_splits[b][i] > 0)
            piece_ms[n] = b_splits[b][i], piece_fn[n++] = 1;
        piece_ms[n] = 3, piece_fn[n++] = 2;
        for (int i = n - 1; i > 0; i--)
          {
            int j, t;

            r = r * 1103515245u + 12345u;
            j = (int) ((r >> 16) % (guint) (i + 1));
            t = piece_ms[i], piece_ms[i] = piece_ms[j], piece_ms[j] = t;
            t = piece_fn[i], piece_fn[i] = piece_fn[j], piece_fn[j] = t;
          }
        for (int i = 0; i < n; i++)
          if (piece_fn[i] == 0)
            kp_a60 (piece_ms[i]);
          else if (piece_fn[i] == 1)
            kp_b30 (piece_ms[i]);
          else
            kp_c10 (piece_ms[i]);
      }
  kp_returned++;
}

/* Any thread, after the lag's report. Each function's share of the
 * variant's functions (their sum is 1), four ways: @truth, its CPU time
 * in the log (the calls that ended after the first sample: earlier ones,
 * before the lag was caught, were not sampled); @at_samples, the log at
 * the samples' instants (the samples taken while a logged call of it
 * ran); @tree, the call tree (its entries' shares,
 * lagwatch_report_get_call_summary(), timed calls and summaries alike);
 * @samples, the samples whose stack names it. Returns FALSE when one way
 * finds none of the functions. */
static G_GNUC_UNUSED gboolean
known_profile_shares (LagWatchReport *report, const KpVariant *v, double *truth, double *at_samples,
                      double *tree, double *samples)
{
  int64_t first_ns = report->n_timeline > 0 ? report->start_ns + report->timeline[0].offset_ns : 0;
  double *ways[] = { truth, at_samples, tree, samples };

  for (guint f = 0; f < v->n_functions; f++)
    truth[f] = at_samples[f] = tree[f] = samples[f] = 0;
  for (guint i = 0; i < kp_n_log; i++)
    if (kp_log[i].end_ns >= first_ns)
      truth[kp_log[i].function] += kp_log[i].cpu_ms;
  for (guint i = 0; i < lagwatch_report_get_n_calls (report); i++)
    {
      const char *name = lagwatch_report_get_call (report, i, NULL, NULL, NULL);
      double share = 0;

      lagwatch_report_get_call_summary (report, i, NULL, &share);
      for (guint f = 0; f < v->n_functions; f++)
        if (g_strcmp0 (name, v->functions[f]) == 0)
          tree[f] += share;
    }
  for (guint s = 0, c = 0; s < report->n_timeline; s++)
    {
      const LwReportStack *stack = &report->sampled[report->timeline[s].stack];
      int64_t t = report->start_ns + report->timeline[s].offset_ns;

      for (guint f = 0; f < v->n_functions; f++)
        for (guint k = 0; k < stack->n_frames; k++)
          if (g_strcmp0 (stack->frames[k].symbol, v->functions[f]) == 0)
            {
              samples[f]++;
              break;
            }
      /* The log and the timeline are both in time order. */
      while (c < kp_n_log && kp_log[c].end_ns < t)
        c++;
      if (c < kp_n_log && kp_log[c].begin_ns <= t)
        at_samples[kp_log[c].function]++;
    }
  for (guint w = 0; w < G_N_ELEMENTS (ways); w++)
    {
      double sum = 0;

      for (guint f = 0; f < v->n_functions; f++)
        sum += ways[w][f];
      if (sum <= 0)
        return FALSE;
      for (guint f = 0; f < v->n_functions; f++)
        ways[w][f] /= sum;
    }
  return TRUE;
}
