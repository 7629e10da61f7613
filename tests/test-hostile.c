/* test-hostile.c: lagwatch never harms the program it runs in
 *
 * The program is a GTest program, as many are: g_test_init() makes every
 * warning fatal, as G_DEBUG=fatal-warnings does (set here too, for the
 * subprocesses). Whatever lagwatch meets at run time (a JSON file it cannot
 * open, a garbage record in its state directory, names full of terminal
 * escapes, a program that closes or reuses lagwatch's descriptors, no
 * descriptor left, no /proc) it must say in its own words on stderr and
 * carry on; never kill, never write into the program's files. Everything
 * runs in a subprocess with a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lag-harness.h"
#include "take-descriptors.h"
#include "lw-build-config.h"
#include "lw-say.h"
#include "lw-sink.h"

#define SUBPROCESS_TIMEOUT_US (60 * G_USEC_PER_SEC)

static char *tmp_dir;

/* A config with no output of its own but @output, and a state directory
 * in the test's directory. */
static LagWatchConfig *
config_new (const char *output, const char *state_dir)
{
  LagWatchConfig *config = lagwatch_config_new ();

  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  lagwatch_config_set_state_dir (config, state_dir);
  return config;
}

/* A JSON Lines path that cannot be opened: said on stderr, reports go to
 * stderr, the program lives on. */
static void
test_json_unopenable (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (tmp_dir, "unopenable-state", NULL);
      g_autoptr(LagWatchConfig) config = config_new ("json:/nonexistent-lagwatch-dir/x.jsonl", state);
      LagWatch *watch = lagwatch_attach_with_config (NULL, config);

      g_assert_nonnull (watch);
      lagwatch_detach (watch);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: the output set in code (lagwatch_config_set_output): cannot open "
                             "\"/nonexistent-lagwatch-dir/x.jsonl\"*writing reports to stderr instead\n*");
  g_test_trap_assert_stderr_unmatched ("*WARNING*");
}

/* Garbage named like a hang record in the state directory: removed, said,
 * and the program lives on. */
static void
test_garbage_record (void)
{
  g_autofree char *state = g_build_filename (tmp_dir, "garbage-state", NULL);
  g_autofree char *record = g_build_filename (state, "hang-1-1.rec", NULL);

  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = config_new ("none", state);
      LagWatch *watch = lagwatch_attach_with_config (NULL, config);

      g_assert_nonnull (watch);
      lagwatch_detach (watch);
      return;
    }
  g_assert_cmpint (g_mkdir (state, 0700), ==, 0);
  g_assert_true (g_file_set_contents (record, "garbage\x1b[2J\n", -1, NULL));
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: the state directory *garbage-state holds an invalid hang record "
                             "\"hang-1-1.rec\"*; removed\n*");
  g_assert_false (g_file_test (record, G_FILE_TEST_EXISTS));
}

/* Opens of /proc/self/ refused, as a sandbox or a process with no /proc
 * mounted sees them: open(), openat() and their 64-bit names are defined
 * here, so they take the place of libc's for GLib and lagwatch alike. */
static volatile gint refuse_proc;

/* The loop thread's stat file ("" until set), and how many of its opens
 * failed: lagwatch tried to read the thread's state and could not, the
 * read its line on stderr is about. */
static char loop_stat_path[64];
static volatile gint loop_stat_failed;

static int
hostile_openat (int dirfd, const char *path, int flags, mode_t mode)
{
  int fd, saved_errno;

  if (g_atomic_int_get (&refuse_proc) && path != NULL && strncmp (path, "/proc/", 6) == 0)
    {
      errno = EACCES;
      fd = -1;
    }
  else
    fd = (int) syscall (SYS_openat, dirfd, path, flags, mode);
  saved_errno = errno;
  if (fd < 0 && path != NULL && loop_stat_path[0] != '\0' && strcmp (path, loop_stat_path) == 0)
    g_atomic_int_inc (&loop_stat_failed);
  errno = saved_errno;
  return fd;
}

