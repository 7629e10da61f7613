/* lw-python.c: CPython frames from memory (lw-python.h says what and why) */
#include "lw-python.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lw-lang-frames.h"
#include "lw-modules.h"
#include "lw-say.h"

/* Where the fields lagwatch reads sit in one CPython version's structs.
 * Another version is one more table. */
typedef struct
{
  guint version;                  /* PY_VERSION_HEX >> 16: major << 8 | minor */
  /* _PyRuntimeState */
  gsize runtime_interpreters_head;
  /* PyInterpreterState */
  gsize interp_next;
  gsize interp_threads_head;
  /* PyThreadState */
  gsize tstate_next;
  gsize tstate_cframe;
  gsize tstate_native_thread_id;
  /* _PyCFrame */
  gsize cframe_current_frame;
  /* _PyInterpreterFrame */
  gsize frame_code;
  gsize frame_previous;
  gsize frame_prev_instr;
  gsize frame_is_entry;
  gsize frame_size;
  /* PyObject, PyVarObject */
  gsize object_type;
  gsize var_size;
  /* PyCodeObject (ob_size counts code units) */
  gsize code_firstlineno;
  gsize code_filename;
  gsize code_qualname;
  gsize code_linetable;
  gsize code_code_adaptive;       /* the first code unit */
  /* str: PyASCIIObject, PyCompactUnicodeObject */
  gsize unicode_length;
  gsize unicode_state;
  gsize ascii_size;               /* a compact ASCII string's characters follow */
  gsize compact_utf8_length;
  gsize compact_utf8;
  gsize compact_size;             /* a compact non-ASCII string's code units follow */
  /* bytes */
  gsize bytes_data;
  /* function, bound method */
  gsize function_qualname;
  gsize method_function;
} LwPyOffsets;

/* CPython 3.11, from its headers (Include/internal/pycore_frame.h,
 * pycore_runtime.h, pycore_interp.h, cpython/pystate.h, cpython/code.h,
 * cpython/unicodeobject.h, cpython/bytesobject.h, cpython/funcobject.h,
 * cpython/classobject.h), x86-64. Checked against the running
 * interpreter by tests/python. */
static const LwPyOffsets lw_python_3_11 = {
  .version = 0x030b,
  .runtime_interpreters_head = 40,
  .interp_next = 0,
  .interp_threads_head = 16,
  .tstate_next = 8,
  .tstate_cframe = 56,
  .tstate_native_thread_id = 160,
  .cframe_current_frame = 8,
  .frame_code = 32,
  .frame_previous = 48,
  .frame_prev_instr = 56,
  .frame_is_entry = 68,
  .frame_size = 72,
  .object_type = 8,
  .var_size = 16,
  .code_firstlineno = 72,
  .code_filename = 112,
  .code_qualname = 128,
  .code_linetable = 136,
  .code_code_adaptive = 184,
  .unicode_length = 16,
  .unicode_state = 32,
  .ascii_size = 48,
  .compact_utf8_length = 48,
  .compact_utf8 = 56,
  .compact_size = 72,
  .bytes_data = 32,
  .function_qualname = 40,
  .method_function = 16,
};

static const LwPyOffsets *const lw_python_versions[] = { &lw_python_3_11 };

/* PyASCIIObject.state bits (3.11): interned:2, kind:3, compact:1, ascii:1, ready:1. */
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

/* The interpreter of this process, found once (again after a dlopen). */
typedef struct
{
  const LwPyOffsets *offsets;
  uintptr_t runtime;
  uintptr_t code_type;
  uintptr_t unicode_type;
  uintptr_t bytes_type;
  uintptr_t function_type;
  uintptr_t method_type;
  uintptr_t eval_lo;           /* _PyEval_EvalFrameDefault */
  uintptr_t eval_hi;
} LwPyInterpreter;

static GMutex lw_python_lock;
static LwPyInterpreter lw_python_interp;   /* HOLDS: lw_python_lock until found */
static gint lw_python_found;               /* (atomic) lw_python_interp is final */
static guint64 lw_python_tried_generation; /* HOLDS: lw_python_lock; the module table's then */
static gboolean lw_python_said;            /* HOLDS: lw_python_lock; an unknown layout was reported */

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
  uintptr_t prev_instr;
  uintptr_t tag;
  gboolean  is_entry;
} LwPyFrameRead;

/* Bytes of a code object read per frame: up to its first code unit. */
#define LW_PY_CODE_HEAD 256

