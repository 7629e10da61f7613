/* lw-python-stack.c: a thread's Python frames, read from the
 * interpreter's memory (lw-python.h says what and why)
 *
 * The thread's PyThreadState is found in the interpreters' lists (then
 * kept), its frames followed from the current one through the page
 * windows of its frame stack, and the first bytes of the stack's distinct
 * code objects read together. What one sample read is read again at the
 * next in one system call (lw_python_prefetch()): a stuck thread keeps
 * its frames and code, and every byte is checked as if read afresh.
 */
#include "lw-python-private.h"

#include <string.h>
#include <sys/uio.h>

#include "lw-capture-core.h"
#include "lw-load.h"

/* Bounds: every loop over interpreter memory ends. */
#define LW_PY_MAX_INTERPRETERS 64
#define LW_PY_MAX_THREADS      1024

/* Any thread. The bytes of a PyThreadState read. */
static gsize
lw_python_tstate_head (const LwPyOffsets *o)
{
  gsize last = MAX (o->tstate_native_thread_id, MAX (o->tstate_frame, o->tstate_next));

  return MAX (last, o->has_base_frame ? o->tstate_base_frame : 0) + sizeof (uintptr_t);
}

/* Watcher thread. The PyThreadState of thread @tid, or 0; in *@frame_at,
 * its field tstate_frame (its _PyCFrame, or its current frame), and in
 * *@base_frame its base frame (3.15+; else 0).
 * @prefetched (nullable): the cached thread state's bytes, read already. */
static uintptr_t
lw_python_thread_state (LwPython *python, const LwPyInterpreter *interp, pid_t tid,
                        const guint8 *prefetched, uintptr_t *frame_at, uintptr_t *base_frame)
{
  const LwPyOffsets *o = interp->offsets;
  gsize head = lw_python_tstate_head (o);
  uintptr_t interp_state, tstate;
  guint8 block[LW_PY_TSTATE_READ];

  g_assert (head <= sizeof block);
  if (prefetched != NULL)
    memcpy (block, prefetched, head);
  if (python->tstate_tid == tid && (prefetched != NULL || lw_python_read (python->tstate, block, head))
      && lw_load_uptr (block, o->tstate_native_thread_id) == (uintptr_t) tid)
    {
      *frame_at = lw_load_uptr (block, o->tstate_frame);
      *base_frame = o->has_base_frame ? lw_load_uptr (block, o->tstate_base_frame) : 0;
      return python->tstate;
    }
  python->tstate_tid = 0;
  if (!lw_python_read_word (interp->runtime + o->runtime_interpreters_head, &interp_state))
    return 0;
  for (guint i = 0; interp_state != 0 && i < LW_PY_MAX_INTERPRETERS; i++)
    {
      if (!lw_python_read_word (interp_state + o->interp_threads_head, &tstate))
        return 0;
      for (guint j = 0; tstate != 0 && j < LW_PY_MAX_THREADS; j++)
        {
          if (!lw_python_read (tstate, block, head))
            return 0;
          if (lw_load_uptr (block, o->tstate_native_thread_id) == (uintptr_t) tid)
            {
              python->tstate_tid = tid;
              python->tstate = tstate;
              *frame_at = lw_load_uptr (block, o->tstate_frame);
              *base_frame = o->has_base_frame ? lw_load_uptr (block, o->tstate_base_frame) : 0;
              return tstate;
            }
          tstate = lw_load_uptr (block, o->tstate_next);
        }
      if (!lw_python_read_word (interp_state + o->interp_next, &interp_state))
        return 0;
    }
  return 0;
}

/* Any thread. Whether @window (@len bytes copied from @start) holds the
 * @size bytes at @addr. */
static gboolean
lw_python_window_has (uintptr_t start, gsize len, uintptr_t addr, gsize size)
{
  return addr >= start && addr - start <= len && len - (addr - start) >= size;
}

