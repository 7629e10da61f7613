/* lw-python.c: CPython frames from memory (lw-python.h says what and why) */
#include "lw-python.h"

#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lw-capture-core.h"
#include "lw-lang-frames.h"
#include "lw-load.h"
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
/* The code cache: LW_PY_CODE_SETS sets of LW_PY_CODE_WAYS entries, a code
 * object's set chosen by its address, the entry least recently used
 * replaced: a deep stack's code objects share a set without evicting each
 * other at every sample (with one entry per set, two of a 30-frame stack
 * collide more often than not). */
#define LW_PY_CODE_SETS        64
#define LW_PY_CODE_WAYS        4
#define LW_PY_CODE_CACHE       (LW_PY_CODE_SETS * LW_PY_CODE_WAYS)
/* Per code object, the tags of the last code units seen executing: a
 * stuck frame executes the same few (a loop, a call) sample after sample. */
#define LW_PY_CODE_TAGS        4
/* 3.11's code objects carry no number of their own (3.12 added
 * co_version): there the cache also compares the first bytes of the
 * code object's qualified name (its length, hash, state and first
 * characters), since a code object freed with its name and another made
 * may find both at the old addresses. */
#define LW_PY_NAME_CHECK       128
#define LW_PY_HAS_CO_VERSION(o) ((o)->version >= 0x030c)

typedef struct
{
  uintptr_t code;           /* 0: empty slot */
  /* The code object's first code_code_adaptive bytes when its strings and
   * line table were read (from 3.12 they hold co_version, a number CPython
   * gives each code object it makes). */
  guint8    head[LW_PY_CODE_HEAD];
  guint64   used;           /* the merge that last used it */
  guint8    name[LW_PY_NAME_CHECK];  /* 3.11: the qualified name's first bytes */
  gsize     name_len;                /* 0 from 3.12 */
  int       firstlineno;
  gssize    n_units;
  char     *qualname;
  char     *filename;
  guint8   *linetable;
  gsize     linetable_len;
  gssize    tag_index[LW_PY_CODE_TAGS];  /* a code unit, and the tag of its line */
  uintptr_t tag[LW_PY_CODE_TAGS];        /* 0: none */
  guint     next_tag;
} LwPyCode;

typedef struct
{
  uintptr_t code;
  uintptr_t instr;
  uintptr_t tag;
  gboolean  is_entry;       /* the first frame its evaluation loop ran */
  uintptr_t entry_at;       /* 3.12+, an entry frame: its loop's shim frame, on the C stack */
  guint     code_index;     /* its code object among the stack's distinct ones */
} LwPyFrameRead;

struct _LwPython
{
  pid_t         tstate_tid;   /* the thread tstate was found for */
  uintptr_t     tstate;
  LwPyCode      codes[LW_PY_CODE_CACHE];
  guint64       merges;       /* merges so far: the cache's clock */
  LwPyFrameRead frames[LW_PY_MAX_FRAMES];
  /* The distinct code objects of the frames read (a recursion runs one
   * code object in many frames), and their first bytes: each is read once
   * per sample. */
  uintptr_t     stack_codes[LW_PY_MAX_FRAMES];
  guint         n_codes;
  guint8        code_heads[LW_PY_MAX_FRAMES][LW_PY_CODE_HEAD];
  /* 3.11: the first bytes of their qualified names, read at the names'
   * cached addresses; name_lens[i] 0 when none was read. */
  guint8        names[LW_PY_MAX_FRAMES][LW_PY_NAME_CHECK];
  gsize         name_lens[LW_PY_MAX_FRAMES];
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
  uintptr_t     spec_codes[LW_PY_MAX_FRAMES];  /* distinct */
  guint         n_spec;                   /* code_heads hold spec_codes' heads when heads_fresh */
  gboolean      heads_fresh;
  uintptr_t    *scratch;       /* scratch_len of each */
  gint         *loop_of;       /* per native frame: the entry frame it ran, or -1 */
  guint         scratch_len;
};

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
      || lw_load_uptr (head, o->object_type) != interp->unicode_type)
    return NULL;
  length = lw_load_uptr (head, o->unicode_length);
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
      data = lw_load_uptr (head, o->compact_utf8);
      if (data == 0)
        return kind == 1 || kind == 2 || kind == 4
               ? lw_python_read_units (object + o->compact_size, length, kind) : NULL;
      length = lw_load_uptr (head, o->compact_utf8_length);
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
      || lw_load_uptr (head, o->object_type) != interp->bytes_type)
    return NULL;
  size = lw_load_uptr (head, o->var_size);
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

