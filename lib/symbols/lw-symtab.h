/* lw-symtab.h: one module's sorted table of function symbols
 *
 * Built once from candidate symbols (lw_candidates_add()), then only read:
 * a lookup reads the page index and bisects the few symbols of one page.
 * When several symbols share an address, the name kept is GLOBAL before
 * WEAK before LOCAL, then without a leading '_', then the shortest. Names
 * are kept without their ELF version suffix ("@@GLIBC_2.17").
 *
 * Thread safety: any thread; a table is immutable once built (but for its
 * demangled names, see lw-demangle.h). Nothing here reads a file.
 */
#pragma once

#include <gelf.h>
#include <glib.h>
#include <stdint.h>

#include "lw-symbols-private.h"

G_BEGIN_DECLS

/* Any thread. Adds one ELF symbol to @candidates (a GArray of LwCandidate)
 * if it names code defined in its module. @name (@name_len bytes, not
 * necessarily NUL-terminated there) must outlive the table built from
 * @candidates. */
void           lw_candidates_add            (GArray         *candidates,
                                             const GElf_Sym *sym,
                                             const char     *name,
                                             gsize           name_len);

/* Any thread. An empty table, counted in the stats. */
LwSymbolTable *lw_symbol_table_alloc        (void);

/* Any thread. A table of @candidates (sorted in place), one symbol per
 * address: the preferred name, the largest size among its aliases. */
LwSymbolTable *lw_symbol_table_new          (GArray         *candidates);

/* Any thread. Frees @data, a LwSymbolTable (a GDestroyNotify). */
void           lw_symbol_table_free         (gpointer        data);

/* Any thread. Records that @table took @bytes more for @n_symbols more. */
void           lw_symbol_table_account      (LwSymbolTable  *table,
                                             gsize           n_symbols,
                                             gsize           bytes);

/* Any thread. Records @path as the separate debug file @table was read
 * from; returns @table. */
LwSymbolTable *lw_symbol_table_set_debug_file (LwSymbolTable *table,
                                               const char    *path);

/* Any thread. The symbol of @table covering the ELF address @value, or
 * NULL when @value is before the first symbol, past the end of the
 * preceding one, or not exactly on a symbol of unknown (0) size. */
const LwSymbol *lw_symbol_table_lookup      (const LwSymbolTable *table,
                                             uintptr_t            value);

/* Any thread. The symbol of @table named @name, or NULL. Linear: for the
 * rare lookup by name. Only the name kept for each address is found. */
const LwSymbol *lw_symbol_table_find_name   (const LwSymbolTable *table,
                                             const char          *name);

/* Any thread. What the live tables take: their count, symbols and bytes. */
void           lw_symbol_tables_get_stats   (gsize *n_tables,
                                             gsize *n_symbols,
                                             gsize *bytes);

G_END_DECLS
