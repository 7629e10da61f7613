/* lw-image-symbols.c: symbols read from a module's memory, not its file
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-image-symbols.h"

#include "lw-elf-file.h"
#include "lw-symtab.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

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
lw_image_read_dynsym (LwModule *module,
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
lw_image_copy_vdso (LwModule *module,
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

/* Any thread, normal context. Read with libelf from a copy of the image. */
LwSymbolTable *
lw_image_symbols_read_vdso (LwModule *module,
                            char    **why)
{
  LwSymbolTable *table = NULL;
  GBytes *image = NULL;
  gconstpointer data;
  gsize size;
  Elf *elf;

  lw_elf_init ();
  if (!lw_module_with_image (module, lw_image_copy_vdso, &image) || image == NULL)
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

/* Any thread, normal context. */
LwSymbolTable *
lw_image_symbols_read_dynsym (LwModule *module)
{
  LwSymbolTable *table = NULL;

  lw_module_with_image (module, lw_image_read_dynsym, &table);
  return table;
}