/* Watcher thread. Keeps in @slot the first bytes of the str at @object
 * (3.11's check that a code object's name is the one cached): its head
 * (length, hash, state) and, when it is compact ASCII, its characters,
 * at most LW_PY_NAME_CHECK bytes in all. */
static gboolean
lw_python_name_check (const LwPyInterpreter *interp, uintptr_t object, LwPyCode *slot)
{
  const LwPyOffsets *o = interp->offsets;
  uintptr_t length;
  guint32 state;

  if (o->ascii_size > LW_PY_NAME_CHECK || !lw_python_read (object, slot->name, o->ascii_size))
    return FALSE;
  length = lw_load_uptr (slot->name, o->unicode_length);
  memcpy (&state, slot->name + o->unicode_state, sizeof state);
  slot->name_len = o->ascii_size;
  if ((state & LW_PY_STATE_COMPACT) && (state & LW_PY_STATE_ASCII))
    slot->name_len = MIN (LW_PY_NAME_CHECK, o->ascii_size + MIN (length, LW_PY_MAX_STRING) + 1);
  return lw_python_read (object, slot->name, slot->name_len);
}

/* Watcher thread. The cached entry of the code object at @code_addr,
 * left as it is; NULL when there is none. */
static LwPyCode *
lw_python_code_cached (LwPython *python, uintptr_t code_addr)
{
  LwPyCode *set = &python->codes[((code_addr >> 4) % LW_PY_CODE_SETS) * LW_PY_CODE_WAYS];

  for (guint w = 0; w < LW_PY_CODE_WAYS; w++)
    if (set[w].code == code_addr)
      return &set[w];
  return NULL;
}

/* Watcher thread. 3.11: fills in @local and @remote the read of the
 * first bytes of the qualified name of code object @i of the stack
 * (@code_addr), at the address and length cached for it; FALSE when
 * there is none to read (no entry, or 3.12+). */
static gboolean
lw_python_name_iovec (LwPython *python, const LwPyInterpreter *interp, guint i, uintptr_t code_addr,
                      struct iovec *local, struct iovec *remote)
{
  LwPyCode *slot = lw_python_code_cached (python, code_addr);

  python->name_lens[i] = 0;
  if (slot == NULL || slot->name_len == 0)
    return FALSE;
  python->name_lens[i] = slot->name_len;
  *local = (struct iovec) { python->names[i], slot->name_len };
  *remote = (struct iovec) { (void *) lw_load_uptr (slot->head, interp->offsets->code_qualname),
                             slot->name_len };
  return TRUE;
}

/* Watcher thread. The code object at @code_addr, whose first bytes are
 * @block (3.11: and @name_len first bytes of its qualified name, @name):
 * from the cache when those bytes are unchanged since its strings and
 * line table were read, else read afresh. NULL when it is not a code
 * object or cannot be read whole. */
