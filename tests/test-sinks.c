/* test-sinks.c: sinks never block, never kill, never lose a record without
 * a word, and never write where they should not
 *
 * A JSON FIFO nobody reads, a reader that stops reading (a JSON FIFO, a
 * stderr pipe), a reader that went away, a file that cannot grow, symlinks,
 * modes and owners. Everything that could hang or kill runs in a subprocess
 * with a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-sink.h"

#define SUBPROCESS_TIMEOUT_US (60 * G_USEC_PER_SEC)

/* More than a pipe holds (64 KiB by default) in records of 2 KiB. */
#define N_RECORDS 100
#define RECORD_SIZE 2048

static char *tmp_dir;

static char *
make_record (guint n, char fill)
{
  g_autofree char *pad = g_strnfill (RECORD_SIZE, fill);

  return g_strdup_printf ("{\"event\":\"lag\",\"n\":%u,\"pad\":\"%s\"}", n, pad);
}

/* Writes N_RECORDS records to @sinks, as JSON and as text. */
static void
flood (LwSinks *sinks)
{
  for (guint i = 0; i < N_RECORDS; i++)
    {
      g_autofree char *json = make_record (i, 'x');
      g_autofree char *text = g_strconcat (json, "\n", NULL);

      lw_sinks_write_raw (sinks, json, text);
    }
}

/* All that can be read from @fd now. */
static char *
drain (int fd)
{
  GString *all = g_string_new (NULL);
  char buffer[8192];
  ssize_t n;

  while ((n = read (fd, buffer, sizeof buffer)) > 0)
    g_string_append_len (all, buffer, n);
  return g_string_free (all, FALSE);
}

static void
test_json_fifo_without_reader (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *fifo = g_build_filename (tmp_dir, "no-reader.fifo", NULL);
      g_autofree char *spec = g_strconcat ("json:", fifo, NULL);
      LwSinks *sinks;

      g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
      sinks = lw_sinks_open (spec);
      g_assert_true (lw_sinks_has_stderr (sinks));
      lw_sinks_free (sinks);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*no-reader.fifo*a FIFO no process is reading*writing reports to stderr instead*");
}

/* A JSON FIFO whose reader stops reading: writes drop and count instead of
 * blocking, and the count comes before the next record that gets through. */
static void
test_json_fifo_stalled (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *fifo = g_build_filename (tmp_dir, "stalled.fifo", NULL);
      g_autofree char *spec = g_strconcat ("json:", fifo, NULL);
      g_autofree char *got = NULL;
      g_autofree char *expected = NULL;
      g_autofree char *last = make_record (N_RECORDS, 'y');
      LwSinks *sinks;
      guint dropped;
      int reader, writer;

      g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
      reader = open (fifo, O_RDONLY | O_NONBLOCK);
      g_assert_cmpint (reader, >=, 0);
      sinks = lw_sinks_open (spec);
      g_assert_false (lw_sinks_has_stderr (sinks));
      flood (sinks);
      dropped = lw_sinks_dropped (sinks);
      g_test_message ("%u of %u records dropped", dropped, N_RECORDS);
      g_assert_cmpuint (dropped, >, 0);
      g_assert_cmpuint (dropped, <, N_RECORDS);

      g_free (drain (reader));
      lw_sinks_write_raw (sinks, last, "");
      got = drain (reader);
      expected = g_strdup_printf ("{\"event\":\"dropped\",\"count\":%u,\"reason\":\"sink stalled\"}\n%s\n",
                                  dropped, last);
      /* At most one record was cut short when the pipe filled: the notice
       * then starts on a line of its own. */
      if (got[0] == '\n')
        g_assert_cmpstr (got + 1, ==, expected);
      else
        g_assert_cmpstr (got, ==, expected);

      /* Stalled again at detach, the FIFO full to the last byte: the count
       * is said on stderr. */
      flood (sinks);
      writer = open (fifo, O_WRONLY | O_NONBLOCK);
      g_assert_cmpint (writer, >=, 0);
      while (write (writer, "x", 1) == 1)
        ;
      lw_sinks_free (sinks);
      close (writer);
      close (reader);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: * reports to *stalled.fifo dropped: sink stalled\n");
}

/* stderr on a pipe nobody drains: the same, and the program's own fd 2
 * stays blocking (lagwatch writes through a description of its own). */
