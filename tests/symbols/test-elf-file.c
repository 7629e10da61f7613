/* test-elf-file.c: reading one ELF file (lw-elf-file.h)
 *
 * Known answers from the fixtures the suite builds (build-id from readelf,
 * .gnu_debuglink CRC from objcopy) and from the CRC-32 check value; paths
 * that are not regular files; and corrupt variants of the fixtures
 * (symbol tables with bad sizes and offsets, notes with bad lengths,
 * section headers out of range, truncated files), which must give fewer
 * names, never a fault or a wrong name.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-elf-file.h"
#include "lw-symtab.h"

#include <elf.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LW_FIXTURE_SYMTAB      LW_FIXTURE_DIR "/libsymbols-fixture.so"
#define LW_FIXTURE_STRIPPED    LW_FIXTURE_DIR "/libsymbols-fixture-stripped.so"
#define LW_FIXTURE_DEBUGLINK   LW_FIXTURE_DIR "/libsymbols-fixture-debuglink.so"
#define LW_DEBUGLINK_NAME      "libsymbols-fixture-debuglink.so.debug"
#define LW_DEBUGLINK_FILE      LW_FIXTURE_DIR "/.debug/" LW_DEBUGLINK_NAME
/* split-debug.sh writes the build-id of libsymbols-fixture.so here. */
#define LW_FIXTURE_BUILD_ID    LW_FIXTURE_DIR "/symbols-fixture-split.build-id"

/* A new temporary file holding the @len bytes of @data; g_unlink() and
 * g_free() it. */
static char *
lw_temp_file (const void *data,
              gsize       len)
{
  GError *error = NULL;
  char *path = NULL;
  int fd = g_file_open_tmp ("lw-elf-file-XXXXXX", &path, &error);

  g_assert_no_error (error);
  close (fd);
  g_file_set_contents (path, data, len, &error);
  g_assert_no_error (error);
  return path;
}

/* The CRC-32 of .gnu_debuglink is zlib's: "123456789" gives the standard
 * check value; an empty file, 0. */
static void
test_crc32 (void)
{
  char *path = lw_temp_file ("123456789", 9);
  char *empty = lw_temp_file ("", 0);
  guint32 crc = 1;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC);
  g_assert_cmpint (fd, >=, 0);
  g_assert_true (lw_file_crc32 (fd, &crc));
  g_assert_cmphex (crc, ==, 0xcbf43926);
  close (fd);

  fd = open (empty, O_RDONLY | O_CLOEXEC);
  g_assert_cmpint (fd, >=, 0);
  g_assert_true (lw_file_crc32 (fd, &crc));
  g_assert_cmphex (crc, ==, 0);
  close (fd);

  g_unlink (path);
  g_unlink (empty);
  g_free (path);
  g_free (empty);
}

/* The build-id note of the fixture is the one readelf printed. */
static void
test_build_id (void)
{
  GError *error = NULL;
  LwElfFile file;
  char *why = NULL;
  char *expected;
  const guint8 *id;
  GString *hex = g_string_new (NULL);
  gsize len;

  g_file_get_contents (LW_FIXTURE_BUILD_ID, &expected, NULL, &error);
  g_assert_no_error (error);
  g_strstrip (expected);

  lw_elf_init ();
  g_assert_true (lw_elf_file_open (&file, LW_FIXTURE_SYMTAB, FALSE, &why));
  g_assert_null (why);
  id = lw_elf_get_build_id (file.elf, &len);
  g_assert_nonnull (id);
  for (gsize i = 0; i < len; i++)
    g_string_append_printf (hex, "%02x", id[i]);
  g_assert_cmpstr (hex->str, ==, expected);
  g_assert_true (lw_elf_has_build_id (file.elf, id, len));
  g_assert_false (lw_elf_has_build_id (file.elf, id, len - 1));
  g_assert_false (lw_elf_has_build_id (file.elf, NULL, 0));
  lw_elf_file_close (&file);

  /* The debuglink fixture is linked without a build-id. */
  g_assert_true (lw_elf_file_open (&file, LW_FIXTURE_DEBUGLINK, FALSE, &why));
  g_assert_null (lw_elf_get_build_id (file.elf, &len));
  g_assert_cmpuint (len, ==, 0);
  lw_elf_file_close (&file);

  g_string_free (hex, TRUE);
  g_free (expected);
}

/* The .gnu_debuglink objcopy wrote: the debug file's name, and a CRC equal
 * to the CRC-32 of that file. */
