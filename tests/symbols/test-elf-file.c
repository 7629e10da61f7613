/* test-elf-file.c: reading one ELF file (lw-elf-file.h)
 *
 * Known answers from the fixtures the suite builds (build-id from readelf,
 * .gnu_debuglink CRC from objcopy) and from the CRC-32 check value; paths
 * that are not regular files.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-elf-file.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LW_FIXTURE_SYMTAB      LW_FIXTURE_DIR "/libsymbols-fixture.so"
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

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/elf-file/crc32", test_crc32);
  g_test_add_func ("/elf-file/build-id", test_build_id);
  g_test_add_func ("/elf-file/debuglink", test_debuglink);
  g_test_add_func ("/elf-file/open-non-regular", test_open_non_regular);

  return g_test_run ();
}
