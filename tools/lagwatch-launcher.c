/* lagwatch: run an unmodified GLib or GTK program with lagwatch attached
 *
 *   lagwatch [--threshold MS] [--output SPEC] [--sample MS] [--hang MS]
 *            [--] PROGRAM [ARGS...]
 *
 * Options become the LAGWATCH_* environment variables (which also work on
 * their own), the preload library joins LD_PRELOAD (after what the user put
 * there), and PROGRAM replaces this process: its exit status is ours. The
 * values are checked here with the library's own configuration API, so a
 * bad one is refused before the program starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-build-config.h"
#include "lw-launcher-process.h"

static int opt_threshold = -1, opt_sample = -1, opt_hang = -1;
static char *opt_output;
static gboolean opt_version;

static GOptionEntry lw_launcher_options[] = {
  { "threshold", 't', 0, G_OPTION_ARG_INT, &opt_threshold,
    "Report when the loop stays out of poll longer than MS (default 100)", "MS" },
  { "output", 'o', 0, G_OPTION_ARG_STRING, &opt_output,
    "Where reports go, comma-separated: the sinks below (default stderr)", "SPEC" },
  { "sample", 's', 0, G_OPTION_ARG_INT, &opt_sample,
    "Take a stack every MS during a lag (default 10)", "MS" },
  { "hang", 0, 0, G_OPTION_ARG_INT, &opt_hang,
    "Write a durable hang record once a lag reaches MS (default 2000)", "MS" },
  { "version", 0, 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
  { NULL }
};

/* The directory of the file that holds this process's liblagwatch, found
 * from the loaded objects (not from dladdr, which the library avoids). */
static int
lw_launcher_find_library (struct dl_phdr_info *info, size_t size, void *data)
{
  char **found = data;
  uintptr_t target = (uintptr_t) lagwatch_attach;

  for (int i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW (Phdr) *ph = &info->dlpi_phdr[i];
      uintptr_t start = info->dlpi_addr + ph->p_vaddr;

      if (ph->p_type == PT_LOAD && target >= start && target < start + ph->p_memsz
          && info->dlpi_name != NULL && info->dlpi_name[0] != '\0')
        {
          *found = g_path_get_dirname (info->dlpi_name);
          return 1;
        }
    }
  return 0;
}

/* The preload library: LAGWATCH_PRELOAD_LIBRARY if set; next to this
 * program (a build tree); next to liblagwatch, in lagwatch/ (installed). */
static char *
lw_launcher_preload_path (void)
{
  const char *forced = g_getenv ("LAGWATCH_PRELOAD_LIBRARY");
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *libdir = NULL;
  char *candidate;

  if (forced != NULL)
    return g_strdup (forced);
  if (self != NULL)
    {
      g_autofree char *dir = g_path_get_dirname (self);

      candidate = g_build_filename (dir, "liblagwatch-preload.so", NULL);
      if (g_file_test (candidate, G_FILE_TEST_EXISTS))
        return candidate;
      g_free (candidate);
    }
  dl_iterate_phdr (lw_launcher_find_library, &libdir);
  if (libdir != NULL)
    {
      candidate = g_build_filename (libdir, "lagwatch", "liblagwatch-preload.so", NULL);
      if (g_file_test (candidate, G_FILE_TEST_EXISTS))
        return candidate;
      g_free (candidate);
    }
  return NULL;
}

/* TRUE when @path can be preloaded: a readable regular file that starts as
 * an ELF file does. Otherwise @why says what is wrong: the loader would
 * only print a line of its own and run the program unwatched. Main thread. */
static gboolean
lw_launcher_preload_usable (const char *path, const char **why)
{
  static const char elf_magic[4] = { 0x7f, 'E', 'L', 'F' };
  char magic[4];
  struct stat st;
  ssize_t n;
  int fd;

  fd = open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    {
      *why = g_strerror (errno);
      return FALSE;
    }
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    *why = "not a regular file";
  else if ((n = pread (fd, magic, sizeof magic, 0)) != (ssize_t) sizeof magic
           || memcmp (magic, elf_magic, sizeof magic) != 0)
    *why = "not an ELF shared library";
  else
    *why = NULL;
  close (fd);
  return *why == NULL;
}

/* Appends @value to the list in the variable @name, after what the user
 * put there (their entries come first). Main thread. */
static void
lw_launcher_append_env (const char *name, const char *separator, const char *value)
{
  const char *previous = g_getenv (name);
  g_autofree char *list = NULL;

  if (previous != NULL && previous[0] != '\0')
    list = g_strconcat (previous, separator, value, NULL);
  else
    list = g_strdup (value);
  g_setenv (name, list, TRUE);
}

/* Puts @preload in LD_PRELOAD. The loader splits LD_PRELOAD at spaces and
 * colons, with no escape, so a path holding one (an install prefix such as
 * "/opt/my apps") cannot be written there: the library is then named by
 * its file name alone, which the loader looks for in LD_LIBRARY_PATH, and
 * its directory is appended to LD_LIBRARY_PATH (split at colons and
 * semicolons only; the directory holds nothing else the program could
 * load). Main thread. */
