/* lw-lines-image.c: a debug file's line sections, inflated in memory
 *
 * A debug file's DWARF sections are mostly compressed (Debian's
 * libc6-dbg: 4.0 MB on disk, .debug_info alone 5.8 MB once inflated), and
 * libdw inflates every compressed section it knows into malloc()ed memory
 * at dwarf_begin(), .debug_loclists included, besides mapping the whole
 * file. So the sections a line lookup reads (lw_lines_sections) are
 * inflated here instead, streamed from the file with pread(), into one
 * anonymous mapping laid out as a small ELF image that libdw reads in
 * place (elf_memory()): nothing else is inflated, nothing of the file is
 * mapped, and closing it gives every byte back (munmap(), where memory
 * freed with free() may stay with the process). .debug_info and
 * .debug_line are filled one unit at a time, the units of the addresses
 * looked up (lw_lines_cu_die(), through .debug_aranges, and
 * lw_lines_fill_unit()): the rest of their pages is never touched. Files
 * whose DWARF sections are not compressed are opened by libdw directly
 * (lw-lines-dwarf.c).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-lines-private.h"

#ifdef LW_HAVE_LIBDW

#include <dwarf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

/* The sections a line lookup reads: the compile units (found through
 * .debug_aranges), their abbreviations, strings, line tables and address
 * ranges (inlined calls' scopes). Not the location lists, frame tables
 * nor macros. */
static const char *const lw_lines_sections[] = {
  ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str",
  ".debug_aranges", ".debug_ranges", ".debug_rnglists", ".debug_addr",
  ".debug_str_offsets",
};
/* An image larger than this is refused: corrupt compression headers. */
#define LW_LINES_MAX_IMAGE ((gsize) 1 << 30)
/* Compressed bytes read from the file at a time. */
#define LW_LINES_READ_CHUNK (64 * 1024)

/* HOLDS: lw_lines_lock. Reads @len bytes at @offset of @fd into @buf. */
static gboolean
lw_lines_pread_all (int fd, void *buf, gsize len, guint64 offset)
{
  guint8 *at = buf;

  while (len > 0)
    {
      ssize_t n = pread (fd, at, MIN (len, (gsize) G_MAXSSIZE), (off_t) offset);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      at += n;
      len -= n;
      offset += n;
    }
  return TRUE;
}

/* HOLDS: lw_lines_lock. Inflates the zlib stream of @section (past its
 * compression header, @header_size bytes) from @fd into @out, which takes
 * exactly section->size bytes, reading the file a chunk at a time. */
gboolean
lw_lines_inflate (int fd, const LwLinesSection *section, gsize header_size, guint8 *out)
{
  guint64 offset = section->shdr.sh_offset + header_size;
  guint64 left = section->shdr.sh_size - header_size;
  guint8 *chunk = g_malloc (LW_LINES_READ_CHUNK);
  z_stream stream = { 0 };
  int status = Z_OK;

  if (inflateInit (&stream) != Z_OK)
    {
      g_free (chunk);
      return FALSE;
    }
  stream.next_out = out;
  while (status == Z_OK && left > 0)
    {
      gsize n = MIN (left, LW_LINES_READ_CHUNK);

      if (!lw_lines_pread_all (fd, chunk, n, offset))
        break;
      offset += n;
      left -= n;
      stream.next_in = chunk;
      stream.avail_in = n;
      do
        {
          gsize room = section->size - (stream.next_out - out);

          stream.avail_out = MIN (room, (gsize) G_MAXUINT);
          status = inflate (&stream, Z_NO_FLUSH);
        }
      while (status == Z_OK && stream.avail_in > 0 && stream.avail_out > 0);
      if (status == Z_OK && stream.avail_in > 0)
        status = Z_DATA_ERROR; /* more than the header said */
    }
  inflateEnd (&stream);
  g_free (chunk);
  return status == Z_STREAM_END && (gsize) (stream.next_out - out) == section->size;
}

