/* lw-symbols.c: naming code addresses, behind a per-thread cache
 *
 * A lookup finds the module in the thread's copy of the module table,
 * the module's table (lw-module-symbols.h, built on first use) and the
 * symbol in it (lw-symtab.h), and keeps the answer in the thread's
 * direct-mapped cache of recent addresses.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-symbols.h"

#include "lw-debug-file.h"
#include "lw-demangle.h"
#include "lw-module-symbols.h"
#include "lw-modules.h"
#include "lw-symtab.h"

#include <stdatomic.h>
#include <string.h>

/* One recent lookup. The module (kept alive by the cache's copy of the
 * module table, or by the entry's own reference) keeps table, symbol and
 * name valid. */
typedef struct
{
  uintptr_t            ip;
  LwModule            *module;      /* (nullable): NULL when no module holds ip */
  LwSymbolTable       *table;       /* the module's, or NULL */
  const LwSymbol      *symbol;      /* in table, or NULL */
  const char          *name;        /* the symbol's name as shown; NULL until needed */
  guint32              name_len;    /* so that a hit copies name unmeasured */
  guint8               used;
  guint8               is_return_address;
  guint8               owns_module; /* the entry holds a reference on module */
} LwCacheEntry;

#define LW_CACHE_BITS 10
#define LW_CACHE_SIZE (1 << LW_CACHE_BITS) /* entries */

typedef struct
{
  uintptr_t start;
  uintptr_t end;
  LwModule *module;
} LwModuleRange;

/* One thread's recent lookups, direct-mapped on (ip, is_return_address),
 * and its copy of the module table, so that a lookup takes no lock of
 * lagwatch's and no atomic operation on a module: lookups are frequent (a
 * sampler resolves the same stacks again and again). Valid for one
 * generation of the module table: flushed when it changes. Only its
 * thread touches it. */
typedef struct
{
  LwCacheEntry   entries[LW_CACHE_SIZE];
  guint64        generation;
  GPtrArray     *modules; /* references on the modules of generation */
  LwModuleRange *ranges;  /* their address ranges, sorted, in one small array */
} LwCache;

static void lw_cache_free (gpointer data);

/* The calling thread's LwCache, created on its first lookup. */
static GPrivate      lw_cache_key = G_PRIVATE_INIT (lw_cache_free);
static atomic_size_t lw_stats_caches;

/* The cache's thread. Empties @entry. */
static void
lw_cache_entry_clear (LwCacheEntry *entry)
{
  if (entry->owns_module)
    lw_module_unref (entry->module);
  *entry = (LwCacheEntry) { 0 };
}

/* The cache's thread, as it exits (GPrivate's destroy notify). */
static void
lw_cache_free (gpointer data)
{
  LwCache *cache = data;

  for (guint i = 0; i < LW_CACHE_SIZE; i++)
    lw_cache_entry_clear (&cache->entries[i]);
  if (cache->modules != NULL)
    g_ptr_array_unref (cache->modules);
  g_free (cache->ranges);
  g_free (cache);
  atomic_fetch_sub (&lw_stats_caches, 1);
}

/* Any thread. The calling thread's cache. */
static LwCache *
lw_cache_get (void)
{
  LwCache *cache = g_private_get (&lw_cache_key);

  if (G_UNLIKELY (cache == NULL))
    {
      cache = g_new0 (LwCache, 1);
      g_private_set (&lw_cache_key, cache);
      atomic_fetch_add (&lw_stats_caches, 1);
    }
  return cache;
}

/* The cache's thread. The slot of (@ip, @is_return_address). */
static LwCacheEntry *
lw_cache_slot (LwCache  *cache,
               uintptr_t ip,
               gboolean  is_return_address)
{
  /* Fibonacci hashing: nearby return addresses spread over the slots. */
  guint64 hash = ((guint64) ip * 2 + (is_return_address ? 1 : 0)) * G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);

  return &cache->entries[hash >> (64 - LW_CACHE_BITS)];
}

/* Any thread, normal context (the cache's thread). Flushes @cache and
 * copies the module table when @generation is newer than the cache; TRUE
 * when the cache is of @generation (it may be of an even newer one: the
 * table may have been rescanned between the caller's look and the copy). */
static gboolean
lw_cache_is_current (LwCache *cache,
                     guint64  generation)
{
  if (generation > cache->generation)
    {
      for (guint i = 0; i < LW_CACHE_SIZE; i++)
        lw_cache_entry_clear (&cache->entries[i]);
      if (cache->modules != NULL)
        g_ptr_array_unref (cache->modules);
      cache->modules = lw_modules_ref_all (&cache->generation);
      cache->ranges = g_renew (LwModuleRange, cache->ranges, MAX (cache->modules->len, 1));
      for (guint i = 0; i < cache->modules->len; i++)
        {
          LwModule *module = g_ptr_array_index (cache->modules, i);

          cache->ranges[i] = (LwModuleRange) {
            lw_module_get_start (module), lw_module_get_end (module), module,
          };
        }
    }
  return generation == cache->generation;
}

/* The cache's thread. The module of @cache's copy of the module table that
 * contains @addr, or NULL. */
static LwModule *
lw_cache_find_module (LwCache  *cache,
                      uintptr_t addr)
{
  guint lo = 0;
  guint hi = cache->modules->len;

  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;

      if (cache->ranges[mid].start <= addr)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo > 0 && addr < cache->ranges[lo - 1].end ? cache->ranges[lo - 1].module : NULL;
}

