/* cxx-host: a C program with a C++ library, lagwatch linked or preloaded.
 *
 * A main-loop callback throws through 8 frames of the C++ library 20,000
 * times (a lag of a few hundred ms, so lagwatch takes the stack while C++
 * frames and the unwinder are running) and checks every catch. lagwatch is
 * found with dlsym, so the same source serves the linked and the preloaded
 * build. Exit status 0: every exception was caught with the right value.
 */
#include <dlfcn.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef LW_LINKED
#include "lagwatch.h"
#endif

int thrower_catch_through (int depth, int value);

typedef void *(*AttachFunc) (GMainContext *context);
typedef void (*DetachFunc) (void *watch);

static GMainLoop *loop;
static int failures;

static gboolean
throw_many_times (gpointer data)
{
  for (int i = 0; i < 20000; i++)
    if (thrower_catch_through (8, i) != i)
      failures++;
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (void)
{
#ifdef LW_LINKED
  AttachFunc attach = (AttachFunc) lagwatch_attach;  /* a real DT_NEEDED on liblagwatch */
  DetachFunc detach = (DetachFunc) lagwatch_detach;
#else
  AttachFunc attach = (AttachFunc) dlsym (RTLD_DEFAULT, "lagwatch_attach");
  DetachFunc detach = (DetachFunc) dlsym (RTLD_DEFAULT, "lagwatch_detach");
#endif
  void *watch = NULL;

  if (getenv ("LW_EXPECT_LAGWATCH") != NULL && attach == NULL)
    {
      fprintf (stderr, "lagwatch is not loaded\n");
      return 2;
    }
  if (attach != NULL)
    watch = attach (NULL);
  loop = g_main_loop_new (NULL, FALSE);
  g_timeout_add (10, throw_many_times, NULL);
  g_main_loop_run (loop);
  g_main_loop_unref (loop);
  if (watch != NULL)
    detach (watch);
  printf ("%d exceptions miscaught\n", failures);
  return failures == 0 ? 0 : 1;
}
