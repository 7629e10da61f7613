/* lw-symbols.c: naming code addresses with per-module ELF symbol tables
 *
 * Each module gets, on its first lookup, one sorted array of function
 * symbols (module-relative addresses), an index of where each 4 KiB page
 * of addresses starts in it, and one chunk holding their names, attached
 * to the module so that it lives exactly as long as the module stays
 * loaded. A lookup reads the index and bisects the few symbols of one
 * page, behind a per-thread direct-mapped cache of recent addresses and a
 * per-thread copy of the module table.
 *
 * Sources, best first: the build-id debug file's .symtab under each debug
 * root, the .gnu_debuglink file's .symtab, the module file's .symtab, its
 * .dynsym. A file is used only when its build-id equals the one in memory
 * (and a debuglink file only when its CRC matches too); otherwise (file
 * replaced by an upgrade, deleted, unreadable, corrupt) the .dynsym of the
 * mapped image is read through its dynamic section, so no name ever comes
 * from the wrong file. The vDSO has no file: its image is copied from memory
 * and read with libelf.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-symbols.h"

#include "lw-modules.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct
{
  uintptr_t value; /* st_value: the ELF virtual address (runtime - bias) */
  guint32   size;  /* st_size; 0 matches the exact address only */
  guint32   name;  /* offset of the name in LwSymbolTable.names */
} LwSymbol;

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
  gsize       bytes;      /* what the above took, for lw_symbols_get_stats() */
  /* HOLDS: lw_symbols_lock. Name offset -> demangled name (malloc'd by
   * __cxa_demangle), filled as C++ names are looked up; NULL until then. */
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

typedef char *(*LwCxaDemangle) (const char *mangled,
                                char       *buffer,
                                size_t     *length,
                                int        *status);

static const char * const lw_default_debug_roots[] = { "/usr/lib/debug", NULL };

static GMutex  lw_symbols_lock;
/* HOLDS: lw_symbols_lock. NULL means lw_default_debug_roots. */
static char  **lw_symbols_debug_roots;
/* HOLDS: lw_symbols_lock. libstdc++'s module (owned) and the runtime
 * address of its __cxa_demangle, found in its symbol table; the module is
 * kept to tell whether the libstdc++ loaded now is still that one. */
static LwModule *lw_demangler_module;
static uintptr_t lw_demangler_address;

static void lw_cache_free (gpointer data);

/* The calling thread's LwCache, created on its first lookup. */
static GPrivate      lw_cache_key = G_PRIVATE_INIT (lw_cache_free);
static atomic_size_t lw_stats_caches;

/* What the live symbol tables take, for lw_symbols_get_stats(). */
static atomic_size_t lw_stats_tables;
static atomic_size_t lw_stats_symbols;
static atomic_size_t lw_stats_bytes;

/* Any thread. */
static void
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

/* Any thread. An empty table, counted in the stats. */
static LwSymbolTable *
lw_symbol_table_alloc (void)
{
  LwSymbolTable *table = g_new0 (LwSymbolTable, 1);

  table->bytes = sizeof *table;
  atomic_fetch_add (&lw_stats_tables, 1);
  atomic_fetch_add (&lw_stats_bytes, table->bytes);
  return table;
}

/* Any thread. Records that @table took @bytes more for @n_symbols more. */
static void
lw_symbol_table_account (LwSymbolTable *table,
                         gsize          n_symbols,
                         gsize          bytes)
{
  table->bytes += bytes;
  atomic_fetch_add (&lw_stats_symbols, n_symbols);
  atomic_fetch_add (&lw_stats_bytes, bytes);
}

/* Several symbols often share an address (qsort and __GI_qsort, getpid and
 * __getpid, __vdso_time and time). One name is kept, the first in this
 * order: GLOBAL before WEAK before LOCAL binding (the exported name is the
 * one users know), then a name without a leading '_' before one with it,
 * then the shorter, then the alphabetically first so the choice does not
 * depend on the order of the symbol table. */
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

/* Any thread. Sorts @candidates and keeps one symbol per address, the
 * largest size among its aliases (they name the same code). */
static LwSymbolTable *
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

/* Any thread. The symbol of @table covering the ELF address @value, or
 * NULL when @value is before the first symbol, past the end of the
 * preceding one, or not exactly on a symbol of unknown (0) size. */
static const LwSymbol *
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

/* Any thread. The symbol of @table named @name, or NULL. Linear: for the
 * rare lookup by name. Only the name kept for each address is found. */
