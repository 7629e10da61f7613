/* lw-python-layout.c: CPython layouts, from tables or from _Py_DebugOffsets
 * (lw-python-layout.h says what and why) */
#include "lw-python-layout.h"
#include "lw-load.h"

#include <string.h>

/* CPython 3.11, from its headers (Include/internal/pycore_frame.h,
 * pycore_runtime.h, pycore_interp.h, cpython/pystate.h, cpython/code.h,
 * cpython/unicodeobject.h, cpython/bytesobject.h, cpython/funcobject.h,
 * cpython/classobject.h), x86-64. Checked against the running
 * interpreter by tests/python/check-offsets.py. */
static const LwPyOffsets lw_python_3_11 = {
  .version = 0x030b,
  .runtime_interpreters_head = 40,
  .interp_next = 0,
  .interp_threads_head = 16,
  .tstate_next = 8,
  .tstate_native_thread_id = 160,
  .tstate_frame = 56,
  .has_cframe = TRUE,
  .cframe_current_frame = 8,
  .frame_code = 32,
  .code_tagged = FALSE,
  .frame_previous = 48,
  .frame_instr = 56,
  .entry = LW_PY_ENTRY_FLAG,
  .frame_is_entry = 68,
  .frame_owner = 69,
  .frame_read = 72,
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

/* CPython 3.12, from the same headers of 3.12 (x86-64): the frame lost
 * is_entry (each evaluation loop pushes a shim frame instead) and moved
 * f_code first; str lost its wstr fields. Checked against the running
 * interpreter by tests/python/check-offsets.py. */
static const LwPyOffsets lw_python_3_12 = {
  .version = 0x030c,
  .runtime_interpreters_head = 40,
  .interp_next = 0,
  .interp_threads_head = 72,
  .tstate_next = 8,
  .tstate_native_thread_id = 144,
  .tstate_frame = 56,
  .has_cframe = TRUE,
  .cframe_current_frame = 0,
  .frame_code = 0,
  .code_tagged = FALSE,
  .frame_previous = 8,
  .frame_instr = 56,
  .entry = LW_PY_ENTRY_SHIM,
  .frame_is_entry = 0,
  .frame_owner = 70,
  .frame_read = 72,
  .object_type = 8,
  .var_size = 16,
  .code_firstlineno = 68,
  .code_filename = 112,
  .code_qualname = 128,
  .code_linetable = 136,
  .code_code_adaptive = 192,
  .unicode_length = 16,
  .unicode_state = 32,
  .ascii_size = 40,
  .compact_utf8_length = 40,
  .compact_utf8 = 48,
  .compact_size = 56,
  .bytes_data = 32,
  .function_qualname = 40,
  .method_function = 16,
};

const LwPyOffsets *
lw_python_layout_table (guint version)
{
  if (version == lw_python_3_11.version)
    return &lw_python_3_11;
  if (version == lw_python_3_12.version)
    return &lw_python_3_12;
  return NULL;
}

/* The form of one version's _Py_DebugOffsets: where, in the blob, the
 * offsets lagwatch needs are (each a uint64_t), from the struct's
 * declaration in that version's Include/internal/pycore_runtime.h (3.13)
 * or pycore_debug_offsets.h (3.14, 3.15). Each struct of the blob starts
 * with the size of the object it describes, never its own: the blob does
 * not describe itself, so each version has its form here, and a version
 * without one is refused. The layouts they give were checked against the
 * live objects of 3.13.0, 3.13.5, 3.14.10 and 3.15.2 by
 * tests/python/check-offsets.py. */
typedef struct
{
  guint version;
  gsize length;               /* bytes of the blob up to its last field read */
  gsize runtime_size, runtime_interpreters_head;
  gsize interp_size, interp_next, interp_threads_head;
  gsize tstate_size, tstate_next, tstate_current_frame, tstate_native_thread_id;
  gsize tstate_base_frame;    /* 0: none (before 3.15) */
  gsize frame_size, frame_previous, frame_executable, frame_instr_ptr, frame_owner;
  gsize code_size, code_filename, code_qualname, code_linetable, code_firstlineno, code_adaptive;
  gsize object_size, object_type;
  gsize bytes_size, bytes_ob_size, bytes_sval;
  gsize unicode_size, unicode_state, unicode_length, unicode_ascii_size;
  gboolean code_tagged;       /* f_executable a _PyStackRef */
} LwPyDebugForm;

static const LwPyDebugForm lw_python_debug_forms[] = {
  {
    .version = 0x030d, .length = 568,
    .runtime_size = 24, .runtime_interpreters_head = 40,
    .interp_size = 48, .interp_next = 64, .interp_threads_head = 72,
    .tstate_size = 152, .tstate_next = 168, .tstate_current_frame = 184, .tstate_native_thread_id = 200,
    .frame_size = 224, .frame_previous = 232, .frame_executable = 240, .frame_instr_ptr = 248,
    .frame_owner = 264,
    .code_size = 272, .code_filename = 280, .code_qualname = 296, .code_linetable = 304,
    .code_firstlineno = 312, .code_adaptive = 344,
    .object_size = 352, .object_type = 360,
    .bytes_size = 512, .bytes_ob_size = 520, .bytes_sval = 528,
    .unicode_size = 536, .unicode_state = 544, .unicode_length = 552, .unicode_ascii_size = 560,
    .code_tagged = FALSE,
  },
  {
    /* 3.14 added threads_main, code_object_generation and tlbc_generation
     * to the interpreter's struct, stackpointer and tlbc_index to the
     * frame's, co_tlbc to the code's, and a set object before the dict. */
    .version = 0x030e, .length = 648,
    .runtime_size = 24, .runtime_interpreters_head = 40,
    .interp_size = 48, .interp_next = 64, .interp_threads_head = 72,
    .tstate_size = 176, .tstate_next = 192, .tstate_current_frame = 208, .tstate_native_thread_id = 224,
    .frame_size = 248, .frame_previous = 256, .frame_executable = 264, .frame_instr_ptr = 272,
    .frame_owner = 288,
    .code_size = 312, .code_filename = 320, .code_qualname = 336, .code_linetable = 344,
    .code_firstlineno = 352, .code_adaptive = 384,
    .object_size = 400, .object_type = 408,
    .bytes_size = 592, .bytes_ob_size = 600, .bytes_sval = 608,
    .unicode_size = 616, .unicode_state = 624, .unicode_length = 632, .unicode_ascii_size = 640,
    .code_tagged = TRUE,
  },
  {
    /* 3.15 added base_frame, last_profiled_frame, last_profiled_frame_seq
     * (before thread_id), holds_gil, gil_requested, current_exception and
     * exc_state to the thread state's struct and an err_stackitem struct
     * after it, tp_basicsize and tp_dictoffset to the type's, a heap type
     * struct before the tuple's, compactunicodeobject_size to the
     * string's, and three structs after the GC's. The frame and code
     * offsets these give are 3.14's; the thread id moved. base_frame
     * points to a shim frame of the thread's own (embedded in its
     * _PyThreadStateImpl): the last of every thread's chain, below the
     * shim of the loop that ran its outermost code. */
    .version = 0x030f, .length = 744,
    .runtime_size = 24, .runtime_interpreters_head = 40,
    .interp_size = 48, .interp_next = 64, .interp_threads_head = 72,
    .tstate_size = 176, .tstate_next = 192, .tstate_current_frame = 208, .tstate_native_thread_id = 248,
    .tstate_base_frame = 216,
    .frame_size = 312, .frame_previous = 320, .frame_executable = 328, .frame_instr_ptr = 336,
    .frame_owner = 352,
    .code_size = 376, .code_filename = 384, .code_qualname = 400, .code_linetable = 408,
    .code_firstlineno = 416, .code_adaptive = 448,
    .object_size = 464, .object_type = 472,
    .bytes_size = 688, .bytes_ob_size = 696, .bytes_sval = 704,
    .unicode_size = 712, .unicode_state = 720, .unicode_length = 728, .unicode_ascii_size = 736,
    .code_tagged = TRUE,
  },
};

#define LW_PY_DEBUG_FREE_THREADED 16
#define LW_PY_DEBUG_VERSION       8

gsize
lw_python_layout_debug_offsets_size (void)
{
  gsize size = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (lw_python_debug_forms); i++)
    size = MAX (size, lw_python_debug_forms[i].length);
  return size;
}

