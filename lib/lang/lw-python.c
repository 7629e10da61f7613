/* lw-python.c: CPython frames placed among a stack's native frames
 * (lw-python.h says what and why)
 *
 * The frames read (lw-python-stack.c), each named (lw-python-code.c), go
 * in place of the evaluation-loop frame that ran them: found by where
 * its shim frame lies on the stack (3.12+), or by the loop's symbol.
 */
#include "lw-python.h"

#include <string.h>

#include "lw-lang-frames.h"
#include "lw-python-private.h"

/* Watcher thread. */
LwPython *
lw_python_new (void)
{
  return g_new0 (LwPython, 1);
}

/* Watcher thread. */
void
lw_python_free (LwPython *python)
{
  if (python == NULL)
    return;
  for (guint i = 0; i < LW_PY_CODE_CACHE; i++)
    lw_python_code_clear (&python->codes[i]);
  g_free (python->scratch);
  g_free (python->loop_of);
  g_free (python);
}

/* Any thread. Whether @ip, frame @index of a stack, is in the
 * evaluation loop. */
static gboolean
lw_python_is_eval (const LwPyInterpreter *interp, uintptr_t ip, guint index)
{
  /* A return address may sit one past a call that ends the function. */
  uintptr_t pc = index > 0 ? ip - 1 : ip;

  return pc >= interp->eval_lo && pc < interp->eval_hi;
}

/* Watcher thread. The evaluation-loop frame of each entry frame, by the
 * symbol: one loop frame per entry frame, innermost first. FALSE when the
 * counts differ (the thread returned or called since its stack was
 * copied, or the copy was cut short): pairing them would misname frames. */
static gboolean
lw_python_place_by_symbol (LwPython *python, const LwPyInterpreter *interp, const uintptr_t *ips,
                           guint n_ips, guint n_frames, gboolean truncated, gint *loop_of)
{
  guint n_eval = 0, n_entries = 0, next = 0;

  for (guint i = 0; i < n_ips; i++)
    n_eval += lw_python_is_eval (interp, ips[i], i);
  for (guint i = 0; i < n_frames; i++)
    n_entries += python->frames[i].is_entry;
  if (n_eval == 0 || (n_entries != n_eval && !(truncated && n_eval < n_entries)))
    return FALSE;
  for (guint i = 0; i < n_ips; i++)
    loop_of[i] = lw_python_is_eval (interp, ips[i], i) ? (gint) next++ : -1;
  return TRUE;
}

/* Watcher thread. The evaluation-loop frame of each entry frame, by the
 * stack (3.12+): the shim frame below an entry frame is a local variable
 * of the loop that ran it, so it lies inside that native frame's stack,
 * [sps[k], sps[k + 1]). Needs no symbol: a loop whose code the linker
 * split (Debian's 3.14 exports only the first 1184 bytes of it as
 * _PyEval_EvalFrameDefault) is found all the same. FALSE when a shim lies
 * in no frame, or two in one, or out of order. */
static gboolean
lw_python_place_by_stack (LwPython *python, const uintptr_t *sps, guint n_ips, guint n_frames,
                          gboolean truncated, gint *loop_of)
{
  guint k = 0, next = 0;

  for (guint i = 0; i < n_ips; i++)
    loop_of[i] = -1;
  for (guint i = 0; i < n_frames; i++)
    {
      uintptr_t at = python->frames[i].entry_at;

      if (!python->frames[i].is_entry)
        continue;
      if (at == 0)
        return FALSE;
      /* The outermost frame copied owns everything above it only when
       * the walk reached the end of the stack. */
      while (k < n_ips && !(sps[k] != 0 && sps[k] <= at && (k + 1 < n_ips ? at < sps[k + 1] : !truncated)))
        k++;
      if (k == n_ips)
        /* Beyond the copy: its outer frames were cut, so are these. */
        return truncated && next > 0 && n_ips > 0 && sps[n_ips - 1] != 0 && at >= sps[n_ips - 1];
      loop_of[k++] = (gint) next++;
    }
  return next > 0;
}

