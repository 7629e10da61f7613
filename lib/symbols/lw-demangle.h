/* lw-demangle.h: C++ names, demangled by the process's own libstdc++;
 * Rust names, by libiberty (linked in, LGPL-2.1+)
 *
 * A Rust name, legacy ("_ZN...17h<16 hex>E") or v0 ("_R..."), is shown
 * as rustfilt shows it, without the hash, by libiberty's Rust demangler
 * (libiberty-dev's static library, built position-independent).
 *
 * A C++ name ("_Z...") is shown demangled by the __cxa_demangle of the
 * libstdc++.so.6 already loaded in the process, if any, found in its
 * symbol table (never with dlsym(): the stopped thread may hold the loader
 * lock); without it, names stay mangled. Each name is demangled once per
 * table and kept with it.
 *
 * Thread safety: any thread, normal context. Internally locked.
 */
#pragma once

#include "lw-symbols-private.h"

G_BEGIN_DECLS

/* Any thread, normal context. The name shown for @symbol of @table: the
 * demangled form of a Rust name, or of a C++ name when libstdc++ is
 * loaded, else the name itself. Valid as long as @table. */
const char *lw_demangle_display_name (LwSymbolTable  *table,
                                      const LwSymbol *symbol);

/* Any thread, normal context. @name demangled as above (g_free() it), or
 * NULL when it is neither a Rust name nor a C++ name libstdc++ reads. */
char *lw_demangle_name (const char *name);

G_END_DECLS