static const LwSymbol *
lw_symbol_table_find_name (const LwSymbolTable *table,
                           const char          *name)
{
  for (gsize i = 0; i < table->n_symbols; i++)
    if (strcmp (table->names + table->symbols[i].name, name) == 0)
      return &table->symbols[i];
  return NULL;
}

/* Any thread. Adds one ELF symbol to @candidates if it names code defined
 * in this module. A version suffix ("clock_gettime@@GLIBC_2.17", which
 * the .symtab of a debug file carries) is not part of the name. */
static void
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

/* Any thread. Adds the functions of every @type section (SHT_SYMTAB or
 * SHT_DYNSYM) of @elf; returns how many were added. */
static guint
lw_elf_add_functions (Elf       *elf,
                      GElf_Word  type,
                      GArray    *candidates)
{
  Elf_Scn *scn = NULL;
  guint before = candidates->len;

  while ((scn = elf_nextscn (elf, scn)) != NULL)
    {
      GElf_Shdr shdr;
      Elf_Data *data;

      if (gelf_getshdr (scn, &shdr) == NULL || shdr.sh_type != type ||
          shdr.sh_entsize == 0 || (data = elf_getdata (scn, NULL)) == NULL)
        continue;

      for (gsize i = 0; i < shdr.sh_size / shdr.sh_entsize; i++)
        {
          GElf_Sym sym;
          const char *name;

          if (gelf_getsym (data, (int) i, &sym) == NULL)
            break;
          name = elf_strptr (elf, shdr.sh_link, sym.st_name);
          if (name != NULL)
            lw_candidates_add (candidates, &sym, name, strlen (name));
        }
    }
  return candidates->len - before;
}

/* Any thread. A table from @elf's .symtab, or from its .dynsym when it has
 * no .symtab functions and @symtab_only is FALSE; NULL when neither has
 * any. */
static LwSymbolTable *
lw_symbol_table_new_from_elf (Elf     *elf,
                              gboolean symtab_only)
{
  GArray *candidates = g_array_new (FALSE, FALSE, sizeof (LwCandidate));
  LwSymbolTable *table = NULL;

  if (lw_elf_add_functions (elf, SHT_SYMTAB, candidates) == 0 && !symtab_only)
    lw_elf_add_functions (elf, SHT_DYNSYM, candidates);
  if (candidates->len > 0)
    table = lw_symbol_table_new (candidates);
  g_array_unref (candidates);

  return table;
}

/* Any thread. The NT_GNU_BUILD_ID note of @elf (its bytes, valid while
 * @elf is open, and their count in @len), or NULL when it has none. */
static const guint8 *
lw_elf_get_build_id (Elf   *elf,
                     gsize *len)
{
  Elf_Scn *scn = NULL;

  while ((scn = elf_nextscn (elf, scn)) != NULL)
    {
      GElf_Shdr shdr;
      GElf_Nhdr nhdr;
      Elf_Data *data;
      size_t offset = 0;
      size_t next;
      size_t name_offset;
      size_t desc_offset;

      if (gelf_getshdr (scn, &shdr) == NULL || shdr.sh_type != SHT_NOTE ||
          (data = elf_getdata (scn, NULL)) == NULL)
        continue;

      while ((next = gelf_getnote (data, offset, &nhdr, &name_offset, &desc_offset)) > 0)
        {
          const guint8 *base = data->d_buf;

          if (nhdr.n_type == NT_GNU_BUILD_ID &&
              nhdr.n_namesz == sizeof ELF_NOTE_GNU &&
              memcmp (base + name_offset, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU) == 0)
            {
              *len = nhdr.n_descsz;
              return base + desc_offset;
            }
          offset = next;
        }
    }
  *len = 0;
  return NULL;
}

/* Any thread. TRUE when @elf carries an NT_GNU_BUILD_ID note equal to
 * @module's. */
static gboolean
lw_elf_has_module_build_id (Elf      *elf,
                            LwModule *module)
{
  gsize module_len;
  const guint8 *module_id = lw_module_get_build_id (module, &module_len);
  gsize len;
  const guint8 *id = lw_elf_get_build_id (elf, &len);

  return id != NULL && module_id != NULL && len == module_len &&
         memcmp (id, module_id, len) == 0;
}

/* An ELF file open for reading. */
typedef struct
{
  int  fd;
  Elf *elf;
} LwElfFile;

/* Any thread, normal context. Opens @path as an ELF file with section
 * headers; FALSE with the reason in @why (left NULL when @path does not
 * exist and @missing_ok: an absent debug file is the common case, not a
 * problem). */
