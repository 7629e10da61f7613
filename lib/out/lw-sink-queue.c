/* lw-sink-queue.c: the sink thread, and the bounded queue in front of it */
#include "lw-sink-queue.h"
#include "lw-threadinfo.h"

#include <signal.h>

typedef enum
{
  LW_SINK_ITEM_REPORT,
  LW_SINK_ITEM_RAW,
  LW_SINK_ITEM_STDERR,
  LW_SINK_ITEM_STATS,
} LwSinkItemKind;

typedef struct
{
  LwSinkItemKind  kind;
  LagWatchReport *report;      /* REPORT: one reference */
  gboolean        show_human;
  guint           skipped;
  gboolean        durable;
  char           *json;        /* RAW */
  char           *text;        /* RAW, STDERR */
} LwSinkItem;

struct _LwSinkQueue
{
  LwSinks  *sinks;             /* the sink thread's */
  gboolean  has_stderr;
  GThread  *thread;

  GMutex    lock;
  GCond     cond;
  /* HOLDS: lock */
  GQueue    items;             /* of LwSinkItem, oldest first */
  guint     n_records;         /* reports and raw records among items */
  guint64   queued;            /* items ever queued */
  guint64   done;              /* items written (or tried) */
  guint64   dropped;           /* records dropped: the queue was full */
  gboolean  stopping;
  gboolean  finished;          /* the thread left its loop */
  gboolean  abandoned;         /* nobody waits any more: the thread frees it all */
};

/* Any thread. */
static void
lw_sink_item_free (LwSinkItem *item)
{
  if (item->report != NULL)
    lagwatch_report_unref (item->report);
  g_free (item->json);
  g_free (item->text);
  g_free (item);
}

/* Sink thread, or the stopping thread once the sink thread is gone. */
static void
lw_sink_queue_free (LwSinkQueue *queue)
{
  g_queue_clear_full (&queue->items, (GDestroyNotify) lw_sink_item_free);
  lw_sinks_free (queue->sinks);
  g_mutex_clear (&queue->lock);
  g_cond_clear (&queue->cond);
  g_free (queue);
}

/* Sink thread. Says how many records were lost since it last said so,
 * ahead of the next record. */
static void
lw_sink_queue_note_drops (LwSinkQueue *queue, guint64 dropped, guint64 *noted)
{
  g_autofree char *json = NULL;
  g_autofree char *text = NULL;

  if (dropped == *noted)
    return;
  lw_sink_dropped_record (dropped - *noted, "sink stalled",
                          "sink stalled (a reader of the output stopped reading)", &json, &text);
  lw_sinks_write_raw (queue->sinks, json, text);
  *noted = dropped;
}

/* Sink thread. */
static void
lw_sink_queue_write (LwSinkQueue *queue, const LwSinkItem *item)
{
  switch (item->kind)
    {
    case LW_SINK_ITEM_REPORT:
      lw_sinks_write (queue->sinks, item->report, item->show_human, item->skipped, item->durable);
      break;
    case LW_SINK_ITEM_RAW:
      lw_sinks_write_raw (queue->sinks, item->json, item->text);
      break;
    case LW_SINK_ITEM_STDERR:
      lw_sinks_write_stderr_text (queue->sinks, item->text);
      break;
    case LW_SINK_ITEM_STATS:
      lw_sinks_write_stats (queue->sinks, item->json);
      break;
    }
}

/* The sink thread. */
static gpointer
lw_sink_queue_main (gpointer data)
{
  LwSinkQueue *queue = data;
  guint64 noted = 0;
  gboolean abandoned;

  lw_threadinfo_own_enter ();
  g_mutex_lock (&queue->lock);
  for (;;)
    {
      LwSinkItem *item;
      guint64 dropped;

      while (g_queue_is_empty (&queue->items) && !queue->stopping)
        g_cond_wait (&queue->cond, &queue->lock);
      item = g_queue_pop_head (&queue->items);
      if (item == NULL)
        break;
      if (item->kind != LW_SINK_ITEM_STDERR)
        queue->n_records--;
      dropped = queue->dropped;
      g_mutex_unlock (&queue->lock);

      lw_sink_queue_note_drops (queue, dropped, &noted);
      lw_sink_queue_write (queue, item);
      lw_sink_item_free (item);

      g_mutex_lock (&queue->lock);
      queue->done++;
      g_cond_broadcast (&queue->cond);
    }
  queue->finished = TRUE;
  abandoned = queue->abandoned;
  g_cond_broadcast (&queue->cond);
  g_mutex_unlock (&queue->lock);
  if (abandoned)
    lw_sink_queue_free (queue);
  return NULL;
}

