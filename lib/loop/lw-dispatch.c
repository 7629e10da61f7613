/* lw-dispatch.c: the probe that finds GLib's per-thread dispatch record */
#include "lw-dispatch.h"

#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "lw-modules.h"
#include "lw-python.h"

/* GLib's gmain.c (2.40 onwards): struct _GMainDispatch { gint depth; GSource *source; } */
typedef struct
{
  gint     depth;
  GSource *source;
} LwGMainDispatch;

/* GLib's gmain.c: the callback data of a source whose callback was set by
 * g_source_set_callback() (g_timeout_add, g_idle_add, and PyGObject's
 * GLib.timeout_add through them). */
typedef struct
{
  gint           ref_count;
  GSourceFunc    func;
  gpointer       data;
  GDestroyNotify notify;
} LwGSourceCallback;

/* The return address of GLib's call of a source's dispatch function: the
 * one call site (g_main_dispatch() in gmain.c, every release), learned by
 * the probe; 0 until then. */
static _Atomic uintptr_t lw_dispatch_call_site;

/* Any thread. */
uintptr_t
lw_dispatch_get_call_site (void)
{
  return atomic_load_explicit (&lw_dispatch_call_site, memory_order_relaxed);
}

/* Loop thread, in GLib's prepare or check: the probe is ready at once,
 * also in the check of the iteration it was attached in (from a poll
 * function or a source's prepare): it then runs before that iteration's
 * dispatches of lower priority. */
static gboolean
lw_dispatch_probe_prepare (GSource *source, gint *timeout)
{
  *timeout = 0;
  return TRUE;
}

static gboolean
lw_dispatch_probe_check (GSource *source)
{
  return TRUE;
}

/* Loop thread: the probe's dispatch, called by GLib's dispatch code (not
 * inlined, so its return address is GLib's). @data: the slot, given with
 * g_source_set_callback() so that GLib's callback functions show too. */
static G_GNUC_NO_INLINE gboolean
lw_dispatch_probe (GSource *self, GSourceFunc callback, gpointer data)
{
  LwSlot *slot = data;
  gint depth = g_main_depth ();
  uintptr_t found = 0;
  guint matches = 0;

  for (pthread_key_t key = 0; key < PTHREAD_KEYS_MAX; key++)
    {
      void *value = pthread_getspecific (key);
      LwGMainDispatch record;

      if (value == NULL || ((uintptr_t) value & (sizeof (void *) - 1)) != 0
          || !lw_modules_read_memory ((uintptr_t) value, &record, sizeof record))
        continue;
      if (record.depth == depth && record.source == self)
        {
          found = (uintptr_t) value;
          matches++;
        }
    }
  /* Set by g_source_set_callback(): GLib's own callback functions (static
   * in gmain.c), learned from the probe, which has such a callback. */
  atomic_store (&slot->callback_funcs, (uintptr_t) self->callback_funcs);
  /* Where GLib's dispatch code called this function: the frame that bounds
   * a callback's stack, whether or not GLib's static functions have names
   * (lw_dispatch_get_call_site()). */
  atomic_store (&lw_dispatch_call_site, (uintptr_t) __builtin_return_address (0));
  if (matches == 1)
    {
      atomic_store (&slot->dispatch_record, found);
      atomic_store (&slot->dispatch_tid, gettid ());
    }
  else
    g_debug ("the dispatch probe found %u candidates; lag reports will name no GSource", matches);
  return G_SOURCE_REMOVE;
}

/* Never called: the probe's dispatch does its work itself. */
static gboolean
lw_dispatch_probe_callback (gpointer data)
{
  return G_SOURCE_REMOVE;
}

static GSourceFuncs lw_dispatch_probe_funcs = {
  .prepare = lw_dispatch_probe_prepare,
  .check = lw_dispatch_probe_check,
  .dispatch = lw_dispatch_probe,
};

