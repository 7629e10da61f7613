/* lw-module-symbols.c: a module's symbol table, from its best source
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-module-symbols.h"

#include "lw-debug-file.h"
#include "lw-elf-file.h"
#include "lw-image-symbols.h"
#include "lw-symtab.h"

/* Any thread, normal context. The table from @module's own file: the
 * debug file its .gnu_debuglink names, else its .symtab, else its .dynsym;
 * NULL with the reason in @why when the file cannot be trusted or has no
 * function symbols. */
static LwSymbolTable *
lw_module_symbols_read_file (LwModule *module,
                             char    **why)
{
  const char *path = lw_module_get_path (module);
  const char *build_id_hex = lw_module_get_build_id_hex (module);
  LwSymbolTable *table = NULL;
  const guint8 *build_id;
  gsize build_id_len;
  LwElfFile file;

  if (!lw_elf_file_open (&file, path, FALSE, why))
    return NULL;

  build_id = lw_module_get_build_id (module, &build_id_len);
  if (build_id_hex != NULL && !lw_elf_has_build_id (file.elf, build_id, build_id_len))
    *why = g_strdup_printf ("%s: build-id differs from the loaded module's %s",
                            path, build_id_hex);
  else if ((table = lw_debug_file_read_by_debuglink (module, &file)) != NULL)
    ;
  else if ((table = lw_symbol_table_new_from_elf (file.elf, FALSE)) == NULL)
    *why = g_strdup_printf ("%s: no function symbols", path);

  lw_elf_file_close (&file);
  return table;
}

/* Any thread, normal context. Builds @module's table from the best source;
 * an empty table when none has symbols. */
static LwSymbolTable *
lw_module_symbols_read (LwModule *module)
{
  const char *path = lw_module_get_path (module);
  LwSymbolTable *table = NULL;
  char *why = NULL;

  if (lw_module_is_vdso (module))
    {
      table = lw_image_symbols_read_vdso (module, &why);
      if (table == NULL)
        g_debug ("No symbols for %s: %s", path, why);
    }
  else
    {
      table = lw_debug_file_read_by_build_id (module);
      if (table == NULL)
        table = lw_module_symbols_read_file (module, &why);
      if (table == NULL)
        {
          table = lw_image_symbols_read_dynsym (module);
          g_debug ("%s; %s", why,
                   table != NULL ? "using the .dynsym of the loaded image" :
                                   "frames get module + offset only");
        }
    }
  g_free (why);

  return table != NULL ? table : lw_symbol_table_alloc ();
}

/* Any thread, normal context. */
LwSymbolTable *
lw_module_symbols_get (LwModule *module)
{
  LwSymbolTable *table = lw_module_get_symbols (module);

  if (table != NULL)
    return table;

  lw_elf_init ();
  return lw_module_set_symbols (module, lw_module_symbols_read (module), lw_symbol_table_free);
}
