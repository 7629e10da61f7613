/* lw-symbols.c: naming code addresses with per-module ELF symbol tables
 *
 * Each module gets, on its first lookup, one sorted array of function
 * symbols (module-relative addresses) and one chunk holding their names,
 * attached to the module so that it lives exactly as long as the module
 * stays loaded. A lookup is a bisection in that array.
 *
 * Sources, best first: the build-id debug file's .symtab under each debug
 * root, the module file's .symtab, its .dynsym. A file is used only when its
 * build-id equals the one in memory; otherwise (file replaced by an upgrade,
 * deleted, unreadable, corrupt) the .dynsym of the mapped image is read
 * through its dynamic section, so no name ever comes from the wrong file.
 * The vDSO has no file: its image is copied from memory and read with libelf.
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
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

typedef struct
{
  uintptr_t value; /* st_value: the ELF virtual address (runtime - bias) */
  guint32   size;  /* st_size; 0 matches the exact address only */
  guint32   name;  /* offset of the name in LwSymbolTable.names */
} LwSymbol;

typedef struct
{
  LwSymbol *symbols;   /* sorted by value, one per address */
  gsize     n_symbols; /* 0 when the module has no usable symbols */
  char     *names;     /* every name, NUL-terminated, in one chunk */
} LwSymbolTable;

/* A symbol while a table is being built: its name still points into the
 * ELF data it was read from, which must outlive lw_symbol_table_new(). */
typedef struct
{
  uintptr_t   value;
  guint64     size;
  const char *name;
  gsize       name_len;
  guint       binding_rank; /* 0 GLOBAL, 1 WEAK, 2 LOCAL */
} LwCandidate;

static const char * const lw_default_debug_roots[] = { "/usr/lib/debug", NULL };

static GMutex  lw_symbols_lock;
/* HOLDS: lw_symbols_lock. NULL means lw_default_debug_roots. */
static char  **lw_symbols_debug_roots;

/* Any thread. */
static void
lw_symbol_table_free (gpointer data)
{
  LwSymbolTable *table = data;

  g_free (table->symbols);
  g_free (table->names);
  g_free (table);
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
  return strcmp (ca->name, cb->name);
}

/* Any thread. Sorts @candidates and keeps one symbol per address, the
 * largest size among its aliases (they name the same code). */
static LwSymbolTable *
lw_symbol_table_new (GArray *candidates)
{
  LwSymbolTable *table = g_new0 (LwSymbolTable, 1);
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
      memcpy (table->names + names_len, candidate->name, candidate->name_len + 1);
      names_len += candidate->name_len + 1;
    }
  table->symbols = g_renew (LwSymbol, table->symbols, n);
  table->n_symbols = n;

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
  gsize lo = 0;
  gsize hi = table->n_symbols;

  while (lo < hi)
    {
      gsize mid = lo + (hi - lo) / 2;

      if (table->symbols[mid].value <= value)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo == 0)
    return NULL;

  symbol = &table->symbols[lo - 1];
  if (symbol->size == 0 ? value == symbol->value : value - symbol->value < symbol->size)
    return symbol;
  return NULL;
}

/* Any thread. Adds one ELF symbol to @candidates if it names code defined
 * in this module. */
static void
lw_candidates_add (GArray         *candidates,
                   const GElf_Sym *sym,
                   const char     *name,
                   gsize           name_len)
{
  LwCandidate candidate;
  unsigned char type = GELF_ST_TYPE (sym->st_info);

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

/* Any thread. TRUE when @elf carries an NT_GNU_BUILD_ID note equal to
 * @build_id. */
static gboolean
lw_elf_has_build_id (Elf          *elf,
                     const guint8 *build_id,
                     gsize         build_id_len)
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
          const char *base = data->d_buf;

          if (nhdr.n_type == NT_GNU_BUILD_ID &&
              nhdr.n_namesz == sizeof ELF_NOTE_GNU &&
              memcmp (base + name_offset, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU) == 0)
            return nhdr.n_descsz == build_id_len &&
                   memcmp (base + desc_offset, build_id, build_id_len) == 0;
          offset = next;
        }
    }
  return FALSE;
}

/* Any thread, normal context. The table read from the ELF file @path, or
 * NULL with the reason in @why (left NULL when @path does not exist and
 * @missing_ok: an absent debug file is the common case, not a problem). */
