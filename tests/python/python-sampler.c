/* python-sampler.c: samples a thread of the Python process it is loaded in
 *
 * Loaded with ctypes by check-churn.py into /usr/bin/python3. Takes
 * @samples stacks of thread @tid as the watcher does (signal + copy,
 * unwind, Python frames merged) and writes every Python frame it got, one
 * "qualname\tfile\tline" line each, into @out; check-reuse.py keeps one
 * reader (and its cache of code objects) from call to call while code
 * objects are freed and others made at their addresses. check-offsets.py loads it
 * into any CPython for lw_test_python_layout(): the layout lagwatch reads
 * that interpreter with.
 */
#include <dlfcn.h>
#include <string.h>

#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-lang-frames.h"
#include "lw-python.h"
#include "lw-python-layout.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

__attribute__ ((visibility ("default"))) int lw_test_python_sample (int tid, int samples, char *out, int size);
__attribute__ ((visibility ("default"))) int lw_test_python_sample_kept (int tid, int samples, char *out,
                                                                         int size);
__attribute__ ((visibility ("default"))) void lw_test_python_sample_kept_free (void);

/* The reader lw_test_python_sample_kept() keeps from call to call. */
static LwPython *kept_python;

/* Any thread but @tid's. Takes @samples samples of thread @tid with
 * @python, as the watcher does, and writes their Python frames into @out.
 * Returns how many samples held Python frames, or -1 when @out was too
 * small. */
static int
sample_with (LwPython *python, int tid, int samples, char *out, int size)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  LwSnapshot *snap = lw_snapshot_new (128 * 1024);
  LwUnwinder *unwinder = lw_unwinder_new ();
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
  lw_unwinder_free (unwinder);
  lw_snapshot_free (snap);
  if (frames->len + 1 > (gsize) size)
    with_python = -1;
  else
    memcpy (out, frames->str, frames->len + 1);
  g_string_free (frames, TRUE);
  return with_python;
}

/* Any thread but @tid's. sample_with() a reader of its own. */
int
lw_test_python_sample (int tid, int samples, char *out, int size)
{
  LwPython *python = lw_python_new ();
  int with_python = sample_with (python, tid, samples, out, size);

  lw_python_free (python);
  return with_python;
}

/* One thread at a time, never @tid's. sample_with() the reader kept from
 * the previous call (its cache of code objects with it), until
 * lw_test_python_sample_kept_free(). */
int
lw_test_python_sample_kept (int tid, int samples, char *out, int size)
{
  if (kept_python == NULL)
    kept_python = lw_python_new ();
  return sample_with (kept_python, tid, samples, out, size);
}

/* The thread that called lw_test_python_sample_kept(). */
void
lw_test_python_sample_kept_free (void)
{
  g_clear_pointer (&kept_python, lw_python_free);
}

__attribute__ ((visibility ("default"))) int lw_test_python_capture (int tid);
__attribute__ ((visibility ("default"))) int lw_test_python_merge_captured (char *why, int size);

/* One stack of a thread, copied and walked by lw_test_python_capture(),
 * merged with its Python frames later by lw_test_python_merge_captured(). */
static struct
{
  pid_t     tid;
  uintptr_t ips[256];
  uintptr_t sps[256];
  guint     n;
  gboolean  truncated;
} captured;

/* Any thread but @tid's. Copies and walks thread @tid's stack, as the
 * watcher does before it reads the Python frames; keeps it for
 * lw_test_python_merge_captured(). Returns its native frames, 0 when the
 * capture failed. */
int
lw_test_python_capture (int tid)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  LwSnapshot *snap = lw_snapshot_new (128 * 1024);
  LwUnwinder *unwinder = lw_unwinder_new ();
  LagWatch *watch;

  lagwatch_config_set_output (config, "none", NULL);
  watch = lagwatch_attach_with_config (context, config);
  lagwatch_pause (watch);
  captured.n = 0;
  captured.tid = tid;
  if (lw_capture_take_thread (watch->slot, tid, 0, 0, 0, snap, 50 * LW_NSEC_PER_MSEC) == LW_CAPTURE_OK)
    {
      captured.n = lw_unwinder_walk (unwinder, snap, captured.ips, G_N_ELEMENTS (captured.ips),
                                     &captured.truncated);
      memcpy (captured.sps, lw_unwinder_stack_pointers (unwinder), captured.n * sizeof (uintptr_t));
    }
  lagwatch_detach (watch);
  g_main_context_unref (context);
  lw_unwinder_free (unwinder);
  lw_snapshot_free (snap);
  return (int) captured.n;
}

