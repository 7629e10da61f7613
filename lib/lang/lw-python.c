/* lw-python.c: CPython frames from memory (lw-python.h says what and why) */
#include "lw-python.h"

#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lw-capture-core.h"
#include "lw-lang-frames.h"
#include "lw-modules.h"
#include "lw-python-private.h"

/* PyASCIIObject.state bits (3.11 to 3.14): interned:2, kind:3, compact:1, ascii:1, then
 * ready (3.11) or statically_allocated (3.12+). */
#define LW_PY_STATE_KIND(state) (((state) >> 2) & 7)
#define LW_PY_STATE_COMPACT (1u << 5)
#define LW_PY_STATE_ASCII   (1u << 6)

/* Bounds: every loop over interpreter memory ends. */
#define LW_PY_MAX_INTERPRETERS 64
#define LW_PY_MAX_THREADS      1024
#define LW_PY_MAX_FRAMES       256
#define LW_PY_MAX_STRING       512
#define LW_PY_MAX_LINETABLE    (64 * 1024)
#define LW_PY_CODE_CACHE       256

typedef struct
{
  uintptr_t code;           /* 0: empty slot */
  uintptr_t qualname_obj;
  uintptr_t filename_obj;
  uintptr_t linetable_obj;
  int       firstlineno;
  gssize    n_units;
  char     *qualname;
  char     *filename;
  guint8   *linetable;
  gsize     linetable_len;
  guint     last_line;      /* the line last interned for this code, and its tag */
  uintptr_t last_tag;
} LwPyCode;

typedef struct
{
  uintptr_t code;
  uintptr_t instr;
  uintptr_t tag;
  gboolean  is_entry;       /* the first frame its evaluation loop ran */
  uintptr_t entry_at;       /* 3.12+, an entry frame: its loop's shim frame, on the C stack */
} LwPyFrameRead;

struct _LwPython
{
  pid_t         tstate_tid;   /* the thread tstate was found for */
  uintptr_t     tstate;
  LwPyCode      codes[LW_PY_CODE_CACHE];
  LwPyFrameRead frames[LW_PY_MAX_FRAMES];
  guint8        code_heads[LW_PY_MAX_FRAMES][LW_PY_CODE_HEAD];
  /* A copy of the page of the thread's frame stack last read: CPython
   * keeps a thread's frames side by side, callers below callees, so one read
   * serves many frames. Valid for one merge. */
  guint8        window[4096];
  uintptr_t     window_start;
  gsize         window_len;
  guint8        window2[4096];
  uintptr_t     window2_start;
  gsize         window2_len;
  /* What the previous merge read, read again in one system call with the
   * thread state at the next: a stuck thread keeps its frames and code, so
   * in steady state a merge costs one process_vm_readv. All of it is
   * checked as if read afresh. */
  uintptr_t     spec_cframe;              /* 3.11, 3.12: where current_frame was */
  uintptr_t     spec_window_start;        /* the page of the innermost frame */
  gsize         spec_window_len;
  uintptr_t     spec_window2_start;       /* the page last missed */
  gsize         spec_window2_len;
  uintptr_t     spec_codes[LW_PY_MAX_FRAMES];
  guint         n_spec;                   /* code_heads hold spec_codes' heads when heads_fresh */
  gboolean      heads_fresh;
  uintptr_t    *scratch;       /* scratch_len of each */
  gint         *loop_of;       /* per native frame: the entry frame it ran, or -1 */
  guint         scratch_len;
};

static uintptr_t
lw_python_field (const guint8 *block, gsize offset)
{
  uintptr_t value;

  memcpy (&value, block + offset, sizeof value);
  return value;
}

LwPython *
lw_python_new (void)
{
  return g_new0 (LwPython, 1);
}

static void
lw_python_code_clear (LwPyCode *code)
{
  g_free (code->qualname);
  g_free (code->filename);
  g_free (code->linetable);
  memset (code, 0, sizeof *code);
}

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

/* Any thread, normal context. The UTF-8 form of @length code units of
 * @kind bytes each (1: Latin-1, 2: UCS-2, 4: UCS-4) at @data; NULL when a
 * read fails or a code point is not one. */