static LwSymbolTable *
lw_symbol_table_new_from_file (LwModule   *module,
                               const char *path,
                               gboolean    symtab_only,
                               gboolean    missing_ok,
                               char      **why)
{
  LwSymbolTable *table = NULL;
  const guint8 *build_id;
  gsize build_id_len;
  size_t n_sections = 0;
  Elf *elf;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      int saved_errno = errno;

      if (!(missing_ok && (saved_errno == ENOENT || saved_errno == ENOTDIR)))
        *why = g_strdup_printf ("%s: %s", path, g_strerror (saved_errno));
      return NULL;
    }

  /* ELF_C_READ reads the sections it is asked for with pread(): a file
   * truncated under us gives an error, not the SIGBUS of a mapping. */
  elf = elf_begin (fd, ELF_C_READ, NULL);
  build_id = lw_module_get_build_id (module, &build_id_len);
  if (elf == NULL)
    *why = g_strdup_printf ("%s: %s", path, elf_errmsg (-1));
  else if (elf_kind (elf) != ELF_K_ELF)
    *why = g_strdup_printf ("%s: not an ELF file", path);
  else if (elf_getshdrnum (elf, &n_sections) != 0 || n_sections == 0)
    *why = g_strdup_printf ("%s: no section headers", path);
  else if (build_id != NULL && !lw_elf_has_build_id (elf, build_id, build_id_len))
    *why = g_strdup_printf ("%s: build-id differs from the loaded module's %s",
                            path, lw_module_get_build_id_hex (module));
  else if ((table = lw_symbol_table_new_from_elf (elf, symtab_only)) == NULL)
    *why = g_strdup_printf ("%s: no function symbols", path);

  elf_end (elf);
  close (fd);
  return table;
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

/* Any thread, normal context. The table of the build-id debug file under
 * one of the debug roots, or NULL. */
static LwSymbolTable *
lw_symbol_table_new_from_debug_file (LwModule *module)
{
  const char *build_id_hex = lw_module_get_build_id_hex (module);
  LwSymbolTable *table = NULL;
  char **roots;

  /* ".build-id/xx/rest.debug" needs at least one byte for "xx" and one for
   * "rest". */
  if (build_id_hex == NULL || strlen (build_id_hex) < 4)
    return NULL;

  g_mutex_lock (&lw_symbols_lock);
  roots = g_strdupv (lw_symbols_debug_roots != NULL ?
                     lw_symbols_debug_roots : (char **) lw_default_debug_roots);
  g_mutex_unlock (&lw_symbols_lock);

  for (guint i = 0; roots[i] != NULL && table == NULL; i++)
    {
      char *path = g_strdup_printf ("%s/.build-id/%.2s/%s.debug",
                                    roots[i], build_id_hex, build_id_hex + 2);
      char *why = NULL;

      table = lw_symbol_table_new_from_file (module, path, TRUE, TRUE, &why);
      if (why != NULL)
        g_debug ("Debug file not used: %s", why);
      g_free (why);
      g_free (path);
    }
  g_strfreev (roots);

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
      table = lw_symbol_table_new_from_debug_file (module);
      if (table == NULL)
        table = lw_symbol_table_new_from_file (module, path, FALSE, FALSE, &why);
      if (table == NULL)
        {
          lw_module_with_image (module, lw_symbols_read_image_dynsym, &table);
          g_debug ("%s; %s", why,
                   table != NULL ? "using the .dynsym of the loaded image" :
                                   "frames get module + offset only");
        }
    }
  g_free (why);

  return table != NULL ? table : g_new0 (LwSymbolTable, 1);
}

/* Any thread, normal context. @module's table, built on first use. Two
 * threads may build it at once; the first attached wins. */
static const LwSymbolTable *
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

/* Any thread, normal context. */
void
lw_symbols_resolve (uintptr_t ip,
                    gboolean  is_return_address,
                    LwFrame  *frame)
{
  uintptr_t addr = is_return_address && ip > 0 ? ip - 1 : ip;
  const LwSymbolTable *table;
  const LwSymbol *symbol;
  LwModule *module;
  uintptr_t bias;

  g_return_if_fail (frame != NULL);

  *frame = (LwFrame) { .ip = ip };

  module = lw_modules_ref_module (addr);
  if (module == NULL)
    return;

  bias = lw_module_get_bias (module);
  frame->module = g_strdup (lw_module_get_path (module));
  frame->build_id = g_strdup (lw_module_get_build_id_hex (module));
  frame->module_offset = ip - bias;

  table = lw_symbols_table_for (module);
  symbol = lw_symbol_table_lookup (table, addr - bias);
  if (symbol != NULL)
    {
      frame->symbol = g_strdup (table->names + symbol->name);
      frame->symbol_offset = ip - (bias + symbol->value);
    }

  lw_module_unref (module);
}

/* Any thread. */
void
lw_frame_clear (LwFrame *frame)
{
  g_return_if_fail (frame != NULL);

  g_free (frame->module);
  g_free (frame->build_id);
  g_free (frame->symbol);
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
