/* lw-calls.c: a lag's timed call tree (lw-calls.h) */
#include "lw-calls.h"

LwCall *
lw_call_new (const char *name, uintptr_t ip, int64_t start_ns, int64_t duration_ns)
{
  LwCall *call = g_new0 (LwCall, 1);

  call->name = g_strdup (name);
  call->ip = ip;
  call->start_ns = start_ns;
  call->duration_ns = duration_ns;
  return call;
}

void
lw_call_add (LwCall *parent, LwCall *child)
{
  if (parent->children == NULL)
    parent->children = g_ptr_array_new_with_free_func ((GDestroyNotify) lw_call_free);
  g_ptr_array_add (parent->children, child);
}

void
lw_call_free (LwCall *call)
{
  if (call == NULL)
    return;
  g_free (call->name);
  if (call->children != NULL)
    g_ptr_array_unref (call->children);
  g_free (call);
}
