/* lw-lines.c: source file and line of code addresses, from DWARF
 *
 * One list of open DWARF files, most recently used first, each keyed by
 * the module's path and build-id; a lookup finds the compile unit through
 * .debug_aranges (lw_lines_cu_die()), then dwarf_getsrc_die() in that
 * unit's line table, the row at or before the address, as addr2line does.
 * Inlined calls are the DW_TAG_inlined_subroutine scopes around the
 * address (dwarf_getscopes()), each called from its
 * DW_AT_call_file:call_line.
 *
 * Memory: a debug file's DWARF sections are mostly compressed (Debian's
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
 * looked up (lw_lines_fill_unit()): the rest of their pages is never
 * touched. Files whose DWARF sections are not compressed are opened by
 * libdw directly (it maps them, reading only the pages it touches). The
 * budget counts these bytes: the image's filled bytes, or the DWARF
 * sections' sizes.
 *
 * Each address's answer is kept per module (LwLinesAnswer), so the DWARF
 * is needed only for addresses not seen yet: lw_lines_release() closes
 * every open DWARF once a report is named, and a later report reopens a
 * module's only for a new address.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-lines.h"

#include "lw-build-config.h"
#include "lw-demangle.h"
#include "lw-elf-file.h"
#include "lw-modules.h"
#include "lw-fd.h"

#ifdef LW_HAVE_LIBDW

#include <dlfcn.h>
#include <dwarf.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <zlib.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LW_LINES_DEFAULT_BUDGET (64 * 1024 * 1024)
/* Entries, open or not: bounds the memory of the modules remembered
 * without DWARF. */
#define LW_LINES_MAX_ENTRIES 64
/* Logical frames expanded from one physical frame: bounds a report built
 * from corrupt DWARF. */
#define LW_LINES_MAX_INLINED 16
/* Answers kept (LwLinesAnswer), all modules together: every module's are
 * dropped when there would be more (about 1 MiB at most, with their file
 * names). A report's stacks hold a few hundred distinct addresses at most;
 * a recursion repeats one. */
#define LW_LINES_MAX_ANSWERS 4096

/* One logical frame inlined at an address (see lw_lines_expand_inlined). */
typedef struct
{
  char  *symbol;
  char  *file;
  guint  line;
} LwLinesInlined;

/* What an address of a module resolved to, kept so that an address is
 * looked up in DWARF once: libdw costs about 0.1 ms per lookup, and a
 * recursion of 1000 frames repeats one return address 1000 times, a long
 * lag's samples the same few hundred. */
typedef struct
{
  char           *file;      /* NULL: no line for the address */
  guint           line;
  guint           n_inlined;
  LwLinesInlined *inlined;   /* innermost first */
} LwLinesAnswer;

/* One section of a file, as lw_lines_image_load() copies it. */
typedef struct
{
  const char *name;   /* in the file's section name table */
  GElf_Shdr   shdr;
  gboolean    zlib;   /* SHF_COMPRESSED with zlib: inflated */
  guint64     size;   /* in the image */
  guint64     align;
  gsize       offset; /* in the image */
  gsize       name_offset;
} LwLinesSection;

/* A range of bytes of a section, [start, end). */
typedef struct
{
  gsize start;
  gsize end;
} LwLinesRange;

/* A section of the image filled one unit at a time (lw_lines_fill_unit()):
 * the rest of its pages are never touched, so never resident. */
typedef struct
{
  gboolean       present;
  LwLinesSection section;  /* name NULL */
  GArray        *filled;   /* LwLinesRange, sorted */
} LwLinesSparse;

enum { LW_LINES_SPARSE_INFO, LW_LINES_SPARSE_LINE, LW_LINES_N_SPARSE };

/* What .debug_aranges says: the compile unit at unit of [lo, hi). */
typedef struct
{
  guint64 lo;
  guint64 hi;
  gsize   unit;
} LwLinesArange;

