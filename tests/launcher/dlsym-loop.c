/* dlsym-loop: a C program that runs GLib's loop through an address it looked
 * up itself, as GObject Introspection does: dlsym() on libglib's handle,
 * never the PLT entry the launcher's preload library interposes. Its
 * timeout callback (added by g_timeout_add, unnamed unless the first
 * argument is "named") spins 300 ms (with "own-poll", the default
 * context polls through a poll function of the program's); the loop
 * quits once the report is written (LW_TEST_REPORT_FILE non-empty), or
 * after 30 s: a lag that ends just before exit may not be reported yet. */
#include <dlfcn.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <stdio.h>

#define LAGGY __attribute__ ((noipa))

static GMainLoop *loop;

static LAGGY void
dlsym_loop_spin (gint64 ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

static gboolean
quit_when_reported (gpointer data)
{
  static gint64 deadline;
  const char *path = g_getenv ("LW_TEST_REPORT_FILE");
  GStatBuf st;

  if (deadline == 0)
    deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  if ((path != NULL && g_stat (path, &st) == 0 && st.st_size > 0) || g_get_monotonic_time () > deadline)
    {
      g_main_loop_quit (loop);
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

static LAGGY gboolean
freeze_busy (gpointer data)
{
  dlsym_loop_spin (300);
  g_timeout_add (50, quit_when_reported, NULL);
  __asm__ volatile ("" ::: "memory");
  return G_SOURCE_REMOVE;
}

/* A poll function of the program's own (first argument "own-poll"): GLib
 * calls it instead of polling itself, and it polls with poll(). */
static gint
own_poll (GPollFD *fds, guint n_fds, gint timeout)
{
  return poll ((struct pollfd *) fds, n_fds, timeout);
}

int
main (int argc, char **argv)
{
  void *glib = dlopen ("libglib-2.0.so.0", RTLD_NOW | RTLD_NOLOAD);
  void (*run) (GMainLoop *);
  guint id;

  if (glib == NULL || (run = (void (*) (GMainLoop *)) dlsym (glib, "g_main_loop_run")) == NULL)
    {
      fprintf (stderr, "dlsym-loop: cannot find g_main_loop_run: %s\n", dlerror ());
      return 1;
    }
  loop = g_main_loop_new (NULL, FALSE);
  id = g_timeout_add (200, freeze_busy, NULL);
  if (argc > 1 && g_str_equal (argv[1], "named"))
    g_source_set_name_by_id (id, "dlsym-loop: named freeze");
  if (argc > 1 && g_str_equal (argv[1], "own-poll"))
    g_main_context_set_poll_func (NULL, own_poll);
  run (loop);
  g_main_loop_unref (loop);
  return 0;
}