struct _LwPython
{
  pid_t         tstate_tid;   /* the thread tstate was found for */
  uintptr_t     tstate;
  LwPyCode      codes[LW_PY_CODE_CACHE];
  LwPyFrameRead frames[LW_PY_MAX_FRAMES];
  guint8        code_heads[LW_PY_MAX_FRAMES][LW_PY_CODE_HEAD];
  /* A copy of the page of the thread's frame stack last read: 3.11 keeps
   * a thread's frames side by side, callers below callees, so one read
   * serves many frames. Valid for one merge. */
  guint8        window[4096];
  uintptr_t     window_start;
  gsize         window_len;
  uintptr_t    *scratch;
  guint         scratch_len;
};

/* Any thread, normal context. */
static gboolean
lw_python_read (uintptr_t addr, void *buf, gsize len)
{
  return addr != 0 && lw_modules_read_memory (addr, buf, len);
}

static gboolean
lw_python_read_word (uintptr_t addr, uintptr_t *out)
{
  return lw_python_read (addr, out, sizeof *out);
}

static uintptr_t
lw_python_field (const guint8 *block, gsize offset)
{
  uintptr_t value;

  memcpy (&value, block + offset, sizeof value);
  return value;
}

static gboolean
lw_python_symbol (const char *name, uintptr_t *out, gsize *size)
{
  ElfW(Sym) *sym = NULL;
  Dl_info info;
  void *addr = dlsym (RTLD_DEFAULT, name);

  if (addr == NULL)
    return FALSE;
  *out = (uintptr_t) addr;
  if (size != NULL)
    {
      if (dladdr1 (addr, &info, (void **) &sym, RTLD_DL_SYMENT) == 0 || sym == NULL)
        return FALSE;
      *size = sym->st_size;
    }
  return TRUE;
}

/* Any thread, normal context. HOLDS: lw_python_lock. Looks for a CPython
 * whose layout is known, through the symbols it exports. */
static gboolean
lw_python_find_unlocked (void)
{
  LwPyInterpreter interp = { 0 };
  uintptr_t version_addr;
  guint32 version;
  char cookie[8];
  gsize eval_size = 0;

  if (!lw_python_symbol ("Py_Version", &version_addr, NULL)
      || !lw_python_read (version_addr, &version, sizeof version)
      || !lw_python_symbol ("_PyRuntime", &interp.runtime, NULL))
    return FALSE;
  /* 3.13 and later publish their offsets at the start of _PyRuntime
   * (_Py_DebugOffsets, cookie "xdebugpy"); their frames (no is_entry, C
   * stack shim frames) are not read here yet. */
  if (lw_python_read (interp.runtime, cookie, sizeof cookie) && memcmp (cookie, "xdebugpy", 8) == 0)
    {
      if (!lw_python_said)
        lw_say ("CPython %u.%u publishes _Py_DebugOffsets, whose frame layout this lagwatch "
                "does not read: its stacks show interpreter frames, not Python ones",
                version >> 24, (version >> 16) & 0xff);
      lw_python_said = TRUE;
      return FALSE;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (lw_python_versions); i++)
    if (lw_python_versions[i]->version == version >> 16)
      interp.offsets = lw_python_versions[i];
  if (interp.offsets == NULL)
    {
      if (!lw_python_said)
        lw_say ("CPython %u.%u: no table of its layout in this lagwatch: its stacks show "
                "interpreter frames, not Python ones", version >> 24, (version >> 16) & 0xff);
      lw_python_said = TRUE;
      return FALSE;
    }
  if (!lw_python_symbol ("PyCode_Type", &interp.code_type, NULL)
      || !lw_python_symbol ("PyUnicode_Type", &interp.unicode_type, NULL)
      || !lw_python_symbol ("PyBytes_Type", &interp.bytes_type, NULL)
      || !lw_python_symbol ("PyFunction_Type", &interp.function_type, NULL)
      || !lw_python_symbol ("PyMethod_Type", &interp.method_type, NULL)
      || !lw_python_symbol ("_PyEval_EvalFrameDefault", &interp.eval_lo, &eval_size)
      || eval_size == 0)
    return FALSE;
  interp.eval_hi = interp.eval_lo + eval_size;
  lw_python_interp = interp;
  return TRUE;
}

void
lw_python_init (void)
{
  /* Looked for again only when libraries were loaded since. */
  guint64 generation = lw_modules_get_generation ();

  g_mutex_lock (&lw_python_lock);
  if (!g_atomic_int_get (&lw_python_found) && generation != lw_python_tried_generation)
    {
      lw_python_tried_generation = generation;
      if (lw_python_find_unlocked ())
        g_atomic_int_set (&lw_python_found, TRUE);
    }
  g_mutex_unlock (&lw_python_lock);
}

