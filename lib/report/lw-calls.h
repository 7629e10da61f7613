/* lw-calls.h: a lag's timed call tree (what ran, in order, for how long)
 *
 * Built on the reporting thread, either from the lag's samples (their time
 * order: consecutive samples sharing a frame at one depth are one call of
 * that function) or, for code built for lagwatch's tracer, from every call
 * and return it recorded. Each node is one call: its function, when it
 * began relative to the lag's start, how long it lasted, and the calls it
 * made, in order.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _LwCall LwCall;

struct _LwCall
{
  char      *name;        /* the function as the stack names it; NULL: unnamed */
  uintptr_t  ip;          /* an address inside it (the frame's), for offline naming */
  int64_t    start_ns;    /* from the lag's start */
  int64_t    duration_ns;
  GPtrArray *children;    /* of LwCall, in start order; NULL when none */
};

/* Any thread. A new call with no children. */
LwCall *lw_call_new  (const char *name,
                      uintptr_t   ip,
                      int64_t     start_ns,
                      int64_t     duration_ns);

/* Any thread. Appends @child (taken over) to @parent's children. */
void    lw_call_add  (LwCall     *parent,
                      LwCall     *child);

/* Any thread. Frees @call and its children. */
void    lw_call_free (LwCall     *call);

G_END_DECLS
