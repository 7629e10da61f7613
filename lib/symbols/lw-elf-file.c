/* lw-elf-file.c: reading one ELF file, whatever is at its path
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-elf-file.h"

#include "lw-symtab.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Any thread. */
void
lw_elf_init (void)
{
  static gsize ready;

  if (g_once_init_enter (&ready))
    {
      elf_version (EV_CURRENT);
      g_once_init_leave (&ready, 1);
    }
}

/* Any thread. What a file of @mode is, for a message. */
static const char *
lw_file_type_name (mode_t mode)
{
  if (S_ISFIFO (mode))
    return "a FIFO";
  if (S_ISSOCK (mode))
    return "a socket";
  if (S_ISCHR (mode))
    return "a character device";
  if (S_ISBLK (mode))
    return "a block device";
  if (S_ISDIR (mode))
    return "a directory";
  return "not a regular file";
}

/* Any thread, normal context. */
int
lw_open_regular_file (const char *path,
                      gboolean    missing_ok,
                      char      **why)
{
  struct stat st;
  int fd;

  /* O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer,
   * forever. It changes nothing for a regular file. O_NOCTTY: a terminal
   * opened here must not become the process's controlling one. */
  fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    {
      int saved_errno = errno;

      if (!(missing_ok && (saved_errno == ENOENT || saved_errno == ENOTDIR)))
        *why = g_strdup_printf ("%s: %s", path, g_strerror (saved_errno));
      return -1;
    }
  if (fstat (fd, &st) != 0)
    {
      *why = g_strdup_printf ("%s: %s", path, g_strerror (errno));
      close (fd);
      return -1;
    }
  if (!S_ISREG (st.st_mode))
    {
      *why = g_strdup_printf ("%s: %s, skipped", path, lw_file_type_name (st.st_mode));
      close (fd);
      return -1;
    }
  return fd;
}

/* Any thread, normal context. */
gboolean
lw_elf_file_open (LwElfFile  *file,
                  const char *path,
                  gboolean    missing_ok,
                  char      **why)
{
  size_t n_sections = 0;

  *file = (LwElfFile) { -1, NULL };
  file->fd = lw_open_regular_file (path, missing_ok, why);
  if (file->fd < 0)
    return FALSE;
  lw_fd_id_take (file->fd, &file->fd_id);

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

  lw_elf_file_close (file);
  return FALSE;
}

/* Any thread. */
void
lw_elf_file_close (LwElfFile *file)
{
  elf_end (file->elf);
  /* The program may have closed the number and reused it: then it is
   * the program's to close. */
  if (file->fd >= 0)
    lw_fd_close (file->fd, &file->fd_id);
  *file = (LwElfFile) { -1, NULL };
}

/* Any thread. Adds the functions of every @type section (SHT_SYMTAB or
 * SHT_DYNSYM) of @elf; returns how many were added. gelf_getsym() and
 * elf_strptr() check every index and offset against the section read, so
 * a symbol table with a bad size, offset or string table ends early. */
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

      /* gelf_getsym() takes an int index. */
      for (gsize i = 0; i < shdr.sh_size / shdr.sh_entsize && i <= G_MAXINT; i++)
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

/* Any thread. */
LwSymbolTable *
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

/* Any thread. */
const guint8 *
lw_elf_get_build_id (Elf   *elf,
                     gsize *len)
{
  const void *id = NULL;
  ssize_t n = dwelf_elf_gnu_build_id (elf, &id);

  if (n <= 0 || id == NULL)
    {
      *len = 0;
      return NULL;
    }
  *len = (gsize) n;
  return id;
}

/* Any thread. */
gboolean
lw_elf_has_build_id (Elf          *elf,
                     const guint8 *build_id,
                     gsize         len)
{
  gsize elf_len;
  const guint8 *elf_id = lw_elf_get_build_id (elf, &elf_len);

  return elf_id != NULL && build_id != NULL && elf_len == len &&
         memcmp (elf_id, build_id, len) == 0;
}

/* Any thread. */
gboolean
lw_elf_get_debuglink (Elf      *elf,
                      char    **name,
                      guint32  *crc)
{
  GElf_Word link_crc;
  const char *link_name = dwelf_elf_gnu_debuglink (elf, &link_crc);

  if (link_name == NULL || link_name[0] == '\0' || strchr (link_name, '/') != NULL)
    return FALSE;
  *name = g_strdup (link_name);
  *crc = link_crc;
  return TRUE;
}

/* Any thread, normal context. */
gboolean
lw_file_crc32 (int      fd,
               guint32 *crc)
{
  enum { LW_CRC_CHUNK = 64 * 1024 };
  guint8 *buffer = g_malloc (LW_CRC_CHUNK);
  uLong value = crc32 (0, Z_NULL, 0);
  off_t offset = 0;
  ssize_t n;

  while ((n = pread (fd, buffer, LW_CRC_CHUNK, offset)) != 0)
    {
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        break;
      value = crc32 (value, buffer, (uInt) n);
      offset += n;
    }
  g_free (buffer);
  *crc = (guint32) value;
  return n == 0;
}