/* Any thread. The process's interpreter, or NULL. */
static const LwPyInterpreter *
lw_python_interpreter (void)
{
  return g_atomic_int_get (&lw_python_found) ? &lw_python_interp : NULL;
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
  guint8 head[128];
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
  guint8 head[64];
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

static gboolean
lw_python_varint (const guint8 *table, gsize len, gsize *pos, guint *out)
{
  guint value = 0;
  guint shift = 0;
  guint8 byte;

  do
    {
      if (*pos >= len || shift > 24)
        return FALSE;
      byte = table[(*pos)++];
      value |= (guint) (byte & 63) << shift;
      shift += 6;
    }
  while (byte & 64);
  *out = value;
  return TRUE;
}

static gboolean
lw_python_svarint (const guint8 *table, gsize len, gsize *pos, int *out)
{
  guint value;

  if (!lw_python_varint (table, len, pos, &value))
    return FALSE;
  *out = (value & 1) ? -(int) (value >> 1) : (int) (value >> 1);
  return TRUE;
}

/* Any thread. The line of code unit @index from a 3.11 location table
 * (Objects/locations.md): entries of one header byte (bit 7 set, a 4-bit
 * code, a length of 1 to 8 code units) and the code's operands. 0 when
 * unknown. */
static guint
lw_python_line (const guint8 *table, gsize len, int firstlineno, gssize index)
{
  gssize addr = 0;
  gsize pos = 0;
  int line = firstlineno;

  if (index < 0)
    return firstlineno > 0 ? (guint) firstlineno : 0;
  while (pos < len)
    {
      guint8 header = table[pos++];
      guint code = (header >> 3) & 15;
      gssize units = (header & 7) + 1;
      gboolean has_line = TRUE;
      int delta = 0;
      guint ignored;

      if (!(header & 0x80))
        return 0;
      if (code == 15)
        has_line = FALSE;
      else if (code == 14)
        {
          if (!lw_python_svarint (table, len, &pos, &delta)
              || !lw_python_varint (table, len, &pos, &ignored)
              || !lw_python_varint (table, len, &pos, &ignored)
              || !lw_python_varint (table, len, &pos, &ignored))
            return 0;
        }
      else if (code == 13)
        {
          if (!lw_python_svarint (table, len, &pos, &delta))
            return 0;
        }
      else if (code >= 10)
        {
          delta = (int) code - 10;
          pos += 2;
        }
      else
        pos += 1;
      line += delta;
      if (index < addr + units)
        return has_line && line > 0 ? (guint) line : 0;
      addr += units;
    }
  return 0;
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

/* Watcher thread. The PyThreadState of thread @tid, or 0; its current
 * _PyCFrame in *@cframe. */
static uintptr_t
lw_python_thread_state (LwPython *python, const LwPyInterpreter *interp, pid_t tid,
                        uintptr_t *cframe)
{
  const LwPyOffsets *o = interp->offsets;
  gsize head = MAX (o->tstate_native_thread_id, MAX (o->tstate_cframe, o->tstate_next)) + sizeof (uintptr_t);
  uintptr_t interp_state, tstate;
  guint8 block[512];

  g_assert (head <= sizeof block);
  if (python->tstate_tid == tid && lw_python_read (python->tstate, block, head)
      && lw_python_field (block, o->tstate_native_thread_id) == (uintptr_t) tid)
    {
      *cframe = lw_python_field (block, o->tstate_cframe);
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
              *cframe = lw_python_field (block, o->tstate_cframe);
              return tstate;
            }
          tstate = lw_python_field (block, o->tstate_next);
        }
      if (!lw_python_read_word (interp_state + o->interp_next, &interp_state))
        return 0;
    }
  return 0;
}

/* Watcher thread. Copies the @len bytes of the frame at @frame into
 * @block, through the window: a miss reads from the start of the frame's
 * page to its end, a range readable whenever the frame is. */
static gboolean
lw_python_frame_block (LwPython *python, uintptr_t frame, guint8 *block, gsize len)
{
  uintptr_t start;

  if (frame < python->window_start || frame - python->window_start > python->window_len
      || python->window_len - (frame - python->window_start) < len)
    {
      start = frame & ~(uintptr_t) (sizeof python->window - 1);
      if (frame + len - start > sizeof python->window)
        start = frame;
      python->window_len = 0;
      if (!lw_python_read (start, python->window, frame + len - start))
        return FALSE;
      python->window_start = start;
      python->window_len = frame + len - start;
    }
  memcpy (block, python->window + (frame - python->window_start), len);
  return TRUE;
}

