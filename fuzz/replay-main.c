/* replay-main.c: a main() for the fuzz targets outside libFuzzer
 *
 * Built into every fuzz-NAME in the ordinary build (with any compiler), so
 * the suite compiles each target and replays its seed corpus: a target that
 * no longer builds, or a seed that now crashes or trips a sanitizer, fails
 * `meson test` rather than only the bounded fuzzing run of CI. Every argument
 * is a file or a directory of files; each file is one input. The empty
 * input comes first, as libFuzzer runs it first.
 *
 * Called from the test's main thread only.
 */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Runs the target on a copy of exactly @length bytes, so ASan sees a
 * read past its end. Never NULL, as libFuzzer's input is not, even when
 * empty: glibc's calloc (0, 1), and ASan's, give a block of no bytes. */
static guint
replay_bytes (const char *contents, gsize length)
{
  guint8 *input = calloc (length, 1);

  if (input == NULL)
    {
      g_printerr ("replay: out of memory\n");
      exit (1);
    }
  memcpy (input, contents, length);
  LLVMFuzzerTestOneInput (input, length);
  free (input);
  return 1;
}

static guint
replay_file (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize length = 0;

  if (!g_file_get_contents (path, &contents, &length, &error))
    {
      g_printerr ("replay: %s\n", error->message);
      exit (1);
    }
  return replay_bytes (contents, length);
}

static guint
replay_path (const char *path)
{
  if (!g_file_test (path, G_FILE_TEST_IS_DIR))
    return replay_file (path);

  g_autoptr(GError) error = NULL;
  g_autoptr(GDir) dir = g_dir_open (path, 0, &error);
  if (dir == NULL)
    {
      g_printerr ("replay: %s\n", error->message);
      exit (1);
    }
  guint n = 0;
  const char *name;
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      n += replay_path (child);
    }
  return n;
}

int
main (int argc, char **argv)
{
  guint n = 0;

  replay_bytes ("", 0);
  for (int i = 1; i < argc; i++)
    n += replay_path (argv[i]);
  if (n == 0)
    {
      g_printerr ("replay: no input given\n");
      return 1;
    }
  g_print ("replayed the empty input and %u others\n", n);
  return 0;
}