void
lw_dispatch_schedule_probe (LwSlot *slot)
{
  GSource *probe = g_source_new (&lw_dispatch_probe_funcs, sizeof (GSource));

  g_source_set_name (probe, "lagwatch: dispatch probe");
  g_source_set_priority (probe, G_PRIORITY_HIGH);
  g_source_set_callback (probe, lw_dispatch_probe_callback, slot, NULL);
  g_source_attach (probe, slot->context);
  g_source_unref (probe);
  g_main_context_wakeup (slot->context);
}

/* Watcher thread. A better name than @func's symbol for a callback, from
 * an interpreter: the Python callable of a PyGObject callback (@data). */
gboolean
lw_dispatch_describe_callback (uintptr_t func, uintptr_t data, char *name, gsize size)
{
  return lw_python_callable_name (data, name, size);
}

/* Watcher thread. An unnamed source's callback, when GLib's own functions
 * hold it: read from the source's memory through the kernel (the source
 * is alive only if the loop is still in the same busy period, which the
 * caller checks afterwards). */
static void
lw_dispatch_read_callback (LwSlot *slot, const GSource *source, LwDispatchInfo *info)
{
  uintptr_t funcs = atomic_load (&slot->callback_funcs);
  LwGSourceCallback callback;

  if (funcs == 0 || (uintptr_t) source->callback_funcs != funcs || source->callback_data == NULL
      || !lw_modules_read_memory ((uintptr_t) source->callback_data, &callback, sizeof callback)
      || callback.func == NULL)
    return;
  info->callback_func = (uintptr_t) callback.func;
  info->callback_data = (uintptr_t) callback.data;
  if (source->source_funcs == &g_timeout_funcs)
    info->callback_kind = "g_timeout_add";
  else if (source->source_funcs == &g_idle_funcs)
    info->callback_kind = "g_idle_add";
  info->callback_described = lw_dispatch_describe_callback (info->callback_func, info->callback_data,
                                                            info->callback_name,
                                                            sizeof info->callback_name);
  info->callback_name[sizeof info->callback_name - 1] = '\0';
}

/* Any thread. TRUE when @name is one GLib gives a source itself (2.74 and
 * later, measured up to 2.90): every g_idle_add() source is "GIdleSource",
 * every child watch "GChildWatchSource", every signal source
 * "GUnixSignalSource: SIGxxx". Not a name the program chose: such a source
 * is described by its callback, as an unnamed one. */
static gboolean
lw_dispatch_is_default_name (const char *name)
{
  return strcmp (name, "GIdleSource") == 0 || strcmp (name, "GChildWatchSource") == 0
         || strncmp (name, "GUnixSignalSource: ", strlen ("GUnixSignalSource: ")) == 0;
}

gboolean
lw_dispatch_read (LwSlot *slot, LwDispatchInfo *info)
{
  uintptr_t record_addr = atomic_load (&slot->dispatch_record);
  LwGMainDispatch record;
  GSource source;

  memset (info, 0, sizeof *info);
  if (record_addr == 0 || atomic_load (&slot->dispatch_tid) != atomic_load (&slot->loop_tid)
      || !lw_modules_read_memory (record_addr, &record, sizeof record))
    return FALSE;
  if (record.depth <= 0 || record.source == NULL)
    return TRUE;
  if (!lw_modules_read_memory ((uintptr_t) record.source, &source, sizeof source))
    return FALSE;
  info->dispatching = TRUE;
  info->priority = source.priority;
  if (source.name != NULL)
    {
      /* A name longer than the room is cut, not refused. */
      if (!lw_modules_read_string ((uintptr_t) source.name, info->name, sizeof info->name, NULL))
        return FALSE;
      info->named = !lw_dispatch_is_default_name (info->name);
    }
  if (!info->named)
    {
      info->name[0] = '\0';
      /* An unnamed source is described by its callback: the Python
       * callable it runs, else (on the reporting thread) its function. Not
       * a name: "source" stays the program's own (g_source_set_name()). */
      lw_dispatch_read_callback (slot, &source, info);
    }
  return TRUE;
}
