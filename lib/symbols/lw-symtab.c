/* lw-symtab.c: one module's sorted table of function symbols
 *
 * One sorted array of function symbols (module-relative addresses), an
 * index of where each 4 KiB page of addresses starts in it, and one chunk
 * holding their names.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-symtab.h"

#include <stdatomic.h>
#include <string.h>

/* What the live symbol tables take, for lw_symbols_get_stats(). */
static atomic_size_t lw_stats_tables;
static atomic_size_t lw_stats_symbols;
static atomic_size_t lw_stats_bytes;

/* Any thread. */
void
lw_symbol_table_free (gpointer data)
{
  LwSymbolTable *table = data;

  atomic_fetch_sub (&lw_stats_tables, 1);
  atomic_fetch_sub (&lw_stats_symbols, table->n_symbols);
  atomic_fetch_sub (&lw_stats_bytes, table->bytes);
  if (table->demangled != NULL)
    g_hash_table_unref (table->demangled);
  g_free (table->symbols);
  g_free (table->pages);
  g_free (table->names);
  g_free (table->debug_file);
  g_free (table);
}

/* Any thread. */
LwSymbolTable *
lw_symbol_table_alloc (void)
{
  LwSymbolTable *table = g_new0 (LwSymbolTable, 1);

  table->bytes = sizeof *table;
  atomic_fetch_add (&lw_stats_tables, 1);
  atomic_fetch_add (&lw_stats_bytes, table->bytes);
  return table;
}

/* Any thread. */
void
lw_symbol_table_account (LwSymbolTable *table,
                         gsize          n_symbols,
                         gsize          bytes)
{
  table->bytes += bytes;
  atomic_fetch_add (&lw_stats_symbols, n_symbols);
  atomic_fetch_add (&lw_stats_bytes, bytes);
}

/* Any thread. */
LwSymbolTable *
lw_symbol_table_set_debug_file (LwSymbolTable *table,
                                const char    *path)
{
  table->debug_file = g_strdup (path);
  lw_symbol_table_account (table, 0, strlen (path) + 1);
  return table;
}

/* Any thread. */
void
lw_symbol_tables_get_stats (gsize *n_tables,
                            gsize *n_symbols,
                            gsize *bytes)
{
  *n_tables = atomic_load (&lw_stats_tables);
  *n_symbols = atomic_load (&lw_stats_symbols);
  *bytes = atomic_load (&lw_stats_bytes);
}

/* Any thread. Several symbols often share an address (qsort and
 * __GI_qsort, getpid and __getpid, __vdso_time and time). One name is
 * kept, the first in this order: GLOBAL before WEAK before LOCAL binding
 * (the exported name is the one users know), then a name without a
 * leading '_' before one with it, then the shorter, then the
 * alphabetically first so the choice does not depend on the order of the
 * symbol table. */
static int
lw_candidate_compare (gconstpointer a,
                      gconstpointer b)
{
  const LwCandidate *ca = a;
  const LwCandidate *cb = b;
  gboolean a_reserved = ca->name[0] == '_';
  gboolean b_reserved = cb->name[0] == '_';

  if (ca->value != cb->value)
    return ca->value < cb->value ? -1 : 1;
  if (ca->binding_rank != cb->binding_rank)
    return ca->binding_rank < cb->binding_rank ? -1 : 1;
  if (a_reserved != b_reserved)
    return a_reserved ? 1 : -1;
  if (ca->name_len != cb->name_len)
    return ca->name_len < cb->name_len ? -1 : 1;
  return memcmp (ca->name, cb->name, ca->name_len);
}

/* Any thread. Builds @table's page index: pages of 4 KiB, or larger when
 * the symbols are sparse, so that the index has at most 4 entries per
 * symbol. */
static void
lw_symbol_table_index (LwSymbolTable *table)
{
  uintptr_t span;
  gsize s = 0;

  if (table->n_symbols == 0 || table->n_symbols > G_MAXUINT32)
    return;
  span = table->symbols[table->n_symbols - 1].value - table->symbols[0].value;
  table->page_shift = 12;
  while ((span >> table->page_shift) >= 4 * table->n_symbols)
    table->page_shift++;
  table->n_pages = (span >> table->page_shift) + 1;
  table->pages = g_new (guint32, table->n_pages + 1);
  for (gsize p = 0; p <= table->n_pages; p++)
    {
      uintptr_t page_start = table->symbols[0].value + ((uintptr_t) p << table->page_shift);

      while (s < table->n_symbols && (p == table->n_pages || table->symbols[s].value < page_start))
        s++;
      table->pages[p] = (guint32) s;
    }
  lw_symbol_table_account (table, 0, (table->n_pages + 1) * sizeof (guint32));
}

