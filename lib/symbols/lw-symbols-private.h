/* lw-symbols-private.h: the types the symbolizer's files share
 *
 * The symbolizer is seven files, one concept each:
 *   lw-symtab          one module's sorted table of function symbols
 *   lw-elf-file        reading one ELF file: opened without blocking, its
 *                      symbol sections, build-id, .gnu_debuglink, CRC-32
 *   lw-debug-file      finding a module's separate debug file (build-id
 *                      path under the debug roots, .gnu_debuglink)
 *   lw-image-symbols   symbols read from memory (a mapped .dynsym, the vDSO)
 *   lw-module-symbols  a module's table, from its best source, built once
 *   lw-demangle        C++ names, by the process's own libstdc++
 *   lw-symbols         the lookup API and its per-thread cache
 * Only these files include this header.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct
{
  uintptr_t value; /* st_value: the ELF virtual address (runtime - bias) */
  guint32   size;  /* st_size; 0 matches the exact address only */
  guint32   name;  /* offset of the name in LwSymbolTable.names */
} LwSymbol;

/* One module's function symbols. Immutable once built, but for
 * @demangled, which lw-demangle.c fills under its own lock. */
typedef struct
{
  LwSymbol   *symbols;    /* sorted by value, one per address */
  gsize       n_symbols;  /* 0 when the module has no usable symbols */
  /* Where to start bisecting: pages[p] is the index of the first symbol at
   * or past symbols[0].value + (p << page_shift); n_pages + 1 entries, the
   * last n_symbols. A lookup bisects a few symbols instead of them all. */
  guint32    *pages;
  gsize       n_pages;
  guint       page_shift;
  char       *names;      /* every name, NUL-terminated, in one chunk */
  char       *debug_file; /* the separate debug file read, or NULL */
  gsize       bytes;      /* what the table takes, for lw_symbols_get_stats() */
  /* HOLDS: lw-demangle.c's lock. Name offset -> demangled name (malloc'd
   * by __cxa_demangle), filled as C++ names are looked up; NULL until
   * then. */
  GHashTable *demangled;
} LwSymbolTable;

/* A symbol while a table is being built: its name still points into the
 * ELF data it was read from, which must outlive lw_symbol_table_new(). The
 * name is not NUL-terminated at name_len when a version suffix was cut. */
typedef struct
{
  uintptr_t   value;
  guint64     size;
  const char *name;
  gsize       name_len;
  guint       binding_rank; /* 0 GLOBAL, 1 WEAK, 2 LOCAL */
} LwCandidate;

G_END_DECLS