LwSinkQueue *
lw_sink_queue_start (LwSinks *sinks, GError **error)
{
  LwSinkQueue *queue = g_new0 (LwSinkQueue, 1);
  sigset_t all, saved;

  queue->sinks = sinks;
  queue->has_stderr = lw_sinks_has_stderr (sinks);
  g_mutex_init (&queue->lock);
  g_cond_init (&queue->cond);
  g_queue_init (&queue->items);
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  queue->thread = lw_threadinfo_own_thread_new ("lagwatch-sink", lw_sink_queue_main, queue, error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (queue->thread == NULL)
    {
      lw_sink_queue_free (queue);
      return NULL;
    }
  return queue;
}

/* Any thread. Queues @item (transfer full), or drops it when it is a
 * record and LW_SINK_QUEUE_MAX records wait. FALSE when dropped. */
static gboolean
lw_sink_queue_push (LwSinkQueue *queue, LwSinkItem *item)
{
  gboolean queued = FALSE;

  g_mutex_lock (&queue->lock);
  if (item->kind != LW_SINK_ITEM_STDERR && queue->n_records >= LW_SINK_QUEUE_MAX)
    queue->dropped++;
  else
    {
      if (item->kind != LW_SINK_ITEM_STDERR)
        queue->n_records++;
      g_queue_push_tail (&queue->items, g_steal_pointer (&item));
      queue->queued++;
      queued = TRUE;
      g_cond_broadcast (&queue->cond);
    }
  g_mutex_unlock (&queue->lock);
  if (item != NULL)
    lw_sink_item_free (item);
  return queued;
}

gboolean
lw_sink_queue_report (LwSinkQueue *queue, LagWatchReport *report, gboolean show_human,
                      guint skipped, gboolean durable)
{
  LwSinkItem *item = g_new0 (LwSinkItem, 1);

  item->kind = LW_SINK_ITEM_REPORT;
  item->report = lagwatch_report_ref (report);
  item->show_human = show_human;
  item->skipped = skipped;
  item->durable = durable;
  return lw_sink_queue_push (queue, item);
}

gboolean
lw_sink_queue_stats (LwSinkQueue *queue, const char *json)
{
  LwSinkItem *item = g_new0 (LwSinkItem, 1);

  item->kind = LW_SINK_ITEM_STATS;
  item->json = g_strdup (json);
  return lw_sink_queue_push (queue, item);
}

gboolean
lw_sink_queue_raw (LwSinkQueue *queue, const char *json, const char *text)
{
  LwSinkItem *item = g_new0 (LwSinkItem, 1);

  item->kind = LW_SINK_ITEM_RAW;
  item->json = g_strdup (json);
  item->text = g_strdup (text);
  return lw_sink_queue_push (queue, item);
}

void
lw_sink_queue_stderr (LwSinkQueue *queue, const char *text)
{
  LwSinkItem *item;

  if (!queue->has_stderr)
    return;
  item = g_new0 (LwSinkItem, 1);
  item->kind = LW_SINK_ITEM_STDERR;
  item->text = g_strdup (text);
  lw_sink_queue_push (queue, item);
}

void
lw_sink_queue_flush (LwSinkQueue *queue, gint64 deadline)
{
  g_mutex_lock (&queue->lock);
  while (queue->done < queue->queued && !queue->finished
         && g_cond_wait_until (&queue->cond, &queue->lock, deadline))
    ;
  g_mutex_unlock (&queue->lock);
}

guint64
lw_sink_queue_dropped (LwSinkQueue *queue)
{
  guint64 dropped;

  g_mutex_lock (&queue->lock);
  dropped = queue->dropped;
  g_mutex_unlock (&queue->lock);
  return dropped;
}

gboolean
lw_sink_queue_has_stderr (LwSinkQueue *queue)
{
  return queue->has_stderr;
}

void
lw_sink_queue_stop (LwSinkQueue *queue)
{
  gint64 deadline = g_get_monotonic_time () + LW_SINK_QUEUE_STOP_MS * G_TIME_SPAN_MILLISECOND;
  GThread *thread = queue->thread;  /* @queue may be freed once unlocked */
  gboolean finished;

  g_mutex_lock (&queue->lock);
  queue->stopping = TRUE;
  g_cond_broadcast (&queue->cond);
  while (!queue->finished && g_cond_wait_until (&queue->cond, &queue->lock, deadline))
    ;
  finished = queue->finished;
  if (!finished)
    {
      /* Stuck in a write(): it may never return. The thread frees it all
       * if it does; nobody waits for it. */
      queue->abandoned = TRUE;
      g_debug ("a sink is stalled: detaching without waiting for it");
    }
  g_mutex_unlock (&queue->lock);
  if (finished)
    {
      g_thread_join (thread);
      lw_sink_queue_free (queue);
    }
  else
    g_thread_unref (thread);
}