/* Watcher thread. The first bytes of the code objects of @n frames, in
 * one system call (one per object where that fails: one of them freed). */
static gboolean
lw_python_read_code_heads (LwPython *python, const LwPyInterpreter *interp, guint n)
{
  gsize len = interp->offsets->code_code_adaptive;
  struct iovec local[LW_PY_MAX_FRAMES], remote[LW_PY_MAX_FRAMES];

  for (guint i = 0; i < n; i++)
    {
      local[i] = (struct iovec) { python->code_heads[i], len };
      remote[i] = (struct iovec) { (void *) python->frames[i].code, len };
    }
  if (syscall (SYS_process_vm_readv, getpid (), local, (unsigned long) n, remote,
               (unsigned long) n, 0UL) == (ssize_t) (n * len))
    return TRUE;
  for (guint i = 0; i < n; i++)
    if (!lw_python_read (python->frames[i].code, python->code_heads[i], len))
      return FALSE;
  return TRUE;
}

/* Watcher thread. Reads thread @tid's Python frames, innermost first,
 * into python->frames; returns how many (0 on any inconsistency). */
static guint
lw_python_read_frames (LwPython *python, const LwPyInterpreter *interp, pid_t tid)
{
  const LwPyOffsets *o = interp->offsets;
  uintptr_t cframe = 0, frame;
  guint n = 0;

  python->window_len = 0;
  if (lw_python_thread_state (python, interp, tid, &cframe) == 0
      || !lw_python_read_word (cframe + o->cframe_current_frame, &frame))
    return 0;
  for (; frame != 0; n++)
    {
      guint8 block[128];

      g_assert (o->frame_size <= sizeof block);
      if (n == LW_PY_MAX_FRAMES || !lw_python_frame_block (python, frame, block, o->frame_size))
        return 0;
      python->frames[n].code = lw_python_field (block, o->frame_code);
      python->frames[n].prev_instr = lw_python_field (block, o->frame_prev_instr);
      python->frames[n].is_entry = block[o->frame_is_entry] != 0;
      frame = lw_python_field (block, o->frame_previous);
    }
  g_assert (o->code_code_adaptive <= LW_PY_CODE_HEAD);
  if (n == 0 || !lw_python_read_code_heads (python, interp, n))
    return 0;
  for (guint i = 0; i < n; i++)
    {
      LwPyFrameRead *read = &python->frames[i];
      LwPyCode *code = lw_python_code (python, interp, read->code, python->code_heads[i]);
      gssize index;
      guint line;

      if (code == NULL)
        return 0;
      /* prev_instr: the code unit (2 bytes) last executed, one before
       * the first when the frame has not started. */
      index = ((gssize) read->prev_instr - (gssize) (read->code + o->code_code_adaptive)) / 2;
      if (index < -1 || index >= code->n_units)
        return 0;
      line = lw_python_line (code->linetable, code->linetable_len, code->firstlineno, index);
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

guint
lw_python_merge (LwPython *python, pid_t tid, uintptr_t *ips, guint n_ips, guint max_ips,
                 gboolean *truncated)
{
  const LwPyInterpreter *interp;
  guint n_eval = 0, n_entries = 0, n_frames, out = 0, next = 0;

  if (n_ips == 0 || (interp = lw_python_interpreter ()) == NULL)
    return n_ips;
  for (guint i = 0; i < n_ips; i++)
    if (lw_python_is_eval (interp, ips[i], i))
      n_eval++;
  if (n_eval == 0)
    return n_ips;
  n_frames = lw_python_read_frames (python, interp, tid);
  if (n_frames == 0 || !python->frames[n_frames - 1].is_entry)
    return n_ips;
  for (guint i = 0; i < n_frames; i++)
    n_entries += python->frames[i].is_entry;
  /* One evaluation loop per entry frame. A mismatch means the thread
   * moved on since its stack was copied (or the copy was cut short):
   * pairing them would misname frames. */
  if (n_entries != n_eval && !(*truncated && n_eval < n_entries))
    return n_ips;

  if (python->scratch_len < max_ips)
    {
      python->scratch = g_renew (uintptr_t, python->scratch, max_ips);
      python->scratch_len = max_ips;
    }
  for (guint i = 0; i < n_ips && out < max_ips; i++)
    {
      if (!lw_python_is_eval (interp, ips[i], i))
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
