/* lw-dispatch.h: which GSource the loop thread is dispatching
 *
 * GLib keeps, per thread, a record { depth, current source } behind a
 * pthread key (gmain.c's GMainDispatch); g_main_current_source() reads it,
 * but only on the thread itself and not from a signal handler. A one-shot
 * probe source, dispatched on the loop thread, finds that record's address
 * once: inside its own dispatch it knows both the current source (itself)
 * and the depth, and looks for the one pthread-specific value that points
 * at exactly that pair (read through process_vm_readv, so a value that is
 * not a pointer cannot fault). From then on the watcher reads the record,
 * the source's name and priority from memory, without calling GLib. If the
 * layout ever changes, the probe finds nothing and reports carry no source.
 */
#pragma once

#include <glib.h>

#include "lw-slot.h"

G_BEGIN_DECLS

/* Any thread. The return address of GLib's call of a source's dispatch
 * function (in g_main_dispatch()), learned by the first probe; 0 until
 * then. A stack frame at this address is GLib's dispatch, named or not:
 * GLib 2.77 and later reach it only through static functions
 * (g_main_context_dispatch_unlocked(), g_main_dispatch()), which
 * Debian's libglib names in no dynamic symbol. */
uintptr_t lw_dispatch_get_call_site (void);

/* Any thread, normal context. Attaches the probe to @slot's context and
 * wakes it; the probe runs at the loop's next dispatch. */
void     lw_dispatch_schedule_probe (LwSlot *slot);

typedef struct
{
  gboolean dispatching;  /* a source is being dispatched (depth > 0) */
  gboolean named;        /* it has a name */
  char     name[128];
  int      priority;
  /* An unnamed source with a callback set by g_source_set_callback()
   * (g_timeout_add, g_idle_add and the like): its function and data, 0
   * when unknown; its kind ("g_timeout_add", "g_idle_add", or NULL). */
  uintptr_t   callback_func;
  uintptr_t   callback_data;
  const char *callback_kind;
  /* A better name for the callback than its function's symbol (the
   * callable an interpreter's trampoline runs), from
   * lw_dispatch_describe_callback(). */
  gboolean    callback_described;
  char        callback_name[128];
} LwDispatchInfo;

/* Watcher thread. Reads what @slot's loop thread dispatches right now.
 * FALSE when it cannot be known (no probe result for this thread). The
 * caller checks afterwards that the loop is still in the same busy period:
 * only then was the source alive while its name was copied. */
gboolean lw_dispatch_read (LwSlot         *slot,
                           LwDispatchInfo *info);

/* Watcher thread, while the source is being dispatched (the caller checks
 * afterwards that it still was). Given an unnamed source's callback
 * function and data, may write a better name than the function's symbol
 * into @name (@size bytes, terminated) and return TRUE: the hook where an
 * interpreter's trampoline (PyGObject's, GJS's) gives the callable it runs.
 * Reads only through lw_modules_read_memory(), bounded, calls nothing in
 * the interpreter. FALSE when it knows no better name. */
gboolean lw_dispatch_describe_callback (uintptr_t  func,
                                        uintptr_t  data,
                                        char      *name,
                                        gsize      size);

G_END_DECLS
