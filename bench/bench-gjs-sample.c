/* bench-gjs-sample.c: the cost of one sample of a GJS stack, beside a native one
 *
 * Runs the installed GJS in this process (libgjs.so.0, loaded with dlopen:
 * whatever SpiderMonkey release it links) and samples its main thread as
 * the watcher samples a stuck loop thread: signal + stack copy
 * (lw_capture_take_thread()), unwind, then lw_gjs_merge(), which reads
 * SpiderMonkey's profiling stack and names the JavaScript functions; each
 * timed apart. Two series from a sampler thread, samples 1 ms apart (the
 * watcher's shortest interval): the main thread spinning in JavaScript
 * twenty calls deep (GJS: the samples with JavaScript frames; calls the JIT
 * made from compiled code have no entry, so fewer than twenty are named),
 * then spinning in C twenty calls deep (native: lw_gjs_merge() finds no
 * engine frame and returns). Then the same JavaScript spin once it is
 * compiled (compiled: benchSpin called 3000 times first; its frames are
 * named by the signal handler, lw-gjs-jit.c, whose cost is in the
 * capture's time, and timed apart as "sampler": LwSnapshot.lang_ns).
 * Prints the medians, in µs, and the frames of the last sample of each.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "bench-stats.h"
#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-gjs.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

#define BENCH_DEPTH    20
#define BENCH_SPIN_MS  1500
#define BENCH_GAP_US   1000

enum { TIME_CAPTURE, TIME_HOOK, TIME_UNWIND, TIME_MERGE, TIME_WHOLE, N_TIMES };
static const char *time_names[N_TIMES] = { "capture", "sampler", "unwind", "merge", "whole" };

typedef struct
{
  GArray *times[N_TIMES];
  guint   native;
  guint   merged;
  guint   js;
  guint   deep;    /* samples with BENCH_DEPTH JavaScript frames or more */
} Series;

static struct
{
  LagWatch   *watch;
  LwSnapshot *snap;
  LwUnwinder *unwinder;
  pid_t       tid;
  _Atomic int phase;     /* a BenchPhase */
  _Atomic int stop;      /* the C spin's end */
  Series     *js;
  Series     *jit;
  Series     *native;
} bench;

typedef enum { PHASE_WAIT, PHASE_JS, PHASE_NATIVE, PHASE_WARM, PHASE_JIT, PHASE_DONE } BenchPhase;

/* The sampler. One sample of the main thread, timed into @series when it
 * has @wanted_js JavaScript frames or more (the JavaScript series leaves
 * out the samples taken before the spin started). */
static void
bench_take (Series *series, guint wanted_js)
{
  LwSlot *slot = bench.watch->slot;
  uintptr_t ips[256];
  gboolean truncated = FALSE;
  int64_t t0, t1, t2, t3;
  guint native, merged, js = 0;

  t0 = lw_clock_now_ns ();
  if (lw_capture_take_thread (slot, bench.tid, 0, 0, 0, bench.snap, 50 * LW_NSEC_PER_MSEC) != LW_CAPTURE_OK)
    return;
  t1 = lw_clock_now_ns ();
  native = lw_unwinder_walk (bench.unwinder, bench.snap, ips, 128, &truncated);
  t2 = lw_clock_now_ns ();
  merged = lw_gjs_merge (bench.tid, bench.snap->lang, bench.snap->lang_len, ips,
                         lw_unwinder_stack_pointers (bench.unwinder), native,
                         G_N_ELEMENTS (ips), &truncated);
  t3 = lw_clock_now_ns ();
  for (guint i = 0; i < merged; i++)
    js += lw_gjs_is_frame (ips[i]);
  if (js < wanted_js)
    return;
  for (int k = 0; k < N_TIMES; k++)
    {
      int64_t ns = k == TIME_CAPTURE ? t1 - t0 : k == TIME_HOOK ? bench.snap->lang_ns : k == TIME_UNWIND ? t2 - t1
                   : k == TIME_MERGE ? t3 - t2 : t3 - t0;
      double us = (double) ns / 1000.0;

      g_array_append_val (series->times[k], us);
    }
  series->native = native;
  series->merged = merged;
  series->js = js;
  series->deep += js >= BENCH_DEPTH;
}

/* The sampler thread. */
static gpointer
bench_sampler (gpointer data)
{
  int64_t native_start = 0;
  BenchPhase phase;

  while ((phase = atomic_load (&bench.phase)) != PHASE_DONE)
    {
      if (phase == PHASE_JS)
        bench_take (bench.js, 1);
      else if (phase == PHASE_JIT)
        bench_take (bench.jit, 1);
      else if (phase == PHASE_NATIVE)
        {
          if (native_start == 0)
            native_start = lw_clock_now_ns ();
          bench_take (bench.native, 0);
          if (lw_clock_now_ns () - native_start > BENCH_SPIN_MS * LW_NSEC_PER_MSEC)
            atomic_store (&bench.stop, 1);
        }
      g_usleep (BENCH_GAP_US);
    }
  return NULL;
}

