/* dlsym-loop: a C program that runs GLib's loop through an address it looked
 * up itself, as GObject Introspection does: dlsym() on libglib's handle,
 * never the PLT entry the launcher's preload library interposes. Its
 * timeout callback (unnamed, added by g_timeout_add) spins 300 ms. */
#include <dlfcn.h>
#include <glib.h>
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
quit_loop (gpointer data)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static LAGGY gboolean
freeze_busy (gpointer data)
{
  dlsym_loop_spin (300);
  g_timeout_add (100, quit_loop, NULL);
  __asm__ volatile ("" ::: "memory");
  return G_SOURCE_REMOVE;
}

int
main (void)
{
  void *glib = dlopen ("libglib-2.0.so.0", RTLD_NOW | RTLD_NOLOAD);
  void (*run) (GMainLoop *);

  if (glib == NULL || (run = (void (*) (GMainLoop *)) dlsym (glib, "g_main_loop_run")) == NULL)
    {
      fprintf (stderr, "dlsym-loop: cannot find g_main_loop_run: %s\n", dlerror ());
      return 1;
    }
  loop = g_main_loop_new (NULL, FALSE);
  g_timeout_add (200, freeze_busy, NULL);
  run (loop);
  g_main_loop_unref (loop);
  return 0;
}
