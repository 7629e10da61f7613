/* lw-dispatch.c: the probe that finds GLib's per-thread dispatch record */
#include "lw-dispatch.h"

#include <limits.h>
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

/* Loop thread, inside the probe's own dispatch. */
static gboolean
lw_dispatch_probe (gpointer data)
{
  LwSlot *slot = data;
  GSource *self = g_main_current_source ();
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
  if (matches == 1)
    {
      atomic_store (&slot->dispatch_record, found);
      atomic_store (&slot->dispatch_tid, gettid ());
    }
  else
    g_debug ("the dispatch probe found %u candidates; lag reports will name no GSource", matches);
  return G_SOURCE_REMOVE;
}

void
lw_dispatch_schedule_probe (LwSlot *slot)
{
  GSource *probe = g_idle_source_new ();

  g_source_set_name (probe, "lagwatch: dispatch probe");
  g_source_set_priority (probe, G_PRIORITY_HIGH);
  g_source_set_callback (probe, lw_dispatch_probe, slot, NULL);
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
      info->named = TRUE;
    }
  else
    {
      /* An unnamed source is described by its callback: the Python
       * callable it runs, else (on the reporting thread) its function. Not
       * a name: "source" stays the program's own (g_source_set_name()). */
      lw_dispatch_read_callback (slot, &source, info);
    }
  return TRUE;
}
