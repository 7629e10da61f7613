/* lw-debug-file.c: finding a module's separate debug file
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-debug-file.h"

#include "lw-symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char * const lw_default_debug_roots[] = { "/usr/lib/debug", NULL };

static GMutex  lw_debug_roots_lock;
/* HOLDS: lw_debug_roots_lock. NULL means lw_default_debug_roots. */
static char  **lw_debug_roots;

/* Any thread, normal context. */
void
lw_debug_file_set_roots (const char * const *roots)
{
  char **copy = roots != NULL ? g_strdupv ((char **) roots) : NULL;

  g_mutex_lock (&lw_debug_roots_lock);
  g_strfreev (lw_debug_roots);
  lw_debug_roots = copy;
  g_mutex_unlock (&lw_debug_roots_lock);
}

/* Any thread, normal context. A copy of the debug roots in force. */
static char **
lw_debug_file_dup_roots (void)
{
  char **roots;

  g_mutex_lock (&lw_debug_roots_lock);
  roots = g_strdupv (lw_debug_roots != NULL ? lw_debug_roots : (char **) lw_default_debug_roots);
  g_mutex_unlock (&lw_debug_roots_lock);
  return roots;
}

/* Any thread. TRUE when @elf carries @module's build-id. */
static gboolean
lw_elf_has_module_build_id (Elf      *elf,
                            LwModule *module)
{
  gsize len;
  const guint8 *id = lw_module_get_build_id (module, &len);

  return lw_elf_has_build_id (elf, id, len);
}

/* Any thread, normal context. */
LwSymbolTable *
lw_debug_file_read_by_build_id (LwModule *module)
{
  const char *build_id_hex = lw_module_get_build_id_hex (module);
  LwSymbolTable *table = NULL;
  char **roots;

  /* ".build-id/xx/rest.debug" needs at least one byte for "xx" and one for
   * "rest". */
  if (build_id_hex == NULL || strlen (build_id_hex) < 4)
    return NULL;

  roots = lw_debug_file_dup_roots ();
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
lw_debug_file_read_debuglink_candidate (LwModule         *module,
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

/* Any thread, normal context. */
LwSymbolTable *
lw_debug_file_read_by_debuglink (LwModule        *module,
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

  roots = lw_debug_file_dup_roots ();
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

          table = lw_debug_file_read_debuglink_candidate (module, module_file,
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