/* Any thread. */
LwSymbolTable *
lw_symbol_table_new (GArray *candidates)
{
  LwSymbolTable *table = lw_symbol_table_alloc ();
  gsize names_len = 0;
  gsize n = 0;

  g_array_sort (candidates, lw_candidate_compare);

  for (guint i = 0; i < candidates->len; i++)
    {
      const LwCandidate *candidate = &g_array_index (candidates, LwCandidate, i);

      if (i == 0 || candidate->value != g_array_index (candidates, LwCandidate, i - 1).value)
        names_len += candidate->name_len + 1;
    }
  /* Name offsets are 32-bit to keep LwSymbol at 16 bytes; no real symbol
   * table comes near 4 GiB of names. */
  if (names_len > G_MAXUINT32)
    return table;

  table->symbols = g_new (LwSymbol, candidates->len);
  table->names = g_malloc (MAX (names_len, 1));
  names_len = 0;

  for (guint i = 0; i < candidates->len; i++)
    {
      const LwCandidate *candidate = &g_array_index (candidates, LwCandidate, i);
      LwSymbol *symbol;

      if (n > 0 && table->symbols[n - 1].value == candidate->value)
        {
          symbol = &table->symbols[n - 1];
          symbol->size = MAX (symbol->size, (guint32) MIN (candidate->size, G_MAXUINT32));
          continue;
        }

      symbol = &table->symbols[n++];
      symbol->value = candidate->value;
      symbol->size = (guint32) MIN (candidate->size, G_MAXUINT32);
      symbol->name = (guint32) names_len;
      memcpy (table->names + names_len, candidate->name, candidate->name_len);
      table->names[names_len + candidate->name_len] = '\0';
      names_len += candidate->name_len + 1;
    }
  table->symbols = g_renew (LwSymbol, table->symbols, n);
  table->n_symbols = n;
  lw_symbol_table_account (table, n, n * sizeof (LwSymbol) + MAX (names_len, 1));
  lw_symbol_table_index (table);

  return table;
}

/* Any thread. */
const LwSymbol *
lw_symbol_table_lookup (const LwSymbolTable *table,
                        uintptr_t            value)
{
  const LwSymbol *symbol;
  uintptr_t page;
  gsize lo;
  gsize hi;

  if (table->pages == NULL || value < table->symbols[0].value)
    return NULL;

  /* Every symbol before pages[page] is below @value, every one from
   * pages[page + 1] on is above it: the last one at or below @value is in
   * between, or is the one just before. */
  page = (value - table->symbols[0].value) >> table->page_shift;
  if (page >= table->n_pages)
    page = table->n_pages - 1;
  lo = table->pages[page];
  hi = table->pages[page + 1];
  while (lo < hi)
    {
      gsize mid = lo + (hi - lo) / 2;

      if (table->symbols[mid].value <= value)
        lo = mid + 1;
      else
        hi = mid;
    }

  symbol = &table->symbols[lo - 1];
  if (symbol->size == 0 ? value == symbol->value : value - symbol->value < symbol->size)
    return symbol;
  return NULL;
}

/* Any thread. */
const LwSymbol *
lw_symbol_table_find_name (const LwSymbolTable *table,
                           const char          *name)
{
  for (gsize i = 0; i < table->n_symbols; i++)
    if (strcmp (table->names + table->symbols[i].name, name) == 0)
      return &table->symbols[i];
  return NULL;
}

/* Any thread. A version suffix ("clock_gettime@@GLIBC_2.17", which the
 * .symtab of a debug file carries) is not part of the name. */
void
lw_candidates_add (GArray         *candidates,
                   const GElf_Sym *sym,
                   const char     *name,
                   gsize           name_len)
{
  LwCandidate candidate;
  unsigned char type = GELF_ST_TYPE (sym->st_info);
  const char *at = memchr (name, '@', name_len);

  if (at != NULL && at > name)
    name_len = at - name;
  if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
      sym->st_shndx == SHN_UNDEF || name_len == 0)
    return;

  switch (GELF_ST_BIND (sym->st_info))
    {
    case STB_GLOBAL:
    case STB_GNU_UNIQUE:
      candidate.binding_rank = 0;
      break;
    case STB_WEAK:
      candidate.binding_rank = 1;
      break;
    default:
      candidate.binding_rank = 2;
      break;
    }
  candidate.value = sym->st_value;
  candidate.size = sym->st_size;
  candidate.name = name;
  candidate.name_len = name_len;
  g_array_append_val (candidates, candidate);
}
