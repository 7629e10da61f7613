/* lw-python-private.h: what the files of CPython frames share
 *
 *   lw-python-find    the process's interpreter, found through its
 *                     exported symbols, and its layout
 *   lw-python-stack   reading a thread's Python frames: its thread state,
 *                     its frame chain, its code objects' heads, in as few
 *                     reads as possible
 *   lw-python-code    a code object's name, file and line table, kept in
 *                     a cache, and the tag of a frame's line
 *   lw-python         the Python frames placed among the native ones
 *                     (lw_python_merge()), the public entry points
 * Only these files include this header.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lw-lang-frames.h"
#include "lw-modules.h"
#include "lw-python-layout.h"

G_BEGIN_DECLS

/* lw-python.h's handle, named here too: this header does not include it. */
typedef struct _LwPython LwPython;

/* Bounds: every loop over interpreter memory ends. */
#define LW_PY_MAX_FRAMES       256
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

/* A code object read: an entry of the code cache. */
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

/* A frame of the thread's Python stack, as read. */
typedef struct
{
  uintptr_t code;
  uintptr_t instr;
  uintptr_t tag;
  gboolean  is_entry;       /* the first frame its evaluation loop ran */
  uintptr_t entry_at;       /* 3.12+, an entry frame: its loop's shim frame, on the C stack */
  guint     code_index;     /* its code object among the stack's distinct ones */
} LwPyFrameRead;

/* Per watcher; only the watcher thread touches it. */
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
  LwLangMissing missing;       /* why the last merge kept a Python stack native */
  uintptr_t    *scratch;       /* scratch_len of each */
  gint         *loop_of;       /* per native frame: the entry frame it ran, or -1 */
  guint         scratch_len;
};

/* The interpreter of this process, found once (again after a dlopen). */
typedef struct
{
  const LwPyOffsets *offsets;  /* &layout */
  LwPyOffsets layout;
  uintptr_t runtime;
  uintptr_t code_type;
  uintptr_t unicode_type;
  uintptr_t bytes_type;
  uintptr_t function_type;
  uintptr_t method_type;
  uintptr_t eval_lo;           /* _PyEval_EvalFrameDefault */
  uintptr_t eval_hi;
  uintptr_t text_lo;           /* the executable segments of its module */
  uintptr_t text_hi;
} LwPyInterpreter;

/* Any thread. The process's interpreter, final once found, or NULL
 * (lw_python_init() looks for it). */
const LwPyInterpreter *lw_python_interpreter (void);

/* Any thread, normal context. */
static inline gboolean
lw_python_read (uintptr_t addr, void *buf, gsize len)
{
  return addr != 0 && lw_modules_read_memory (addr, buf, len);
}

/* Any thread, normal context. */
static inline gboolean
lw_python_read_word (uintptr_t addr, uintptr_t *out)
{
  return lw_python_read (addr, out, sizeof *out);
}

/* lw-python-code.c */

/* Watcher thread. Empties a cache entry. */
void       lw_python_code_clear   (LwPyCode              *code);
/* Any thread, normal context. A compact str object's text, or NULL. */
char      *lw_python_read_string  (const LwPyInterpreter *interp,
                                   uintptr_t              object);
/* Watcher thread. 3.11: the read of a code object's cached name's first bytes. */
gboolean   lw_python_name_iovec   (LwPython              *python,
                                   const LwPyInterpreter *interp,
                                   guint                  i,
                                   uintptr_t              code_addr,
                                   struct iovec          *local,
                                   struct iovec          *remote);
/* Watcher thread. The code object at @code_addr, cached or read afresh. */
LwPyCode  *lw_python_code         (LwPython              *python,
                                   const LwPyInterpreter *interp,
                                   uintptr_t              code_addr,
                                   const guint8          *block,
                                   const guint8          *name,
                                   gsize                  name_len);
/* Watcher thread. The tag of @code's frame executing code unit @index. */
uintptr_t  lw_python_code_tag     (LwPyCode              *code,
                                   gssize                 index);

/* lw-python-stack.c */

/* Watcher thread. Reads thread @tid's Python frames into python->frames. */
guint      lw_python_read_frames  (LwPython              *python,
                                   const LwPyInterpreter *interp,
                                   pid_t                  tid);

G_END_DECLS