static void
test_stderr_pipe_stalled (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *got = NULL;
      g_autofree char *expected = NULL;
      LwSinks *sinks;
      guint dropped;
      int pipe_fds[2];

      g_assert_cmpint (pipe (pipe_fds), ==, 0);
      g_assert_cmpint (dup2 (pipe_fds[1], STDERR_FILENO), ==, STDERR_FILENO);
      g_assert_cmpint (fcntl (pipe_fds[0], F_SETFL, O_NONBLOCK), ==, 0);
      sinks = lw_sinks_open ("stderr");
      flood (sinks);
      dropped = lw_sinks_dropped (sinks);
      g_assert_cmpuint (dropped, >, 0);
      g_assert_cmpint (fcntl (STDERR_FILENO, F_GETFL) & O_NONBLOCK, ==, 0);

      g_free (drain (pipe_fds[0]));
      lw_sinks_write_raw (sinks, "{}", "the last one\n");
      got = drain (pipe_fds[0]);
      expected = g_strdup_printf ("lagwatch: %u reports dropped: sink stalled\nthe last one\n", dropped);
      g_assert_cmpstr (got[0] == '\n' ? got + 1 : got, ==, expected);

      /* Stalled again at detach: the count is said there. */
      flood (sinks);
      g_free (drain (pipe_fds[0]));
      dropped = lw_sinks_dropped (sinks) - dropped;
      lw_sinks_free (sinks);
      g_free (got);
      got = drain (pipe_fds[0]);
      g_free (expected);
      expected = g_strdup_printf ("lagwatch: %u reports dropped: sink stalled\n", dropped);
      g_assert_cmpstr (got[0] == '\n' ? got + 1 : got, ==, expected);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* A stderr pipe whose reader went away: EPIPE, not a SIGPIPE that kills
 * the program. */
static void
test_stderr_reader_gone (void)
{
  if (g_test_subprocess ())
    {
      LwSinks *sinks;
      int pipe_fds[2];
      sigset_t pending;

      g_assert_cmpint (pipe (pipe_fds), ==, 0);
      g_assert_cmpint (dup2 (pipe_fds[1], STDERR_FILENO), ==, STDERR_FILENO);
      close (pipe_fds[0]);
      close (pipe_fds[1]);
      sinks = lw_sinks_open ("stderr");
      lw_sinks_write_raw (sinks, "{}", "nobody reads this\n");
      lw_sinks_free (sinks);
      sigpending (&pending);
      g_assert_false (sigismember (&pending, SIGPIPE));
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* lagwatch's private description of a stderr pipe lives for one record:
 * once the program points fd 2 elsewhere, its reader sees the end. */
static void
test_stderr_pipe_not_held (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *got = NULL;
      LwSinks *sinks;
      int pipe_fds[2], null_fd;
      char byte;

      g_assert_cmpint (pipe (pipe_fds), ==, 0);
      g_assert_cmpint (dup2 (pipe_fds[1], STDERR_FILENO), ==, STDERR_FILENO);
      close (pipe_fds[1]);
      sinks = lw_sinks_open ("stderr");
      lw_sinks_write_raw (sinks, "{}", "one record\n");
      null_fd = open ("/dev/null", O_WRONLY);
      g_assert_cmpint (dup2 (null_fd, STDERR_FILENO), ==, STDERR_FILENO);
      close (null_fd);
      g_assert_cmpint (read (pipe_fds[0], &byte, 1), ==, 1);
      got = drain (pipe_fds[0]);  /* blocking: returns only at the end of the pipe */
      g_assert_cmpstr (got, ==, "ne record\n");
      lw_sinks_free (sinks);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* A file that cannot grow (a full disk; here RLIMIT_FSIZE, EFBIG): said
 * once, counted, and the count said at close. */
static void
test_write_error_said_once (void)
{
  g_autofree char *path = g_build_filename (tmp_dir, "full.jsonl", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *spec = g_strconcat ("json:", path, NULL);
      struct rlimit limit = { 4 * RECORD_SIZE, 4 * RECORD_SIZE };
      LwSinks *sinks;

      signal (SIGXFSZ, SIG_IGN);
      g_assert_cmpint (setrlimit (RLIMIT_FSIZE, &limit), ==, 0);
      sinks = lw_sinks_open (spec);
      flood (sinks);
      g_assert_cmpuint (lw_sinks_dropped (sinks), >=, N_RECORDS - 4);
      lw_sinks_free (sinks);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: cannot write reports to *full.jsonl: File too large; "
                             "its reports are dropped and counted\n"
                             "lagwatch: 9? reports to *full.jsonl dropped: write failed (File too large)\n");
  g_unlink (path);
}

static void
test_json_symlink_refused (void)
{
  g_autofree char *target = g_build_filename (tmp_dir, "target", NULL);
  g_autofree char *link = g_build_filename (tmp_dir, "link.jsonl", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *spec = g_strconcat ("json:", link, NULL);
      LwSinks *sinks = lw_sinks_open (spec);

      g_assert_true (lw_sinks_has_stderr (sinks));
      flood (sinks);
      lw_sinks_free (sinks);
      return;
    }
  g_assert_cmpint (symlink (target, link), ==, 0);
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*cannot open \"*link.jsonl\" for JSON Lines (it is a symbolic link)*");
  g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
  g_unlink (link);
}

static void
test_json_created_private (void)
{
  g_autofree char *path = g_build_filename (tmp_dir, "private.jsonl", NULL);
  g_autofree char *spec = g_strconcat ("json:", path, NULL);
  mode_t old = umask (022);
  LwSinks *sinks = lw_sinks_open (spec);
  struct stat st;

  umask (old);
  g_assert_false (lw_sinks_has_stderr (sinks));
  lw_sinks_free (sinks);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  g_unlink (path);
}

/* A file whose last line a run killed while it wrote left without its
 * newline: the next record starts on a line of its own, and is whole. A
 * file that ends with one gets no empty line. */
static void
test_json_torn_last_line (void)
{
  g_autofree char *path = g_build_filename (tmp_dir, "torn.jsonl", NULL);
  g_autofree char *spec = g_strconcat ("json:", path, NULL);
  g_autofree char *contents = NULL;
  LwSinks *sinks;

  g_assert_true (g_file_set_contents (path, "{\"event\":\"hang\",\"id\":\"1-1\",\"so", -1, NULL));
  sinks = lw_sinks_open (spec);
  lw_sinks_write_raw (sinks, "{\"event\":\"hang-killed\"}", NULL);
  lw_sinks_free (sinks);
  g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
  g_assert_cmpstr (contents, ==, "{\"event\":\"hang\",\"id\":\"1-1\",\"so\n{\"event\":\"hang-killed\"}\n");

  /* Whole lines: appended as they are. */
  sinks = lw_sinks_open (spec);
  lw_sinks_write_raw (sinks, "{}", NULL);
  lw_sinks_free (sinks);
  g_clear_pointer (&contents, g_free);
  g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
  g_assert_true (g_str_has_suffix (contents, "\"hang-killed\"}\n{}\n"));
  g_unlink (path);
}

/* A file of another user (planted where a privileged program writes), a
 * hard link, a device: refused. */
static void
test_json_not_ours_refused (void)
{
  g_autofree char *theirs = g_build_filename (tmp_dir, "theirs.jsonl", NULL);
  g_autofree char *original = g_build_filename (tmp_dir, "original", NULL);
  g_autofree char *linked = g_build_filename (tmp_dir, "linked.jsonl", NULL);

  if (g_test_subprocess ())
    {
      const char *paths[] = { theirs, linked, "/dev/full" };

      for (guint i = geteuid () == 0 ? 0 : 1; i < G_N_ELEMENTS (paths); i++)
        {
          g_autofree char *spec = g_strconcat ("json:", paths[i], NULL);
          LwSinks *sinks = lw_sinks_open (spec);

          g_assert_true (lw_sinks_has_stderr (sinks));
          lw_sinks_free (sinks);
        }
      return;
    }
  g_assert_true (g_file_set_contents (theirs, "", 0, NULL));
  if (geteuid () == 0)
    g_assert_cmpint (chown (theirs, 65534, 65534), ==, 0);
  g_assert_true (g_file_set_contents (original, "", 0, NULL));
  g_assert_cmpint (link (original, linked), ==, 0);
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  if (geteuid () == 0)
    g_test_trap_assert_stderr ("*refusing \"*theirs.jsonl\" for JSON Lines (it belongs to another user)*");
  g_test_trap_assert_stderr ("*refusing \"*linked.jsonl\" for JSON Lines (it has other hard links)*");
  g_test_trap_assert_stderr ("*refusing \"/dev/full\" for JSON Lines (it is not a regular file or a FIFO)*");
  g_unlink (theirs);
  g_unlink (original);
  g_unlink (linked);
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  /* A refused sink is named in a warning: expected, not fatal. */
  g_log_set_always_fatal (G_LOG_FATAL_MASK);
  g_log_set_fatal_mask ("lagwatch", G_LOG_FATAL_MASK);
  /* The subprocesses find the parent's directory in the environment. */
  tmp_dir = g_strdup (g_getenv ("LW_TEST_SINKS_DIR"));
  if (tmp_dir == NULL)
    {
      tmp_dir = g_dir_make_tmp ("lagwatch-sinks-XXXXXX", NULL);
      g_setenv ("LW_TEST_SINKS_DIR", tmp_dir, TRUE);
    }
  g_test_add_func ("/sinks/json-fifo-without-reader", test_json_fifo_without_reader);
  g_test_add_func ("/sinks/json-fifo-stalled", test_json_fifo_stalled);
  g_test_add_func ("/sinks/stderr-pipe-stalled", test_stderr_pipe_stalled);
  g_test_add_func ("/sinks/stderr-reader-gone", test_stderr_reader_gone);
  g_test_add_func ("/sinks/stderr-pipe-not-held", test_stderr_pipe_not_held);
  g_test_add_func ("/sinks/write-error-said-once", test_write_error_said_once);
  g_test_add_func ("/sinks/json-symlink-refused", test_json_symlink_refused);
  g_test_add_func ("/sinks/json-created-private", test_json_created_private);
  g_test_add_func ("/sinks/json-torn-last-line", test_json_torn_last_line);
  g_test_add_func ("/sinks/json-not-ours-refused", test_json_not_ours_refused);
  status = g_test_run ();
  if (!g_test_subprocess ())
    {
      g_autoptr(GDir) dir = g_dir_open (tmp_dir, 0, NULL);
      const char *name;

      while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *path = g_build_filename (tmp_dir, name, NULL);

          g_unlink (path);
        }
      g_rmdir (tmp_dir);
      g_unsetenv ("LW_TEST_SINKS_DIR");
    }
  return status;
}