static LwPyCode *
lw_python_code (LwPython *python, const LwPyInterpreter *interp, uintptr_t code_addr,
                const guint8 *block, const guint8 *name, gsize name_len)
{
  const LwPyOffsets *o = interp->offsets;
  LwPyCode *set = &python->codes[((code_addr >> 4) % LW_PY_CODE_SETS) * LW_PY_CODE_WAYS];
  LwPyCode *slot = NULL;
  gssize n_units;
  int firstlineno;

  if (lw_load_uptr (block, o->object_type) != interp->code_type)
    return NULL;
  /* A code object freed and another made at its address: the cached
   * entry stands only if every byte of the head but the reference count
   * is the same (the objects it refers to, its sizes and first line, and
   * from 3.12 its co_version, unique to it). A field that changes while
   * the code object lives (3.11's warm-up counter, a weak reference
   * taken) costs one more read of its strings, never a stale name. */
  slot = lw_python_code_cached (python, code_addr);
  if (slot != NULL
      && memcmp (slot->head + sizeof (uintptr_t), block + sizeof (uintptr_t),
                 o->code_code_adaptive - sizeof (uintptr_t)) == 0
      && name_len == slot->name_len
      && (name_len == 0 || memcmp (slot->name + sizeof (uintptr_t), name + sizeof (uintptr_t),
                                   name_len - sizeof (uintptr_t)) == 0))
    {
      slot->used = python->merges;
      return slot;
    }
  if (slot == NULL)
    {
      slot = &set[0];
      for (guint w = 1; w < LW_PY_CODE_WAYS; w++)
        if (set[w].used < slot->used)
          slot = &set[w];
    }
  lw_python_code_clear (slot);
  n_units = (gssize) lw_load_uptr (block, o->var_size);
  memcpy (&firstlineno, block + o->code_firstlineno, sizeof firstlineno);
  slot->qualname = lw_python_read_string (interp, lw_load_uptr (block, o->code_qualname));
  slot->filename = lw_python_read_string (interp, lw_load_uptr (block, o->code_filename));
  slot->linetable = lw_python_read_bytes (interp, lw_load_uptr (block, o->code_linetable),
                                          &slot->linetable_len);
  if (slot->qualname == NULL || slot->filename == NULL || slot->linetable == NULL
      || n_units <= 0)
    {
      lw_python_code_clear (slot);
      return NULL;
    }
  if (!LW_PY_HAS_CO_VERSION (o)
      && !lw_python_name_check (interp, lw_load_uptr (block, o->code_qualname), slot))
    {
      lw_python_code_clear (slot);
      return NULL;
    }
  slot->code = code_addr;
  memcpy (slot->head, block, o->code_code_adaptive);
  slot->used = python->merges;
  slot->firstlineno = firstlineno;
  slot->n_units = n_units;
  return slot;
}

/* Watcher thread. The tag of @code's frame executing code unit @index
 * (-1: not started): from the code's last few, else its line found in its
 * line table and interned. 0 when the table of tags is full. */
static uintptr_t
lw_python_code_tag (LwPyCode *code, gssize index)
{
  guint line;
  uintptr_t tag;

  for (guint k = 0; k < LW_PY_CODE_TAGS; k++)
    if (code->tag[k] != 0 && code->tag_index[k] == index)
      return code->tag[k];
  line = lw_python_layout_line (code->linetable, code->linetable_len, code->firstlineno, index);
  tag = lw_lang_frame_intern (LW_LANG_PYTHON, code->qualname, code->filename, line);
  if (tag != 0)
    {
      code->tag_index[code->next_tag] = index;
      code->tag[code->next_tag] = tag;
      code->next_tag = (code->next_tag + 1) % LW_PY_CODE_TAGS;
    }
  return tag;
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
      && lw_load_uptr (block, o->tstate_native_thread_id) == (uintptr_t) tid)
    {
      *frame_at = lw_load_uptr (block, o->tstate_frame);
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

  python->merges++;
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
  lw_python_distinct_codes (python, n);
  if (n == 0 || !lw_python_read_code_heads (python, interp))
    {
      python->n_spec = 0;
      return 0;
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
        return 0;
      /* The code unit (2 bytes) executing: prev_instr (3.11, 3.12) is
       * one before the first when the frame has not started. */
      index = ((gssize) read->instr - (gssize) (read->code + o->code_code_adaptive)) / 2;
      if (index < -1 || index >= code->n_units)
        return 0;
      read->tag = lw_python_code_tag (code, index);
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