/* HOLDS: lw_lines_lock. The DWARF sections of the ELF file @fd that a line
 * lookup reads (lw_lines_sections, and the notes, where the build-id is),
 * inflated, in one anonymous mapping (*@image, *@image_size bytes) laid
 * out as an ELF file of those sections alone, opened with libelf. NULL
 * when the file's DWARF sections are not compressed, or compressed in a
 * way read here only by libdw (zstd, .zdebug), or when they refer to a
 * supplementary file (dwz's .gnu_debugaltlink, .debug_sup), which libdw
 * finds from the file's own path: libdw is then given the file itself,
 * and *@dwarf_bytes says what it may inflate (the sizes of all its
 * .debug_ sections, inflated). Also NULL on a read error or a corrupt
 * file (@path names it in a debug message). */
Elf *
lw_lines_image_load (int fd, const char *path, void **image, gsize *image_size, gsize *dwarf_bytes,
                     LwLinesSparse *sparse)
{
  Elf *file = elf_begin (fd, ELF_C_READ, NULL);
  ElfW(Ehdr) *ehdr;
  GElf_Ehdr file_ehdr;
  GArray *kept = g_array_new (FALSE, TRUE, sizeof (LwLinesSection));
  gboolean any_compressed = FALSE, image_possible = TRUE;
  size_t shstrndx;
  gsize size, shstrtab_offset, shstrtab_size = 1, shdrs_offset;
  guint8 *map = NULL;
  Elf *elf = NULL;

  *dwarf_bytes = 0;
  if (file == NULL || gelf_getehdr (file, &file_ehdr) == NULL ||
      elf_getshdrstrndx (file, &shstrndx) != 0 ||
      file_ehdr.e_ident[EI_CLASS] != (sizeof (void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      file_ehdr.e_ident[EI_DATA] != (G_BYTE_ORDER == G_LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB))
    image_possible = FALSE;
  for (Elf_Scn *scn = NULL; image_possible && (scn = elf_nextscn (file, scn)) != NULL;)
    {
      LwLinesSection section = { 0 };
      gboolean wanted = FALSE;

      if (gelf_getshdr (scn, &section.shdr) == NULL ||
          (section.name = elf_strptr (file, shstrndx, section.shdr.sh_name)) == NULL)
        continue;
      if (strcmp (section.name, ".gnu_debugaltlink") == 0 || strcmp (section.name, ".debug_sup") == 0 ||
          g_str_has_prefix (section.name, ".zdebug"))
        image_possible = FALSE;
      section.size = section.shdr.sh_size;
      section.align = MAX (section.shdr.sh_addralign, 1);
      if (section.shdr.sh_type != SHT_NOBITS && (section.shdr.sh_flags & SHF_COMPRESSED) != 0)
        {
          ElfW(Chdr) chdr;

          if (section.shdr.sh_size < sizeof chdr ||
              !lw_lines_pread_all (fd, &chdr, sizeof chdr, section.shdr.sh_offset))
            {
              image_possible = FALSE;
              continue;
            }
          section.size = chdr.ch_size;
          section.align = MAX (chdr.ch_addralign, 1);
          section.zlib = chdr.ch_type == ELFCOMPRESS_ZLIB;
          if (!section.zlib)
            image_possible = FALSE;
        }
      if (g_str_has_prefix (section.name, ".debug_"))
        *dwarf_bytes += MIN (section.size, LW_LINES_MAX_IMAGE);
      for (gsize i = 0; i < G_N_ELEMENTS (lw_lines_sections); i++)
        wanted |= strcmp (section.name, lw_lines_sections[i]) == 0;
      if (section.shdr.sh_type == SHT_NOBITS || (!wanted && section.shdr.sh_type != SHT_NOTE))
        continue;
      any_compressed |= section.zlib;
      g_array_append_val (kept, section);
    }
  if (!image_possible || !any_compressed)
    goto out;

  /* .debug_info and .debug_line, the largest by far, are filled one unit
   * at a time when both are inflated here and .debug_aranges says which
   * compile unit holds an address. */
  {
    int info = -1, line = -1, aranges = -1;

    for (guint i = 0; i < kept->len; i++)
      {
        const char *name = g_array_index (kept, LwLinesSection, i).name;

        if (strcmp (name, ".debug_info") == 0)
          info = i;
        else if (strcmp (name, ".debug_line") == 0)
          line = i;
        else if (strcmp (name, ".debug_aranges") == 0)
          aranges = i;
      }
    if (info >= 0 && line >= 0 && aranges >= 0 &&
        g_array_index (kept, LwLinesSection, info).zlib &&
        g_array_index (kept, LwLinesSection, line).zlib &&
        g_array_index (kept, LwLinesSection, info).size >= 16 &&
        g_array_index (kept, LwLinesSection, info).size <= 0xfffffff0)
      {
        sparse[LW_LINES_SPARSE_INFO].present = TRUE;
        sparse[LW_LINES_SPARSE_INFO].section.name = ".debug_info";
        sparse[LW_LINES_SPARSE_LINE].present = TRUE;
        sparse[LW_LINES_SPARSE_LINE].section.name = ".debug_line";
      }
  }

  /* Layout: header, sections, their names, section headers. */
  size = sizeof (ElfW(Ehdr));
  for (guint i = 0; i < kept->len; i++)
    {
      LwLinesSection *section = &g_array_index (kept, LwLinesSection, i);

      if (section->size > LW_LINES_MAX_IMAGE || section->align > 4096)
        {
          g_debug ("DWARF of %s not read: section %s of %" G_GUINT64_FORMAT " bytes", path,
                   section->name, section->size);
          goto out;
        }
      size = (size + section->align - 1) / section->align * section->align;
      section->offset = size;
      size += section->size;
      section->name_offset = shstrtab_size;
      shstrtab_size += strlen (section->name) + 1;
      if (size > LW_LINES_MAX_IMAGE)
        {
          g_debug ("DWARF of %s not read: over %zu bytes inflated", path, (gsize) LW_LINES_MAX_IMAGE);
          goto out;
        }
    }
  shstrtab_offset = size;
  size += shstrtab_size + strlen (".shstrtab") + 1;
  shdrs_offset = size = (size + 7) / 8 * 8;
  size += (kept->len + 2) * sizeof (ElfW(Shdr));

  map = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    {
      g_debug ("DWARF of %s not read: no memory for %zu bytes", path, size);
      map = NULL;
      goto out;
    }
  ehdr = (ElfW(Ehdr) *) map;
  memcpy (ehdr->e_ident, file_ehdr.e_ident, EI_NIDENT);
  ehdr->e_type = file_ehdr.e_type;
  ehdr->e_machine = file_ehdr.e_machine;
  ehdr->e_version = EV_CURRENT;
  ehdr->e_ehsize = sizeof (ElfW(Ehdr));
  ehdr->e_shoff = shdrs_offset;
  ehdr->e_shentsize = sizeof (ElfW(Shdr));
  ehdr->e_shnum = kept->len + 2;
  ehdr->e_shstrndx = kept->len + 1;
  for (guint i = 0; i < kept->len; i++)
    {
      LwLinesSection *section = &g_array_index (kept, LwLinesSection, i);
      ElfW(Shdr) *shdr = (ElfW(Shdr) *) (map + shdrs_offset) + i + 1;
      gboolean read;

      LwLinesSparse *filled_later = NULL;

      for (guint j = 0; j < LW_LINES_N_SPARSE; j++)
        if (sparse[j].present && sparse[j].filled == NULL &&
            strcmp (sparse[j].section.name, section->name) == 0)
          filled_later = &sparse[j];
      if (filled_later != NULL)
        {
          filled_later->section = *section;
          filled_later->section.name = NULL;
          filled_later->filled = g_array_new (FALSE, FALSE, sizeof (LwLinesRange));
          read = TRUE;
        }
      else if (section->zlib)
        read = lw_lines_inflate (fd, section, sizeof (ElfW(Chdr)), map + section->offset);
      else
        read = lw_lines_pread_all (fd, map + section->offset, section->size, section->shdr.sh_offset);
      if (!read)
        {
          g_debug ("DWARF of %s not read: section %s is truncated or corrupt", path, section->name);
          goto out;
        }
      strcpy ((char *) map + shstrtab_offset + section->name_offset, section->name);
      shdr->sh_name = section->name_offset;
      shdr->sh_type = section->shdr.sh_type;
      shdr->sh_flags = section->shdr.sh_flags & ~(guint64) SHF_COMPRESSED;
      shdr->sh_offset = section->offset;
      shdr->sh_size = section->size;
      shdr->sh_addralign = section->align;
      shdr->sh_entsize = section->shdr.sh_entsize;
    }
  strcpy ((char *) map + shstrtab_offset + shstrtab_size, ".shstrtab");
  {
    ElfW(Shdr) *shdr = (ElfW(Shdr) *) (map + shdrs_offset) + kept->len + 1;

    shdr->sh_name = shstrtab_size;
    shdr->sh_type = SHT_STRTAB;
    shdr->sh_offset = shstrtab_offset;
    shdr->sh_size = shstrtab_size + strlen (".shstrtab") + 1;
    shdr->sh_addralign = 1;
  }
  elf = elf_memory ((char *) map, size);
  if (elf == NULL)
    g_debug ("DWARF of %s not read: %s", path, elf_errmsg (-1));

out:
  if (elf != NULL)
    {
      *image = map;
      *image_size = size;
    }
  else
    {
      if (map != NULL)
        munmap (map, size);
      for (guint j = 0; j < LW_LINES_N_SPARSE; j++)
        {
          g_clear_pointer (&sparse[j].filled, g_array_unref);
          sparse[j].present = FALSE;
        }
    }
  g_array_free (kept, TRUE);
  if (file != NULL)
    elf_end (file);
  return elf;
}

/* Any thread. Orders LwLinesArange by lo. */
static gint
lw_lines_arange_compare (gconstpointer a, gconstpointer b)
{
  guint64 lo_a = ((const LwLinesArange *) a)->lo, lo_b = ((const LwLinesArange *) b)->lo;

  return lo_a < lo_b ? -1 : lo_a > lo_b;
}

/* HOLDS: lw_lines_lock. Writes over [@start, @end) of the .debug_info
 * of @entry's image, a span of units not filled, one placeholder unit
 * header (DWARF 4, its unit DIE a null entry: libdw skips it) that spans
 * it, so that libdw, which walks unit headers from the section's start,
 * steps over the units never inflated. */
void
lw_lines_write_placeholder (LwDwarfEntry *entry, gsize start, gsize end)
{
  guint8 *at = (guint8 *) entry->image + entry->sparse[LW_LINES_SPARSE_INFO].section.offset + start;
  guint32 length = (guint32) (end - start - 4);
  guint16 version = 4;
  guint32 abbrev = 0;

  memcpy (at, &length, 4);
  memcpy (at + 4, &version, 2);
  memcpy (at + 6, &abbrev, 4);
  at[10] = sizeof (void *);
  at[11] = 0;
}

/* HOLDS: lw_lines_lock. Fills the unit at @start of @sparse's section of
 * @entry's image, inflating the section from the file up to its end
 * (a pass over the compressed bytes before it: zlib streams cannot be
 * entered in the middle); TRUE if it is filled. For .debug_info, the
 * units around it get placeholders. */
static gboolean
lw_lines_fill_unit (LwDwarfEntry *entry, LwLinesSparse *sparse, gsize start)
{
  const LwLinesSection *section = &sparse->section;
  guint8 *base = (guint8 *) entry->image + section->offset;
  guint64 offset = section->shdr.sh_offset + sizeof (ElfW(Chdr));
  guint64 left = section->shdr.sh_size - sizeof (ElfW(Chdr));
  gsize end = 0, produced = 0, limit;
  guint8 *chunk, *window;
  z_stream stream = { 0 };
  int status = Z_OK;
  guint i;

  for (i = 0; i < sparse->filled->len; i++)
    {
      LwLinesRange *range = &g_array_index (sparse->filled, LwLinesRange, i);

      if (start >= range->start && start < range->end)
        return TRUE;
      if (range->start > start)
        break;
    }
  limit = i < sparse->filled->len ? g_array_index (sparse->filled, LwLinesRange, i).start : section->size;
  if (start + 12 > limit || inflateInit (&stream) != Z_OK)
    return FALSE;
  chunk = g_malloc (LW_LINES_READ_CHUNK);
  window = g_malloc (LW_LINES_READ_CHUNK);
  while (status == Z_OK && left > 0 && (end == 0 || produced < end))
    {
      gsize n = MIN (left, LW_LINES_READ_CHUNK);

      if (!lw_lines_pread_all (entry->fd, chunk, n, offset))
        break;
      offset += n;
      left -= n;
      stream.next_in = chunk;
      stream.avail_in = n;
      while (status == Z_OK && stream.avail_in > 0 && (end == 0 || produced < end))
        {
          gsize got, from, to;

          stream.next_out = window;
          stream.avail_out = LW_LINES_READ_CHUNK;
          status = inflate (&stream, Z_NO_FLUSH);
          got = LW_LINES_READ_CHUNK - stream.avail_out;
          /* What of [produced, produced + got) is in the unit. */
          from = MAX (produced, start);
          to = MIN (produced + got, end != 0 ? end : limit);
          if (from < to)
            memcpy (base + from, window + (from - produced), to - from);
          produced += got;
          if (end == 0 && produced >= start + 12)
            {
              guint32 length32;
              guint64 length64;

              memcpy (&length32, base + start, 4);
              if (length32 == 0xffffffff)
                {
                  memcpy (&length64, base + start + 4, 8);
                  end = length64 <= limit - start - 12 ? start + 12 + length64 : 0;
                }
              else
                end = length32 >= 8 && length32 <= limit - start - 4 ? start + 4 + length32 : 0;
              if (end == 0)
                {
                  status = Z_DATA_ERROR;
                  break;
                }
              /* Bytes past the unit copied already: cleared. */
              if (produced > end)
                memset (base + end, 0, MIN (produced, limit) - end);
            }
          if (got == 0 && status == Z_OK)
            break;
        }
    }
  inflateEnd (&stream);
  g_free (chunk);
  g_free (window);
  if (end == 0 || produced < end)
    return FALSE;

  {
    LwLinesRange range = { start, end };
    gsize before, after;

    g_array_insert_val (sparse->filled, i, range);
    lw_lines_bytes += end - start;
    entry->cost += end - start;
    if (sparse == &entry->sparse[LW_LINES_SPARSE_INFO])
      {
        before = i > 0 ? g_array_index (sparse->filled, LwLinesRange, i - 1).end : 0;
        after = i + 1 < sparse->filled->len ? g_array_index (sparse->filled, LwLinesRange, i + 1).start
                                            : section->size;
        if ((start > before && start - before < 12) || (after > end && after - end < 12))
          return FALSE;
        if (start > before)
          lw_lines_write_placeholder (entry, before, start);
        if (after > end)
          lw_lines_write_placeholder (entry, end, after);
      }
  }
  return TRUE;
}

/* HOLDS: lw_lines_lock. Reads the .debug_aranges of @entry's image (in
 * its section of @elf) into entry->aranges; FALSE when it has none or a
 * malformed one. */
gboolean
lw_lines_read_aranges (LwDwarfEntry *entry, Elf *elf)
{
  size_t shstrndx;
  Elf_Data *data = NULL;
  const guint8 *at, *end;

  if (elf_getshdrstrndx (elf, &shstrndx) != 0)
    return FALSE;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn (elf, scn)) != NULL;)
    {
      GElf_Shdr shdr;
      const char *name;

      if (gelf_getshdr (scn, &shdr) != NULL && (name = elf_strptr (elf, shstrndx, shdr.sh_name)) != NULL &&
          strcmp (name, ".debug_aranges") == 0)
        data = elf_rawdata (scn, NULL);
    }
  if (data == NULL || data->d_buf == NULL)
    return FALSE;
  entry->aranges = g_array_new (FALSE, FALSE, sizeof (LwLinesArange));
  at = data->d_buf;
  end = at + data->d_size;
  while (end - at >= 16)
    {
      const guint8 *set = at, *set_end;
      guint32 length32;
      guint64 length, unit;
      gsize offset_size = 4;
      guint8 address_size, segment_size;

      memcpy (&length32, at, 4);
      at += 4;
      length = length32;
      if (length32 == 0xffffffff)
        {
          if (end - at < 8)
            break;
          memcpy (&length, at, 8);
          at += 8;
          offset_size = 8;
        }
      if (length > (guint64) (end - at) || length < 2 + offset_size + 2)
        break;
      set_end = at + length;
      at += 2; /* version */
      unit = 0;
      memcpy (&unit, at, offset_size);
      at += offset_size;
      address_size = *at++;
      segment_size = *at++;
      if (address_size != 8 && address_size != 4)
        break;
      /* Tuples start at a multiple of twice the address size. */
      at = set + ((at - set) + 2 * address_size - 1) / (2 * address_size) * (2 * address_size);
      while (set_end - at >= segment_size + 2 * address_size)
        {
          LwLinesArange arange = { 0, 0, (gsize) unit };
          guint64 len = 0;

          at += segment_size;
          memcpy (&arange.lo, at, address_size);
          memcpy (&len, at + address_size, address_size);
          at += 2 * address_size;
          if (arange.lo == 0 && len == 0)
            break;
          arange.hi = arange.lo + len;
          g_array_append_val (entry->aranges, arange);
        }
      at = set_end;
    }
  if (entry->aranges->len == 0)
    {
      g_clear_pointer (&entry->aranges, g_array_unref);
      return FALSE;
    }
  g_array_sort (entry->aranges, lw_lines_arange_compare);
  return TRUE;
}