typedef struct
{
  char  *key;   /* "path\nbuild-id" ("path\n" without build-id) */
  char  *path;  /* the file the DWARF was found in, to reopen it; NULL: the module has none */
  gboolean must_have_build_id; /* how path was accepted (see lw_dwarf_matches_module()) */
  int    fd;    /* open with dwarf when libdw reads the file itself, else -1 */
  LwFdId fd_id; /* what fd was when opened: closed only if it still is */
  Dwarf *dwarf; /* NULL: closed (see path) */
  Elf   *image_elf;  /* the image dwarf reads (lw_lines_image_load()), or NULL */
  void  *image;
  gsize  image_size;
  LwLinesSparse sparse[LW_LINES_N_SPARSE]; /* filled on demand: see lw_lines_cu_die() */
  GArray *aranges;   /* LwLinesArange by lo; NULL: dwarf_addrdie() finds compile units */
  gsize  cost;  /* resident bytes the open DWARF may take; 0 when closed */
  GHashTable *answers; /* module offset (looked-up address) -> LwLinesAnswer; NULL until the first */
} LwDwarfEntry;

/* libdebuginfod's client API (elfutils/debuginfod.h), loaded on opt-in. */
typedef struct debuginfod_client debuginfod_client;
typedef struct
{
  debuginfod_client *(*begin)          (void);
  int                (*find_debuginfo) (debuginfod_client   *client,
                                        const unsigned char *build_id,
                                        int                  build_id_len,
                                        char               **path);
  void               (*end)            (debuginfod_client   *client);
} LwDebuginfod;

static GMutex       lw_lines_lock;
/* HOLDS: lw_lines_lock. LwDwarfEntry*, most recently used first. */
static GQueue       lw_lines_lru = G_QUEUE_INIT;
static gsize        lw_lines_bytes;
static gsize        lw_lines_budget = LW_LINES_DEFAULT_BUDGET;
static guint        lw_lines_n_open;
static guint        lw_lines_n_answers;
/* HOLDS: lw_lines_lock. Its functions are NULL unless the user opted in
 * and the library loaded. */
static LwDebuginfod lw_debuginfod;
static gboolean     lw_debuginfod_tried;

/* HOLDS: lw_lines_lock. */
static void
lw_lines_answer_free (gpointer data)
{
  LwLinesAnswer *answer = data;

  for (guint i = 0; i < answer->n_inlined; i++)
    {
      g_free (answer->inlined[i].symbol);
      g_free (answer->inlined[i].file);
    }
  g_free (answer->inlined);
  g_free (answer->file);
  g_free (answer);
  lw_lines_n_answers--;
}

/* HOLDS: lw_lines_lock. Closes @entry's DWARF, keeping what it answered
 * and where to reopen it. */
static void
lw_dwarf_entry_close (LwDwarfEntry *entry)
{
  if (entry->dwarf == NULL)
    return;
  dwarf_end (entry->dwarf);
  entry->dwarf = NULL;
  g_clear_pointer (&entry->image_elf, elf_end);
  for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
    {
      g_clear_pointer (&entry->sparse[i].filled, g_array_unref);
      entry->sparse[i].present = FALSE;
    }
  g_clear_pointer (&entry->aranges, g_array_unref);
  if (entry->image != NULL)
    munmap (entry->image, entry->image_size);
  entry->image = NULL;
  entry->image_size = 0;
  if (entry->fd >= 0)
    lw_fd_close (entry->fd, &entry->fd_id);
  entry->fd = -1;
  lw_lines_bytes -= entry->cost;
  entry->cost = 0;
  lw_lines_n_open--;
}

/* HOLDS: lw_lines_lock. */
static void
lw_dwarf_entry_free (LwDwarfEntry *entry)
{
  g_clear_pointer (&entry->answers, g_hash_table_unref);
  lw_dwarf_entry_close (entry);
  g_free (entry->path);
  g_free (entry->key);
  g_free (entry);
}