static void
test_debuglink (void)
{
  LwElfFile file;
  char *why = NULL;
  char *name = NULL;
  guint32 crc = 0;
  guint32 file_crc = 1;
  int fd;

  lw_elf_init ();
  g_assert_true (lw_elf_file_open (&file, LW_FIXTURE_DEBUGLINK, FALSE, &why));
  g_assert_true (lw_elf_get_debuglink (file.elf, &name, &crc));
  g_assert_cmpstr (name, ==, LW_DEBUGLINK_NAME);
  lw_elf_file_close (&file);

  fd = open (LW_DEBUGLINK_FILE, O_RDONLY | O_CLOEXEC);
  g_assert_cmpint (fd, >=, 0);
  g_assert_true (lw_file_crc32 (fd, &file_crc));
  g_assert_cmphex (file_crc, ==, crc);
  close (fd);
  g_free (name);

  /* A file without a link. */
  g_assert_true (lw_elf_file_open (&file, LW_FIXTURE_SYMTAB, FALSE, &why));
  g_assert_false (lw_elf_get_debuglink (file.elf, &name, &crc));
  lw_elf_file_close (&file);
}

/* Paths that are not regular files are refused at once, with what they
 * are; a missing one is silent only when that is allowed. In a subprocess
 * with a deadline: opening the FIFO must not wait for a writer. */
static void
test_open_non_regular (void)
{
  GError *error = NULL;
  char *dir;
  char *fifo;
  char *why = NULL;

  if (!g_test_subprocess ())
    {
      g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
      return;
    }

  dir = g_dir_make_tmp ("lw-elf-file-XXXXXX", &error);
  g_assert_no_error (error);
  fifo = g_build_filename (dir, "planted.debug", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);

  g_assert_cmpint (lw_open_regular_file (fifo, TRUE, &why), ==, -1);
  g_assert_nonnull (why);
  g_assert_true (g_str_has_suffix (why, "planted.debug: a FIFO, skipped"));
  g_clear_pointer (&why, g_free);

  g_assert_cmpint (lw_open_regular_file (dir, TRUE, &why), ==, -1);
  g_assert_cmpstr (why + strlen (dir), ==, ": a directory, skipped");
  g_clear_pointer (&why, g_free);

  g_assert_cmpint (lw_open_regular_file ("/dev/null", TRUE, &why), ==, -1);
  g_assert_cmpstr (why, ==, "/dev/null: a character device, skipped");
  g_clear_pointer (&why, g_free);

  g_assert_cmpint (lw_open_regular_file ("/nonexistent/x.debug", TRUE, &why), ==, -1);
  g_assert_null (why);
  g_assert_cmpint (lw_open_regular_file ("/nonexistent/x.debug", FALSE, &why), ==, -1);
  g_assert_nonnull (why);
  g_clear_pointer (&why, g_free);

  g_unlink (fifo);
  g_rmdir (dir);
  g_free (fifo);
  g_free (dir);
}

/* Every (address, name) pair a table may hold, as "address name". */
static void
lw_add_pairs (GHashTable          *pairs,
              const LwSymbolTable *table)
{
  for (gsize i = 0; i < table->n_symbols; i++)
    g_hash_table_add (pairs, g_strdup_printf ("%" G_GINT64_MODIFIER "x %s",
                                              (guint64) table->symbols[i].value,
                                              table->names + table->symbols[i].name));
}

/* What the readers found in one file. */
typedef struct
{
  LwSymbolTable *table;        /* (nullable) */
  GByteArray    *build_id;     /* (nullable) */
  char          *link_name;    /* (nullable) */
  guint32        link_crc;
} LwElfReading;

static void
lw_elf_reading_clear (LwElfReading *reading)
{
  if (reading->table != NULL)
    lw_symbol_table_free (reading->table);
  if (reading->build_id != NULL)
    g_byte_array_unref (reading->build_id);
  g_free (reading->link_name);
  *reading = (LwElfReading) { NULL, NULL, NULL, 0 };
}

static void
lw_elf_read (Elf          *elf,
             LwElfReading *reading)
{
  const guint8 *id;
  gsize len;

  reading->table = lw_symbol_table_new_from_elf (elf, FALSE);
  id = lw_elf_get_build_id (elf, &len);
  if (id != NULL)
    reading->build_id = g_byte_array_append (g_byte_array_new (), id, len);
  if (!lw_elf_get_debuglink (elf, &reading->link_name, &reading->link_crc))
    reading->link_name = NULL;
}

/* Reads the @len bytes of @data as a file (FALSE if it does not open as an
 * ELF file) and checks the file's CRC-32 can be computed. */