/* HOLDS: lw_lines_lock. The compile unit DIE of @entry's DWARF that holds
 * @offset, in *@cu; NULL if none. With units filled on demand, found
 * through .debug_aranges, filled with its line table first (libdw is
 * begun again over the image when .debug_info changed: it keeps the
 * units it walked). */
Dwarf_Die *
lw_lines_cu_die (LwDwarfEntry *entry, Dwarf_Addr offset, Dwarf_Die *cu)
{
  LwLinesSparse *info = &entry->sparse[LW_LINES_SPARSE_INFO];
  guint lo = 0, hi;
  gsize unit;
  guint filled;
  Dwarf_Off next, die;
  size_t header_size;
  Dwarf_Attribute attribute;
  Dwarf_Word line_offset;

  if (entry->aranges == NULL)
    return dwarf_addrdie (entry->dwarf, offset, cu);
  /* The last range starting at or before offset. */
  hi = entry->aranges->len;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;

      if (g_array_index (entry->aranges, LwLinesArange, mid).lo <= offset)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo == 0 || offset >= g_array_index (entry->aranges, LwLinesArange, lo - 1).hi)
    return NULL;
  unit = g_array_index (entry->aranges, LwLinesArange, lo - 1).unit;
  filled = info->filled->len;
  if (!lw_lines_fill_unit (entry, info, unit))
    {
      g_debug ("DWARF of %s not read: its unit at 0x%zx is truncated or corrupt", entry->path, unit);
      return NULL;
    }
  if (info->filled->len != filled)
    {
      Dwarf *dwarf = dwarf_begin_elf (entry->image_elf, DWARF_C_READ, NULL);

      if (dwarf == NULL)
        return NULL;
      dwarf_end (entry->dwarf);
      entry->dwarf = dwarf;
    }
  if (dwarf_next_unit (entry->dwarf, unit, &next, &header_size, NULL, NULL, NULL, NULL, NULL, NULL) != 0)
    return NULL;
  die = unit + header_size;
  if (dwarf_offdie (entry->dwarf, die, cu) == NULL)
    return NULL;
  if (dwarf_formudata (dwarf_attr (cu, DW_AT_stmt_list, &attribute), &line_offset) == 0 &&
      !lw_lines_fill_unit (entry, &entry->sparse[LW_LINES_SPARSE_LINE], line_offset))
    g_debug ("DWARF of %s: its line table at 0x%" G_GINT64_MODIFIER "x is truncated or corrupt",
             entry->path, (guint64) line_offset);
  return cu;
}

#endif /* LW_HAVE_LIBDW */
