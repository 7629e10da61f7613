/* lw-module-path.c: the path a loaded object is reported and opened under
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-module-path.h"
#include "lw-proc.h"

#include <elf.h>
#include <stdlib.h>
#include <sys/auxv.h>

/* Inside dl_iterate_phdr(). */
gboolean
lw_module_info_is_vdso (const struct dl_phdr_info *info)
{
  uintptr_t vdso = getauxval (AT_SYSINFO_EHDR);

  return vdso != 0 &&
         (uintptr_t) info->dlpi_phdr == vdso + ((const ElfW(Ehdr) *) vdso)->e_phoff;
}

/* Any thread. The main executable's path, computed once: it cannot
 * change, and realpath() costs system calls. */
static const char *
lw_modules_exe_path (void)
{
  static char *exe_path;

  if (g_once_init_enter (&exe_path))
    {
      g_autofree char *link = g_strconcat (lw_proc_self (), "/exe", NULL);
      char *path = realpath (link, NULL);

      /* realpath fails when the executable was deleted; the link still
       * names it, followed by " (deleted)". */
      if (path == NULL)
        path = g_file_read_link (link, NULL);
      if (path == NULL)
        path = g_strdup ("/proc/self/exe");
      g_once_init_leave (&exe_path, path);
    }
  return exe_path;
}

/* Inside dl_iterate_phdr(). */
char *
lw_module_info_path (const struct dl_phdr_info *info)
{
  char *path;

  if (lw_module_info_is_vdso (info))
    return g_strdup ("[vdso]");

  /* glibc names the main program "" in its link map. */
  if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
    return g_strdup (lw_modules_exe_path ());

  if (g_path_is_absolute (info->dlpi_name))
    return g_strdup (info->dlpi_name);

  /* dlopen("./libx.so") keeps the relative name; resolve it now, hoping
   * the working directory has not changed since. */
  path = realpath (info->dlpi_name, NULL);
  return path != NULL ? path : g_strdup (info->dlpi_name);
}