static char *
lw_python_read_units (uintptr_t data, gsize length, guint kind)
{
  g_autofree guint8 *units = g_malloc (length * kind);
  GString *text;

  if (!lw_python_read (data, units, length * kind))
    return NULL;
  text = g_string_sized_new (length * 2);
  for (gsize i = 0; i < length; i++)
    {
      guint32 unit = kind == 1 ? units[i] : kind == 2 ? ((guint16 *) units)[i] : ((guint32 *) units)[i];

      if (unit == 0 || !g_unichar_validate (unit))
        {
          g_string_free (text, TRUE);
          return NULL;
        }
      g_string_append_unichar (text, unit);
    }
  return g_string_free (text, FALSE);
}

/* Any thread, normal context. A str object's text, when it is compact (as
 * names and file names are): ASCII, its cached UTF-8 form, or its code
 * units converted. NULL for anything else, or when a read fails. */
static char *
lw_python_read_string (const LwPyInterpreter *interp, uintptr_t object)
{
  const LwPyOffsets *o = interp->offsets;
  guint8 head[LW_PY_STRING_HEAD];
  uintptr_t data, length;
  guint32 state;
  guint kind;
  char *text;

  g_assert (o->compact_utf8 + sizeof (uintptr_t) <= sizeof head);
  if (!lw_python_read (object, head, o->ascii_size)
      || lw_python_field (head, o->object_type) != interp->unicode_type)
    return NULL;
  length = lw_python_field (head, o->unicode_length);
  memcpy (&state, head + o->unicode_state, sizeof state);
  kind = LW_PY_STATE_KIND (state);
  if (!(state & LW_PY_STATE_COMPACT) || length == 0 || length > LW_PY_MAX_STRING)
    return NULL;
  if (state & LW_PY_STATE_ASCII)
    data = object + o->ascii_size;
  else
    {
      if (!lw_python_read (object + o->ascii_size, head + o->ascii_size,
                           o->compact_utf8 + sizeof (uintptr_t) - o->ascii_size))
        return NULL;
      data = lw_python_field (head, o->compact_utf8);
      if (data == 0)
        return kind == 1 || kind == 2 || kind == 4
               ? lw_python_read_units (object + o->compact_size, length, kind) : NULL;
      length = lw_python_field (head, o->compact_utf8_length);
      if (length == 0 || length > LW_PY_MAX_STRING * 4)
        return NULL;
    }
  text = g_malloc (length + 1);
  text[length] = '\0';
  if (!lw_python_read (data, text, length) || memchr (text, '\0', length) != NULL
      || !g_utf8_validate (text, (gssize) length, NULL))
    {
      g_free (text);
      return NULL;
    }
  return text;
}

/* Any thread, normal context. A bytes object's contents, at most
 * LW_PY_MAX_LINETABLE bytes. */
static guint8 *
lw_python_read_bytes (const LwPyInterpreter *interp, uintptr_t object, gsize *len)
{
  const LwPyOffsets *o = interp->offsets;
  guint8 head[LW_PY_BYTES_HEAD];
  uintptr_t size;
  guint8 *data;

  if (!lw_python_read (object, head, o->bytes_data)
      || lw_python_field (head, o->object_type) != interp->bytes_type)
    return NULL;
  size = lw_python_field (head, o->var_size);
  if (size == 0 || size > LW_PY_MAX_LINETABLE)
    return NULL;
  data = g_malloc (size);
  if (!lw_python_read (object + o->bytes_data, data, size))
    {
      g_free (data);
      return NULL;
    }
  *len = size;
  return data;
}

/* Watcher thread. The code object at @code_addr, whose first bytes are
 * @block: from the cache when its fields are unchanged, else its strings
 * and line table read afresh. NULL when it is not a code object or cannot
 * be read whole. */