/* HOLDS: lw_lines_lock. Closes the DWARF of the least recently used
 * entries until the open ones fit the budget, and drops entries past
 * their cap; the head (the entry in use) always stays. */
static void
lw_lines_evict_unlocked (void)
{
  while (lw_lines_lru.length > LW_LINES_MAX_ENTRIES)
    lw_dwarf_entry_free (g_queue_pop_tail (&lw_lines_lru));
  for (GList *link = lw_lines_lru.tail; link != NULL && link != lw_lines_lru.head &&
                                        lw_lines_bytes > lw_lines_budget; link = link->prev)
    lw_dwarf_entry_close (link->data);
}

/* HOLDS: lw_lines_lock. TRUE when @dwarf's file carries @module's build-id,
 * when the module has none to compare, or, if @must_have_build_id is
 * FALSE, when the file has none (a .gnu_debuglink file, whose CRC
 * lw-symbols.c checked). */
static gboolean
lw_dwarf_matches_module (Dwarf    *dwarf,
                         LwModule *module,
                         gboolean  must_have_build_id)
{
  gsize module_len;
  const guint8 *module_id = lw_module_get_build_id (module, &module_len);
  const void *id = NULL;
  ssize_t len;

  if (module_id == NULL)
    return TRUE;
  len = dwelf_elf_gnu_build_id (dwarf_getelf (dwarf), &id);
  if (len == 0)
    return !must_have_build_id;
  return len > 0 && (gsize) len == module_len && memcmp (id, module_id, len) == 0;
}

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
static gboolean
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
static Elf *
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
static void
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
static gboolean
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

/* HOLDS: lw_lines_lock. Opens the DWARF of @fd (taken: kept open if libdw
 * reads it, else closed) into @entry when it has some and belongs to
 * @module (see lw_dwarf_matches_module()). */
static gboolean
lw_dwarf_entry_open_fd (LwDwarfEntry *entry,
                        LwModule     *module,
                        int           fd,
                        const char   *path,
                        gboolean      must_have_build_id)
{
  void *image = NULL;
  gsize image_size = 0, dwarf_bytes = 0;
  LwLinesSparse sparse[LW_LINES_N_SPARSE] = { { 0 } };
  Elf *image_elf = lw_lines_image_load (fd, path, &image, &image_size, &dwarf_bytes, sparse);
  Dwarf *dwarf;

  if (image_elf != NULL)
    {
      memcpy (entry->sparse, sparse, sizeof sparse);
      entry->image = image;
      entry->image_size = image_size;
      if (entry->sparse[LW_LINES_SPARSE_INFO].present)
        {
          if (lw_lines_read_aranges (entry, image_elf))
            lw_lines_write_placeholder (entry, 0, entry->sparse[LW_LINES_SPARSE_INFO].section.size);
          else
            {
              /* Without .debug_aranges to find units by: filled whole. */
              for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
                {
                  LwLinesSparse *each = &entry->sparse[i];

                  if (!lw_lines_inflate (fd, &each->section, sizeof (ElfW(Chdr)),
                                         (guint8 *) image + each->section.offset))
                    g_debug ("DWARF of %s: a section is truncated or corrupt", path);
                  g_clear_pointer (&each->filled, g_array_unref);
                  each->present = FALSE;
                }
            }
        }
      if (!entry->sparse[LW_LINES_SPARSE_INFO].present)
        {
          close (fd);
          fd = -1;
        }
      dwarf = dwarf_begin_elf (image_elf, DWARF_C_READ, NULL);
    }
  else
    dwarf = dwarf_begin (fd, DWARF_C_READ);
  if (dwarf == NULL || !lw_dwarf_matches_module (dwarf, module, must_have_build_id))
    {
      if (dwarf == NULL)
        g_debug ("No DWARF in %s: %s", path, dwarf_errmsg (-1));
      else
        g_debug ("DWARF of %s not used: build-id differs from the loaded module's %s",
                 path, lw_module_get_build_id_hex (module));
      if (dwarf != NULL)
        dwarf_end (dwarf);
      if (image_elf != NULL)
        {
          elf_end (image_elf);
          munmap (image, image_size);
          entry->image = NULL;
          entry->image_size = 0;
          for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
            {
              g_clear_pointer (&entry->sparse[i].filled, g_array_unref);
              entry->sparse[i].present = FALSE;
            }
          g_clear_pointer (&entry->aranges, g_array_unref);
        }
      if (fd >= 0)
        close (fd);
      return FALSE;
    }
  entry->fd = fd;
  if (fd >= 0)
    lw_fd_id_take (fd, &entry->fd_id);
  entry->dwarf = dwarf;
  entry->image_elf = image_elf;
  entry->cost = image_elf != NULL ? image_size : dwarf_bytes;
  for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
    if (entry->sparse[i].present)
      entry->cost -= entry->sparse[i].section.size;
  if (entry->path != path)
    {
      g_free (entry->path);
      entry->path = g_strdup (path);
    }
  entry->must_have_build_id = must_have_build_id;
  lw_lines_bytes += entry->cost;
  lw_lines_n_open++;
  return TRUE;
}