/* Watcher thread. */
guint
lw_python_merge (LwPython *python, pid_t tid, const uintptr_t *sps, uintptr_t *ips, guint n_ips,
                 guint max_ips, gboolean *truncated)
{
  const LwPyInterpreter *interp;
  guint n_frames, out = 0, next = 0;
  gint *loop_of;

  python->missing = LW_LANG_MISSING_NONE;
  if (n_ips == 0 || (interp = lw_python_interpreter ()) == NULL)
    return n_ips;
  /* Cheap first: a stack with no evaluation loop (by its symbol, or, to
   * be placed by the stack, no frame in the interpreter's code at all). */
  {
    gboolean may_run_python = FALSE;

    for (guint i = 0; i < n_ips && !may_run_python; i++)
      may_run_python = interp->offsets->entry == LW_PY_ENTRY_SHIM && sps != NULL
                       ? ips[i] >= interp->text_lo && ips[i] < interp->text_hi
                       : lw_python_is_eval (interp, ips[i], i);
    if (!may_run_python)
      return n_ips;
  }
  n_frames = lw_python_read_frames (python, interp, tid);
  if (n_frames == 0)
    return n_ips;
  if (!python->frames[n_frames - 1].is_entry)
    {
      python->missing = LW_LANG_MISSING_UNREADABLE;
      return n_ips;
    }

  if (python->scratch_len < MAX (max_ips, n_ips))
    {
      python->scratch = g_renew (uintptr_t, python->scratch, MAX (max_ips, n_ips));
      python->loop_of = g_renew (gint, python->loop_of, MAX (max_ips, n_ips));
      python->scratch_len = MAX (max_ips, n_ips);
    }
  loop_of = python->loop_of;
  if (!(interp->offsets->entry == LW_PY_ENTRY_SHIM && sps != NULL
        && lw_python_place_by_stack (python, sps, n_ips, n_frames, *truncated, loop_of))
      && !lw_python_place_by_symbol (python, interp, ips, n_ips, n_frames, *truncated, loop_of))
    {
      /* Read whole, but not the frames the copied stack was running. */
      python->missing = LW_LANG_MISSING_MOVED;
      return n_ips;
    }

  for (guint i = 0; i < n_ips && out < max_ips; i++)
    {
      if (loop_of[i] < 0)
        {
          python->scratch[out++] = ips[i];
          continue;
        }
      do
        {
          if (out == max_ips)
            break;
          python->scratch[out++] = python->frames[next].tag;
        }
      while (!python->frames[next++].is_entry);
    }
  if (out == max_ips)
    *truncated = TRUE;
  memcpy (ips, python->scratch, out * sizeof *ips);
  return out;
}

LwLangMissing
lw_python_last_missing (LwPython *python)
{
  return python->missing;
}

/* Any thread, normal context. */
gboolean
lw_python_is_frame (uintptr_t ip)
{
  return g_strcmp0 (lw_lang_frame_language (ip), LW_LANG_PYTHON) == 0;
}

/* PyGObject's PyGICClosure (gi/pygi-closure.h, 3.42) begins
 * { GICallableInfo *info; PyObject *function; ffi_closure *closure; ... },
 * and libffi's ffi_closure (3.4, x86-64: a 32-byte trampoline, then cif,
 * fun, user_data) points back at it: two checks that make a stray pointer
 * fail. */
#define LW_PYGI_FUNCTION          8
#define LW_PYGI_CLOSURE           16
#define LW_FFI_CLOSURE_USER_DATA  48

/* Watcher thread. */
gboolean
lw_python_callable_name (uintptr_t data, char *name, gsize size)
{
  const LwPyInterpreter *interp = lw_python_interpreter ();
  uintptr_t function, closure, back, type;
  g_autofree char *text = NULL;

  if (interp == NULL || size == 0
      || !lw_python_read_word (data + LW_PYGI_FUNCTION, &function)
      || !lw_python_read_word (data + LW_PYGI_CLOSURE, &closure)
      || !lw_python_read_word (closure + LW_FFI_CLOSURE_USER_DATA, &back) || back != data
      || !lw_python_read_word (function + interp->offsets->object_type, &type))
    return FALSE;
  if (type == interp->method_type)
    {
      if (!lw_python_read_word (function + interp->offsets->method_function, &function)
          || !lw_python_read_word (function + interp->offsets->object_type, &type))
        return FALSE;
    }
  if (type != interp->function_type
      || !lw_python_read_word (function + interp->offsets->function_qualname, &function)
      || (text = lw_python_read_string (interp, function)) == NULL)
    return FALSE;
  g_strlcpy (name, text, size);
  return TRUE;
}