static LwPyCode *
lw_python_code (LwPython *python, const LwPyInterpreter *interp, uintptr_t code_addr,
                const guint8 *block)
{
  const LwPyOffsets *o = interp->offsets;
  LwPyCode *slot = &python->codes[(code_addr >> 4) % LW_PY_CODE_CACHE];
  uintptr_t qualname_obj, filename_obj, linetable_obj;
  gssize n_units;
  int firstlineno;

  if (lw_python_field (block, o->object_type) != interp->code_type)
    return NULL;
  qualname_obj = lw_python_field (block, o->code_qualname);
  filename_obj = lw_python_field (block, o->code_filename);
  linetable_obj = lw_python_field (block, o->code_linetable);
  n_units = (gssize) lw_python_field (block, o->var_size);
  memcpy (&firstlineno, block + o->code_firstlineno, sizeof firstlineno);
  /* A code object freed and another made at its address: as long as it
   * refers to the same (immutable, referenced) objects, the cached copy
   * of their contents is still right. */
  if (slot->code == code_addr && slot->qualname_obj == qualname_obj
      && slot->filename_obj == filename_obj && slot->linetable_obj == linetable_obj
      && slot->firstlineno == firstlineno && slot->n_units == n_units)
    return slot;
  lw_python_code_clear (slot);
  slot->qualname = lw_python_read_string (interp, qualname_obj);
  slot->filename = lw_python_read_string (interp, filename_obj);
  slot->linetable = lw_python_read_bytes (interp, linetable_obj, &slot->linetable_len);
  if (slot->qualname == NULL || slot->filename == NULL || slot->linetable == NULL
      || n_units <= 0)
    {
      lw_python_code_clear (slot);
      return NULL;
    }
  slot->code = code_addr;
  slot->qualname_obj = qualname_obj;
  slot->filename_obj = filename_obj;
  slot->linetable_obj = linetable_obj;
  slot->firstlineno = firstlineno;
  slot->n_units = n_units;
  return slot;
}

/* Any thread. The bytes of a PyThreadState read. */
static gsize
lw_python_tstate_head (const LwPyOffsets *o)
{
  return MAX (o->tstate_native_thread_id, MAX (o->tstate_frame, o->tstate_next)) + sizeof (uintptr_t);
}

/* Watcher thread. The PyThreadState of thread @tid, or 0; in *@frame_at,
 * its field tstate_frame (its _PyCFrame, or its current frame).
 * @prefetched (nullable): the cached thread state's bytes, read already. */