/* HOLDS: lw_lines_lock. Opens the DWARF of the file @path into @entry.
 * The module's file may have been replaced since it was loaded, by a FIFO
 * too: it is opened without blocking, and only if it is a regular file. */
static gboolean
lw_dwarf_entry_open_path (LwDwarfEntry *entry,
                          LwModule     *module,
                          const char   *path,
                          gboolean      must_have_build_id)
{
  char *why = NULL;
  int fd = lw_open_regular_file (path, FALSE, &why);

  if (fd < 0)
    {
      g_debug ("No DWARF in %s", why);
      g_free (why);
      return FALSE;
    }
  return lw_dwarf_entry_open_fd (entry, module, fd, path, must_have_build_id);
}

/* HOLDS: lw_lines_lock. Asks debuginfod for @module's debug file, if the
 * user opted in. */
static gboolean
lw_dwarf_entry_open_debuginfod (LwDwarfEntry *entry,
                                LwModule     *module)
{
  gsize build_id_len;
  const guint8 *build_id = lw_module_get_build_id (module, &build_id_len);
  debuginfod_client *client;
  char *path = NULL;
  gboolean opened;
  int fd;

  if (lw_debuginfod.begin == NULL || build_id == NULL || build_id_len > G_MAXINT ||
      (client = lw_debuginfod.begin ()) == NULL)
    return FALSE;
  fd = lw_debuginfod.find_debuginfo (client, build_id, (int) build_id_len, &path);
  lw_debuginfod.end (client);
  if (fd < 0)
    {
      g_debug ("debuginfod has no debug info for %s (%s): %s", lw_module_get_path (module),
               lw_module_get_build_id_hex (module), g_strerror (-fd));
      return FALSE;
    }
  opened = lw_dwarf_entry_open_fd (entry, module, fd, path != NULL ? path : "(debuginfod)", TRUE);
  free (path);
  return opened;
}

/* HOLDS: lw_lines_lock. @module's entry, moved to the head of the list (or
 * made there, its DWARF looked for); its path is NULL when the module has
 * no DWARF. Its DWARF may be closed: see lw_dwarf_entry_reopen(). */
