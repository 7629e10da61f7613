/* lw-demangle.h: C++ names, demangled by the process's own libstdc++
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
 * demangled form of a C++ name when libstdc++ is loaded, else the name
 * itself. Valid as long as @table. */
const char *lw_demangle_display_name (LwSymbolTable  *table,
                                      const LwSymbol *symbol);

G_END_DECLS
