/* lw-symbols.h: naming code addresses (module, build-id, offset, symbol)
 *
 * The symbolizer's API. Behind it, per-module sorted symbol tables read
 * with libelf, built lazily the first time an address in the module is
 * resolved (lw-module-symbols.h), searched through an index of 4 KiB pages
 * and a bisection of the page's few symbols (lw-symtab.h). Sources, best
 * first: the .symtab of the debug file found by build-id under the debug
 * roots; the .symtab of the debug file named by the module's
 * .gnu_debuglink, looked for in the module's directory, its .debug/
 * subdirectory and that directory under each debug root, and used only when
 * its CRC-32 matches the link's (and its build-id the module's, when both
 * have one) (lw-debug-file.h); the file's own .symtab; its .dynsym. The
 * vDSO is read from memory. A file on disk whose build-id differs from the
 * mapped image is not trusted (its names would be wrong), nor is one that
 * is missing, corrupt, or not a regular file (a FIFO planted at a debug
 * file's path is skipped, never waited on: lw-elf-file.h): such a module
 * is named from the .dynsym of its mapped image, read through its dynamic
 * section (lw-image-symbols.h), so its static functions get module +
 * offset only. When several symbols share an address, the name kept is
 * GLOBAL before WEAK before LOCAL, then without a leading '_', then the
 * shortest. Names are shown without their ELF version suffix ("@@GLIBC_2.17")
 * and, for C++ names ("_Z..."), demangled by the __cxa_demangle of the
 * libstdc++.so.6 already loaded in the process, if any (lw-demangle.h);
 * without it they stay mangled.
 *
 * Lookups go through a cache per thread (direct-mapped, 1024 entries keyed
 * by address and is-return-address, about 56 KiB, freed when the thread
 * exits), flushed whenever the module table changes (dlopen, dlclose), so
 * the frames a sampler sees again and again cost a compare, a look at the
 * loader's load/unload counters and the copies of the strings. A lookup in
 * a module whose table is built takes no lock of lagwatch's unless the
 * module table changed.
 *
 * Thread safety: any thread, normal context (never the watched thread,
 * never a signal handler): building a module's table opens files and may
 * take milliseconds. Internally locked.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-modules.h"

G_BEGIN_DECLS

/* One symbolized frame; it outlives the module it names. @module and
 * @build_id are interned (g_intern_string(): one copy per module for the
 * life of the process, so the frames of a sampled stack cost no copies);
 * @symbol and @file are owned by the frame, g_free'd by lw_frame_clear(). */
typedef struct
{
  uintptr_t ip;            /* the address as captured */
  const char *module;      /* absolute path of the module, "[vdso]", or NULL if none */
  const char *build_id;    /* lowercase hex, or NULL when the module has none */
  uintptr_t module_offset; /* ip - load bias: the ELF virtual address in the module */
  char     *symbol;        /* function name, or NULL when no symbol covers the address */
  uintptr_t symbol_offset; /* ip - symbol start (0 when symbol is NULL) */
  char     *file;          /* source file from DWARF line info, or NULL (lw-lines.h) */
  guint     line;          /* its line, 0 when file is NULL */
  const char *lang;        /* NULL: native code; "python": a Python frame (lw-python.h) */
  gboolean  inlined;       /* a call inlined into the next frame, which has the same ip:
                            * a logical frame from DWARF (lw_lines_resolve_stack()) */
} LwFrame;

/* Any thread, normal context. Resolves @ip into @frame. @is_return_address
 * is TRUE for every frame but the innermost one of a stack taken at an
 * interrupted PC: a return address is looked up at ip - 1 so that a call at
 * the very end of a function is not blamed on the next one. Offsets are
 * reported for @ip itself. @frame is overwritten, not freed: clear it with
 * lw_frame_clear() before reusing it. */
void  lw_symbols_resolve (uintptr_t ip,
                          gboolean  is_return_address,
                          LwFrame  *frame);

/* Any thread, normal context. Stores in *@start the runtime start address
 * of the symbol covering @ip (ip - 1 when @is_return_address) and returns
 * TRUE; FALSE when no symbol covers it. Allocates nothing once the
 * module's table is built (the first lookup in a module builds it): meant
 * for grouping many samples by function. */
gboolean lw_symbols_function_start (uintptr_t  ip,
                                    gboolean   is_return_address,
                                    uintptr_t *start);

/* Any thread. Frees the strings of @frame and zeroes it. */
void  lw_frame_clear     (LwFrame  *frame);

/* Any thread, normal context. Replaces the list of debug roots searched for
 * ".build-id/xx/rest.debug" files. NULL restores the default
 * ("/usr/lib/debug"). Roots are absolute directories; a root that does not
 * exist is skipped silently. Takes effect for modules whose symbol table is
 * not built yet (tables are built on a module's first lookup and kept). */
void  lw_symbols_set_debug_roots (const char * const *roots);

/* Any thread, normal context. The separate debug file (found by build-id
 * or .gnu_debuglink) that @module's symbols were read from, or NULL when
 * they came from the module's own file or image. Builds the table if
 * needed. Valid while the caller holds its reference on @module. */
const char *lw_symbols_get_debug_file (LwModule *module);

/* What the symbolizer holds in memory (requested sizes, without the
 * allocator's overhead). */
typedef struct
{
  gsize n_tables;    /* symbol tables of modules still referenced */
  gsize n_symbols;   /* their symbols, one per address */
  gsize table_bytes; /* their arrays, page indexes, names, debug file paths,
                      * demangled names */
  gsize n_caches;    /* lookup caches: one per thread that resolved */
  gsize cache_bytes; /* their size (without their copies of the module table) */
} LwSymbolsStats;

/* Any thread. A snapshot of the counters above. */
void  lw_symbols_get_stats (LwSymbolsStats *stats);

G_END_DECLS