#define HOSTILE_MODE(flags, mode)                                          \
  do                                                                       \
    {                                                                      \
      va_list args;                                                        \
                                                                           \
      va_start (args, flags);                                              \
      mode = (flags & (O_CREAT | __O_TMPFILE)) ? va_arg (args, mode_t) : 0; \
      va_end (args);                                                       \
    }                                                                      \
  while (0)

/* With _FILE_OFFSET_BITS=64 the headers name open() open64 and openat()
 * openat64: the plain names are defined under their assembler names. */
int hostile_open_plain (const char *path, int flags, ...) __asm__ ("open");
int hostile_openat_plain (int dirfd, const char *path, int flags, ...) __asm__ ("openat");

int
open (const char *path, int flags, ...)
{
  mode_t mode;

  HOSTILE_MODE (flags, mode);
  return hostile_openat (AT_FDCWD, path, flags, mode);
}

int
hostile_open_plain (const char *path, int flags, ...)
{
  mode_t mode;

  HOSTILE_MODE (flags, mode);
  return hostile_openat (AT_FDCWD, path, flags, mode);
}

int
openat (int dirfd, const char *path, int flags, ...)
{
  mode_t mode;

  HOSTILE_MODE (flags, mode);
  return hostile_openat (dirfd, path, flags, mode);
}

int
hostile_openat_plain (int dirfd, const char *path, int flags, ...)
{
  mode_t mode;

  HOSTILE_MODE (flags, mode);
  return hostile_openat (dirfd, path, flags, mode);
}

/* Set once exhaust_descriptors() ran: the lags take back what lagwatch
 * frees. */
static volatile gint descriptors_exhausted;

/* Takes every free descriptor (take_every_descriptor()). */
static void
exhaust_descriptors (void)
{
  take_every_descriptor (NULL);
  g_atomic_int_set (&descriptors_exhausted, 1);
}

/* Loop thread. After exhaust_descriptors(), takes any descriptor freed
 * since: lagwatch's watcher, which held one of its /proc files open while
 * the descriptors were taken, closes it later (seen in the Debian 13 root:
 * its next read of the loop thread's stat then opened that number, and
 * never failed again). */
static void
take_freed_descriptors (void)
{
  if (!g_atomic_int_get (&descriptors_exhausted))
    return;
  while (dup (2) >= 0)
    ;
}

#define N_LAGS 5

/* A lag that lasts until lagwatch has failed to open the loop thread's
 * stat file once more than @data (an int) times: until the watcher, which
 * looks at the thread only once the lag passed the threshold, has tried
 * (on a loaded machine it may get no CPU in a lag of any fixed length). */
static LAGGY void
spin_until_stat_failed (gpointer data)
{
  gint64 deadline = g_get_monotonic_time () + HARNESS_DEADLINE_US;

  while (g_atomic_int_get (&loop_stat_failed) <= GPOINTER_TO_INT (data))
    {
      take_freed_descriptors ();
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    }
}

/* N_LAGS lags in a process where nothing can be opened under /proc (how
 * is @setup's business): every one reaches the report callback, and the
 * reason lagwatch knows less is said once. */
static void
lags_without_proc (void (*setup) (void))
{
  Harness h;

  g_snprintf (loop_stat_path, sizeof loop_stat_path, "/proc/self/task/%d/stat", (int) gettid ());
  harness_init (&h, 50);
  setup ();
  for (guint i = 0; i < N_LAGS; i++)
    {
      harness_run_lag (&h, spin_until_stat_failed, GINT_TO_POINTER (g_atomic_int_get (&loop_stat_failed)));
      harness_wait_reports (&h, i + 1);
    }
  for (guint i = 0; i < N_LAGS; i++)
    g_assert_cmpfloat (lagwatch_report_get_duration_ms (harness_report (&h, i)), >=, 50);
  g_atomic_int_set (&refuse_proc, 0);
  harness_clear (&h);
}

static void
refuse_proc_opens (void)
{
  g_atomic_int_set (&refuse_proc, 1);
}