/* Any thread, normal context (the cache's thread). The entry answering
 * (@ip, @is_return_address): its slot in @cache, up to date, or @scratch
 * when the answer is not cached (the module table changed between two
 * looks, or no module of the cache's copy holds the address); clear
 * @scratch after use. Builds the module's symbol table on first use. */
static LwCacheEntry *
lw_cache_lookup (LwCache      *cache,
                 uintptr_t     ip,
                 gboolean      is_return_address,
                 LwCacheEntry *scratch)
{
  uintptr_t addr = is_return_address && ip > 0 ? ip - 1 : ip;
  LwCacheEntry *slot = lw_cache_slot (cache, ip, is_return_address);
  gboolean current = lw_cache_is_current (cache, lw_modules_get_generation ());
  LwCacheEntry *entry = current ? slot : scratch;
  LwSymbolTable *table = NULL;
  const LwSymbol *symbol = NULL;
  gboolean owns_module = FALSE;
  LwModule *module;

  if (current && slot->used && slot->ip == ip && slot->is_return_address == is_return_address)
    return slot;

  /* The copy knows every module of this generation. An address in none is
   * asked of the table itself, which rescans when the loader keeps no
   * counters. */
  module = current ? lw_cache_find_module (cache, addr) : NULL;
  if (module == NULL)
    {
      module = lw_modules_ref_module (addr);
      owns_module = module != NULL;
      entry = scratch;
    }
  if (module != NULL)
    {
      table = lw_module_symbols_get (module);
      symbol = lw_symbol_table_lookup (table, addr - lw_module_get_bias (module));
    }

  lw_cache_entry_clear (entry);
  *entry = (LwCacheEntry) {
    .ip = ip,
    .module = module,
    .table = table,
    .symbol = symbol,
    .used = TRUE,
    .is_return_address = is_return_address,
    .owns_module = owns_module,
  };
  return entry;
}

/* Any thread. A copy of the @len bytes of @text, NUL-terminated; freed
 * with g_free(). */
static char *
lw_strdup_len (const char *text,
               gsize       len)
{
  char *copy = g_malloc (len + 1);

  memcpy (copy, text, len);
  copy[len] = '\0';
  return copy;
}

/* Any thread, normal context (the cache's thread). A copy of the shown
 * name of @entry's symbol, which must not be NULL; the first time, a C++
 * name is demangled. */
static char *
lw_cache_entry_dup_name (LwCacheEntry *entry)
{
  if (entry->name == NULL)
    {
      entry->name = lw_demangle_display_name (entry->table, entry->symbol);
      entry->name_len = strlen (entry->name);
    }
  return lw_strdup_len (entry->name, entry->name_len);
}

/* Any thread, normal context. */
void
lw_symbols_resolve (uintptr_t ip,
                    gboolean  is_return_address,
                    LwFrame  *frame)
{
  LwCacheEntry scratch = { 0 };
  LwCacheEntry *entry;

  g_return_if_fail (frame != NULL);

  *frame = (LwFrame) { .ip = ip };

  entry = lw_cache_lookup (lw_cache_get (), ip, is_return_address, &scratch);
  if (entry->module != NULL)
    {
      uintptr_t bias = lw_module_get_bias (entry->module);

      frame->module = lw_module_get_path (entry->module);
      frame->build_id = lw_module_get_build_id_hex (entry->module);
      frame->module_offset = ip - bias;
      if (entry->symbol != NULL)
        {
          frame->symbol = lw_cache_entry_dup_name (entry);
          frame->symbol_offset = ip - (bias + entry->symbol->value);
        }
    }
  lw_cache_entry_clear (&scratch);
}

/* Any thread, normal context. */
gboolean
lw_symbols_function_start (uintptr_t  ip,
                           gboolean   is_return_address,
                           uintptr_t *start)
{
  LwCacheEntry scratch = { 0 };
  LwCacheEntry *entry;
  gboolean found;

  g_return_val_if_fail (start != NULL, FALSE);

  entry = lw_cache_lookup (lw_cache_get (), ip, is_return_address, &scratch);
  found = entry->symbol != NULL;
  if (found)
    *start = lw_module_get_bias (entry->module) + entry->symbol->value;
  lw_cache_entry_clear (&scratch);

  return found;
}

/* Any thread, normal context. */
const char *
lw_symbols_get_debug_file (LwModule *module)
{
  g_return_val_if_fail (module != NULL, NULL);

  return lw_module_symbols_get (module)->debug_file;
}

/* Any thread. */
void
lw_frame_clear (LwFrame *frame)
{
  g_return_if_fail (frame != NULL);

  g_free (frame->symbol);
  g_free (frame->file);
  *frame = (LwFrame) { 0 };
}

/* Any thread, normal context. */
void
lw_symbols_set_debug_roots (const char * const *roots)
{
  lw_debug_file_set_roots (roots);
}

/* Any thread. */
void
lw_symbols_get_stats (LwSymbolsStats *stats)
{
  g_return_if_fail (stats != NULL);

  lw_symbol_tables_get_stats (&stats->n_tables, &stats->n_symbols, &stats->table_bytes);
  stats->n_caches = atomic_load (&lw_stats_caches);
  stats->cache_bytes = stats->n_caches * sizeof (LwCache);
}