static LwDwarfEntry *
lw_lines_entry_for (LwModule *module)
{
  const char *build_id = lw_module_get_build_id_hex (module);
  char *key = g_strdup_printf ("%s\n%s", lw_module_get_path (module),
                               build_id != NULL ? build_id : "");
  const char *debug_file;
  LwDwarfEntry *entry;

  for (GList *link = lw_lines_lru.head; link != NULL; link = link->next)
    {
      entry = link->data;
      if (strcmp (entry->key, key) == 0)
        {
          g_queue_unlink (&lw_lines_lru, link);
          g_queue_push_head_link (&lw_lines_lru, link);
          g_free (key);
          return entry;
        }
    }

  entry = g_new0 (LwDwarfEntry, 1);
  entry->key = key;
  entry->fd = -1;
  debug_file = lw_symbols_get_debug_file (module);
  if (!(debug_file != NULL && lw_dwarf_entry_open_path (entry, module, debug_file, FALSE)) &&
      !lw_dwarf_entry_open_path (entry, module, lw_module_get_path (module), TRUE))
    lw_dwarf_entry_open_debuginfod (entry, module);
  g_queue_push_head (&lw_lines_lru, entry);
  lw_lines_evict_unlocked ();
  return entry;
}

/* HOLDS: lw_lines_lock. Opens again the DWARF of @entry (at the head of
 * the list) closed since its module's first lookup; FALSE when it cannot
 * be (the file changed: the path is then forgotten). */
static gboolean
lw_dwarf_entry_reopen (LwDwarfEntry *entry,
                       LwModule     *module)
{
  char *path = entry->path;

  if (entry->dwarf != NULL)
    return TRUE;
  if (path == NULL)
    return FALSE;
  if (!lw_dwarf_entry_open_path (entry, module, path, entry->must_have_build_id))
    {
      g_clear_pointer (&entry->path, g_free);
      return FALSE;
    }
  lw_lines_evict_unlocked ();
  return TRUE;
}

/* HOLDS: lw_lines_lock. @file, a path from @cu's line table, made absolute
 * with the compile unit's directory when it is relative (GCC writes paths
 * relative to the build directory). */
static char *
lw_lines_absolute_path (Dwarf_Die  *cu,
                        const char *file)
{
  Dwarf_Attribute attribute;
  const char *comp_dir;

  if (g_path_is_absolute (file) ||
      (comp_dir = dwarf_formstring (dwarf_attr (cu, DW_AT_comp_dir, &attribute))) == NULL ||
      !g_path_is_absolute (comp_dir))
    return g_strdup (file);
  return g_canonicalize_filename (file, comp_dir);
}

/* HOLDS: lw_lines_lock. The name of the function @die is an instance of,
 * as the symbol table would show it: its linkage name demangled, else its
 * DWARF name (a C function's), else NULL. */
static char *
lw_lines_die_name (Dwarf_Die *die)
{
  Dwarf_Attribute attribute;
  const char *linkage = dwarf_formstring (dwarf_attr_integrate (die, DW_AT_linkage_name, &attribute));
  const char *name;
  char *shown;

  if (linkage == NULL)
    linkage = dwarf_formstring (dwarf_attr_integrate (die, DW_AT_MIPS_linkage_name, &attribute));
  if (linkage != NULL)
    {
      shown = lw_demangle_name (linkage);
      return shown != NULL ? shown : g_strdup (linkage);
    }
  name = dwarf_diename (die);
  return g_strdup (name);
}

/* HOLDS: lw_lines_lock. Appends to @inlined (LwFrame) a logical frame for
 * each call inlined at @offset of @cu, innermost first, each at the
 * location in *@file:*@line (that of @frame's address for the innermost),
 * and leaves in *@file and *@line the call site of the outermost: the
 * physical frame's own line. Same scopes as eu-addr2line -i: those of the
 * innermost DIE at the address, from dwarf_getscopes_die(). */
