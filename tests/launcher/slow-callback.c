/* slow-callback: preloaded into an unmodified GTK program by the launcher
 * test (through the user's own LD_PRELOAD, which the launcher must keep).
 * Once the program's loop runs, it adds one named timeout to the default
 * context whose callback spins for LW_TEST_SLOW_MS of CPU time, then,
 * shortly after, asks the application to quit. The program itself is not
 * changed.
 * When LW_TEST_SLOW_TIMES names a file, the wall-clock times (µs since the
 * epoch, as a report's "time") of the spin's start and end and of the quit
 * are written to it as they happen: the test finds the lag that holds the
 * spin by them, on a loaded machine too. */
#include <gio/gio.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LAGGY __attribute__ ((noipa))

/* The calling thread's CPU time, in µs. */
static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* Spins for @ms of the thread's CPU time: the same work, and about as many
 * samples (a running thread is sampled per 10 ms of its CPU time), however
 * loaded the machine is; a wall-clock spin on a starved thread gets a few,
 * which the other stacks of the same dispatch may outnumber. */
static LAGGY void
launcher_test_spin (gint64 ms)
{
  gint64 end = thread_cpu_us () + ms * 1000;

  while (thread_cpu_us () < end)
    ;
}

/* Loop thread. Appends "@what TIME_US" to the LW_TEST_SLOW_TIMES file. */
static void
note_time (const char *what)
{
  const char *path = g_getenv ("LW_TEST_SLOW_TIMES");
  FILE *file;

  if (path == NULL || (file = fopen (path, "a")) == NULL)
    return;
  fprintf (file, "%s %" G_GINT64_FORMAT "\n", what, g_get_real_time ());
  fclose (file);
}

static gboolean
quit_application (gpointer data)
{
  GApplication *app = g_application_get_default ();

  note_time ("quit");

  if (app != NULL)
    g_application_quit (app);
  else
    exit (0);
  return G_SOURCE_REMOVE;
}

static LAGGY gboolean
launcher_test_slow_callback (gpointer data)
{
  note_time ("spin_start");
  launcher_test_spin (atoi (g_getenv ("LW_TEST_SLOW_MS")));
  note_time ("spin_end");
  g_timeout_add (300, quit_application, NULL);
  __asm__ volatile ("" ::: "memory");
  return G_SOURCE_REMOVE;
}

__attribute__ ((constructor)) static void
slow_callback_init (void)
{
  GSource *source;

  if (g_getenv ("LW_TEST_SLOW_MS") == NULL)
    return;
  /* 1.5 s: the widget factory is up and its loop idles by then. */
  source = g_timeout_source_new (1500);
  g_source_set_name (source, "launcher-test: slow callback");
  g_source_set_callback (source, launcher_test_slow_callback, NULL, NULL);
  g_source_attach (source, NULL);
  g_source_unref (source);
}