static gboolean
lw_elf_read_bytes (const char   *data,
                   gsize         len,
                   LwElfReading *reading)
{
  char *path = lw_temp_file (data, len);
  char *why = NULL;
  LwElfFile file;
  guint32 crc;
  gboolean opened;

  *reading = (LwElfReading) { NULL, NULL, NULL, 0 };
  opened = lw_elf_file_open (&file, path, FALSE, &why);
  if (opened)
    {
      lw_elf_read (file.elf, reading);
      g_assert_true (lw_file_crc32 (file.fd, &crc));
      lw_elf_file_close (&file);
    }
  else
    g_assert_nonnull (why);
  g_free (why);
  g_unlink (path);
  g_free (path);
  return opened;
}

/* The same bytes read from memory, as the vDSO's image is. */
static void
lw_elf_read_memory (const char   *data,
                    gsize         len,
                    LwElfReading *reading)
{
  char *copy = g_memdup2 (data, len);
  Elf *elf = elf_memory (copy, len);

  *reading = (LwElfReading) { NULL, NULL, NULL, 0 };
  if (elf != NULL && elf_kind (elf) == ELF_K_ELF)
    lw_elf_read (elf, reading);
  elf_end (elf);
  g_free (copy);
}

/* What a corrupt variant may give: symbols the intact file has (or its
 * .dynsym, in @allowed), its build-id or none, its link or none. Returns
 * how many names the variant kept. */
static gsize
lw_assert_reading_within (const LwElfReading *reading,
                          const LwElfReading *intact,
                          GHashTable         *allowed,
                          const char         *variant)
{
  if (reading->table != NULL)
    for (gsize i = 0; i < reading->table->n_symbols; i++)
      {
        char *pair = g_strdup_printf ("%" G_GINT64_MODIFIER "x %s",
                                      (guint64) reading->table->symbols[i].value,
                                      reading->table->names + reading->table->symbols[i].name);

        if (!g_hash_table_contains (allowed, pair))
          g_error ("%s: a symbol the intact file does not have: %s", variant, pair);
        g_free (pair);
      }
  if (reading->build_id != NULL)
    {
      g_assert_nonnull (intact->build_id);
      g_assert_cmpmem (reading->build_id->data, reading->build_id->len,
                       intact->build_id->data, intact->build_id->len);
    }
  if (reading->link_name != NULL)
    {
      g_assert_cmpstr (reading->link_name, ==, intact->link_name);
      g_assert_cmphex (reading->link_crc, ==, intact->link_crc);
    }
  return reading->table != NULL ? reading->table->n_symbols : 0;
}

/* The section header of @data named @name, or NULL. Reads the intact
 * fixture, whose headers are valid. */
static Elf64_Shdr *
lw_section (char       *data,
            const char *name)
{
  Elf64_Ehdr *ehdr = (Elf64_Ehdr *) data;
  Elf64_Shdr *shdrs = (Elf64_Shdr *) (data + ehdr->e_shoff);
  const char *names = data + shdrs[ehdr->e_shstrndx].sh_offset;

  for (guint i = 0; i < ehdr->e_shnum; i++)
    if (strcmp (names + shdrs[i].sh_name, name) == 0)
      return &shdrs[i];
  return NULL;
}

typedef enum
{
  LW_CORRUPT_SIZE,      /* sh_size */
  LW_CORRUPT_OFFSET,    /* sh_offset */
  LW_CORRUPT_ENTSIZE,   /* sh_entsize */
  LW_CORRUPT_LINK,      /* sh_link */
  LW_CORRUPT_NOTE_NAME, /* the first note's n_namesz */
  LW_CORRUPT_NOTE_DESC, /* the first note's n_descsz */
  LW_CORRUPT_CONTENTS,  /* every byte of the section, to 'A' */
} LwCorruption;

typedef struct
{
  const char  *section;
  LwCorruption what;
  guint64      value;
} LwSectionCorruption;

/* Symbol tables with bad sizes, offsets and links, string tables cut or
 * out of the file, notes with bad lengths, a .gnu_debuglink without its
 * NUL or its CRC. */