static gboolean
lw_launcher_add_preload (const char *preload, GError **error)
{
  g_autofree char *dir = NULL;
  g_autofree char *name = NULL;

  if (strpbrk (preload, " :") == NULL)
    {
      lw_launcher_append_env ("LD_PRELOAD", " ", preload);
      return TRUE;
    }
  dir = g_path_get_dirname (preload);
  name = g_path_get_basename (preload);
  if (strpbrk (name, " :") != NULL || strpbrk (dir, ":;") != NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "cannot preload '%s': the loader takes no library whose directory "
                   "holds ':' or ';', nor one whose file name holds a space or ':'",
                   preload);
      return FALSE;
    }
  lw_launcher_append_env ("LD_LIBRARY_PATH", ":", dir);
  lw_launcher_append_env ("LD_PRELOAD", " ", name);
  return TRUE;
}

/* An option given (not -1) becomes its variable. */
static void
lw_launcher_setenv_ms (const char *name, int ms)
{
  char text[16];

  if (ms == -1)
    return;
  g_snprintf (text, sizeof text, "%d", ms);
  g_setenv (name, text, TRUE);
}

static int
lw_launcher_fail (const char *message)
{
  fprintf (stderr, "lagwatch: %s\nTry 'lagwatch --help'.\n", message);
  return 2;
}

int
main (int argc, char **argv)
{
  g_autoptr(GOptionContext) context = g_option_context_new ("[--] PROGRAM [ARGS...]");
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *preload = NULL;
  g_autofree char *identity = NULL;

  g_option_context_set_summary (context,
    "Run PROGRAM, an unmodified GLib or GTK program, and report every moment its\n"
    "main loop stops answering for longer than the threshold, with the stack that\n"
    "held it.");
  g_option_context_set_description (context,
    "Sinks (--output, comma-separated):\n"
    "  stderr        a text report on standard error (the default)\n"
    "  json:PATH     JSON Lines appended to PATH\n"
    "  journal       the systemd journal\n"
    "  syscap:PATH   a Sysprof capture written to PATH\n"
    "  none          no report\n"
    "\n"
    "The LAGWATCH_* environment variables work too; lagwatch(1) lists them.\n");
  g_option_context_add_main_entries (context, lw_launcher_options, NULL);
  /* Options end at PROGRAM: what follows is PROGRAM's. */
  g_option_context_set_strict_posix (context, TRUE);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    return lw_launcher_fail (error->message);
  if (opt_version)
    {
      printf ("lagwatch %s\n", LAGWATCH_VERSION);
      return 0;
    }
  if (argc > 1 && g_str_equal (argv[1], "--"))
    {
      argv++;
      argc--;
    }
  if (argc < 2)
    return lw_launcher_fail ("no PROGRAM to run");

  if (opt_threshold != -1 && (opt_threshold < 1 || !lagwatch_config_set_threshold_ms (config, (guint) opt_threshold)))
    return lw_launcher_fail ("--threshold takes a whole number of milliseconds from 1 to 3600000");
  if (opt_sample != -1 && (opt_sample < 1 || !lagwatch_config_set_sample_ms (config, (guint) opt_sample)))
    return lw_launcher_fail ("--sample takes a whole number of milliseconds from 1 to 1000");
  if (opt_hang != -1 && (opt_hang < 1 || !lagwatch_config_set_hang_ms (config, (guint) opt_hang)))
    return lw_launcher_fail ("--hang takes a whole number of milliseconds from 1 to 3600000");
  if (opt_output != NULL && !lagwatch_config_set_output (config, opt_output, &error))
    {
      g_autofree char *message = g_strdup_printf ("--output %s: %s", opt_output, error->message);

      return lw_launcher_fail (message);
    }

  preload = lw_launcher_preload_path ();
  if (preload == NULL)
    {
      fprintf (stderr, "lagwatch: cannot find liblagwatch-preload.so "
                       "(set LAGWATCH_PRELOAD_LIBRARY to its path)\n");
      return 2;
    }

  {
    const char *why;

    /* 127, as a shell says of a command it cannot run: the program is not
     * run rather than run unwatched. */
    if (!lw_launcher_preload_usable (preload, &why))
      {
        fprintf (stderr, "lagwatch: cannot preload '%s': %s\n", preload, why);
        return 127;
      }
  }

  if (!lw_launcher_add_preload (preload, &error))
    {
      fprintf (stderr, "lagwatch: %s\n", error->message);
      return 2;
    }

  lw_launcher_setenv_ms ("LAGWATCH_THRESHOLD_MS", opt_threshold);
  lw_launcher_setenv_ms ("LAGWATCH_SAMPLE_MS", opt_sample);
  lw_launcher_setenv_ms ("LAGWATCH_HANG_MS", opt_hang);
  if (opt_output != NULL)
    g_setenv ("LAGWATCH_OUTPUT", opt_output, TRUE);
  /* exec keeps our process id and pid namespace: only this very process
   * attaches (lw-launcher-process.h). */
  identity = lw_launcher_process_identity ();
  g_setenv ("LAGWATCH_LAUNCHER_PROCESS", identity, TRUE);

  execvp (argv[1], argv + 1);
  fprintf (stderr, "lagwatch: cannot run '%s': %s\n", argv[1], g_strerror (errno));
  return errno == ENOENT ? 127 : 126;
}
