/* lw-python-private.h: what lw-python.c (frames) and lw-python-find.c
 * (the interpreter, found through its symbols) share */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-modules.h"
#include "lw-python-layout.h"

G_BEGIN_DECLS

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

G_END_DECLS
