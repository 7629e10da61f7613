/* lw-tracing.c: exact call trees from liblagwatch-trace (lw-tracing.h) */
#include "lw-tracing.h"

#include "lw-clock.h"
#include "lw-symbols.h"
#include "trace/lw-trace-abi.h"

/* Weak: NULL unless the program links liblagwatch-trace. */
extern int  lagwatch_trace_start_v1 (pid_t tid, LwTraceBuffer *buffer) __attribute__ ((weak));
extern void lagwatch_trace_stop_v1  (pid_t tid, LwTraceBuffer *buffer) __attribute__ ((weak));

/* Events one lag keeps (16 bytes each: 1 MiB, allocated while a lag is
 * followed). A call and its return are two: 32768 calls. */
#define LW_TRACING_EVENTS 65536

struct _LwTracing
{
  pid_t          tid;
  LwTraceBuffer *buffer;
  int64_t        start_ns;  /* recording began (the lag was caught) */
  int64_t        since_ns;  /* the lag began */
  int64_t        end_ns;    /* it ended */
};

LwTracing *
lw_tracing_start (pid_t tid)
{
  LwTracing *tracing;

  if (lagwatch_trace_start_v1 == NULL || lagwatch_trace_stop_v1 == NULL || tid <= 0)
    return NULL;
  tracing = g_new0 (LwTracing, 1);
  tracing->tid = tid;
  tracing->buffer = g_malloc (sizeof (LwTraceBuffer) + LW_TRACING_EVENTS * sizeof (LwTraceEvent));
  atomic_init (&tracing->buffer->claimed, 0);
  tracing->buffer->capacity = LW_TRACING_EVENTS;
  /* Before the start: every event recorded is later than this. */
  tracing->start_ns = lw_clock_now_ns ();
  if (lagwatch_trace_start_v1 (tid, tracing->buffer) != 0)
    {
      lw_tracing_free (tracing);
      return NULL;
    }
  return tracing;
}

void
lw_tracing_stop (LwTracing *tracing, int64_t since_ns, int64_t end_ns)
{
  lagwatch_trace_stop_v1 (tracing->tid, tracing->buffer);
  tracing->since_ns = since_ns;
  tracing->end_ns = end_ns;
}

guint64
lw_tracing_dropped (const LwTracing *tracing)
{
  guint64 claimed = atomic_load (&tracing->buffer->claimed);

  return claimed > tracing->buffer->capacity ? claimed - tracing->buffer->capacity : 0;
}

void
lw_tracing_free (LwTracing *tracing)
{
  if (tracing == NULL)
    return;
  g_free (tracing->buffer);
  g_free (tracing);
}

/* Any thread. Closes @call at @at_ns (from the lag's start). */
static void
lw_tracing_close (LwCall *call, int64_t at_ns)
{
  call->duration_ns = MAX (at_ns - call->start_ns, 0);
}

LwCall *
lw_tracing_build (const void *data, guint64 n_events, int64_t since_ns, int64_t start_ns,
                  int64_t end_ns, gboolean truncated)
{
  const LwTraceEvent *events = data;
  int64_t last_ns = end_ns;
  LwCall *root;
  g_autoptr (GPtrArray) open = g_ptr_array_new ();  /* calls entered and not returned, outermost first */

  /* Overflowed: what followed the last event kept is unknown. */
  if (truncated && n_events > 0)
    last_ns = MIN (end_ns, events[n_events - 1].stamp / 2);
  root = lw_call_new (NULL, 0, start_ns - since_ns, MAX (last_ns - start_ns, 0));
  for (guint64 i = 0; i < n_events; i++)
    {
      uintptr_t fn = events[i].fn;
      /* Strictly after the recording's start: equal to it means "was
       * already running when the lag was caught". */
      int64_t at_ns = MAX (events[i].stamp / 2, start_ns + 1) - since_ns;
      LwCall *call;

      if (events[i].stamp / 2 > last_ns)
        break;  /* the loop went on after the lag's end, before the stop */
      if (!(events[i].stamp & LW_TRACE_STAMP_RETURN))
        {
          call = lw_call_new (NULL, fn, at_ns, 0);
          lw_call_add (open->len > 0 ? g_ptr_array_index (open, open->len - 1) : root, call);
          g_ptr_array_add (open, call);
          continue;
        }
      /* A return: of the innermost open call of @fn. Calls inside it that
       * never returned (longjmp, an exception) end with it. */
      for (guint j = open->len; j > 0; j--)
        if (((LwCall *) g_ptr_array_index (open, j - 1))->ip == fn)
          {
            while (open->len >= j)
              lw_tracing_close (g_ptr_array_steal_index (open, open->len - 1), at_ns);
            goto next;
          }
      /* A return from a call already running when the lag was caught:
       * everything recorded so far at the top happened inside it. */
      while (open->len > 0)
        lw_tracing_close (g_ptr_array_steal_index (open, open->len - 1), at_ns);
      call = lw_call_new (NULL, fn, root->start_ns, 0);
      lw_tracing_close (call, at_ns);
      call->children = g_steal_pointer (&root->children);
      lw_call_add (root, call);
    next:;
    }
  while (open->len > 0)
    lw_tracing_close (g_ptr_array_steal_index (open, open->len - 1), last_ns - since_ns);
  return root;
}

/* Reporting thread. Names @call and its children, through @names (ip to
 * name, one lookup per function). */
static void
lw_tracing_name (LwCall *call, GHashTable *names)
{
  if (call->ip != 0)
    {
      const char *name;

      if (!g_hash_table_lookup_extended (names, GSIZE_TO_POINTER (call->ip), NULL, (gpointer *) &name))
        {
          LwFrame frame = { 0 };

          /* The function's entry itself, not a return address. */
          lw_symbols_resolve (call->ip, FALSE, &frame);
          name = frame.symbol != NULL ? g_strdup (frame.symbol) : NULL;
          g_hash_table_insert (names, GSIZE_TO_POINTER (call->ip), (gpointer) name);
          lw_frame_clear (&frame);
        }
      call->name = g_strdup (name);
    }
  for (guint i = 0; call->children != NULL && i < call->children->len; i++)
    lw_tracing_name (g_ptr_array_index (call->children, i), names);
}

LwCall *
lw_tracing_tree (const LwTracing *tracing)
{
  guint64 dropped = lw_tracing_dropped (tracing);
  guint64 n = atomic_load (&tracing->buffer->claimed) - dropped;
  g_autoptr (GHashTable) names = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  LwCall *root;

  if (dropped > 0)
    g_debug ("the call tracer's buffer of %" G_GUINT64_FORMAT " events overflowed: %" G_GUINT64_FORMAT
             " events lost, the call tree stops at the last one kept",
             tracing->buffer->capacity, dropped);
  root = lw_tracing_build (tracing->buffer->events, n, tracing->since_ns, tracing->start_ns,
                           tracing->end_ns, dropped > 0);
  lw_tracing_name (root, names);
  return root;
}