static uintptr_t
lw_python_thread_state (LwPython *python, const LwPyInterpreter *interp, pid_t tid,
                        const guint8 *prefetched, uintptr_t *frame_at)
{
  const LwPyOffsets *o = interp->offsets;
  gsize head = lw_python_tstate_head (o);
  uintptr_t interp_state, tstate;
  guint8 block[LW_PY_TSTATE_READ];

  g_assert (head <= sizeof block);
  if (prefetched != NULL)
    memcpy (block, prefetched, head);
  if (python->tstate_tid == tid && (prefetched != NULL || lw_python_read (python->tstate, block, head))
      && lw_python_field (block, o->tstate_native_thread_id) == (uintptr_t) tid)
    {
      *frame_at = lw_python_field (block, o->tstate_frame);
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
          if (lw_python_field (block, o->tstate_native_thread_id) == (uintptr_t) tid)
            {
              python->tstate_tid = tid;
              python->tstate = tstate;
              *frame_at = lw_python_field (block, o->tstate_frame);
              return tstate;
            }
          tstate = lw_python_field (block, o->tstate_next);
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

/* Watcher thread. The first bytes of the code objects of @n frames, in
 * one system call (one per object where that fails: one of them freed). */
static gboolean
lw_python_read_code_heads (LwPython *python, const LwPyInterpreter *interp, guint n)
{
  gsize len = interp->offsets->code_code_adaptive;
  struct iovec local[LW_PY_MAX_FRAMES], remote[LW_PY_MAX_FRAMES];
  gboolean same = python->heads_fresh && n == python->n_spec;

  for (guint i = 0; i < n && same; i++)
    same = python->frames[i].code == python->spec_codes[i];
  if (same)
    return TRUE;

  for (guint i = 0; i < n; i++)
    {
      local[i] = (struct iovec) { python->code_heads[i], len };
      remote[i] = (struct iovec) { (void *) python->frames[i].code, len };
    }
  if (lw_core_read_memory (local, n, remote, n) == (ssize_t) (n * len))
    return TRUE;
  for (guint i = 0; i < n; i++)
    if (!lw_python_read (python->frames[i].code, python->code_heads[i], len))
      return FALSE;
  return TRUE;
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
  struct iovec local[LW_PY_MAX_FRAMES + 4], remote[LW_PY_MAX_FRAMES + 4];
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

/* Watcher thread. Reads thread @tid's Python frames, innermost first,
 * into python->frames; returns how many (0 on any inconsistency). */
static guint
lw_python_read_frames (LwPython *python, const LwPyInterpreter *interp, pid_t tid)
{
  const LwPyOffsets *o = interp->offsets;
  uintptr_t frame_at = 0, frame = 0, spec_frame = 0;
  guint8 tstate_block[LW_PY_TSTATE_READ];
  gboolean prefetched;
  guint n = 0;

  python->window_len = 0;
  python->window2_len = 0;
  python->heads_fresh = FALSE;
  prefetched = lw_python_prefetch (python, interp, tid, tstate_block, &spec_frame);
  if (lw_python_thread_state (python, interp, tid, prefetched ? tstate_block : NULL, &frame_at) == 0)
    return 0;
  if (!o->has_cframe)
    frame = frame_at;
  else if (prefetched && frame_at == python->spec_cframe)
    frame = spec_frame;
  else if (!lw_python_read_word (frame_at + o->cframe_current_frame, &frame))
    return 0;
  python->spec_cframe = o->has_cframe ? frame_at : 0;
  /* Shims count against the bound too: every chain read ends. */
  for (guint records = 0; frame != 0; records++)
    {
      guint8 block[LW_PY_FRAME_READ];
      LwPyFrameRecord record;
      uintptr_t at;

      g_assert (o->frame_read <= sizeof block);
      if (records == 2 * LW_PY_MAX_FRAMES || !lw_python_frame_block (python, frame, block, o->frame_read))
        return 0;
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
        return 0;
      if (record.kind == LW_PY_FRAME_SHIM)
        {
          /* The shim below the first frame an evaluation loop ran; one
           * with no frame above it matches no loop. */
          if (n == 0 || python->frames[n - 1].is_entry)
            return 0;
          python->frames[n - 1].is_entry = TRUE;
          python->frames[n - 1].entry_at = at;
          continue;
        }
      if (n == LW_PY_MAX_FRAMES)
        return 0;
      python->frames[n].code = record.code;
      python->frames[n].instr = record.instr;
      python->frames[n].is_entry = record.kind == LW_PY_FRAME_CODE_ENTRY;
      python->frames[n].entry_at = 0;
      n++;
    }
  python->spec_window2_start = python->window2_start;
  python->spec_window2_len = python->window2_len;
  g_assert (o->code_code_adaptive <= LW_PY_CODE_HEAD);
  if (n == 0 || !lw_python_read_code_heads (python, interp, n))
    {
      python->n_spec = 0;
      return 0;
    }
  for (guint i = 0; i < n; i++)
    python->spec_codes[i] = python->frames[i].code;
  python->n_spec = n;
  for (guint i = 0; i < n; i++)
    {
      LwPyFrameRead *read = &python->frames[i];
      LwPyCode *code = lw_python_code (python, interp, read->code, python->code_heads[i]);
      gssize index;
      guint line;

      if (code == NULL)
        return 0;
      /* The code unit (2 bytes) executing: prev_instr (3.11, 3.12) is
       * one before the first when the frame has not started. */
      index = ((gssize) read->instr - (gssize) (read->code + o->code_code_adaptive)) / 2;
      if (index < -1 || index >= code->n_units)
        return 0;
      line = lw_python_layout_line (code->linetable, code->linetable_len, code->firstlineno, index);
      if (code->last_tag == 0 || code->last_line != line)
        {
          code->last_tag = lw_lang_frame_intern (LW_LANG_PYTHON, code->qualname, code->filename, line);
          code->last_line = line;
        }
      read->tag = code->last_tag;
      if (read->tag == 0)
        return 0;
    }
  return n;
}

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

guint
lw_python_merge (LwPython *python, pid_t tid, const uintptr_t *sps, uintptr_t *ips, guint n_ips,
                 guint max_ips, gboolean *truncated)
{
  const LwPyInterpreter *interp;
  guint n_frames, out = 0, next = 0;
  gint *loop_of;

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
  if (n_frames == 0 || !python->frames[n_frames - 1].is_entry)
    return n_ips;

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
    return n_ips;

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