static void
test_emfile (void)
{
  if (g_test_subprocess ())
    {
      lags_without_proc (exhaust_descriptors);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: cannot read /proc/self/task/*Too many open files*"
                             "lags are still reported\n*");
}

static void
test_proc_refused (void)
{
  if (g_test_subprocess ())
    {
      lags_without_proc (refuse_proc_opens);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: cannot read /proc/self/task/*Permission denied*"
                             "lags are still reported\n*");
}

/* The first record of @path holding @needle, or NULL; waits for it
 * (polling, a 20 s deadline): written by lagwatch's sink thread. Only a
 * whole line counts: read while the sink writes, a long record (a hang's,
 * with every thread) can be there in part, its needle in the part. */
static char *
wait_for_record (const char *path, const char *needle)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline)
    {
      g_autofree char *contents = NULL;

      if (g_file_get_contents (path, &contents, NULL, NULL))
        {
          g_auto(GStrv) lines = g_strsplit (contents, "\n", -1);

          /* The last piece follows the last newline: empty, or a line
           * still being written. */
          for (guint i = 0; lines[i] != NULL && lines[i + 1] != NULL; i++)
            if (strstr (lines[i], needle) != NULL)
              return g_strdup (lines[i]);
        }
      g_usleep (10 * 1000);
    }
  return NULL;
}

typedef struct
{
  GMutex   lock;       /* held by the program's thread during the hang */
  GMutex   state_lock;
  GCond    state_cond;
  gboolean holding;
  gboolean release;
} LockHolder;

/* A thread of the program, named like lagwatch's: holds a lock until told. */
static gpointer
lock_holder_main (gpointer data)
{
  LockHolder *holder = data;

  g_mutex_lock (&holder->lock);
  g_mutex_lock (&holder->state_lock);
  holder->holding = TRUE;
  g_cond_broadcast (&holder->state_cond);
  while (!holder->release)
    g_cond_wait (&holder->state_cond, &holder->state_lock);
  g_mutex_unlock (&holder->state_lock);
  g_mutex_unlock (&holder->lock);
  return NULL;
}

static char *hang_json_path;
static char *hang_record;

/* The lag: until the hang record is written. */
static void
wait_for_hang_record (gpointer data)
{
  hang_record = wait_for_record (hang_json_path, "\"event\":\"hang\"");
}

/* A program thread named "lagwatch-demo" holding a lock is in the hang
 * record's threads; lagwatch's own threads are not. */
