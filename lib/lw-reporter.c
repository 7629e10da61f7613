/* lw-reporter.c: naming, writing and handing over reports, off the watcher */
#include "lw-reporter.h"

#include <signal.h>

#include "lw-lines.h"
#include "lw-summary.h"
#include "lw-symbols.h"
#include "lw-tracing.h"
#include "lw-watcher.h"

struct _LwReporter
{
  LagWatch    *watch;
  GThread     *thread;
  GAsyncQueue *queue;  /* of LwReporterItem */
};

typedef struct
{
  LagWatchReport *report;  /* NULL: stop */
  LwReportKind    kind;
} LwReporterItem;

/* Reporting thread. Names @frames (addresses filled in by the watcher);
 * @lines adds file:line, for the stacks a report shows in full. */
static void
lw_reporter_name_frames (LwFrame *frames, guint n_frames, gboolean lines)
{
  for (guint i = 0; i < n_frames; i++)
    {
      lw_symbols_resolve (frames[i].ip, i > 0, &frames[i]);
      if (lines)
        lw_lines_resolve (&frames[i], i > 0);
    }
}

/* A frame of @frames named @symbol, or -1. */
static int
lw_reporter_find_frame (const LwFrame *frames, guint n, const char *symbol)
{
  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (frames[i].symbol, symbol) == 0)
      return (int) i;
  return -1;
}

/* Reporting thread. Which part of the loop held the thread: the sentinel's
 * count, GLib's dispatch record, else the innermost loop function on the
 * stack. */
static const char *
lw_reporter_phase (const LagWatchReport *report)
{
  int dispatch, prepare, check;

  if (report->prepares >= 2)
    return "starved";
  if (report->dispatching)
    return "dispatch";
  dispatch = lw_reporter_find_frame (report->frames, report->n_frames, "g_main_context_dispatch");
  prepare = lw_reporter_find_frame (report->frames, report->n_frames, "g_main_context_prepare");
  check = lw_reporter_find_frame (report->frames, report->n_frames, "g_main_context_check");
  if (prepare >= 0 && (dispatch < 0 || prepare < dispatch) && (check < 0 || prepare < check))
    return "prepare";
  if (check >= 0 && (dispatch < 0 || check < dispatch))
    return "check";
  if (dispatch >= 0)
    return "dispatch";
  return report->n_frames > 0 ? "loop" : NULL;
}

/* Reporting thread. Everything the watcher left out. */
static void
lw_reporter_complete (LagWatchReport *report)
{
  lw_reporter_name_frames (report->frames, report->n_frames, TRUE);
  for (guint i = 0; i < report->n_stacks; i++)
    lw_reporter_name_frames (report->stacks[i].frames, report->stacks[i].n_frames, FALSE);
  for (guint i = 0; i < report->n_threads; i++)
    lw_reporter_name_frames (report->threads[i].frames, report->threads[i].n_frames, TRUE);
  report->phase = lw_reporter_phase (report);
  lw_report_compute_fingerprints (report);
  if (report->tracing != NULL)
    lw_report_set_calls (report, lw_tracing_tree (report->tracing), TRUE);
}

/* Reporting thread. */
static void
lw_reporter_handle (LwReporter *reporter, LagWatchReport *report, LwReportKind kind)
{
  LagWatch *watch = reporter->watch;
  guint skipped = 0;
  gboolean show;

  lw_reporter_complete (report);
  if (kind == LW_REPORT_HANG)
    {
      /* The copy for the next run first: whoever sees the record in a sink
       * may kill the process at once (a watchdog, a test). */
      if (watch->hangs != NULL)
        {
          g_autofree char *json = lagwatch_report_to_json (report);
          g_autofree char *text = lagwatch_report_to_text (report);

          lw_hang_store_save (watch->hangs, report->id, json, text);
        }
      lw_sinks_write (watch->sinks, report, TRUE, 0, TRUE);
      return;
    }

  show = lw_summary_record (watch->summary, report, &skipped);
  lw_sinks_write (watch->sinks, report, show, skipped, FALSE);
  g_rec_mutex_lock (&watch->report_lock);
  if (watch->report_func != NULL)
    watch->report_func (report, watch->report_data);
  g_rec_mutex_unlock (&watch->report_lock);
  if (kind == LW_REPORT_LAG_AFTER_HANG && watch->hangs != NULL)
    lw_hang_store_forget (watch->hangs, report->id);
}

/* Reporting thread. A hang whose lag was then dropped (paused, debugger...):
 * its copy for the next run goes, nothing is written. */
static void
lw_reporter_forget (LwReporter *reporter, LagWatchReport *report)
{
  if (reporter->watch->hangs != NULL)
    lw_hang_store_forget (reporter->watch->hangs, report->id);
}

/* The reporting thread. */
static gpointer
lw_reporter_main (gpointer data)
{
  LwReporter *reporter = data;
  LagWatch *watch = reporter->watch;

  for (;;)
    {
      LwReporterItem *item = g_async_queue_pop (reporter->queue);

      if (item->report == NULL)
        {
          g_free (item);
          break;
        }
      if (item->kind == LW_REPORT_DROPPED_AFTER_HANG)
        lw_reporter_forget (reporter, item->report);
      else
        lw_reporter_handle (reporter, item->report, item->kind);
      lagwatch_report_unref (item->report);
      g_free (item);
      if (atomic_load (&watch->self_free))
        break;  /* detached from the callback just run: finish the watch */
    }
  if (atomic_load (&watch->self_free))
    lw_watch_finish (watch);
  return NULL;
}

LwReporter *
lw_reporter_start (LagWatch *watch, GError **error)
{
  LwReporter *reporter = g_new0 (LwReporter, 1);
  sigset_t all, saved;

  reporter->watch = watch;
  reporter->queue = g_async_queue_new ();
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  reporter->thread = g_thread_try_new ("lagwatch-report", lw_reporter_main, reporter, error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (reporter->thread == NULL)
    {
      g_async_queue_unref (reporter->queue);
      g_free (reporter);
      return NULL;
    }
  return reporter;
}

void
lw_reporter_submit (LwReporter *reporter, LagWatchReport *report, LwReportKind kind)
{
  LwReporterItem *item = g_new0 (LwReporterItem, 1);

  item->report = report;
  item->kind = kind;
  g_async_queue_push (reporter->queue, item);
}

gboolean
lw_reporter_is_current (LwReporter *reporter)
{
  return reporter != NULL && reporter->thread == g_thread_self ();
}

/* Frees @reporter's queue and what is left in it. */
static void
lw_reporter_free (LwReporter *reporter)
{
  LwReporterItem *item;

  while ((item = g_async_queue_try_pop (reporter->queue)) != NULL)
    {
      if (item->report != NULL)
        lagwatch_report_unref (item->report);
      g_free (item);
    }
  g_async_queue_unref (reporter->queue);
  g_free (reporter);
}

void
lw_reporter_stop (LwReporter *reporter)
{
  g_async_queue_push (reporter->queue, g_new0 (LwReporterItem, 1));
  g_thread_join (reporter->thread);
  lw_reporter_free (reporter);
}

void
lw_reporter_abandon (LwReporter *reporter)
{
  g_thread_unref (reporter->thread);
  lw_reporter_free (reporter);
}