/* Any thread. Reads the offset at @at of @blob into *@out when a field of
 * @width bytes there lies inside both its struct (@size_at holds the
 * struct's size) and the @room bytes lagwatch reads of it. */
static gboolean
lw_python_debug_field (const guint8 *blob, gsize size_at, gsize at, gsize width, gsize room,
                       gsize *out)
{
  guint64 size = lw_load_u64 (blob, size_at), offset = lw_load_u64 (blob, at);

  if (size > G_MAXUINT32 || offset > size || size - offset < width || offset > room
      || room - offset < width)
    return FALSE;
  *out = (gsize) offset;
  return TRUE;
}

LwPyLayoutStatus
lw_python_layout_from_debug_offsets (const guint8 *blob, gsize len, guint32 py_version,
                                     LwPyOffsets *out, char *why, gsize why_size)
{
  const LwPyDebugForm *form = NULL;
  const gsize word = sizeof (uintptr_t);
  LwPyOffsets o = { 0 };
  guint64 version;
  gsize runtime_room = G_MAXUINT32, interp_room = G_MAXUINT32;
  gboolean ok;

  if (len < 24 || memcmp (blob, "xdebugpy", 8) != 0)
    {
      g_snprintf (why, why_size, "no _Py_DebugOffsets");
      return LW_PY_LAYOUT_NOT_PUBLISHED;
    }
  version = lw_load_u64 (blob, LW_PY_DEBUG_VERSION);
  for (gsize i = 0; i < G_N_ELEMENTS (lw_python_debug_forms); i++)
    if (lw_python_debug_forms[i].version == version >> 16)
      form = &lw_python_debug_forms[i];
  if (form == NULL || version >> 32 != 0 || (guint32) version != py_version)
    {
      g_snprintf (why, why_size, "its _Py_DebugOffsets (version 0x%" G_GINT64_MODIFIER "x) has a "
                  "form this lagwatch does not know", version);
      return LW_PY_LAYOUT_UNKNOWN_VERSION;
    }
  if (lw_load_u64 (blob, LW_PY_DEBUG_FREE_THREADED) != 0)
    {
      g_snprintf (why, why_size, "a free-threaded build (Py_GIL_DISABLED), whose frames this "
                  "lagwatch does not read");
      return LW_PY_LAYOUT_FREE_THREADED;
    }
  if (len < form->length)
    {
      g_snprintf (why, why_size, "its _Py_DebugOffsets could not be read whole");
      return LW_PY_LAYOUT_INVALID;
    }
  o.version = form->version;
  o.has_cframe = FALSE;
  o.code_tagged = form->code_tagged;
  o.entry = LW_PY_ENTRY_SHIM;
  ok = lw_python_debug_field (blob, form->runtime_size, form->runtime_interpreters_head, word,
                              runtime_room, &o.runtime_interpreters_head)
       && lw_python_debug_field (blob, form->interp_size, form->interp_next, word, interp_room,
                                 &o.interp_next)
       && lw_python_debug_field (blob, form->interp_size, form->interp_threads_head, word,
                                 interp_room, &o.interp_threads_head)
       && lw_python_debug_field (blob, form->tstate_size, form->tstate_next, word,
                                 LW_PY_TSTATE_READ, &o.tstate_next)
       && lw_python_debug_field (blob, form->tstate_size, form->tstate_current_frame, word,
                                 LW_PY_TSTATE_READ, &o.tstate_frame)
       && lw_python_debug_field (blob, form->tstate_size, form->tstate_native_thread_id, word,
                                 LW_PY_TSTATE_READ, &o.tstate_native_thread_id)
       && lw_python_debug_field (blob, form->frame_size, form->frame_previous, word,
                                 LW_PY_FRAME_READ, &o.frame_previous)
       && lw_python_debug_field (blob, form->frame_size, form->frame_executable, word,
                                 LW_PY_FRAME_READ, &o.frame_code)
       && lw_python_debug_field (blob, form->frame_size, form->frame_instr_ptr, word,
                                 LW_PY_FRAME_READ, &o.frame_instr)
       && lw_python_debug_field (blob, form->frame_size, form->frame_owner, 1,
                                 LW_PY_FRAME_READ, &o.frame_owner)
       && lw_python_debug_field (blob, form->object_size, form->object_type, word,
                                 LW_PY_BYTES_HEAD, &o.object_type)
       && lw_python_debug_field (blob, form->code_size, form->code_filename, word,
                                 LW_PY_CODE_HEAD, &o.code_filename)
       && lw_python_debug_field (blob, form->code_size, form->code_qualname, word,
                                 LW_PY_CODE_HEAD, &o.code_qualname)
       && lw_python_debug_field (blob, form->code_size, form->code_linetable, word,
                                 LW_PY_CODE_HEAD, &o.code_linetable)
       && lw_python_debug_field (blob, form->code_size, form->code_firstlineno, sizeof (int),
                                 LW_PY_CODE_HEAD, &o.code_firstlineno)
       && lw_python_debug_field (blob, form->code_size, form->code_adaptive, 0,
                                 LW_PY_CODE_HEAD, &o.code_code_adaptive)
       && lw_python_debug_field (blob, form->bytes_size, form->bytes_ob_size, word,
                                 LW_PY_BYTES_HEAD, &o.var_size)
       && lw_python_debug_field (blob, form->bytes_size, form->bytes_sval, 0,
                                 LW_PY_BYTES_HEAD, &o.bytes_data)
       && lw_python_debug_field (blob, form->unicode_size, form->unicode_state, sizeof (guint32),
                                 LW_PY_STRING_HEAD, &o.unicode_state)
       && lw_python_debug_field (blob, form->unicode_size, form->unicode_length, word,
                                 LW_PY_STRING_HEAD, &o.unicode_length);
  if (ok && form->tstate_base_frame != 0)
    {
      o.has_base_frame = lw_python_debug_field (blob, form->tstate_size, form->tstate_base_frame, word,
                                                LW_PY_TSTATE_READ, &o.tstate_base_frame);
      ok = o.has_base_frame;
    }
  if (ok)
    {
      guint64 ascii_size = lw_load_u64 (blob, form->unicode_ascii_size);
      guint64 unicode_size = lw_load_u64 (blob, form->unicode_size);

      /* Not in the blob: a compact string's UTF-8 length and pointer
       * follow its PyASCIIObject (PyCompactUnicodeObject, unchanged since
       * 3.12), then its code units; PyUnicodeObject adds one data pointer
       * to it, which checks the derivation against the published size. */
      ok = ascii_size >= o.unicode_state + sizeof (guint32) && ascii_size >= o.unicode_length + word
           && ascii_size + 3 * word == unicode_size && unicode_size <= LW_PY_STRING_HEAD;
      o.ascii_size = (gsize) ascii_size;
      o.compact_utf8_length = o.ascii_size;
      o.compact_utf8 = o.ascii_size + word;
      o.compact_size = o.ascii_size + 2 * word;
    }
  /* A frame's fields are read together; the code object's head is read
   * up to its first code unit; a bytes object's size sits before its
   * data; every object has its type before anything else read of it. */
  ok = ok && o.code_code_adaptive > MAX (MAX (o.code_filename, o.code_qualname), o.code_linetable)
       && o.code_code_adaptive >= o.code_firstlineno + sizeof (int)
       && o.bytes_data >= o.var_size + word && o.var_size >= o.object_type + word
       && o.unicode_length >= o.object_type + word && o.code_filename >= o.var_size + word;
  if (!ok)
    {
      g_snprintf (why, why_size, "an offset in its _Py_DebugOffsets cannot be right");
      return LW_PY_LAYOUT_INVALID;
    }
  o.frame_read = MAX (MAX (o.frame_previous, o.frame_code), o.frame_instr) + word;
  o.frame_read = MAX (o.frame_read, o.frame_owner + 1);
  /* PyFunctionObject's func_qualname and PyMethodObject's im_func, from
   * the public cpython/funcobject.h and cpython/classobject.h: the same
   * from 3.11 to 3.15, read only for a PyGObject callback's name, and
   * only from objects whose type was checked. */
  o.function_qualname = 40;
  o.method_function = 16;
  *out = o;
  return LW_PY_LAYOUT_OK;
}

