/* python-sampler.c: samples a thread of the Python process it is loaded in
 *
 * Loaded with ctypes by check-churn.py into /usr/bin/python3. Takes
 * @samples stacks of thread @tid as the watcher does (signal + copy,
 * unwind, Python frames merged) and writes every Python frame it got, one
 * "qualname\tfile\tline" line each, into @out.
 */
#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-lang-frames.h"
#include "lw-python.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

__attribute__ ((visibility ("default"))) int lw_test_python_sample (int tid, int samples, char *out, int size);

/* Any thread but @tid's. Returns how many samples held Python frames, or
 * -1 when @out was too small. */
int
lw_test_python_sample (int tid, int samples, char *out, int size)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  LwSnapshot *snap = lw_snapshot_new (128 * 1024);
  LwUnwinder *unwinder = lw_unwinder_new ();
  LwPython *python = lw_python_new ();
  GString *frames = g_string_new (NULL);
  uintptr_t ips[256];
  int with_python = 0;
  LagWatch *watch;

  lagwatch_config_set_output (config, "none", NULL);
  watch = lagwatch_attach_with_config (context, config);
  lagwatch_pause (watch);
  for (int i = 0; i < samples; i++)
    {
      gboolean truncated, seen = FALSE;
      guint n;

      if (lw_capture_take_thread (watch->slot, tid, 0, 0, 0, snap, 50 * LW_NSEC_PER_MSEC) != LW_CAPTURE_OK)
        continue;
      n = lw_unwinder_walk (unwinder, snap, ips, G_N_ELEMENTS (ips), &truncated);
      n = lw_python_merge (python, tid, lw_unwinder_stack_pointers (unwinder), ips, n, G_N_ELEMENTS (ips),
                           &truncated);
      for (guint j = 0; j < n; j++)
        {
          LwFrame frame = { 0 };

          if (!lw_lang_frame_resolve (ips[j], &frame))
            continue;
          g_string_append_printf (frames, "%s\t%s\t%u\n", frame.symbol, frame.file, frame.line);
          lw_frame_clear (&frame);
          seen = TRUE;
        }
      with_python += seen;
    }
  lagwatch_detach (watch);
  g_main_context_unref (context);
  lw_python_free (python);
  lw_unwinder_free (unwinder);
  lw_snapshot_free (snap);
  if (frames->len + 1 > (gsize) size)
    with_python = -1;
  else
    memcpy (out, frames->str, frames->len + 1);
  g_string_free (frames, TRUE);
  return with_python;
}
