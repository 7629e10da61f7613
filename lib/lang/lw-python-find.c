/* lw-python-find.c: the process's CPython, found through its exported
 * symbols, and its layout (lw-python.h says what and why) */
#include "lw-python.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <string.h>

#include "lw-python-private.h"
#include "lw-say.h"

static GMutex lw_python_lock;
static LwPyInterpreter lw_python_interp;   /* HOLDS: lw_python_lock until found */
static gint lw_python_found;               /* (atomic) lw_python_interp is final */
static guint64 lw_python_tried_generation; /* HOLDS: lw_python_lock; the module table's then */
static gboolean lw_python_said;            /* HOLDS: lw_python_lock; an unknown layout was reported */

/* Any thread, normal context (dlsym takes the loader's lock). The address
 * of the exported symbol @name, and its size when @size is not NULL. */
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

/* Any thread, normal context. HOLDS: lw_python_lock. Says once why the
 * process's CPython is not read. */
static void
lw_python_refuse (const char *format, ...) G_GNUC_PRINTF (1, 2);

static void
lw_python_refuse (const char *format, ...)
{
  g_autofree char *text = NULL;
  va_list args;

  if (lw_python_said)
    return;
  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  lw_say ("%s: its stacks show interpreter frames, not Python ones", text);
  lw_python_said = TRUE;
}

/* Any thread, normal context. HOLDS: lw_python_lock. The layout of the
 * CPython whose _PyRuntime is at @runtime: published (3.13+), or a table. */
static gboolean
lw_python_find_layout (uintptr_t runtime, guint32 version, LwPyOffsets *layout)
{
  g_autofree guint8 *blob = NULL;
  const LwPyOffsets *table;
  gsize blob_size = lw_python_layout_debug_offsets_size ();
  char why[160];

  /* _PyRuntime is far larger than any form of _Py_DebugOffsets. */
  blob = g_malloc0 (blob_size);
  if (!lw_python_read (runtime, blob, blob_size))
    return FALSE;
  switch (lw_python_layout_from_debug_offsets (blob, blob_size, version, layout, why, sizeof why))
    {
    case LW_PY_LAYOUT_OK:
      return TRUE;
    case LW_PY_LAYOUT_NOT_PUBLISHED:
      break;
    case LW_PY_LAYOUT_UNKNOWN_VERSION:
    case LW_PY_LAYOUT_FREE_THREADED:
    case LW_PY_LAYOUT_INVALID:
    default:
      lw_python_refuse ("CPython %u.%u: %s", version >> 24, (version >> 16) & 0xff, why);
      return FALSE;
    }
  table = lw_python_layout_table (version >> 16);
  if (table == NULL)
    {
      lw_python_refuse ("CPython %u.%u publishes no _Py_DebugOffsets and this lagwatch has no "
                        "table of its layout", version >> 24, (version >> 16) & 0xff);
      return FALSE;
    }
  *layout = *table;
  return TRUE;
}

typedef struct
{
  uintptr_t base;
  uintptr_t lo;
  uintptr_t hi;
} LwPyText;

/* Any thread, normal context: dl_iterate_phdr()'s callback. */
static int
lw_python_text_of (struct dl_phdr_info *info, size_t size, void *data)
{
  LwPyText *text = data;

  if (info->dlpi_addr != text->base)
    return 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];

      if (phdr->p_type != PT_LOAD || !(phdr->p_flags & PF_X))
        continue;
      text->lo = MIN (text->lo, info->dlpi_addr + phdr->p_vaddr);
      text->hi = MAX (text->hi, info->dlpi_addr + phdr->p_vaddr + phdr->p_memsz);
    }
  return 1;
}

/* Any thread, normal context. The executable segments of the module that
 * holds @addr (the interpreter's code: every evaluation loop runs there,
 * even a loop the linker split), in *@lo, *@hi. */
static gboolean
lw_python_text (uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
  struct link_map *map = NULL;
  LwPyText text = { 0, UINTPTR_MAX, 0 };
  Dl_info info;

  if (dladdr1 ((void *) addr, &info, (void **) &map, RTLD_DL_LINKMAP) == 0 || map == NULL)
    return FALSE;
  text.base = map->l_addr;
  dl_iterate_phdr (lw_python_text_of, &text);
  if (text.lo >= text.hi)
    return FALSE;
  *lo = text.lo;
  *hi = text.hi;
  return TRUE;
}

/* Any thread, normal context. HOLDS: lw_python_lock. Looks for a CPython
 * whose layout is known, through the symbols it exports. */
static gboolean
lw_python_find_unlocked (void)
{
  LwPyInterpreter interp = { 0 };
  uintptr_t version_addr, eval;
  guint32 version;
  gsize eval_size = 0;

  if (!lw_python_symbol ("Py_Version", &version_addr, NULL)
      || !lw_python_read (version_addr, &version, sizeof version))
    {
      /* Py_Version appeared in 3.11; older interpreters keep their frames
       * in frame objects, which this file does not read. */
      if (lw_python_symbol ("PyEval_EvalFrameEx", &eval, NULL)
          || lw_python_symbol ("_PyEval_EvalFrameDefault", &eval, NULL))
        lw_python_refuse ("CPython older than 3.11 (no Py_Version): this lagwatch reads 3.11 and later");
      return FALSE;
    }
  if (!lw_python_symbol ("_PyRuntime", &interp.runtime, NULL)
      || !lw_python_find_layout (interp.runtime, version, &interp.layout))
    return FALSE;
  if (!lw_python_symbol ("PyCode_Type", &interp.code_type, NULL)
      || !lw_python_symbol ("PyUnicode_Type", &interp.unicode_type, NULL)
      || !lw_python_symbol ("PyBytes_Type", &interp.bytes_type, NULL)
      || !lw_python_symbol ("PyFunction_Type", &interp.function_type, NULL)
      || !lw_python_symbol ("PyMethod_Type", &interp.method_type, NULL)
      || !lw_python_symbol ("_PyEval_EvalFrameDefault", &interp.eval_lo, &eval_size)
      || eval_size == 0)
    {
      lw_python_refuse ("CPython %u.%u does not export the symbols lagwatch needs "
                        "(_PyEval_EvalFrameDefault and its size, the type objects)",
                        version >> 24, (version >> 16) & 0xff);
      return FALSE;
    }
  interp.eval_hi = interp.eval_lo + eval_size;
  if (!lw_python_text (interp.eval_lo, &interp.text_lo, &interp.text_hi))
    {
      interp.text_lo = 0;
      interp.text_hi = UINTPTR_MAX;
    }
  lw_python_interp = interp;
  lw_python_interp.offsets = &lw_python_interp.layout;
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

const LwPyInterpreter *
lw_python_interpreter (void)
{
  return g_atomic_int_get (&lw_python_found) ? &lw_python_interp : NULL;
}
