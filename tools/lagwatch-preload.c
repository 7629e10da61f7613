/* lagwatch-preload.c: attach lagwatch to an unmodified program
 *
 * The `lagwatch` launcher puts this library in LD_PRELOAD. It starts nothing
 * when loaded: no thread, no signal handler, no GLib call. It interposes the
 * two functions every GLib program runs its loop with,
 * g_main_context_iteration() (GApplication, GTK) and g_main_loop_run(), and
 * attaches lagwatch to the default context the first time one of them runs
 * it. Those two are not enough: GObject Introspection (PyGObject, GJS) and a
 * dlsym()'d address call GLib's own functions, never ours, and GLib's calls
 * within itself do not go through its PLT either. One call always does:
 * the poll of every iteration of any context, through the PLT into libc.
 * Which call depends on the release: GLib before 2.81 polls through
 * g_poll(), which calls poll(); 2.81 and later call ppoll() directly, with
 * the full timeout, while the context's poll function is g_poll, and the
 * context's poll function (rounded to milliseconds) otherwise. So poll()
 * and ppoll() are interposed: a poll made from GLib's own code (or from a
 * program's poll function GLib called) by the thread that owns the default
 * context is an iteration of that context, however the loop was entered.
 * A program that never runs a GLib loop, and any program the watched one
 * starts (it inherits LD_PRELOAD but is not the process the launcher
 * named, even as pid 1 of a new pid namespace: lw-launcher-process.h),
 * are left alone; so are setuid/setgid programs (said in one line).
 */
#include <dlfcn.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-launcher-process.h"

/* Interposed symbols must be visible: this library exists to export them. */
#define LW_PRELOAD_API __attribute__ ((visibility ("default")))

typedef gboolean (*LwIterationFunc) (GMainContext *context, gboolean may_block);
typedef void (*LwLoopRunFunc) (GMainLoop *loop);
typedef int (*LwPollFunc) (struct pollfd *fds, nfds_t n_fds, int timeout);
typedef int (*LwPpollFunc) (struct pollfd *fds, nfds_t n_fds, const struct timespec *timeout,
                            const sigset_t *sigmask);

/* Loop thread (the first to iterate the default context), normal context.
 * The watch returned (lw_preload_once's result) is only ever compared with
 * NULL: the program's own attach may replace and free it later. */
static gpointer
lw_preload_attach (gpointer data)
{
  g_autoptr(LagWatchConfig) config = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *identity = NULL;
  LagWatch *watch;

  /* A setuid/setgid program: the environment that asked for lagwatch is
   * the caller's, not the program's. Said when the launcher asked. */
  if (getauxval (AT_SECURE))
    {
      if (g_getenv ("LAGWATCH_LAUNCHER_PROCESS") != NULL)
        {
          /* Not g_warning(): G_DEBUG=fatal-warnings would kill the program. */
          static const char message[] = "lagwatch: this program runs setuid or setgid (AT_SECURE): "
                                        "the environment is not trusted, lagwatch does not attach\n";

          if (write (STDERR_FILENO, message, sizeof message - 1) < 0)
            return NULL;
        }
      return NULL;
    }
  /* Only the process the launcher started, never its children, in its
   * pid namespace or in another (lw-launcher-process.h). */
  identity = lw_launcher_process_identity ();
  if (g_strcmp0 (g_getenv ("LAGWATCH_LAUNCHER_PROCESS"), identity) != 0)
    return NULL;
  /* A program that attaches lagwatch itself keeps its own watch: this
   * one is not attached if the program's came first, and gives way to it
   * if it comes later. */
  config = lagwatch_config_new ();
  lagwatch_config_set_replaceable (config, TRUE);
  watch = lagwatch_attach_full (NULL, config, &error);
  if (watch == NULL && !g_error_matches (error, LAGWATCH_ERROR, LAGWATCH_ERROR_ALREADY_WATCHED)
      && !g_error_matches (error, LAGWATCH_ERROR, LAGWATCH_ERROR_DISABLED))
    fprintf (stderr, "lagwatch: %s\n", error->message);
  return watch;
}

static GOnce lw_preload_once = G_ONCE_INIT;

/* Any thread running a GLib loop. After the first call: one load. */
static void
lw_preload_maybe_attach (GMainContext *context)
{
  if (G_LIKELY (lw_preload_once.status == G_ONCE_STATUS_READY))
    return;
  if (context == NULL || context == g_main_context_default ())
    g_once (&lw_preload_once, lw_preload_attach, NULL);
}

/* GLib's executable segment: [start, end). */
typedef struct
{
  uintptr_t start;
  uintptr_t end;
} LwCodeRange;