static const LwSectionCorruption lw_section_corruptions[] = {
  { ".symtab", LW_CORRUPT_SIZE, G_GUINT64_CONSTANT (1) << 40 },
  { ".symtab", LW_CORRUPT_SIZE, 23 },
  { ".symtab", LW_CORRUPT_OFFSET, G_GUINT64_CONSTANT (1) << 40 },
  { ".symtab", LW_CORRUPT_OFFSET, G_MAXUINT64 - 8 },
  { ".symtab", LW_CORRUPT_ENTSIZE, 1 },
  { ".symtab", LW_CORRUPT_ENTSIZE, 7 },
  { ".symtab", LW_CORRUPT_ENTSIZE, G_GUINT64_CONSTANT (1) << 40 },
  { ".symtab", LW_CORRUPT_LINK, 0xffff },
  { ".symtab", LW_CORRUPT_LINK, 0 },
  { ".strtab", LW_CORRUPT_SIZE, 1 },
  { ".strtab", LW_CORRUPT_SIZE, G_GUINT64_CONSTANT (1) << 40 },
  { ".strtab", LW_CORRUPT_OFFSET, G_GUINT64_CONSTANT (1) << 40 },
  { ".strtab", LW_CORRUPT_CONTENTS, 0 },
  { ".dynsym", LW_CORRUPT_SIZE, G_GUINT64_CONSTANT (1) << 40 },
  { ".dynsym", LW_CORRUPT_LINK, 0xffff },
  { ".dynstr", LW_CORRUPT_CONTENTS, 0 },
  { ".note.gnu.build-id", LW_CORRUPT_NOTE_NAME, 0xffffffff },
  { ".note.gnu.build-id", LW_CORRUPT_NOTE_DESC, 0xffffffff },
  { ".note.gnu.build-id", LW_CORRUPT_NOTE_DESC, 0 },
  { ".note.gnu.build-id", LW_CORRUPT_SIZE, 3 },
  { ".note.gnu.build-id", LW_CORRUPT_SIZE, G_GUINT64_CONSTANT (1) << 40 },
  { ".gnu_debuglink", LW_CORRUPT_CONTENTS, 0 },
  { ".gnu_debuglink", LW_CORRUPT_SIZE, 2 },
  { ".gnu_debuglink", LW_CORRUPT_SIZE, 5 },
  { ".gnu_debuglink", LW_CORRUPT_OFFSET, G_GUINT64_CONSTANT (1) << 40 },
  { ".shstrtab", LW_CORRUPT_CONTENTS, 0 },
  { ".shstrtab", LW_CORRUPT_SIZE, G_GUINT64_CONSTANT (1) << 40 },
};

/* Applies @corruption to @data (a copy of the intact file); FALSE when the
 * file has no such section. */
static gboolean
lw_corrupt_section (char                      *data,
                    const LwSectionCorruption *corruption)
{
  Elf64_Shdr *shdr = lw_section (data, corruption->section);
  Elf64_Nhdr *note;

  if (shdr == NULL)
    return FALSE;
  note = (Elf64_Nhdr *) (data + shdr->sh_offset);
  switch (corruption->what)
    {
    case LW_CORRUPT_SIZE:
      shdr->sh_size = corruption->value;
      break;
    case LW_CORRUPT_OFFSET:
      shdr->sh_offset = corruption->value;
      break;
    case LW_CORRUPT_ENTSIZE:
      shdr->sh_entsize = corruption->value;
      break;
    case LW_CORRUPT_LINK:
      shdr->sh_link = (Elf64_Word) corruption->value;
      break;
    case LW_CORRUPT_NOTE_NAME:
      note->n_namesz = (Elf64_Word) corruption->value;
      break;
    case LW_CORRUPT_NOTE_DESC:
      note->n_descsz = (Elf64_Word) corruption->value;
      break;
    case LW_CORRUPT_CONTENTS:
      memset (data + shdr->sh_offset, 'A', shdr->sh_size);
      break;
    default:
      g_assert_not_reached ();
    }
  return TRUE;
}

typedef enum
{
  LW_EHDR_SHOFF_PAST_END,
  LW_EHDR_SHOFF_HUGE,
  LW_EHDR_SHNUM_HUGE,
  LW_EHDR_SHSTRNDX_OUT,
  LW_EHDR_SHENTSIZE_SMALL,
  LW_N_EHDR_CORRUPTIONS,
} LwEhdrCorruption;

/* Section headers out of range. */
static void
lw_corrupt_ehdr (char            *data,
                 gsize            len,
                 LwEhdrCorruption corruption)
{
  Elf64_Ehdr *ehdr = (Elf64_Ehdr *) data;

  switch (corruption)
    {
    case LW_EHDR_SHOFF_PAST_END:
      ehdr->e_shoff = len - ehdr->e_shentsize;
      break;
    case LW_EHDR_SHOFF_HUGE:
      ehdr->e_shoff = G_MAXUINT64 - 16;
      break;
    case LW_EHDR_SHNUM_HUGE:
      ehdr->e_shnum = 0xfeff;
      break;
    case LW_EHDR_SHSTRNDX_OUT:
      ehdr->e_shstrndx = 0xfeff;
      break;
    case LW_EHDR_SHENTSIZE_SMALL:
      ehdr->e_shentsize = 1;
      break;
    default:
      g_assert_not_reached ();
    }
}