static void
lw_lines_expand_inlined (Dwarf_Die     *cu,
                         Dwarf_Addr     offset,
                         const LwFrame *frame,
                         GArray        *inlined,
                         char         **file,
                         guint         *line)
{
  Dwarf_Die *scopes = NULL;
  Dwarf_Die innermost;
  Dwarf_Files *files = NULL;
  int n_scopes = dwarf_getscopes (cu, offset, &scopes);
  guint added = 0;

  if (n_scopes <= 0)
    {
      free (scopes);
      return;
    }
  innermost = scopes[0];
  free (scopes);
  scopes = NULL;
  n_scopes = dwarf_getscopes_die (&innermost, &scopes);
  if (n_scopes > 1 && dwarf_getsrcfiles (cu, &files, NULL) == 0)
    for (int i = 0; i < n_scopes - 1 && added < LW_LINES_MAX_INLINED; i++)
      {
        Dwarf_Die *die = &scopes[i];
        Dwarf_Attribute attribute;
        Dwarf_Word call_file = 0, call_line = 0;
        const char *caller_file;
        LwFrame logical = { 0 };

        if (dwarf_tag (die) != DW_TAG_inlined_subroutine)
          continue;
        logical.ip = frame->ip;
        logical.module = frame->module;
        logical.build_id = frame->build_id;
        logical.module_offset = frame->module_offset;
        logical.symbol = lw_lines_die_name (die);
        logical.file = *file;
        logical.line = *line;
        logical.inlined = TRUE;
        g_array_append_val (inlined, logical);
        added++;

        /* The caller's location: where this call was inlined. */
        *file = NULL;
        *line = 0;
        if (dwarf_formudata (dwarf_attr (die, DW_AT_call_file, &attribute), &call_file) == 0 &&
            dwarf_formudata (dwarf_attr (die, DW_AT_call_line, &attribute), &call_line) == 0 &&
            call_line > 0 && call_line <= G_MAXUINT &&
            (caller_file = dwarf_filesrc (files, call_file, NULL, NULL)) != NULL)
          {
            *file = lw_lines_absolute_path (cu, caller_file);
            *line = (guint) call_line;
          }
      }
  free (scopes);
}

/* HOLDS: lw_lines_lock. The compile unit DIE of @entry's DWARF that holds
 * @offset, in *@cu; NULL if none. With units filled on demand, found
 * through .debug_aranges, filled with its line table first (libdw is
 * begun again over the image when .debug_info changed: it keeps the
 * units it walked). */
static Dwarf_Die *
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

/* HOLDS: lw_lines_lock. What @offset of @entry's module (@module)
 * resolves to: from the entry's answers, else looked up in its DWARF
 * (reopened if closed) and kept there. NULL when the module has no DWARF.
 * @frame gives the logical frames their module fields while they are
 * looked up. */
static const LwLinesAnswer *
lw_lines_answer_for (LwDwarfEntry *entry, LwModule *module, uintptr_t offset, const LwFrame *frame)
{
  LwLinesAnswer *answer;
  Dwarf_Die cu;
  Dwarf_Line *line;
  const char *file;
  int line_number = 0;

  answer = entry->answers != NULL ? g_hash_table_lookup (entry->answers, GSIZE_TO_POINTER (offset)) : NULL;
  if (answer != NULL)
    return answer;
  if (!lw_dwarf_entry_reopen (entry, module))
    return NULL;
  if (entry->answers == NULL)
    entry->answers = g_hash_table_new_full (NULL, NULL, NULL, lw_lines_answer_free);

  answer = g_new0 (LwLinesAnswer, 1);
  if (lw_lines_cu_die (entry, offset, &cu) != NULL &&
      (line = dwarf_getsrc_die (&cu, offset)) != NULL &&
      (file = dwarf_linesrc (line, NULL, NULL)) != NULL &&
      dwarf_lineno (line, &line_number) == 0 && line_number > 0)
    {
      GArray *logical = g_array_new (FALSE, TRUE, sizeof (LwFrame));

      answer->file = lw_lines_absolute_path (&cu, file);
      answer->line = line_number;
      lw_lines_expand_inlined (&cu, offset, frame, logical, &answer->file, &answer->line);
      answer->n_inlined = logical->len;
      answer->inlined = g_new0 (LwLinesInlined, logical->len);
      for (guint i = 0; i < logical->len; i++)
        {
          LwFrame *each = &g_array_index (logical, LwFrame, i);

          /* Taken over, not copied: the logical frame owns nothing else. */
          answer->inlined[i].symbol = each->symbol;
          answer->inlined[i].file = each->file;
          answer->inlined[i].line = each->line;
        }
      g_array_free (logical, TRUE);
    }
  if (lw_lines_n_answers >= LW_LINES_MAX_ANSWERS)
    for (GList *link = lw_lines_lru.head; link != NULL; link = link->next)
      if (((LwDwarfEntry *) link->data)->answers != NULL)
        g_hash_table_remove_all (((LwDwarfEntry *) link->data)->answers);
  g_hash_table_insert (entry->answers, GSIZE_TO_POINTER (offset), answer);
  lw_lines_n_answers++;
  return answer;
}

