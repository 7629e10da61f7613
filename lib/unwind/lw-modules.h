/* lw-modules.h: the table of loaded ELF modules (executable, libraries, vDSO)
 *
 * Built from dl_iterate_phdr() in normal context, never in a signal handler.
 * It answers two questions for the watcher thread: "which module holds this
 * address, and where is its unwind table" (for the unwinder) and "what is this
 * module's path, bias and build-id" (for the symbolizer and the reports).
 *
 * Thread safety: every function takes the table's own lock (but
 * lw_modules_get_generation(), when nothing changed); call them from any
 * thread in normal context (the watcher thread in practice). Not
 * async-signal-safe.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-memory.h"  /* reading memory, which most users of the table do */

G_BEGIN_DECLS

typedef struct _LwModule LwModule;

/* What the unwinder needs to find the CFI of one address. Plain values copied
 * out of the table, so they stay usable after the table's lock is released. */
typedef struct
{
  uintptr_t start;            /* lowest address of the module's PT_LOAD segments */
  uintptr_t end;              /* one past the highest */
  uintptr_t eh_frame_hdr;     /* runtime address of PT_GNU_EH_FRAME, 0 if none */
  uintptr_t eh_frame_hdr_len; /* its p_memsz */
  uintptr_t dt_pltgot;        /* runtime DT_PLTGOT value, 0 if none ("gp") */
  uintptr_t cfi_lo;           /* the readable PT_LOAD segment holding */
  uintptr_t cfi_hi;           /* .eh_frame_hdr: lw-cfi reads the header and .eh_frame within it */
} LwUnwindTable;

/* Any thread, normal context. Builds the process-wide table on first use. */
void     lw_modules_init                (void);

/* Any thread, normal context. Fills @out for the module containing @addr.
 * Rescans the loaded objects first when dlopen/dlclose happened since the
 * last scan. The loader counts every load and unload (dlpi_adds/dlpi_subs),
 * so an @addr in no known module is only rescanned for when those counters
 * are unavailable: otherwise a miss is final, and the unwinder's probes of
 * stack or JIT addresses do not each cost a full scan. */
gboolean lw_modules_find_unwind_table   (uintptr_t      addr,
                                         LwUnwindTable *out);

/* Any thread, normal context. TRUE when [addr, addr + len) lies inside one
 * mapped PT_LOAD segment of a loaded module (memory the watcher may read). */
gboolean lw_modules_is_readable         (uintptr_t addr,
                                         size_t    len);

/* Any thread, normal context. The bounds [*@lo, *@hi) of the readable
 * PT_LOAD segment of a loaded module that contains @addr; FALSE (and @lo,
 * @hi untouched) when there is none. Lets a caller that reads many words
 * check them against a range it keeps instead of calling
 * lw_modules_is_readable() for each. The range stays valid only until the
 * module is unloaded: keep it no longer than the module is known to stay
 * loaded (the unwinder keeps it for one walk, and reads only modules that
 * hold a frame of the stopped thread's active call chain). */
gboolean lw_modules_readable_range      (uintptr_t  addr,
                                         uintptr_t *lo,
                                         uintptr_t *hi);

/* Any thread, normal context. Rescans first if objects were loaded or
 * unloaded since the last scan (like every lookup), then returns the
 * table's generation: a number, never 0, that changes at every rescan.
 * Whatever a caller derived from the table (a cache of lookups) is still
 * right while the generation it was derived under is current. When nothing
 * changed it costs one dl_iterate_phdr() call to read the loader's
 * counters and takes no lock of the table's. */
guint64  lw_modules_get_generation      (void);

/* The symbolizer's view of one module.
 *
 * A module is reference counted: a reference keeps its description (path,
 * bias, build-id, segments, symbol table) valid after the object is
 * dlclose()d and dropped from the table, but NOT its memory, which may be
 * unmapped at any time. Read the image only inside lw_module_with_image().
 * Everything but the symbol slot is immutable once the module is in the
 * table, so the getters take no lock. */

/* Any thread, normal context. A new reference to the module containing
 * @addr (after the same rescan as lw_modules_find_unwind_table()), or NULL
 * when no loaded object holds @addr. */