static void
test_hang_threads_by_id (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (tmp_dir, "threads-state", NULL);
      g_autofree char *output = NULL;
      g_autoptr(LagWatchConfig) config = NULL;
      LockHolder holder = { 0 };
      GThread *thread;
      Harness h;

      hang_json_path = g_build_filename (tmp_dir, "threads.jsonl", NULL);
      output = g_strconcat ("json:", hang_json_path, NULL);
      config = config_new (output, state);
      g_assert_true (lagwatch_config_set_hang_ms (config, 300));
      thread = g_thread_new ("lagwatch-demo", lock_holder_main, &holder);
      g_mutex_lock (&holder.state_lock);
      while (!holder.holding)
        g_cond_wait (&holder.state_cond, &holder.state_lock);
      g_mutex_unlock (&holder.state_lock);

      harness_init_with_config (&h, config);
      harness_run_lag (&h, wait_for_hang_record, NULL);
      g_assert_nonnull (hang_record);
      g_assert_nonnull (strstr (hang_record, "\"name\":\"lagwatch-demo\""));
      g_assert_null (strstr (hang_record, "\"name\":\"lagwatch\""));
      g_assert_null (strstr (hang_record, "\"name\":\"lagwatch-report\""));
      g_assert_null (strstr (hang_record, "\"name\":\"lagwatch-sink\""));
      harness_clear (&h);

      g_mutex_lock (&holder.state_lock);
      holder.release = TRUE;
      g_cond_broadcast (&holder.state_cond);
      g_mutex_unlock (&holder.state_lock);
      g_thread_join (thread);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* A $HOME that does not exist is not created (nor anything below it):
 * lagwatch says once that it has no state directory. With $HOME present,
 * its .local/state/lagwatch is made. */
static void
test_missing_home (void)
{
  g_autofree char *home = g_build_filename (tmp_dir, "no-such-home", NULL);

  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      g_autofree char *made = g_build_filename (home, ".local", "state", "lagwatch", NULL);

      g_assert_true (lagwatch_config_set_output (config, "none", NULL));
      g_setenv ("HOME", home, TRUE);
      g_unsetenv ("XDG_STATE_HOME");
      for (int i = 0; i < 2; i++)
        {
          LagWatch *watch = lagwatch_attach_with_config (NULL, config);

          g_assert_nonnull (watch);
          lagwatch_detach (watch);
        }
      g_assert_false (g_file_test (home, G_FILE_TEST_EXISTS));

      g_assert_cmpint (g_mkdir (home, 0700), ==, 0);
      lagwatch_detach (lagwatch_attach_with_config (NULL, config));
      g_assert_true (g_file_test (made, G_FILE_TEST_IS_DIR));
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: no state directory: *no-such-home does not exist*");
  g_test_trap_assert_stderr_unmatched ("*no state directory*no state directory*");
}

#define EVIL_SOURCE "evil\x1b]0;C\a\x1b[2J\nsource"
#define EVIL_THREAD "thr\x1b]0;T\a\nX"

static gboolean
evil_lag_cb (gpointer data)
{
  gboolean *done = data;

  spin_ms (GINT_TO_POINTER (200));
  *done = TRUE;
  return G_SOURCE_REMOVE;
}

/* A GSource name and a thread name holding ESC, BEL and a newline reach
 * the terminal escaped: the text report holds no control byte but its own
 * line ends. */
static void
test_terminal_escapes (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (tmp_dir, "escapes-state", NULL);
      g_autoptr(LagWatchConfig) config = config_new ("stderr", state);
      gboolean done = FALSE;
      GSource *source;
      Harness h;

      g_assert_cmpint (pthread_setname_np (pthread_self (), EVIL_THREAD), ==, 0);
      harness_init_with_config (&h, config);
      source = g_idle_source_new ();
      g_source_set_name (source, EVIL_SOURCE);
      g_source_set_callback (source, evil_lag_cb, &done, NULL);
      g_source_attach (source, h.context);
      g_source_unref (source);
      while (!done)
        g_main_context_iteration (h.context, TRUE);
      harness_wait_report_of_source (&h, EVIL_SOURCE);
      /* Detaching flushes the stderr sink. */
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: lag of *in GSource \"evil\\x1b]0;C\\x07\\x1b[2J\\x0asource\"*"
                             "on thread * \"thr\\x1b]0;T\\x07\\x0aX\"*");
  g_test_trap_assert_stderr_unmatched ("*\x1b*");
  g_test_trap_assert_stderr_unmatched ("*\a*");
  g_test_trap_assert_stderr_unmatched ("*\nsource*");
}

#define PROGRAM_BYTES "the program's own data\n"

/* The descriptor of this process open on @path, or -1. */
static int
fd_of (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/fd", 0, NULL);
  const char *name;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *link = g_strconcat ("/proc/self/fd/", name, NULL);
      g_autofree char *target = g_file_read_link (link, NULL);

      if (g_strcmp0 (target, path) == 0)
        return atoi (name);
    }
  return -1;
}

/* How many lines of @path hold @needle. */
static guint
count_records (const char *path, const char *needle)
{
  g_autofree char *contents = NULL;
  guint n = 0;

  char *end;

  if (!g_file_get_contents (path, &contents, NULL, NULL))
    return 0;
  /* Whole lines only (wait_for_record()). */
  end = strrchr (contents, '\n');
  if (end == NULL)
    return 0;
  end[1] = '\0';
  for (const char *p = contents; (p = strstr (p, needle)) != NULL; p++)
    n++;
  return n;
}

/* Waits (polling, 20 s deadline) until @path holds @n lines with @needle. */
static void
wait_for_records (const char *path, const char *needle, guint n)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  while (count_records (path, needle) < n)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
}

/* close_range (3, ~0U, 0), as a daemon does, except the eventfds of
 * GLib's main contexts (unknown_descriptors()). */