/* Watcher thread. Copies the @len bytes of the frame at @frame into
 * @block, through the two windows: the first holds the page of the
 * innermost frame (most of a thread's frames), the second the page last
 * missed (3.12+: an evaluation loop's shim frame, on the C stack). A miss
 * reads from the start of the frame's page to its end, a range readable
 * whenever the frame is. */
static gboolean
lw_python_frame_block (LwPython *python, uintptr_t frame, guint8 *block, gsize len)
{
  uintptr_t start;
  guint8 *window;

  if (lw_python_window_has (python->window_start, python->window_len, frame, len))
    {
      memcpy (block, python->window + (frame - python->window_start), len);
      return TRUE;
    }
  if (lw_python_window_has (python->window2_start, python->window2_len, frame, len))
    {
      memcpy (block, python->window2 + (frame - python->window2_start), len);
      return TRUE;
    }
  start = frame & ~(uintptr_t) (sizeof python->window - 1);
  if (frame + len - start > sizeof python->window)
    start = frame;
  window = python->window_len == 0 ? python->window : python->window2;
  if (!lw_python_read (start, window, frame + len - start))
    return FALSE;
  if (window == python->window)
    {
      python->window_start = start;
      python->window_len = frame + len - start;
    }
  else
    {
      python->window2_start = start;
      python->window2_len = frame + len - start;
    }
  memcpy (block, window + (frame - start), len);
  return TRUE;
}

/* Watcher thread. The first bytes of the stack's n_codes distinct code
 * objects (3.11: and of their cached names), in one system call (one per
 * object where that fails: one of them freed). */
static gboolean
lw_python_read_code_heads (LwPython *python, const LwPyInterpreter *interp)
{
  gsize len = interp->offsets->code_code_adaptive, total = 0;
  struct iovec local[2 * LW_PY_MAX_FRAMES], remote[2 * LW_PY_MAX_FRAMES];
  guint n = python->n_codes, k = 0;
  gboolean same = python->heads_fresh && n == python->n_spec;

  if (n == 0)
    return FALSE;
  for (guint i = 0; i < n && same; i++)
    same = python->stack_codes[i] == python->spec_codes[i];
  if (same)
    return TRUE;

  for (guint i = 0; i < n; i++)
    {
      local[k] = (struct iovec) { python->code_heads[i], len };
      remote[k++] = (struct iovec) { (void *) python->stack_codes[i], len };
      k += lw_python_name_iovec (python, interp, i, python->stack_codes[i], &local[k], &remote[k]);
    }
  for (guint i = 0; i < k; i++)
    total += local[i].iov_len;
  if (lw_core_read_memory (local, k, remote, k) == (ssize_t) total)
    return TRUE;
  for (guint i = 0; i < n; i++)
    {
      if (!lw_python_read (python->stack_codes[i], python->code_heads[i], len))
        return FALSE;
      /* A name gone: the entry is read afresh. */
      if (python->name_lens[i] > 0)
        {
          struct iovec one_local, one_remote;

          lw_python_name_iovec (python, interp, i, python->stack_codes[i], &one_local, &one_remote);
          if (!lw_python_read ((uintptr_t) one_remote.iov_base, python->names[i], python->name_lens[i]))
            python->name_lens[i] = 0;
        }
    }
  return TRUE;
}

/* Watcher thread. Lists the distinct code objects of the @n frames read
 * in python->codes, and each frame's among them. */
static void
lw_python_distinct_codes (LwPython *python, guint n)
{
  python->n_codes = 0;
  for (guint i = 0; i < n; i++)
    {
      LwPyFrameRead *read = &python->frames[i];
      guint k = 0;

      /* Mostly a hit among the last few: a recursion, a caller's callee. */
      while (k < python->n_codes && python->stack_codes[python->n_codes - 1 - k] != read->code)
        k++;
      if (k < python->n_codes)
        read->code_index = python->n_codes - 1 - k;
      else
        {
          read->code_index = python->n_codes;
          python->stack_codes[python->n_codes++] = read->code;
        }
    }
}