static gboolean
lw_elf_file_open (LwElfFile  *file,
                  const char *path,
                  gboolean    missing_ok,
                  char      **why)
{
  size_t n_sections = 0;

  *file = (LwElfFile) { -1, NULL };
  file->fd = open (path, O_RDONLY | O_CLOEXEC);
  if (file->fd < 0)
    {
      int saved_errno = errno;

      if (!(missing_ok && (saved_errno == ENOENT || saved_errno == ENOTDIR)))
        *why = g_strdup_printf ("%s: %s", path, g_strerror (saved_errno));
      return FALSE;
    }

  /* ELF_C_READ reads the sections it is asked for with pread(): a file
   * truncated under us gives an error, not the SIGBUS of a mapping. */
  file->elf = elf_begin (file->fd, ELF_C_READ, NULL);
  if (file->elf == NULL)
    *why = g_strdup_printf ("%s: %s", path, elf_errmsg (-1));
  else if (elf_kind (file->elf) != ELF_K_ELF)
    *why = g_strdup_printf ("%s: not an ELF file", path);
  else if (elf_getshdrnum (file->elf, &n_sections) != 0 || n_sections == 0)
    *why = g_strdup_printf ("%s: no section headers", path);
  else
    return TRUE;

  elf_end (file->elf);
  close (file->fd);
  *file = (LwElfFile) { -1, NULL };
  return FALSE;
}

/* Any thread. */
static void
lw_elf_file_close (LwElfFile *file)
{
  elf_end (file->elf);
  if (file->fd >= 0)
    close (file->fd);
  *file = (LwElfFile) { -1, NULL };
}

/* Any thread. The CRC-32 of zlib and of .gnu_debuglink (reflected
 * polynomial 0xedb88320) of @len bytes, continuing from @crc (0 to start). */