/* Any thread, normal context. Fills @frame's file and line; with
 * @inlined, appends the logical frames inlined at its address first (see
 * lw_lines_resolve_stack()). */
static void
lw_lines_resolve_frame (LwFrame  *frame,
                        gboolean  is_return_address,
                        GArray   *inlined)
{
  uintptr_t addr;
  LwModule *module;

  g_return_if_fail (frame != NULL);

  addr = is_return_address && frame->ip > 0 ? frame->ip - 1 : frame->ip;
  g_clear_pointer (&frame->file, g_free);
  frame->line = 0;
  if (frame->module == NULL)
    return;

  /* The module that named the frame, if it is still loaded. */
  module = lw_modules_ref_module (addr);
  if (module == NULL)
    return;
  if (!lw_module_is_vdso (module) &&
      lw_module_get_bias (module) == frame->ip - frame->module_offset &&
      strcmp (lw_module_get_path (module), frame->module) == 0)
    {
      uintptr_t offset = addr - lw_module_get_bias (module);
      const LwLinesAnswer *answer;

      g_mutex_lock (&lw_lines_lock);
      answer = lw_lines_answer_for (lw_lines_entry_for (module), module, offset, frame);
      if (answer != NULL)
        {
          frame->file = g_strdup (answer->file);
          frame->line = answer->line;
          for (guint i = 0; inlined != NULL && i < answer->n_inlined; i++)
            {
              LwFrame logical = { 0 };

              logical.ip = frame->ip;
              logical.module = frame->module;
              logical.build_id = frame->build_id;
              logical.module_offset = frame->module_offset;
              logical.symbol = g_strdup (answer->inlined[i].symbol);
              logical.file = g_strdup (answer->inlined[i].file);
              logical.line = answer->inlined[i].line;
              logical.inlined = TRUE;
              g_array_append_val (inlined, logical);
            }
        }
      g_mutex_unlock (&lw_lines_lock);
    }
  lw_module_unref (module);
}

/* Any thread, normal context. */
void
lw_lines_resolve (LwFrame  *frame,
                  gboolean  is_return_address)
{
  lw_lines_resolve_frame (frame, is_return_address, NULL);
}

/* Any thread, normal context. */
void
lw_lines_resolve_stack (LwFrame **frames,
                        guint    *n_frames)
{
  GArray *expanded;

  g_return_if_fail (frames != NULL && n_frames != NULL);

  expanded = g_array_sized_new (FALSE, TRUE, sizeof (LwFrame), *n_frames);
  for (guint i = 0; i < *n_frames; i++)
    {
      LwFrame frame = (*frames)[i];

      /* A frame of an interpreted language has its file and line already,
       * and no machine address to look up. */
      if (frame.lang == NULL)
        lw_lines_resolve_frame (&frame, i > 0, expanded);
      g_array_append_val (expanded, frame);
    }
  g_free (*frames);
  *n_frames = expanded->len;
  *frames = (LwFrame *) g_array_free (expanded, FALSE);
}