/* Watcher thread. Reads, in one system call, thread @tid's cached thread
 * state into @tstate_block and what the previous merge read (its
 * _PyCFrame's current frame into *@spec_frame, its innermost frame's page
 * into the window, its code objects' heads). FALSE when any part failed:
 * then nothing of it is used. */
static gboolean
lw_python_prefetch (LwPython *python, const LwPyInterpreter *interp, pid_t tid, guint8 *tstate_block,
                    uintptr_t *spec_frame)
{
  const LwPyOffsets *o = interp->offsets;
  struct iovec local[2 * LW_PY_MAX_FRAMES + 4], remote[2 * LW_PY_MAX_FRAMES + 4];
  gsize total = 0, len = o->code_code_adaptive;
  guint n = 0;

  if (python->tstate_tid != tid || python->n_spec == 0 || python->spec_window_len == 0
      || (o->has_cframe && python->spec_cframe == 0))
    return FALSE;
  local[n] = (struct iovec) { tstate_block, lw_python_tstate_head (o) };
  remote[n++] = (struct iovec) { (void *) python->tstate, lw_python_tstate_head (o) };
  if (o->has_cframe)
    {
      local[n] = (struct iovec) { spec_frame, sizeof *spec_frame };
      remote[n++] = (struct iovec) { (void *) (python->spec_cframe + o->cframe_current_frame), sizeof *spec_frame };
    }
  local[n] = (struct iovec) { python->window, python->spec_window_len };
  remote[n++] = (struct iovec) { (void *) python->spec_window_start, python->spec_window_len };
  if (python->spec_window2_len > 0)
    {
      local[n] = (struct iovec) { python->window2, python->spec_window2_len };
      remote[n++] = (struct iovec) { (void *) python->spec_window2_start, python->spec_window2_len };
    }
  for (guint i = 0; i < python->n_spec; i++)
    {
      local[n] = (struct iovec) { python->code_heads[i], len };
      remote[n++] = (struct iovec) { (void *) python->spec_codes[i], len };
      n += lw_python_name_iovec (python, interp, i, python->spec_codes[i], &local[n], &remote[n]);
    }
  for (guint i = 0; i < n; i++)
    total += local[i].iov_len;
  if (lw_core_read_memory (local, n, remote, n) != (ssize_t) total)
    return FALSE;
  python->window_start = python->spec_window_start;
  python->window_len = python->spec_window_len;
  python->window2_start = python->spec_window2_start;
  python->window2_len = python->spec_window2_len;
  python->heads_fresh = TRUE;
  return TRUE;
}

/* Watcher thread. Ends lw_python_read_frames() on what could not be
 * read consistently (a read that failed, an object that did not check,
 * a chain over its bound): the sample keeps its native frames, and says
 * why (lw_python_last_missing()). */
static guint
lw_python_unreadable (LwPython *python)
{
  python->missing = LW_LANG_MISSING_UNREADABLE;
  return 0;
}

/* Watcher thread. Reads thread @tid's Python frames, innermost first,
 * into python->frames; returns how many (0 on any inconsistency, which
 * python->missing then names, or when there were none). */