LwModule      *lw_modules_ref_module        (uintptr_t addr);

/* Any thread, normal context. After the same rescan as the lookups, a new
 * array holding a reference on every module of the table, sorted by start
 * address, and the table's generation in @generation: a copy that a caller
 * can search without this table's lock while the generation is current.
 * Free it with g_ptr_array_unref(). */
GPtrArray     *lw_modules_ref_all           (guint64   *generation);

/* Any thread, normal context. A new reference to a loaded module whose
 * path's last component is @basename ("libstdc++.so.6"), after the same
 * rescan; NULL when none is loaded. The vDSO is never matched. */
LwModule      *lw_modules_ref_module_by_name (const char *basename);

/* Any thread. Adds a reference to @module, which the caller holds one on. */
LwModule      *lw_module_ref                (LwModule *module);

/* Any thread. Drops a reference from lw_modules_ref_module(),
 * lw_modules_ref_module_by_name() or lw_module_ref(). */
void           lw_module_unref              (LwModule *module);

/* Any thread. The absolute path of the file the loader mapped (the main
 * executable's realpath), or "[vdso]". Interned (g_intern_string()): valid
 * for the life of the process, also after the module is gone. */
const char    *lw_module_get_path           (LwModule *module);

/* Any thread. TRUE for the kernel's vDSO, which has no file on disk. */
gboolean       lw_module_is_vdso            (LwModule *module);

/* Any thread. The load bias: runtime address = bias + ELF virtual address. */
uintptr_t      lw_module_get_bias           (LwModule *module);

/* Any thread. The lowest PT_LOAD address. */
uintptr_t      lw_module_get_start          (LwModule *module);

/* Any thread. One past the highest PT_LOAD address. */
uintptr_t      lw_module_get_end            (LwModule *module);

/* Any thread. The NT_GNU_BUILD_ID note read from memory: its bytes (length
 * in @len) and lowercase hex, or NULL (and 0) when the module has none. */
const guint8  *lw_module_get_build_id       (LwModule *module,
                                             gsize    *len);
/* Interned like the path; NULL when the module has no build-id. */
const char    *lw_module_get_build_id_hex   (LwModule *module);

/* Any thread. Runtime address of PT_DYNAMIC and its p_memsz in @len; 0 when
 * the module has no dynamic section. */
uintptr_t      lw_module_get_dynamic        (LwModule  *module,
                                             uintptr_t *len);

/* Any thread. The runtime address of a d_ptr value from the module's dynamic
 * section. glibc relocates most d_ptr entries in place, but not those of a
 * read-only dynamic section (the vDSO's), so both forms are accepted. */
uintptr_t      lw_module_dynamic_address    (LwModule *module,
                                             uintptr_t d_ptr);

/* Any thread. TRUE when [addr, addr + len) lies in one readable PT_LOAD
 * segment of @module. Says nothing about whether it is still mapped. */
gboolean       lw_module_contains           (LwModule *module,
                                             uintptr_t addr,
                                             size_t    len);

/* Called by lw_module_with_image() while the module cannot be unmapped. */
typedef void (*LwModuleImageFunc)            (LwModule *module,
                                              gpointer  user_data);

/* Any thread, normal context. Calls @func with the module's image pinned:
 * inside dl_iterate_phdr(), so the loader lock is held (other threads'
 * dlopen() waits) and @func must be short and must not dlopen() or
 * dlclose(). The table's own lock is not held. Returns FALSE without
 * calling @func when the module is no longer loaded. */
gboolean       lw_module_with_image         (LwModule         *module,
                                             LwModuleImageFunc func,
                                             gpointer          user_data);

/* Any thread. The symbol table that lw-symbols.c attached to the module, or
 * NULL if none yet. */
gpointer       lw_module_get_symbols        (LwModule *module);

/* Any thread. Attaches @symbols (freed with @destroy when the module is
 * finalized) unless another thread attached a table first, in which case
 * @symbols is destroyed at once. Returns the table now attached. */
gpointer       lw_module_set_symbols        (LwModule      *module,
                                             gpointer       symbols,
                                             GDestroyNotify destroy);

G_END_DECLS