/* The thread that called lw_test_python_capture(). Reads the captured
 * thread's Python frames now and merges them into the stack captured, as
 * the watcher does; writes into @why the reason lw_python_last_missing()
 * gives ("moved", "unreadable", or "none"). Returns the Python frames the
 * merged stack holds. */
int
lw_test_python_merge_captured (char *why, int size)
{
  LwPython *python = lw_python_new ();
  uintptr_t ips[256];
  gboolean truncated = captured.truncated;
  const char *name;
  guint n;
  int with_python = 0;

  memcpy (ips, captured.ips, captured.n * sizeof (uintptr_t));
  n = lw_python_merge (python, captured.tid, captured.sps, ips, captured.n, G_N_ELEMENTS (ips), &truncated);
  for (guint i = 0; i < n; i++)
    with_python += lw_python_is_frame (ips[i]);
  name = lw_lang_missing_name (lw_python_last_missing (python));
  g_strlcpy (why, name != NULL ? name : "none", size);
  lw_python_free (python);
  return with_python;
}

__attribute__ ((visibility ("default"))) int lw_test_python_layout (char *out, int size);

/* The running interpreter's thread, normal context. Writes into @out the
 * layout lagwatch reads this interpreter with, one "name value" line per
 * offset, found as lw-python.c finds it (its _Py_DebugOffsets, else its
 * version's table). Returns 1; 0 with the reason in @out when lagwatch
 * would not read it; -1 when @out is too small. */
int
lw_test_python_layout (char *out, int size)
{
  const guint32 *version = dlsym (RTLD_DEFAULT, "Py_Version");
  const guint8 *runtime = dlsym (RTLD_DEFAULT, "_PyRuntime");
  g_autoptr(GString) text = g_string_new (NULL);
  LwPyOffsets layout;
  char why[160];
  int status = 1;

  if (version == NULL || runtime == NULL)
    g_string_assign (text, "no Py_Version: a CPython older than 3.11");
  else
    switch (lw_python_layout_from_debug_offsets (runtime, lw_python_layout_debug_offsets_size (), *version,
                                                 &layout, why, sizeof why))
      {
      case LW_PY_LAYOUT_OK:
        break;
      case LW_PY_LAYOUT_NOT_PUBLISHED:
        if (lw_python_layout_table (*version >> 16) != NULL)
          {
            layout = *lw_python_layout_table (*version >> 16);
            break;
          }
        g_string_printf (text, "no table for CPython %u.%u", *version >> 24, (*version >> 16) & 0xff);
        status = 0;
        break;
      default:
        g_string_assign (text, why);
        status = 0;
        break;
      }
  if (version == NULL || runtime == NULL)
    status = 0;
  if (status == 1)
    {
#define LW_FIELD(name) g_string_append_printf (text, #name " %" G_GSIZE_FORMAT "\n", (gsize) layout.name)
      LW_FIELD (version);
      LW_FIELD (runtime_interpreters_head);
      LW_FIELD (interp_next);
      LW_FIELD (interp_threads_head);
      LW_FIELD (tstate_next);
      LW_FIELD (tstate_native_thread_id);
      LW_FIELD (tstate_frame);
      LW_FIELD (tstate_base_frame);
      LW_FIELD (has_base_frame);
      LW_FIELD (has_cframe);
      LW_FIELD (cframe_current_frame);
      LW_FIELD (frame_code);
      LW_FIELD (code_tagged);
      LW_FIELD (frame_previous);
      LW_FIELD (frame_instr);
      LW_FIELD (entry);
      LW_FIELD (frame_is_entry);
      LW_FIELD (frame_owner);
      LW_FIELD (frame_read);
      LW_FIELD (object_type);
      LW_FIELD (var_size);
      LW_FIELD (code_firstlineno);
      LW_FIELD (code_filename);
      LW_FIELD (code_qualname);
      LW_FIELD (code_linetable);
      LW_FIELD (code_code_adaptive);
      LW_FIELD (unicode_length);
      LW_FIELD (unicode_state);
      LW_FIELD (ascii_size);
      LW_FIELD (compact_utf8_length);
      LW_FIELD (compact_utf8);
      LW_FIELD (compact_size);
      LW_FIELD (bytes_data);
      LW_FIELD (function_qualname);
      LW_FIELD (method_function);
#undef LW_FIELD
    }
  if (text->len + 1 > (gsize) size)
    return -1;
  memcpy (out, text->str, text->len + 1);
  return status;
}