/* The main thread. */
static __attribute__ ((noipa)) int
bench_spin (int depth)
{
  int below;

  if (depth <= 1)
    {
      while (!atomic_load_explicit (&bench.stop, memory_order_relaxed))
        ;
      return 1;
    }
  below = bench_spin (depth - 1);
  __asm__ volatile ("" ::: "memory");
  return below + 1;
}

static Series *
series_new (void)
{
  Series *series = g_new0 (Series, 1);

  for (int k = 0; k < N_TIMES; k++)
    series->times[k] = g_array_new (FALSE, FALSE, sizeof (double));
  return series;
}

static void
series_print (const char *name, Series *series)
{
  printf ("%-8s %4u samples:", name, series->times[TIME_WHOLE]->len);
  for (int k = 0; k < N_TIMES; k++)
    printf (" %s %.1f", time_names[k], bench_median (series->times[k]));
  printf (" µs (medians); last sample %u native frames, %u after the merge, %u JavaScript;"
          " %u samples with %d or more\n",
          series->native, series->merged, series->js, series->deep, BENCH_DEPTH);
}

int
main (int argc, char **argv)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  void *gjs = dlopen ("libgjs.so.0", RTLD_NOW | RTLD_GLOBAL);
  void *(*context_new) (void);
  gboolean (*eval) (void *, const char *, gssize, const char *, int *, GError **);
  g_autofree char *script = NULL;
  g_autoptr(GError) error = NULL;
  GThread *sampler;
  void *context;
  int status = 0;

  if (gjs == NULL)
    {
      printf ("libgjs.so.0 is not installed (package gjs): no GJS sample to time\n");
      return 0;
    }
  context_new = (void *(*) (void)) dlsym (gjs, "gjs_context_new");
  eval = (gboolean (*) (void *, const char *, gssize, const char *, int *, GError **)) dlsym (gjs, "gjs_context_eval");
  g_assert_true (context_new != NULL && eval != NULL);
  context = context_new ();  /* made the current one */

  bench.tid = (pid_t) gettid ();
  bench.snap = lw_snapshot_new (256 * 1024);
  bench.unwinder = lw_unwinder_new ();
  bench.js = series_new ();
  bench.jit = series_new ();
  bench.native = series_new ();
  lagwatch_config_set_output (config, "none", NULL);
  /* Attached on the JavaScript thread with GJS's context made: the
   * profiling stack is on from here. */
  bench.watch = lagwatch_attach_with_config (NULL, config);
  lagwatch_pause (bench.watch);  /* its capture slot is the sampler's */
  while (g_main_context_iteration (NULL, FALSE))
    ;

  sampler = g_thread_new ("bench-sampler", bench_sampler, NULL);
  script = g_strdup_printf (
    "const GLib = imports.gi.GLib;\n"
    "function benchSpin(depth, end) {\n"
    "    if (depth > 1)\n"
    "        return benchSpin(depth - 1, end) + 1;\n"
    "    let x = 0;\n"
    "    while (GLib.get_monotonic_time() < end)\n"
    "        x += Math.sqrt(x + 1);\n"
    "    return x > 0 ? 1 : 0;\n"
    "}\n"
    "benchSpin(%d, GLib.get_monotonic_time() + %d * 1000);\n"
    "globalThis.benchSpin = benchSpin;\n"  /* each script has its own scope */
    "globalThis.benchNow = () => GLib.get_monotonic_time();\n", BENCH_DEPTH, BENCH_SPIN_MS);
  atomic_store (&bench.phase, PHASE_JS);
  if (!eval (context, script, -1, "bench-gjs-sample.js", &status, NULL))
    g_error ("the JavaScript spin failed");
  atomic_store (&bench.phase, PHASE_NATIVE);
  bench_spin (BENCH_DEPTH);
  atomic_store (&bench.phase, PHASE_WARM);
  g_free (script);
  script = g_strdup_printf ("for (let i = 0; i < 3000; i++)\n    benchSpin(%d, 0);\n", BENCH_DEPTH);
  if (!eval (context, script, -1, "bench-gjs-warm.js", &status, &error))
    g_error ("the JavaScript warm-up failed: %s", error->message);
  atomic_store (&bench.phase, PHASE_JIT);
  g_free (script);
  script = g_strdup_printf ("benchSpin(%d, benchNow() + %d * 1000);\n", BENCH_DEPTH, BENCH_SPIN_MS);
  if (!eval (context, script, -1, "bench-gjs-compiled.js", &status, &error))
    g_error ("the compiled JavaScript spin failed: %s", error->message);
  atomic_store (&bench.phase, PHASE_DONE);
  g_thread_join (sampler);

  series_print ("GJS", bench.js);
  series_print ("native", bench.native);
  series_print ("compiled", bench.jit);
  lagwatch_detach (bench.watch);
  return bench.js->times[TIME_WHOLE]->len > 0 && bench.native->times[TIME_WHOLE]->len > 0
         && bench.jit->times[TIME_WHOLE]->len > 0 ? 0 : 1;
}