void
lw_python_layout_frame (const LwPyOffsets *o, const guint8 *block, LwPyFrameRecord *out)
{
  uintptr_t code;

  memcpy (&code, block + o->frame_code, sizeof code);
  memcpy (&out->previous, block + o->frame_previous, sizeof out->previous);
  memcpy (&out->instr, block + o->frame_instr, sizeof out->instr);
  out->code = o->code_tagged ? code & ~(uintptr_t) 3 : code;
  if (o->entry == LW_PY_ENTRY_FLAG)
    out->kind = block[o->frame_is_entry] != 0 ? LW_PY_FRAME_CODE_ENTRY : LW_PY_FRAME_CODE;
  else if (block[o->frame_owner] < LW_PY_OWNER_SHIM)
    out->kind = LW_PY_FRAME_CODE;
  else if (block[o->frame_owner] == LW_PY_OWNER_SHIM)
    out->kind = LW_PY_FRAME_SHIM;
  else
    out->kind = LW_PY_FRAME_BAD;
  if (out->kind != LW_PY_FRAME_SHIM && (out->code == 0 || (out->code & 7) != 0))
    out->kind = LW_PY_FRAME_BAD;
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

/* Entries of one header byte (bit 7 set, a 4-bit code, a length of 1 to 8
 * code units) and the code's operands. */
guint
lw_python_layout_line (const guint8 *table, gsize len, int firstlineno, gssize index)
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
      /* Wrapping arithmetic: a table may say anything. */
      line = (int) ((guint) line + (guint) delta);
      if (index < addr + units)
        return has_line && line > 0 ? (guint) line : 0;
      addr += units;
    }
  return 0;
}