static void
close_all_but_glib (void)
{
  g_autoptr(GArray) doomed = unknown_descriptors (-1);

  /* In ranges, between GLib's, with close_range(). */
  for (guint i = 0, start = 0; i < doomed->len; i++)
    {
      int fd = g_array_index (doomed, int, i);

      if (i + 1 == doomed->len || g_array_index (doomed, int, i + 1) != fd + 1)
        {
          g_assert_cmpint (close_range ((unsigned) g_array_index (doomed, int, start), (unsigned) fd, 0), ==, 0);
          start = i + 1;
        }
    }
}

/* Opens @path with @flags on descriptor number @fd, as a program that
 * reuses the numbers it freed does. lagwatch's threads may hold a number
 * for an instant (a /proc read, a file of its state directory, work left
 * from the last report on a loaded machine): an open that lands on
 * another number is kept, a file of the program's too, and the number is
 * waited for (polling, 20 s deadline). Every descriptor opened goes to
 * @program_fds. */
static void
open_on_number (int fd, const char *path, int flags, GArray *program_fds)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  for (;;)
    {
      int got;

      while (fcntl (fd, F_GETFD) >= 0)
        {
          g_assert_cmpint (g_get_monotonic_time (), <, deadline);
          g_usleep (1000);
        }
      got = open (path, flags, 0600);
      g_assert_cmpint (got, >=, 0);
      g_array_append_val (program_fds, got);
      if (got == fd)
        return;
      {
        g_autofree char *target = descriptor_target (fd);

        g_test_message ("descriptor %d was taken between its check and the open, by %s (the program's file got %d)",
                        fd, target != NULL ? target : "a file closed since", got);
      }
    }
}

typedef enum
{
  TAKE_OVER_CLOSE_RANGE,  /* close every descriptor from 3, then open files */
  TAKE_OVER_DUP2,         /* dup2() a file of the program over lagwatch's */
} TakeOver;

/* The program takes lagwatch's descriptors (its JSON Lines file, its state
 * directory, its /proc files) over, the way @data says; then a lag and a
 * hang. The program's files get none of lagwatch's bytes, lagwatch's own
 * file gets the records (reopened by path), the program's descriptors all
 * stay open, and lagwatch said what happened. */
static void
test_descriptors_taken (gconstpointer data)
{
  TakeOver how = GPOINTER_TO_INT (data);
  g_autofree char *dir = g_build_filename (tmp_dir, how == TAKE_OVER_DUP2 ? "dup2" : "close-range", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (dir, "state", NULL);
      g_autofree char *json = g_build_filename (dir, "records.jsonl", NULL);
      g_autofree char *mine = g_build_filename (dir, "program.txt", NULL);
      g_autofree char *my_dir = g_build_filename (dir, "program-dir", NULL);
      g_autofree char *output = g_strconcat ("json:", json, NULL);
      g_autoptr(LagWatchConfig) config = config_new (output, state);
      g_autoptr(GArray) program_fds = g_array_new (FALSE, FALSE, sizeof (int));
      int json_fd, state_fd, highest;
      Harness h;

      g_assert_cmpint (g_mkdir_with_parents (my_dir, 0700), ==, 0);
      g_assert_true (lagwatch_config_set_hang_ms (config, 300));
      harness_init_with_config (&h, config);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
      harness_wait_reports (&h, 1);
      wait_for_records (json, "\"event\":\"lag\"", 1);
      json_fd = fd_of (json);
      state_fd = fd_of (state);
      g_assert_cmpint (json_fd, >=, 3);
      g_assert_cmpint (state_fd, >=, 3);

      if (how == TAKE_OVER_CLOSE_RANGE)
        {
          /* Every number up to lagwatch's highest becomes a file of the
           * program: its text file on the JSON file's number, its
           * directory on the state directory's. */
          highest = MAX (json_fd, state_fd);
          close_all_but_glib ();
          for (int fd = 3; fd <= highest; fd++)
            if (fd == state_fd)
              open_on_number (fd, my_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, program_fds);
            else if (fd == json_fd || fcntl (fd, F_GETFD) < 0)  /* else GLib's */
              open_on_number (fd, mine, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, program_fds);
        }
      else
        {
          int file = open (mine, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
          int folder = open (my_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

          g_assert_cmpint (dup2 (file, json_fd), ==, json_fd);
          g_assert_cmpint (dup2 (folder, state_fd), ==, state_fd);
          g_array_append_val (program_fds, file);
          g_array_append_val (program_fds, folder);
          g_array_append_val (program_fds, json_fd);
          g_array_append_val (program_fds, state_fd);
        }
      /* On the number that was lagwatch's JSON file's: the program's text. */
      g_assert_true (lw_write_all (json_fd, PROGRAM_BYTES, strlen (PROGRAM_BYTES)));

      /* A lag that is also a hang: the hang's copy goes to the state
       * directory, both records to the JSON file. */
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (600));
      harness_wait_reports (&h, 2);
      wait_for_records (json, "\"event\":\"lag\"", 2);
      wait_for_records (json, "\"event\":\"hang\"", 1);
      harness_clear (&h);

      {
        g_autofree char *contents = NULL;
        g_autoptr(GDir) listing = g_dir_open (my_dir, 0, NULL);

        g_assert_true (g_file_get_contents (mine, &contents, NULL, NULL));
        g_assert_cmpstr (contents, ==, PROGRAM_BYTES);
        g_assert_nonnull (listing);
        g_assert_null (g_dir_read_name (listing));
      }
      for (guint i = 0; i < program_fds->len; i++)
        g_assert_cmpint (fcntl (g_array_index (program_fds, int, i), F_GETFD), >=, 0);
      return;
    }
  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: the program closed or replaced descriptor *, which held *records.jsonl: "
                             "reopened by path\n*");
  g_test_trap_assert_stderr ("*lagwatch: the program closed or replaced descriptor *, which held the state "
                             "directory *: reopened by path\n*");
}

