/* lw-elf-file.c: reading one ELF file
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-elf-file.h"

#include "lw-symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

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

/* Any thread, normal context. */
gboolean
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

  lw_elf_file_close (file);
  return FALSE;
}

/* Any thread. */
void
lw_elf_file_close (LwElfFile *file)
{
  elf_end (file->elf);
  if (file->fd >= 0)
    close (file->fd);
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

/* Any thread, normal context. */
gboolean
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