/* Reads @variant both ways and checks it against the intact reading. */
static gsize
lw_check_variant (const char         *data,
                  gsize               len,
                  const LwElfReading *intact,
                  GHashTable         *allowed,
                  const char         *variant)
{
  LwElfReading reading;
  gsize kept = 0;

  if (lw_elf_read_bytes (data, len, &reading))
    kept = lw_assert_reading_within (&reading, intact, allowed, variant);
  lw_elf_reading_clear (&reading);
  lw_elf_read_memory (data, len, &reading);
  lw_assert_reading_within (&reading, intact, allowed, variant);
  lw_elf_reading_clear (&reading);
  return kept;
}

/* Corrupt and truncated variants of @fixture. @dynsym_fixture is the same
 * code stripped to its .dynsym, whose names a variant may fall back to. */
static void
lw_check_corrupt_variants (const char *fixture,
                           const char *dynsym_fixture)
{
  GError *error = NULL;
  GHashTable *allowed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  LwElfReading intact;
  LwElfReading dynsym;
  char *contents;
  char *data;
  gsize len;
  gsize n_fewer = 0;

  lw_elf_init ();
  g_file_get_contents (fixture, &contents, &len, &error);
  g_assert_no_error (error);
  g_assert_true (lw_elf_read_bytes (contents, len, &intact));
  g_assert_nonnull (intact.table);
  g_assert_cmpuint (intact.table->n_symbols, >, 0);
  lw_add_pairs (allowed, intact.table);
  {
    char *dynsym_contents;
    gsize dynsym_len;

    g_file_get_contents (dynsym_fixture, &dynsym_contents, &dynsym_len, &error);
    g_assert_no_error (error);
    g_assert_true (lw_elf_read_bytes (dynsym_contents, dynsym_len, &dynsym));
    g_assert_nonnull (dynsym.table);
    lw_add_pairs (allowed, dynsym.table);
    lw_elf_reading_clear (&dynsym);
    g_free (dynsym_contents);
  }

  for (guint i = 0; i < G_N_ELEMENTS (lw_section_corruptions); i++)
    {
      const LwSectionCorruption *corruption = &lw_section_corruptions[i];
      char *variant = g_strdup_printf ("%s: %s corruption %d (%" G_GINT64_MODIFIER "x)", fixture,
                                       corruption->section, corruption->what,
                                       corruption->value);

      data = g_memdup2 (contents, len);
      if (lw_corrupt_section (data, corruption) &&
          lw_check_variant (data, len, &intact, allowed, variant) < intact.table->n_symbols)
        n_fewer++;
      g_free (data);
      g_free (variant);
    }

  for (guint i = 0; i < LW_N_EHDR_CORRUPTIONS; i++)
    {
      char *variant = g_strdup_printf ("%s: ELF header corruption %u", fixture, i);

      data = g_memdup2 (contents, len);
      lw_corrupt_ehdr (data, len, i);
      lw_check_variant (data, len, &intact, allowed, variant);
      g_free (data);
      g_free (variant);
    }

  /* Truncated at every 1/64 of the file: every section, the section
   * headers (at the end) first, cut at some point. */
  for (guint k = 0; k < 64; k++)
    {
      char *variant = g_strdup_printf ("%s truncated to %" G_GSIZE_FORMAT " bytes",
                                       fixture, len * k / 64);

      lw_check_variant (contents, len * k / 64, &intact, allowed, variant);
      g_free (variant);
    }

  /* The corruptions did reach the readers: some variants lost names. */
  g_assert_cmpuint (n_fewer, >, 0);

  lw_elf_reading_clear (&intact);
  g_hash_table_unref (allowed);
  g_free (contents);
}

static void
test_corrupt_symtab (void)
{
  lw_check_corrupt_variants (LW_FIXTURE_SYMTAB, LW_FIXTURE_STRIPPED);
}

static void
test_corrupt_debuglink (void)
{
  lw_check_corrupt_variants (LW_FIXTURE_DEBUGLINK, LW_FIXTURE_DEBUGLINK);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/elf-file/crc32", test_crc32);
  g_test_add_func ("/elf-file/build-id", test_build_id);
  g_test_add_func ("/elf-file/debuglink", test_debuglink);
  g_test_add_func ("/elf-file/open-non-regular", test_open_non_regular);
  g_test_add_func ("/elf-file/corrupt/symtab", test_corrupt_symtab);
  g_test_add_func ("/elf-file/corrupt/debuglink", test_corrupt_debuglink);

  return g_test_run ();
}