/* lagwatch's own channel: one line each, prefixed, control bytes escaped,
 * long text cut, a burst thinned to LW_SAY_BURST lines. */
static void
test_say_channel (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *lengthy = g_strnfill (3 * LW_SAY_MAX_BYTES, 'x');

      lw_say ("escape \x1b[2J bell \a newline \n end");
      lw_say ("%s", lengthy);
      for (int i = 0; i < 3 * LW_SAY_BURST; i++)
        lw_say ("burst %d", i);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("lagwatch: escape \\x1b[2J bell \\x07 newline \\x0a end\n"
                             "lagwatch: xxxxxxxx*xxx...\n"
                             "lagwatch: burst 0\n*lagwatch: burst 7\n");
  /* Ten in all: two, then eight of the burst. */
  g_test_trap_assert_stderr_unmatched ("*burst 8*");
  g_test_trap_assert_stderr_unmatched ("*x\nx*");
  {
    g_autofree char *run = g_strnfill (LW_SAY_MAX_BYTES + 1, 'x');
    g_autofree char *too_long = g_strconcat ("*", run, "*", NULL);

    g_test_trap_assert_stderr_unmatched (too_long);
  }
}

/* A Sysprof capture's descriptor dup2()ed over by the program: the
 * capture ends there, said once; the program's file gets none of it and
 * its descriptor stays open (the writer is never unref'ed onto it). */
static void
test_syscap_taken (void)
{
#if LW_HAVE_SYSPROF
  g_autofree char *dir = g_build_filename (tmp_dir, "syscap", NULL);

  if (g_test_subprocess ())
    {
      g_autofree char *state = g_build_filename (dir, "state", NULL);
      g_autofree char *capture = g_build_filename (dir, "lags.syscap", NULL);
      g_autofree char *mine = g_build_filename (dir, "program.txt", NULL);
      g_autofree char *output = g_strconcat ("syscap:", capture, NULL);
      g_autoptr(LagWatchConfig) config = config_new (output, state);
      g_autofree char *contents = NULL;
      int capture_fd, file;
      Harness h;

      harness_init_with_config (&h, config);
      capture_fd = fd_of (capture);
      g_assert_cmpint (capture_fd, >=, 3);
      file = open (mine, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      g_assert_cmpint (dup2 (file, capture_fd), ==, capture_fd);
      g_assert_true (lw_write_all (capture_fd, PROGRAM_BYTES, strlen (PROGRAM_BYTES)));
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (150));
      harness_wait_reports (&h, 1);
      harness_clear (&h);
      g_assert_true (g_file_get_contents (mine, &contents, NULL, NULL));
      g_assert_cmpstr (contents, ==, PROGRAM_BYTES);
      g_assert_cmpint (fcntl (capture_fd, F_GETFD), >=, 0);
      return;
    }
  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: the program closed or replaced descriptor *, which held the Sysprof "
                             "capture *lags.syscap\": the capture ends there\n*");
