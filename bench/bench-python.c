/* bench-python.c: the cost of one sample of a Python stack
 *
 * A module that bench-python.py loads into /usr/bin/python3 through ctypes
 * (so it runs beside a real CPython 3.11): lw_bench_python_sample() takes
 * samples of the thread TID, which spins in Python some twenty calls deep,
 * as the watcher does at each sample: signal + stack copy, unwind, then
 * the read of the Python frames merged into the stack (lw_python_merge),
 * each timed apart. Python releases the GIL around ctypes calls, so the
 * spinning thread holds it meanwhile, as a stuck loop thread does.
 */
#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-python.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

static double
median (GArray *values)
{
  g_array_sort (values, compare_doubles);
  return g_array_index (values, double, values->len / 2);
}

/* Any thread but @tid's. Fills @medians_us with the medians of signal +
 * copy, unwind and Python read + merge, and @frames with the native frames
 * and the frames after the merge, of the last sample; returns the Python
 * frames of that sample (0: none was read), or -1 when no capture
 * succeeded. */
__attribute__ ((visibility ("default"))) int lw_bench_python_sample (int     tid,
                                                                     int     samples,
                                                                     double *medians_us,
                                                                     int    *frames);

int
lw_bench_python_sample (int tid, int samples, double *medians_us, int *frames)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  LwSnapshot *snap = lw_snapshot_new (128 * 1024);
  LwUnwinder *unwinder = lw_unwinder_new ();
  LwPython *python = lw_python_new ();
  GArray *capture_us = g_array_new (FALSE, FALSE, sizeof (double));
  GArray *unwind_us = g_array_new (FALSE, FALSE, sizeof (double));
  GArray *merge_us = g_array_new (FALSE, FALSE, sizeof (double));
  uintptr_t ips[128];
  int python_frames = -1;
  guint native = 0, merged = 0;
  LagWatch *watch;

  lagwatch_config_set_output (config, "none", NULL);
  watch = lagwatch_attach_with_config (context, config);
  /* Its watcher paused, the watch's slot takes our captures. */
  lagwatch_pause (watch);
  for (int i = 0; i < samples; i++)
    {
      gboolean truncated;
      int64_t t0 = lw_clock_now_ns (), t1, t2, t3;
      double value;

      if (lw_capture_take_thread (watch->slot, tid, 0, 0, 0, snap, 50 * LW_NSEC_PER_MSEC) != LW_CAPTURE_OK)
        continue;
      t1 = lw_clock_now_ns ();
      native = lw_unwinder_walk (unwinder, snap, ips, G_N_ELEMENTS (ips), &truncated);
      t2 = lw_clock_now_ns ();
      merged = lw_python_merge (python, tid, ips, native, G_N_ELEMENTS (ips), &truncated);
      t3 = lw_clock_now_ns ();
      python_frames = 0;
      for (guint j = 0; j < merged; j++)
        python_frames += lw_python_is_frame (ips[j]);
      value = (double) (t1 - t0) / 1000.0;
      g_array_append_val (capture_us, value);
      value = (double) (t2 - t1) / 1000.0;
      g_array_append_val (unwind_us, value);
      value = (double) (t3 - t2) / 1000.0;
      g_array_append_val (merge_us, value);
    }
  if (capture_us->len > 0)
    {
      medians_us[0] = median (capture_us);
      medians_us[1] = median (unwind_us);
      medians_us[2] = median (merge_us);
      frames[0] = (int) native;
      frames[1] = (int) merged;
    }
  lagwatch_detach (watch);
  g_main_context_unref (context);
  lw_python_free (python);
  lw_unwinder_free (unwinder);
  lw_snapshot_free (snap);
  g_array_unref (capture_us);
  g_array_unref (unwind_us);
  g_array_unref (merge_us);
  return python_frames;
}