guint
lw_python_read_frames (LwPython *python, const LwPyInterpreter *interp, pid_t tid)
{
  const LwPyOffsets *o = interp->offsets;
  uintptr_t frame_at = 0, frame = 0, spec_frame = 0, base_frame = 0;
  guint8 tstate_block[LW_PY_TSTATE_READ];
  gboolean prefetched;
  guint n = 0;

  python->merges++;
  python->missing = LW_LANG_MISSING_NONE;
  python->window_len = 0;
  python->window2_len = 0;
  python->heads_fresh = FALSE;
  prefetched = lw_python_prefetch (python, interp, tid, tstate_block, &spec_frame);
  if (lw_python_thread_state (python, interp, tid, prefetched ? tstate_block : NULL, &frame_at,
                              &base_frame) == 0)
    return 0;  /* not a Python thread (or its state not found): nothing missing */
  if (!o->has_cframe)
    frame = frame_at;
  else if (prefetched && frame_at == python->spec_cframe)
    frame = spec_frame;
  else if (!lw_python_read_word (frame_at + o->cframe_current_frame, &frame))
    return lw_python_unreadable (python);
  python->spec_cframe = o->has_cframe ? frame_at : 0;
  /* Shims count against the bound too: every chain read ends. */
  for (guint records = 0; frame != 0; records++)
    {
      guint8 block[LW_PY_FRAME_READ];
      LwPyFrameRecord record;
      uintptr_t at;

      g_assert (o->frame_read <= sizeof block);
      if (records == 2 * LW_PY_MAX_FRAMES || !lw_python_frame_block (python, frame, block, o->frame_read))
        return lw_python_unreadable (python);
      if (records == 0)
        {
          gboolean first = lw_python_window_has (python->window_start, python->window_len, frame,
                                                 o->frame_read);

          python->spec_window_start = first ? python->window_start : python->window2_start;
          python->spec_window_len = first ? python->window_len : python->window2_len;
        }
      lw_python_layout_frame (o, block, &record);
      at = frame;
      frame = record.previous;
      if (record.kind == LW_PY_FRAME_BAD)
        return lw_python_unreadable (python);
      if (record.kind == LW_PY_FRAME_SHIM)
        {
          /* 3.15+: the thread's base frame, the last of the chain: no
           * loop runs it. */
          if (base_frame != 0 && at == base_frame && frame == 0)
            continue;
          /* The shim below the first frame an evaluation loop ran; one
           * with no frame above it matches no loop. */
          if (n == 0 || python->frames[n - 1].is_entry)
            return lw_python_unreadable (python);
          python->frames[n - 1].is_entry = TRUE;
          python->frames[n - 1].entry_at = at;
          continue;
        }
      if (n == LW_PY_MAX_FRAMES)
        return lw_python_unreadable (python);
      python->frames[n].code = record.code;
      python->frames[n].instr = record.instr;
      python->frames[n].is_entry = record.kind == LW_PY_FRAME_CODE_ENTRY;
      python->frames[n].entry_at = 0;
      n++;
    }
  python->spec_window2_start = python->window2_start;
  python->spec_window2_len = python->window2_len;
  g_assert (o->code_code_adaptive <= LW_PY_CODE_HEAD);
  lw_python_distinct_codes (python, n);
  if (n == 0 || !lw_python_read_code_heads (python, interp))
    {
      python->n_spec = 0;
      /* No frame: the thread ran no Python code (a C call out of the
       * interpreter finalizing, say), nothing missing. */
      return n == 0 ? 0 : lw_python_unreadable (python);
    }
  memcpy (python->spec_codes, python->stack_codes, python->n_codes * sizeof *python->stack_codes);
  python->n_spec = python->n_codes;
  for (guint i = 0; i < n; i++)
    {
      LwPyFrameRead *read = &python->frames[i];
      LwPyCode *code = lw_python_code (python, interp, read->code, python->code_heads[read->code_index],
                                       python->names[read->code_index],
                                       python->name_lens[read->code_index]);
      gssize index;

      if (code == NULL)
        return lw_python_unreadable (python);
      /* The code unit (2 bytes) executing: prev_instr (3.11, 3.12) is
       * one before the first when the frame has not started. */
      index = ((gssize) read->instr - (gssize) (read->code + o->code_code_adaptive)) / 2;
      if (index < -1 || index >= code->n_units)
        return lw_python_unreadable (python);
      read->tag = lw_python_code_tag (code, index);
      if (read->tag == 0)
        return lw_python_unreadable (python);
    }
  return n;
}