static guint32
lw_crc32_update (guint32       crc,
                 const guint8 *data,
                 gsize         len)
{
  static guint32 table[256];
  static gsize table_ready;

  if (g_once_init_enter (&table_ready))
    {
      for (guint32 i = 0; i < 256; i++)
        {
          guint32 c = i;

          for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
          table[i] = c;
        }
      g_once_init_leave (&table_ready, 1);
    }

  crc = ~crc;
  for (gsize i = 0; i < len; i++)
    crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* Any thread, normal context. The CRC-32 of the whole file open as @fd,
 * read with pread(); FALSE on a read error. */
static gboolean
lw_file_crc32 (int      fd,
               guint32 *crc)
{
  guint8 *buffer = g_malloc (64 * 1024);
  off_t offset = 0;
  ssize_t n;

  *crc = 0;
  while ((n = pread (fd, buffer, 64 * 1024, offset)) != 0)
    {
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        break;
      *crc = lw_crc32_update (*crc, buffer, n);
      offset += n;
    }
  g_free (buffer);
  return n == 0;
}

/* Any thread. The .gnu_debuglink of @elf: the debug file's name (a file
 * name without directory, copied) and the CRC-32 of its contents; FALSE
 * when @elf has none or a malformed one. */
static gboolean
lw_elf_get_debuglink (Elf      *elf,
                      char    **name,
                      guint32  *crc)
{
  Elf_Scn *scn = NULL;
  size_t shstrndx;
  GElf_Ehdr ehdr;

  if (elf_getshdrstrndx (elf, &shstrndx) != 0 || gelf_getehdr (elf, &ehdr) == NULL)
    return FALSE;

  while ((scn = elf_nextscn (elf, scn)) != NULL)
    {
      GElf_Shdr shdr;
      Elf_Data *data;
      const guint8 *bytes;
      const char *section_name;
      gsize name_len;
      gsize crc_offset;

      if (gelf_getshdr (scn, &shdr) == NULL ||
          (section_name = elf_strptr (elf, shstrndx, shdr.sh_name)) == NULL ||
          strcmp (section_name, ".gnu_debuglink") != 0)
        continue;

      /* The name, NUL-terminated and padded to 4, then the CRC in the
       * file's byte order. */
      if ((data = elf_getdata (scn, NULL)) == NULL || data->d_size < 8)
        return FALSE;
      bytes = data->d_buf;
      name_len = strnlen ((const char *) bytes, data->d_size);
      crc_offset = (name_len + 1 + 3) & ~(gsize) 3;
      /* A name with a '/' would lead the search out of its directories. */
      if (name_len == 0 || crc_offset + 4 > data->d_size ||
          memchr (bytes, '/', name_len) != NULL)
        return FALSE;

      *name = g_strndup ((const char *) bytes, name_len);
      if (ehdr.e_ident[EI_DATA] == ELFDATA2MSB)
        *crc = (guint32) bytes[crc_offset] << 24 | (guint32) bytes[crc_offset + 1] << 16 |
               (guint32) bytes[crc_offset + 2] << 8 | bytes[crc_offset + 3];
      else
        *crc = (guint32) bytes[crc_offset + 3] << 24 | (guint32) bytes[crc_offset + 2] << 16 |
               (guint32) bytes[crc_offset + 1] << 8 | bytes[crc_offset];
      return TRUE;
    }
  return FALSE;
}

/* Any thread, normal context. A copy of the debug roots in force. */
static char **
lw_symbols_dup_debug_roots (void)
{
  char **roots;

  g_mutex_lock (&lw_symbols_lock);
  roots = g_strdupv (lw_symbols_debug_roots != NULL ?
                     lw_symbols_debug_roots : (char **) lw_default_debug_roots);
  g_mutex_unlock (&lw_symbols_lock);
  return roots;
}

/* Inside dl_iterate_phdr() (lw_module_with_image). The number of entries
 * of the dynamic symbol table, which the dynamic section does not state:
 * DT_HASH's nchain, or one past the last symbol reachable from
 * DT_GNU_HASH's buckets. 0 when unknown. */
static gsize
lw_dynsym_count (LwModule *module,
                 uintptr_t hash,
                 uintptr_t gnu_hash)
{
  const guint32 *header;
  const guint32 *buckets;
  const guint32 *chain;
  guint32 n_buckets;
  guint32 sym_offset;
  guint32 last = 0;
  uintptr_t buckets_addr;

  if (hash != 0 && lw_module_contains (module, hash, 2 * sizeof (guint32)))
    return ((const guint32 *) hash)[1];

  if (gnu_hash == 0 || !lw_module_contains (module, gnu_hash, 4 * sizeof (guint32)))
    return 0;
  header = (const guint32 *) gnu_hash;
  n_buckets = header[0];
  sym_offset = header[1];
  buckets_addr = gnu_hash + 4 * sizeof (guint32) + (uintptr_t) header[2] * sizeof (ElfW(Addr));
  if (!lw_module_contains (module, buckets_addr, (size_t) n_buckets * sizeof (guint32)))
    return 0;
  buckets = (const guint32 *) buckets_addr;
  for (guint32 i = 0; i < n_buckets; i++)
    last = MAX (last, buckets[i]);
  if (last < sym_offset)
    return sym_offset;

  /* The chain of the last bucket ends with the highest symbol index: the
   * entry whose low bit is set. */
  chain = buckets + n_buckets;
  for (gsize i = last - sym_offset;; i++)
    {
      if (!lw_module_contains (module, (uintptr_t) &chain[i], sizeof (guint32)))
        return 0;
      if (chain[i] & 1)
        return sym_offset + i + 1;
    }
}

/* Inside dl_iterate_phdr() (lw_module_with_image). Builds the table from
 * the .dynsym of the mapped image, found through PT_DYNAMIC; stores it in
 * *@user_data (a LwSymbolTable **), or leaves NULL. */
static void
lw_symbols_read_image_dynsym (LwModule *module,
                              gpointer  user_data)
{
  LwSymbolTable **out = user_data;
  uintptr_t dynamic_len;
  const ElfW(Dyn) *dyn = (const ElfW(Dyn) *) lw_module_get_dynamic (module, &dynamic_len);
  uintptr_t symtab = 0, strtab = 0, strsz = 0, hash = 0, gnu_hash = 0;
  uintptr_t syment = sizeof (ElfW(Sym));
  GArray *candidates;
  gsize n_symbols;

  for (gsize i = 0; i < dynamic_len / sizeof (ElfW(Dyn)) && dyn[i].d_tag != DT_NULL; i++)
    {
      uintptr_t value = dyn[i].d_un.d_val;

      switch (dyn[i].d_tag)
        {
        case DT_SYMTAB:
          symtab = lw_module_dynamic_address (module, value);
          break;
        case DT_STRTAB:
          strtab = lw_module_dynamic_address (module, value);
          break;
        case DT_HASH:
          hash = lw_module_dynamic_address (module, value);
          break;
        case DT_GNU_HASH:
          gnu_hash = lw_module_dynamic_address (module, value);
          break;
        case DT_STRSZ:
          strsz = value;
          break;
        case DT_SYMENT:
          syment = value;
          break;
        default:
          break;
        }
    }

  if (symtab == 0 || strtab == 0 || strsz == 0 || syment < sizeof (ElfW(Sym)) ||
      !lw_module_contains (module, strtab, strsz))
    return;
  n_symbols = lw_dynsym_count (module, hash, gnu_hash);
  if (n_symbols == 0 || n_symbols > G_MAXSIZE / syment ||
      !lw_module_contains (module, symtab, n_symbols * syment))
    return;

  candidates = g_array_new (FALSE, FALSE, sizeof (LwCandidate));
  for (gsize i = 0; i < n_symbols; i++)
    {
      const ElfW(Sym) *sym = (const ElfW(Sym) *) (symtab + i * syment);
      GElf_Sym gsym = {
        .st_name = sym->st_name,
        .st_info = sym->st_info,
        .st_other = sym->st_other,
        .st_shndx = sym->st_shndx,
        .st_value = sym->st_value,
        .st_size = sym->st_size,
      };
      const char *name;
      gsize name_len;

      if (sym->st_name >= strsz)
        continue;
      name = (const char *) strtab + sym->st_name;
      name_len = strnlen (name, strsz - sym->st_name);
      if (name_len < strsz - sym->st_name)
        lw_candidates_add (candidates, &gsym, name, name_len);
    }
  /* The names point into the image: copy them while it is pinned. */
  if (candidates->len > 0)
    *out = lw_symbol_table_new (candidates);
  g_array_unref (candidates);
}

/* Inside dl_iterate_phdr() (lw_module_with_image). Copies the vDSO's ELF
 * image into *@user_data (a GBytes **) so that libelf can read it after the
 * loader lock is released. */
static void
lw_symbols_copy_vdso_image (LwModule *module,
                            gpointer  user_data)
{
  GBytes **out = user_data;
  uintptr_t ehdr_addr = getauxval (AT_SYSINFO_EHDR);
  uintptr_t page_size = getauxval (AT_PAGESZ);
  const ElfW(Ehdr) *ehdr = (const ElfW(Ehdr) *) ehdr_addr;
  uintptr_t mapped_end;
  uintptr_t size;

  if (ehdr_addr == 0 || page_size == 0 ||
      !lw_module_contains (module, ehdr_addr, sizeof (ElfW(Ehdr))))
    return;

  /* The section headers lie past the PT_LOAD's p_filesz, but the kernel
   * maps the whole vDSO image in whole pages. */
  size = (uintptr_t) ehdr->e_shoff + (uintptr_t) ehdr->e_shnum * ehdr->e_shentsize;
  mapped_end = (lw_module_get_end (module) + page_size - 1) & ~(page_size - 1);
  if (size < sizeof (ElfW(Ehdr)) || size > mapped_end - ehdr_addr)
    return;

  *out = g_bytes_new (ehdr, size);
}

/* Any thread, normal context. The vDSO's table, read with libelf from a
 * copy of its image. */
static LwSymbolTable *
lw_symbol_table_new_from_vdso (LwModule *module,
                               char    **why)
{
  LwSymbolTable *table = NULL;
  GBytes *image = NULL;
  gconstpointer data;
  gsize size;
  Elf *elf;

  if (!lw_module_with_image (module, lw_symbols_copy_vdso_image, &image) || image == NULL)
    {
      *why = g_strdup ("the vDSO image is not readable");
      return NULL;
    }

  /* elf_memory() wants a writable buffer (it may convert data in place):
   * give it the private copy, never the vDSO itself. */
  data = g_bytes_get_data (image, &size);
  elf = elf_memory ((char *) data, size);
  if (elf == NULL)
    *why = g_strdup (elf_errmsg (-1));
  else if (elf_kind (elf) != ELF_K_ELF)
    *why = g_strdup ("not an ELF image");
  else if ((table = lw_symbol_table_new_from_elf (elf, FALSE)) == NULL)
    *why = g_strdup ("no function symbols");

  elf_end (elf);
  g_bytes_unref (image);
  return table;
}

/* Any thread. Records @path as the debug file @table was read from. */
static LwSymbolTable *
lw_symbol_table_set_debug_file (LwSymbolTable *table,
                                const char    *path)
{
  table->debug_file = g_strdup (path);
  lw_symbol_table_account (table, 0, strlen (path) + 1);
  return table;
}

/* Any thread, normal context. The table of the build-id debug file under
 * one of the debug roots, or NULL. */
static LwSymbolTable *
lw_symbol_table_new_from_build_id_file (LwModule *module)
{
  const char *build_id_hex = lw_module_get_build_id_hex (module);
  LwSymbolTable *table = NULL;
  char **roots;

  /* ".build-id/xx/rest.debug" needs at least one byte for "xx" and one for
   * "rest". */
  if (build_id_hex == NULL || strlen (build_id_hex) < 4)
    return NULL;

  roots = lw_symbols_dup_debug_roots ();
  for (guint i = 0; roots[i] != NULL && table == NULL; i++)
    {
      char *path = g_strdup_printf ("%s/.build-id/%.2s/%s.debug",
                                    roots[i], build_id_hex, build_id_hex + 2);
      char *why = NULL;
      LwElfFile file;

      if (lw_elf_file_open (&file, path, TRUE, &why))
        {
          if (!lw_elf_has_module_build_id (file.elf, module))
            why = g_strdup_printf ("%s: build-id differs from the loaded module's %s",
                                   path, build_id_hex);
          else if ((table = lw_symbol_table_new_from_elf (file.elf, TRUE)) == NULL)
            why = g_strdup_printf ("%s: no function symbols", path);
          else
            lw_symbol_table_set_debug_file (table, path);
          lw_elf_file_close (&file);
        }
      if (why != NULL)
        g_debug ("Debug file not used: %s", why);
      g_free (why);
      g_free (path);
    }
  g_strfreev (roots);

  return table;
}

/* Any thread, normal context. The table of the debug file @path named by
 * @module's .gnu_debuglink, or NULL (with the reason in @why unless the
 * file does not exist). The file must have the CRC the link states, and
 * the module's build-id when both have one; @module_file (the module's
 * own file, open) is never taken for its own debug file. */
static LwSymbolTable *
lw_symbol_table_new_from_debuglink_file (LwModule         *module,
                                         const LwElfFile  *module_file,
                                         const char       *path,
                                         guint32           expected_crc,
                                         char            **why)
{
  LwSymbolTable *table = NULL;
  struct stat module_stat;
  struct stat file_stat;
  const guint8 *build_id;
  gsize build_id_len;
  guint32 crc;
  LwElfFile file;

  if (!lw_elf_file_open (&file, path, TRUE, why))
    return NULL;

  build_id = lw_elf_get_build_id (file.elf, &build_id_len);
  if (fstat (module_file->fd, &module_stat) == 0 && fstat (file.fd, &file_stat) == 0 &&
      module_stat.st_dev == file_stat.st_dev && module_stat.st_ino == file_stat.st_ino)
    ; /* The module itself (a link naming the file's own name). */
  else if (!lw_file_crc32 (file.fd, &crc))
    *why = g_strdup_printf ("%s: %s", path, g_strerror (errno));
  else if (crc != expected_crc)
    *why = g_strdup_printf ("%s: CRC %08x, the .gnu_debuglink says %08x",
                            path, crc, expected_crc);
  else if (build_id != NULL && lw_module_get_build_id_hex (module) != NULL &&
           !lw_elf_has_module_build_id (file.elf, module))
    *why = g_strdup_printf ("%s: build-id differs from the loaded module's %s",
                            path, lw_module_get_build_id_hex (module));
  else if ((table = lw_symbol_table_new_from_elf (file.elf, TRUE)) == NULL)
    *why = g_strdup_printf ("%s: no function symbols", path);
  else
    lw_symbol_table_set_debug_file (table, path);

  lw_elf_file_close (&file);
  return table;
}

/* Any thread, normal context. The table of the file @module_file's
 * .gnu_debuglink names, looked for where debuggers look: the module's
 * directory, its .debug/ subdirectory, and that directory under each debug
 * root; the directory both as loaded and with symbolic links resolved.
 * NULL when the module has no link or no candidate is usable. */
static LwSymbolTable *
lw_symbol_table_new_from_debuglink (LwModule        *module,
                                    const LwElfFile *module_file)
{
  const char *path = lw_module_get_path (module);
  LwSymbolTable *table = NULL;
  char *real_path;
  char *dirs[3] = { NULL, NULL, NULL };
  char **roots;
  char *name;
  guint32 crc;

  if (!lw_elf_get_debuglink (module_file->elf, &name, &crc))
    return NULL;

  dirs[0] = g_path_get_dirname (path);
  real_path = realpath (path, NULL);
  if (real_path != NULL)
    {
      dirs[1] = g_path_get_dirname (real_path);
      if (strcmp (dirs[0], dirs[1]) == 0)
        g_clear_pointer (&dirs[1], g_free);
      free (real_path);
    }

  roots = lw_symbols_dup_debug_roots ();
  for (guint d = 0; dirs[d] != NULL && table == NULL; d++)
    {
      GPtrArray *candidates = g_ptr_array_new_with_free_func (g_free);

      g_ptr_array_add (candidates, g_build_filename (dirs[d], name, NULL));
      g_ptr_array_add (candidates, g_build_filename (dirs[d], ".debug", name, NULL));
      for (guint r = 0; roots[r] != NULL; r++)
        g_ptr_array_add (candidates, g_build_filename (roots[r], dirs[d], name, NULL));

      for (guint c = 0; c < candidates->len && table == NULL; c++)
        {
          char *why = NULL;

          table = lw_symbol_table_new_from_debuglink_file (module, module_file,
                                                           g_ptr_array_index (candidates, c),
                                                           crc, &why);
          if (why != NULL)
            g_debug ("Debug file not used: %s", why);
          g_free (why);
        }
      g_ptr_array_unref (candidates);
    }
  g_strfreev (roots);
  g_free (dirs[0]);
  g_free (dirs[1]);
  g_free (name);

  return table;
}

/* Any thread, normal context. The table from @module's own file: the
 * debug file its .gnu_debuglink names, else its .symtab, else its .dynsym;
 * NULL with the reason in @why when the file cannot be trusted or has no
 * function symbols. */
static LwSymbolTable *
lw_symbol_table_new_from_module_file (LwModule *module,
                                      char    **why)
{
  const char *path = lw_module_get_path (module);
  LwSymbolTable *table = NULL;
  LwElfFile file;

  if (!lw_elf_file_open (&file, path, FALSE, why))
    return NULL;

  if (lw_module_get_build_id_hex (module) != NULL && !lw_elf_has_module_build_id (file.elf, module))
    *why = g_strdup_printf ("%s: build-id differs from the loaded module's %s",
                            path, lw_module_get_build_id_hex (module));
  else if ((table = lw_symbol_table_new_from_debuglink (module, &file)) != NULL)
    ;
  else if ((table = lw_symbol_table_new_from_elf (file.elf, FALSE)) == NULL)
    *why = g_strdup_printf ("%s: no function symbols", path);

  lw_elf_file_close (&file);
  return table;
}

/* Any thread, normal context. Builds @module's table from the best source;
 * an empty table when none has symbols, so that the work is not redone. */
static LwSymbolTable *
lw_symbol_table_new_for_module (LwModule *module)
{
  const char *path = lw_module_get_path (module);
  LwSymbolTable *table = NULL;
  char *why = NULL;

  if (lw_module_is_vdso (module))
    {
      table = lw_symbol_table_new_from_vdso (module, &why);
      if (table == NULL)
        g_debug ("No symbols for %s: %s", path, why);
    }
  else
    {
      table = lw_symbol_table_new_from_build_id_file (module);
      if (table == NULL)
        table = lw_symbol_table_new_from_module_file (module, &why);
      if (table == NULL)
        {
          lw_module_with_image (module, lw_symbols_read_image_dynsym, &table);
          g_debug ("%s; %s", why,
                   table != NULL ? "using the .dynsym of the loaded image" :
                                   "frames get module + offset only");
        }
    }
  g_free (why);

  return table != NULL ? table : lw_symbol_table_alloc ();
}

/* Any thread, normal context. @module's table, built on first use. Two
 * threads may build it at once; the first attached wins. */
static LwSymbolTable *
lw_symbols_table_for (LwModule *module)
{
  static gsize libelf_ready;
  LwSymbolTable *table = lw_module_get_symbols (module);

  if (table != NULL)
    return table;

  if (g_once_init_enter (&libelf_ready))
    {
      elf_version (EV_CURRENT);
      g_once_init_leave (&libelf_ready, 1);
    }
  return lw_module_set_symbols (module, lw_symbol_table_new_for_module (module),
                                lw_symbol_table_free);
}

typedef struct
{
  LwCxaDemangle func;
  const char   *mangled;
  char         *demangled; /* (nullable) malloc'd */
} LwDemangleCall;

/* Inside dl_iterate_phdr() (lw_module_with_image): libstdc++ cannot be
 * unloaded while its demangler runs. */
static void
lw_symbols_call_demangler (LwModule *module,
                           gpointer  user_data)
{
  LwDemangleCall *call = user_data;
  int status = -1;

  call->demangled = call->func (call->mangled, NULL, NULL, &status);
  if (status != 0)
    g_clear_pointer (&call->demangled, free);
}

/* Any thread, normal context. @mangled demangled by the __cxa_demangle of
 * the libstdc++ already loaded in the process (malloc'd, free() it), or
 * NULL when libstdc++ is not loaded or the name is not a valid C++ name.
 * The function is found in libstdc++'s own symbol table: dlsym() would
 * take the loader lock, which the stopped thread may hold. */
static char *
lw_symbols_demangle (const char *mangled)
{
  LwModule *stdcxx = lw_modules_ref_module_by_name ("libstdc++.so.6");
  LwDemangleCall call = { NULL, mangled, NULL };
  gboolean known;

  if (stdcxx == NULL)
    return NULL;

  g_mutex_lock (&lw_symbols_lock);
  known = stdcxx == lw_demangler_module;
  if (known)
    call.func = (LwCxaDemangle) lw_demangler_address;
  g_mutex_unlock (&lw_symbols_lock);

  if (!known)
    {
      const LwSymbolTable *table = lw_symbols_table_for (stdcxx);
      const LwSymbol *symbol = lw_symbol_table_find_name (table, "__cxa_demangle");
      uintptr_t address = symbol != NULL ? lw_module_get_bias (stdcxx) + symbol->value : 0;

      g_mutex_lock (&lw_symbols_lock);
      g_clear_pointer (&lw_demangler_module, lw_module_unref);
      lw_demangler_module = lw_module_ref (stdcxx);
      lw_demangler_address = address;
      g_mutex_unlock (&lw_symbols_lock);
      call.func = (LwCxaDemangle) address;
    }

  if (call.func != NULL)
    lw_module_with_image (stdcxx, lw_symbols_call_demangler, &call);
  lw_module_unref (stdcxx);
  return call.demangled;
}

/* Any thread, normal context. The name shown for @symbol of @table: the
 * demangled form of a C++ name ("_Z...") when libstdc++ is loaded, else the
 * name itself. Valid as long as @table. */
static const char *
lw_symbol_table_display_name (LwSymbolTable  *table,
                              const LwSymbol *symbol)
{
  const char *name = table->names + symbol->name;
  const char *shown = NULL;
  char *demangled;

  if (name[0] != '_' || name[1] != 'Z')
    return name;

  g_mutex_lock (&lw_symbols_lock);
  if (table->demangled != NULL)
    shown = g_hash_table_lookup (table->demangled, GUINT_TO_POINTER (symbol->name));
  g_mutex_unlock (&lw_symbols_lock);
  if (shown != NULL)
    return shown;

  demangled = lw_symbols_demangle (name);
  if (demangled == NULL)
    return name;

  g_mutex_lock (&lw_symbols_lock);
  if (table->demangled == NULL)
    table->demangled = g_hash_table_new_full (NULL, NULL, NULL, free);
  shown = g_hash_table_lookup (table->demangled, GUINT_TO_POINTER (symbol->name));
  if (shown == NULL)
    {
      g_hash_table_insert (table->demangled, GUINT_TO_POINTER (symbol->name), demangled);
      lw_symbol_table_account (table, 0, strlen (demangled) + 1);
      shown = demangled;
      demangled = NULL;
    }
  g_mutex_unlock (&lw_symbols_lock);
  free (demangled);

  return shown;
}

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
      table = lw_symbols_table_for (module);
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
      entry->name = lw_symbol_table_display_name (entry->table, entry->symbol);
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

  return lw_symbols_table_for (module)->debug_file;
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
  char **copy = roots != NULL ? g_strdupv ((char **) roots) : NULL;

  g_mutex_lock (&lw_symbols_lock);
  g_strfreev (lw_symbols_debug_roots);
  lw_symbols_debug_roots = copy;
  g_mutex_unlock (&lw_symbols_lock);
}

/* Any thread. */
void
lw_symbols_get_stats (LwSymbolsStats *stats)
{
  g_return_if_fail (stats != NULL);

  stats->n_tables = atomic_load (&lw_stats_tables);
  stats->n_symbols = atomic_load (&lw_stats_symbols);
  stats->table_bytes = atomic_load (&lw_stats_bytes);
  stats->n_caches = atomic_load (&lw_stats_caches);
  stats->cache_bytes = stats->n_caches * sizeof (LwCache);
}
