/* fuzz-elf.c: the symbolizer's ELF readers on arbitrary bytes
 *
 * Each input is written to a memfd and opened through its /proc/self/fd
 * path, the way the symbolizer opens a module or debug file
 * (lw_elf_file_open()), then read as the symbolizer reads one: its symbol
 * tables into a sorted table, its build-id note, its .gnu_debuglink, its
 * CRC-32. The same bytes are then read from memory, as the vDSO's image
 * is. Corrupt data must give fewer names, never a fault; and whatever
 * table is built must answer a lookup of each of its symbols with that
 * symbol.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-elf-file.h"
#include "lw-symtab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data,
                            size_t         size);

/* The fuzzer's thread. Checks @table's invariants, aborting on a broken
 * one (the fuzzer reports it as a crash). */
static void
lw_fuzz_check_table (const LwSymbolTable *table)
{
  for (gsize i = 0; i < table->n_symbols; i++)
    {
      const LwSymbol *symbol = &table->symbols[i];

      if (i > 0 && table->symbols[i - 1].value >= symbol->value)
        abort ();
      if (lw_symbol_table_lookup (table, symbol->value) != symbol)
        abort ();
    }
  if (table->n_symbols > 0 &&
      lw_symbol_table_find_name (table, table->names + table->symbols[0].name) == NULL)
    abort ();
}

/* The fuzzer's thread. Everything the symbolizer reads from one ELF. */
static void
lw_fuzz_read_elf (Elf *elf)
{
  LwSymbolTable *table;
  const guint8 *build_id;
  gsize build_id_len;
  char *link_name = NULL;
  guint32 link_crc;

  table = lw_symbol_table_new_from_elf (elf, FALSE);
  if (table != NULL)
    {
      lw_fuzz_check_table (table);
      lw_symbol_table_free (table);
    }
  table = lw_symbol_table_new_from_elf (elf, TRUE);
  if (table != NULL)
    lw_symbol_table_free (table);

  build_id = lw_elf_get_build_id (elf, &build_id_len);
  if (build_id != NULL && !lw_elf_has_build_id (elf, build_id, build_id_len))
    abort ();
  if (lw_elf_get_debuglink (elf, &link_name, &link_crc))
    {
      if (link_name[0] == '\0' || strchr (link_name, '/') != NULL)
        abort ();
      g_free (link_name);
    }
}

/* The fuzzer's thread. */
int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  static int fd = -1;
  char path[64];
  char *why = NULL;
  LwElfFile file;
  guint32 crc;
  Elf *elf;
  char *copy;

  lw_elf_init ();
  if (fd < 0)
    fd = memfd_create ("fuzz-elf", MFD_CLOEXEC);
  if (fd < 0 || ftruncate (fd, 0) != 0 ||
      (size > 0 && pwrite (fd, data, size, 0) != (ssize_t) size))
    abort ();

  g_snprintf (path, sizeof path, "/proc/self/fd/%d", fd);
  if (lw_elf_file_open (&file, path, FALSE, &why))
    {
      lw_fuzz_read_elf (file.elf);
      if (!lw_file_crc32 (file.fd, &crc))
        abort ();
      lw_elf_file_close (&file);
    }
  g_free (why);

  /* elf_memory() wants a writable buffer, as for the vDSO's copy. */
  copy = g_memdup2 (data, size);
  elf = elf_memory (copy, size);
  if (elf != NULL && elf_kind (elf) == ELF_K_ELF)
    lw_fuzz_read_elf (elf);
  elf_end (elf);
  g_free (copy);

  return 0;
}