/* Any thread, normal context (dl_iterate_phdr callback). */
static int
lw_preload_find_glib (struct dl_phdr_info *info, size_t size, void *data)
{
  LwCodeRange *range = data;
  uintptr_t poll_addr = (uintptr_t) g_poll;

  for (int i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW (Phdr) *ph = &info->dlpi_phdr[i];
      uintptr_t start = info->dlpi_addr + ph->p_vaddr;

      if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && poll_addr >= start
          && poll_addr - start < ph->p_memsz)
        {
          range->start = start;
          range->end = start + ph->p_memsz;
          return 1;
        }
    }
  return 0;
}

/* Any thread, normal context. Where GLib's code is: found once. */
static gpointer
lw_preload_glib_range (gpointer data)
{
  static LwCodeRange range;

  dl_iterate_phdr (lw_preload_find_glib, &range);
  return &range;
}

/* How far up the stack GLib's return address is looked for when poll()
 * was not called from GLib directly: 64 words, a few frames. */
#define LW_PRELOAD_SCAN_WORDS 64

/* Any thread, inside poll(). TRUE when this poll comes from GLib's code:
 * @caller is in it, or, when a sanitizer runtime preloaded before this
 * library (ASan must come first) interposes poll() too and calls this one,
 * a return address into GLib lies in the few frames above (the
 * interceptor's caller). The words read are this thread's own live stack,
 * above this frame: mapped; not instrumented, since the interceptor's
 * frames hold redzones. */
__attribute__ ((no_sanitize_address)) static gboolean
lw_preload_called_from_glib (const LwCodeRange *glib, uintptr_t caller)
{
  const uintptr_t *frame = __builtin_frame_address (0);

  if (caller >= glib->start && caller < glib->end)
    return TRUE;
  for (guint i = 0; i < LW_PRELOAD_SCAN_WORDS; i++)
    if (frame[i] >= glib->start && frame[i] < glib->end)
      return TRUE;
  return FALSE;
}

/* Any thread, inside poll() or ppoll(). A poll from GLib's code by the
 * owner of the default context: GLib's main loop iterating it.
 * g_main_context_default() is only asked then: a program that uses GLib
 * without a loop gets no default context from here unless GLib itself
 * polls. Returns the context's poll function once lagwatch attached: if
 * that is lagwatch's wrapper (which calls the previous one, so this poll
 * again), poll() goes on through it, so that the poll under way already
 * ends a watched idle period: the first poll may be the one that waits
 * for the source that freezes the loop. Where lagwatch tracks the loop
 * with a source instead (lw-hooks.c), the poll function is still g_poll
 * and the source's check, right after this poll, ends that period. */
static GPollFunc
lw_preload_check_poll (uintptr_t caller)
{
  static GOnce range_once = G_ONCE_INIT;
  const LwCodeRange *glib = g_once (&range_once, lw_preload_glib_range, NULL);
  GMainContext *context;

  if (!lw_preload_called_from_glib (glib, caller))
    return NULL;
  context = g_main_context_default ();
  if (!g_main_context_is_owner (context) || g_once (&lw_preload_once, lw_preload_attach, NULL) == NULL)
    return NULL;
  return g_main_context_get_poll_func (context);
}

/* Any thread. After lagwatch is attached (or declined): one load. */
LW_PRELOAD_API int
poll (struct pollfd *fds, nfds_t n_fds, int timeout)
{
  static LwPollFunc real;

  if (G_UNLIKELY (real == NULL))
    real = (LwPollFunc) dlsym (RTLD_NEXT, "poll");
  if (G_UNLIKELY (lw_preload_once.status != G_ONCE_STATUS_READY))
    {
      GPollFunc attached = lw_preload_check_poll ((uintptr_t) __builtin_return_address (0));

      if (attached != NULL && attached != g_poll)
        return attached ((GPollFD *) fds, n_fds, timeout);
    }
  return real (fds, n_fds, timeout);
}

/* Any thread. After lagwatch is attached (or declined): one load. GLib
 * 2.81 and later poll with ppoll() while the poll function is g_poll: the
 * timeout is not touched, only the attach is looked for. */
LW_PRELOAD_API int
ppoll (struct pollfd *fds, nfds_t n_fds, const struct timespec *timeout, const sigset_t *sigmask)
{
  static LwPpollFunc real;

  if (G_UNLIKELY (real == NULL))
    real = (LwPpollFunc) dlsym (RTLD_NEXT, "ppoll");
  if (G_UNLIKELY (lw_preload_once.status != G_ONCE_STATUS_READY))
    lw_preload_check_poll ((uintptr_t) __builtin_return_address (0));
  return real (fds, n_fds, timeout, sigmask);
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
