/* lw-python-layout.h: where CPython keeps what lagwatch reads, per version
 *
 * A CPython version's layout is a table of offsets (LwPyOffsets). 3.11 and
 * 3.12 publish none: their tables come from their headers. 3.13 and later
 * publish their own in _Py_DebugOffsets, at the start of _PyRuntime (a
 * cookie "xdebugpy", the interpreter's PY_VERSION_HEX, a free-threaded
 * flag, then, struct by struct, its size and the offsets of its fields):
 * lw_python_layout_from_debug_offsets() fills a table from it, validating
 * every offset before it is used. What that blob holds changes from
 * version to version (fields are added inside its structs), so its own
 * form is known per version: an interpreter whose version this file does
 * not know is refused, never read on a guess.
 *
 * Everything here is pure: it parses bytes already copied out of the
 * interpreter's memory (fuzz/fuzz-python-layout.c feeds it any bytes).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* How a frame that an evaluation loop entered is marked. */
typedef enum
{
  LW_PY_ENTRY_FLAG,  /* 3.11: the frame's is_entry byte */
  LW_PY_ENTRY_SHIM,  /* 3.12+: a shim frame (owner LW_PY_OWNER_SHIM, no code) below it */
} LwPyEntryModel;

/* A shim frame's owner: FRAME_OWNED_BY_CSTACK in 3.12 and 3.13,
 * FRAME_OWNED_BY_INTERPRETER (the same value) in 3.14 and 3.15. Owners
 * below it (thread, generator, frame object) run code. */
#define LW_PY_OWNER_SHIM 3

/* The bytes read of one struct at a time: every offset of a table is
 * checked to fall inside them. */
#define LW_PY_TSTATE_READ 512
#define LW_PY_FRAME_READ  128
#define LW_PY_CODE_HEAD   256   /* of a code object: up to its first code unit */
#define LW_PY_STRING_HEAD 128
#define LW_PY_BYTES_HEAD  64

/* Where the fields lagwatch reads sit in one CPython version's structs. */
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
  gsize tstate_native_thread_id;
  gsize tstate_frame;             /* cframe (has_cframe), else current_frame */
  gsize tstate_base_frame;        /* has_base_frame: its pointer to the frame below all others */
  gboolean has_base_frame;        /* 3.15+: a shim of the thread's own ends every chain */
  gboolean has_cframe;            /* 3.11, 3.12: tstate->cframe->current_frame */
  gsize cframe_current_frame;
  /* _PyInterpreterFrame */
  gsize frame_code;               /* f_code, f_executable */
  gboolean code_tagged;           /* 3.14+: f_executable is a _PyStackRef, tag in its low 2 bits */
  gsize frame_previous;
  gsize frame_instr;              /* prev_instr, instr_ptr: the code unit executing */
  LwPyEntryModel entry;
  gsize frame_is_entry;           /* LW_PY_ENTRY_FLAG */
  gsize frame_owner;              /* LW_PY_ENTRY_SHIM */
  gsize frame_read;               /* bytes of a frame read: past every field above */
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

/* Any thread. The table of a version that publishes no offsets (3.11,
 * 3.12), from its headers; NULL for any other. @version: major << 8 | minor. */
const LwPyOffsets *lw_python_layout_table (guint version);

typedef enum
{
  LW_PY_LAYOUT_OK,
  LW_PY_LAYOUT_NOT_PUBLISHED,   /* no cookie: the interpreter publishes no offsets */
  LW_PY_LAYOUT_UNKNOWN_VERSION, /* a _Py_DebugOffsets whose form this file does not know */
  LW_PY_LAYOUT_FREE_THREADED,   /* a free-threaded build (Py_GIL_DISABLED) */
  LW_PY_LAYOUT_INVALID,         /* an offset that cannot be right */
} LwPyLayoutStatus;

/* Any thread. Bytes of _PyRuntime to read for
 * lw_python_layout_from_debug_offsets(): the longest form known. */
gsize lw_python_layout_debug_offsets_size (void);

/* Any thread. Fills @out from the @len bytes at the start of _PyRuntime.
 * @py_version: the interpreter's Py_Version, which the blob's must match.
 * On anything but LW_PY_LAYOUT_OK, @out is untouched and @why (at most
 * @why_size bytes, NUL-terminated) says what was refused. */
LwPyLayoutStatus lw_python_layout_from_debug_offsets (const guint8 *blob,
                                                      gsize         len,
                                                      guint32       py_version,
                                                      LwPyOffsets  *out,
                                                      char         *why,
                                                      gsize         why_size);

/* What one _PyInterpreterFrame is. */
typedef enum
{
  LW_PY_FRAME_CODE,        /* runs code */
  LW_PY_FRAME_CODE_ENTRY,  /* runs code, the first its evaluation loop ran (3.11) */
  LW_PY_FRAME_SHIM,        /* an evaluation loop's shim (3.12+): no code */
  LW_PY_FRAME_BAD,         /* not a frame this layout knows */
} LwPyFrameKind;

typedef struct
{
  LwPyFrameKind kind;
  uintptr_t     code;      /* the code object (CODE, CODE_ENTRY) */
  uintptr_t     instr;     /* the code unit executing */
  uintptr_t     previous;  /* the caller's frame, 0 for the outermost */
} LwPyFrameRecord;

/* Any thread. Parses the first @o->frame_read bytes of a frame. */
void lw_python_layout_frame (const LwPyOffsets *o, const guint8 *block, LwPyFrameRecord *out);

/* Any thread. The line of code unit @index from a location table
 * (Objects/locations.md, 3.11 to 3.15); 0 when unknown. */
guint lw_python_layout_line (const guint8 *table, gsize len, int firstlineno, gssize index);

G_END_DECLS