/* Any thread, normal context, loader lock free. */
void
lw_lines_init (void)
{
  gboolean opted_in = g_strcmp0 (secure_getenv ("LAGWATCH_DEBUGINFOD"), "1") == 0;

  g_mutex_lock (&lw_lines_lock);
  /* Entries without DWARF may have some once debuginfod is in use; the
   * open ones are kept. */
  for (GList *link = lw_lines_lru.head; link != NULL;)
    {
      GList *next = link->next;
      LwDwarfEntry *entry = link->data;

      if (entry->path == NULL)
        {
          g_queue_delete_link (&lw_lines_lru, link);
          lw_dwarf_entry_free (entry);
        }
      link = next;
    }

  if (opted_in && !lw_debuginfod_tried)
    {
      void *handle = dlopen ("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

      lw_debuginfod_tried = TRUE;
      if (handle != NULL)
        {
          *(void **) &lw_debuginfod.begin = dlsym (handle, "debuginfod_begin");
          *(void **) &lw_debuginfod.find_debuginfo = dlsym (handle, "debuginfod_find_debuginfo");
          *(void **) &lw_debuginfod.end = dlsym (handle, "debuginfod_end");
          if (lw_debuginfod.begin == NULL || lw_debuginfod.find_debuginfo == NULL ||
              lw_debuginfod.end == NULL)
            lw_debuginfod = (LwDebuginfod) { NULL, NULL, NULL };
        }
      if (lw_debuginfod.begin == NULL)
        g_debug ("LAGWATCH_DEBUGINFOD=1 but libdebuginfod.so.1 is not usable (%s): "
                 "no debug info is downloaded", handle != NULL ? "symbols missing" : dlerror ());
    }
  g_mutex_unlock (&lw_lines_lock);
}

/* Any thread, normal context. */
void
lw_lines_release (void)
{
  gboolean released;

  g_mutex_lock (&lw_lines_lock);
  released = lw_lines_n_open > 0;
  for (GList *link = lw_lines_lru.head; link != NULL; link = link->next)
    lw_dwarf_entry_close (link->data);
  g_mutex_unlock (&lw_lines_lock);
#ifdef __GLIBC__
  /* libdw's own tables (compile units, abbreviations, line tables: about
   * 3 MiB for libc's) were freed with free(), whose memory glibc's
   * malloc keeps unless asked: measured +2.9 MiB anonymous kept after a
   * release without this, +0.3 MiB with it. */
  if (released)
    malloc_trim (0);
#endif
}

/* Any thread. */
void
lw_lines_set_budget (gsize bytes)
{
  g_mutex_lock (&lw_lines_lock);
  lw_lines_budget = bytes != 0 ? bytes : LW_LINES_DEFAULT_BUDGET;
  lw_lines_evict_unlocked ();
  g_mutex_unlock (&lw_lines_lock);
}

/* Any thread. */
void
lw_lines_get_stats (LwLinesStats *stats)
{
  g_return_if_fail (stats != NULL);

  g_mutex_lock (&lw_lines_lock);
  stats->n_open = lw_lines_n_open;
  stats->open_bytes = lw_lines_bytes;
  g_mutex_unlock (&lw_lines_lock);
}

#else /* !LW_HAVE_LIBDW: built without line info. */

void
lw_lines_init (void)
{
}

void
lw_lines_resolve (LwFrame  *frame,
                  gboolean  is_return_address)
{
  g_return_if_fail (frame != NULL);
}

void
lw_lines_resolve_stack (LwFrame **frames,
                        guint    *n_frames)
{
  g_return_if_fail (frames != NULL && n_frames != NULL);
}

void
lw_lines_release (void)
{
}

void
lw_lines_set_budget (gsize bytes)
{
}

void
lw_lines_get_stats (LwLinesStats *stats)
{
  g_return_if_fail (stats != NULL);

  *stats = (LwLinesStats) { 0, 0 };
}

#endif
