/* lagwatch-preload.c: attach lagwatch to an unmodified program
 *
 * The `lagwatch` launcher puts this library in LD_PRELOAD. It starts nothing
 * when loaded: no thread, no signal handler, no GLib call. It interposes the
 * two functions every GLib program runs its loop with,
 * g_main_context_iteration() (GApplication, GTK) and g_main_loop_run(), and
 * attaches lagwatch to the default context the first time one of them runs
 * it. A program that never runs a GLib loop, and any program the watched one
 * starts (it inherits LD_PRELOAD but not the process id the launcher named),
 * are left alone; so are setuid/setgid programs (said in one line).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "lagwatch.h"

/* Interposed symbols must be visible: this library exists to export them. */
#define LW_PRELOAD_API __attribute__ ((visibility ("default")))

typedef gboolean (*LwIterationFunc) (GMainContext *context, gboolean may_block);
typedef void (*LwLoopRunFunc) (GMainLoop *loop);

/* Loop thread (the first to iterate the default context), normal context. */
static gpointer
lw_preload_attach (gpointer data)
{
  const char *pid;

  /* A setuid/setgid program: the environment that asked for lagwatch is
   * the caller's, not the program's. Said when the launcher asked. */
  if (getauxval (AT_SECURE))
    {
      if (g_getenv ("LAGWATCH_LAUNCHER_PID") != NULL)
        g_warning ("this program runs setuid or setgid (AT_SECURE): the environment is not "
                   "trusted, lagwatch does not attach");
      return NULL;
    }
  /* Only the process the launcher started, never its children. */
  pid = g_getenv ("LAGWATCH_LAUNCHER_PID");
  if (pid == NULL || atoi (pid) != getpid ())
    return NULL;
  /* A program that attaches lagwatch itself keeps its own watch. */
  if (lagwatch_is_attached (NULL))
    return NULL;
  return lagwatch_attach (NULL);
}

/* Any thread running a GLib loop. After the first call: one load. */
static void
lw_preload_maybe_attach (GMainContext *context)
{
  static GOnce once = G_ONCE_INIT;

  if (G_LIKELY (once.status == G_ONCE_STATUS_READY))
    return;
  if (context == NULL || context == g_main_context_default ())
    g_once (&once, lw_preload_attach, NULL);
}

LW_PRELOAD_API gboolean
g_main_context_iteration (GMainContext *context, gboolean may_block)
{
  static LwIterationFunc real;

  if (G_UNLIKELY (real == NULL))
    real = (LwIterationFunc) dlsym (RTLD_NEXT, "g_main_context_iteration");
  lw_preload_maybe_attach (context);
  return real (context, may_block);
}

LW_PRELOAD_API void
g_main_loop_run (GMainLoop *loop)
{
  static LwLoopRunFunc real;

  if (G_UNLIKELY (real == NULL))
    real = (LwLoopRunFunc) dlsym (RTLD_NEXT, "g_main_loop_run");
  lw_preload_maybe_attach (g_main_loop_get_context (loop));
  real (loop);
}