#else
  g_test_skip ("built with -Dsysprof=disabled: no Sysprof capture");
#endif
}

/* stderr a full pipe, and no descriptor left to open a private
 * non-blocking one from /proc: lagwatch's lines are dropped, the program
 * is not made to wait. */
static void
test_say_full_pipe_no_descriptor (void)
{
  if (g_test_subprocess ())
    {
      int fds[2];
      char block[4096] = { 0 };

      g_assert_cmpint (pipe2 (fds, O_NONBLOCK), ==, 0);
      while (write (fds[1], block, sizeof block) > 0)
        ;
      g_assert_cmpint (errno, ==, EAGAIN);
      g_assert_cmpint (fcntl (fds[1], F_SETFL, 0), ==, 0);  /* the program's own writes block */
      g_assert_cmpint (dup2 (fds[1], 2), ==, 2);
      exhaust_descriptors ();
      for (int i = 0; i < 3; i++)
        lw_say ("a line stderr cannot take");
      /* lw_say() returned: that was the test. The process's own exit
       * would write to the full pipe (LeakSanitizer's report, under ASan)
       * and block there, as any program's write to it does. */
      _exit (0);
    }
  g_test_trap_subprocess (NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  int status;

  /* The subprocesses start with every warning fatal, as a GNOME harness
   * runs a program; g_test_init() makes them fatal in this process too. */
  g_setenv ("G_DEBUG", "fatal-warnings", TRUE);
  g_unsetenv ("LAGWATCH_OUTPUT");
  g_unsetenv ("LAGWATCH_STATE_DIR");
  g_test_init (&argc, &argv, NULL);
  /* The subprocesses find the parent's directory in the environment. */
  tmp_dir = g_strdup (g_getenv ("LW_TEST_HOSTILE_DIR"));
  if (tmp_dir == NULL)
    {
      tmp_dir = g_dir_make_tmp ("lagwatch-hostile-XXXXXX", NULL);
      g_setenv ("LW_TEST_HOSTILE_DIR", tmp_dir, TRUE);
    }
  g_test_add_func ("/hostile/say/channel", test_say_channel);
  g_test_add_func ("/hostile/say/full-pipe-no-descriptor", test_say_full_pipe_no_descriptor);
  g_test_add_func ("/hostile/fatal-warnings/json-unopenable", test_json_unopenable);
  g_test_add_func ("/hostile/fatal-warnings/garbage-record", test_garbage_record);
  g_test_add_func ("/hostile/no-proc/emfile", test_emfile);
  g_test_add_func ("/hostile/no-proc/open-refused", test_proc_refused);
  g_test_add_func ("/hostile/hang/threads-by-id", test_hang_threads_by_id);
  g_test_add_func ("/hostile/state/missing-home", test_missing_home);
  g_test_add_func ("/hostile/terminal/escapes", test_terminal_escapes);
  g_test_add_data_func ("/hostile/descriptors/close-range", GINT_TO_POINTER (TAKE_OVER_CLOSE_RANGE),
                        test_descriptors_taken);
  g_test_add_data_func ("/hostile/descriptors/dup2", GINT_TO_POINTER (TAKE_OVER_DUP2),
                        test_descriptors_taken);
  g_test_add_func ("/hostile/descriptors/syscap", test_syscap_taken);
  status = g_test_run ();
  if (!g_test_subprocess ())
    harness_remove_tree (tmp_dir);
  return status;
}
