/* lw-reporter.c: naming reports and handing them over, off the watcher */
#include "lw-report-cause.h"
#include "lw-report-program.h"
#include "lw-reporter.h"

#include "lw-say.h"

#include <signal.h>
#include <stdatomic.h>

#include "lw-call-tree.h"
#include "lw-lang-frames.h"
#include "lw-lines.h"
#include "lw-profile.h"
#include "lw-sink-queue.h"
#include "lw-perfmap.h"
#include "lw-summary.h"
#include "lw-symbols.h"

/* Distinct stacks listed in a report, once the cause is chosen among all
 * (lw_reporter_complete()). */
#define LW_REPORT_STACKS 5
#include "lw-tracing.h"
#include "lw-threadinfo.h"

struct _LwReporter
{
  GThread     *thread;
  GAsyncQueue *queue;            /* of LwReporterItem */
  _Atomic guint pending;         /* reports in queue, or being handled */
  _Atomic guint pending_lags;    /* ... of them, reports of lags (not the
                                  * profile's "stats", not a hang's copy) */
  GMutex       idle_lock;        /* with idle_cond: pending went down */
  GCond        idle_cond;
  _Atomic guint64 dropped_behind; /* reports the watcher dropped: the queue was full */
  guint64      noted_behind;     /* reporting thread: drops said so far */
  _Atomic gboolean finishing;    /* lw_reporter_finish_soon(): no callback, then finish */

  LwSinkQueue *sinks;
  LwSummary   *summary;
  LwHangStore *hangs;            /* nullable */
  LwReporterFinishFunc finish;
  gpointer     finish_data;

  GRecMutex          report_lock; /* guards the callback (recursive: it may reset itself) */
  LagWatchReportFunc report_func;
  gpointer           report_data;
  GDestroyNotify     report_destroy;
};

/* The reporter whose thread this is; NULL on every other thread. */
static __thread LwReporter *lw_reporter_self;

typedef struct
{
  LagWatchReport *report;  /* NULL: stop, unless stats or finish is set */
  LwReportKind    kind;
  char           *stats;   /* a "stats" event, in its place after the reports before it */
  gboolean        finish;  /* lw_reporter_finish_soon(): the last item */
} LwReporterItem;

/* Reporting thread. @frame named for @ip (a return address when
 * @is_return_address), from @named: each distinct address of a report is
 * looked up once, whichever of its stacks hold it (a hang's threads share
 * most of their frames). */
static void
lw_reporter_name_frame (GHashTable *named, uintptr_t ip, gboolean is_return_address, LwFrame *frame)
{
  gpointer key = GSIZE_TO_POINTER ((gsize) ip << 1 | (is_return_address ? 1 : 0));
  LwFrame *known = g_hash_table_lookup (named, key);

  if (known == NULL)
    {
      known = g_new0 (LwFrame, 1);
      if (!lw_lang_frame_resolve (ip, known))
        {
          lw_symbols_resolve (ip, is_return_address, known);
          /* GLib's dispatch, in a static function no dynamic symbol names
           * (every release; since 2.77 nothing exported is on the stack
           * around it either): known by its address without GLib's debug
           * file. */
          if (known->symbol == NULL && is_return_address && lw_call_tree_frame_is_dispatch (known))
            known->symbol = g_strdup ("g_main_dispatch");
        }
      g_hash_table_insert (named, key, known);
    }
  *frame = *known;
  frame->symbol = g_strdup (known->symbol);
  frame->file = g_strdup (known->file);
}

/* Any thread. Frees a frame of lw_reporter_name_frame()'s table. */
static void
lw_reporter_frame_free (gpointer data)
{
  lw_frame_clear (data);
  g_free (data);
}

typedef struct
{
  LwFrame **frames;
  guint    *n_frames;
  gboolean  lines;  /* shown in full: file:line and the inlined calls too */
} LwReporterStack;

/* Reporting thread. Names every frame of @stacks (addresses filled in by
 * the watcher), each distinct address once; generated code's frames from
 * one look at the mappings and the perf map; file:line and the inlined
 * calls' logical frames for the stacks the record shows in full. */
static void
lw_reporter_name_stacks (const LwReporterStack *stacks, guint n_stacks)
{
  g_autoptr(GHashTable) named = g_hash_table_new_full (NULL, NULL, NULL, lw_reporter_frame_free);
  g_autofree LwFrame **all = g_new (LwFrame *, MAX (n_stacks, 1));
  g_autofree guint *all_n = g_new (guint, MAX (n_stacks, 1));

  for (guint s = 0; s < n_stacks; s++)
    {
      LwFrame *frames = *stacks[s].frames;

      for (guint i = 0; i < *stacks[s].n_frames; i++)
        lw_reporter_name_frame (named, frames[i].ip, i > 0, &frames[i]);
      all[s] = frames;
      all_n[s] = *stacks[s].n_frames;
    }
  lw_perfmap_name_stacks (all, all_n, n_stacks);
  for (guint s = 0; s < n_stacks; s++)
    if (stacks[s].lines)
      lw_lines_resolve_stack (stacks[s].frames, stacks[s].n_frames);
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

/* The innermost frame of @frames that is GLib's dispatch of a source
 * (lw_call_tree_frame_is_dispatch()), or -1. */
static int
lw_reporter_find_dispatch (const LwFrame *frames, guint n)
{
  for (guint i = 0; i < n; i++)
    if (lw_call_tree_frame_is_dispatch (&frames[i]))
      return (int) i;
  return -1;
}

/* Any thread. The function of an interpreted language that GLib's
 * dispatch ran on @frames: the outermost such frame inside the innermost
 * dispatch frame; NULL when there is none, or no dispatch frame. */
static const char *
lw_reporter_dispatched_function (const LwFrame *frames, guint n)
{
  int dispatch = lw_reporter_find_dispatch (frames, n);

  for (int i = dispatch - 1; i >= 0; i--)
    if (frames[i].lang != NULL && frames[i].symbol != NULL)
      return frames[i].symbol;
  return NULL;
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
  dispatch = lw_reporter_find_dispatch (report->frames, report->n_frames);
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

/* Reporting thread. An unnamed source's callback, by its function's
 * symbol (the function is code: it is an exact address, not a return
 * address). */
static void
lw_reporter_name_source_callback (LagWatchReport *report)
{
  LwFrame frame;

  if (report->source_callback != NULL || report->source_callback_ip == 0)
    return;
  lw_symbols_resolve (report->source_callback_ip, FALSE, &frame);
  if (frame.symbol != NULL && frame.symbol_offset == 0)
    report->source_callback = g_strdup (frame.symbol);
  lw_frame_clear (&frame);
}

/* Reporting thread. An unnamed source whose callback has no name of its
 * own (a trampoline an interpreter generated, as GJS's are) is named by
 * the function of an interpreted language that the dispatch ran: on the
 * report's stack, the outermost such frame inside the innermost
 * dispatch frame (lw_reporter_dispatched_function()); on the heaviest
 * stack of the lag that reaches a dispatch frame when the report's own
 * does not. */
static void
lw_reporter_name_source_by_language (LagWatchReport *report)
{
  const char *name;

  if (report->source != NULL || report->source_callback != NULL
      || g_strcmp0 (report->phase, "dispatch") != 0)
    return;
  /* A stack cut before the dispatch (the unwind stopped in code without
   * frame pointers) cannot say: the heaviest stack of the lag that reaches
   * it does, as for the fingerprint's callback. */
  name = lw_reporter_dispatched_function (report->frames, report->n_frames);
  for (guint i = 0; name == NULL && i < report->n_stacks; i++)
    name = lw_reporter_dispatched_function (report->stacks[i].frames, report->stacks[i].n_frames);
  report->source_callback = g_strdup (name);
}

/* Reporting thread. Everything the watcher left out: the stacks grouped
 * by function (the heaviest is the report's stack), names, phase and
 * fingerprints. Every stack is named: the cause is chosen from all of them
 * before the report keeps LW_REPORT_STACKS (lw_report_choose_cause_stack()). */
static void
lw_reporter_complete (LagWatchReport *report)
{
  report->n_stacks = lw_profile_group (report->stacks, report->n_stacks, report->n_stacks);
  if (report->n_stacks > 0 && report->frames == NULL)
    {
      const LwReportStack *heaviest = &report->stacks[0];

      /* Frames holding addresses only: a plain copy. */
      report->frames = g_memdup2 (heaviest->frames, MAX (heaviest->n_frames, 1) * sizeof (LwFrame));
      report->n_frames = heaviest->n_frames;
      report->stack_truncated = heaviest->truncated;
      report->stack_at_limit = heaviest->at_limit;
    }
  {
    g_autoptr(GArray) stacks = g_array_new (FALSE, FALSE, sizeof (LwReporterStack));

    /* All of the report's stacks at once; the sampled ones for the call
     * tree (lw_reporter_add_calls()) too. */
    g_array_append_val (stacks, ((LwReporterStack) { &report->frames, &report->n_frames, TRUE }));
    for (guint i = 0; i < report->n_stacks; i++)
      g_array_append_val (stacks, ((LwReporterStack) { &report->stacks[i].frames,
                                                        &report->stacks[i].n_frames, FALSE }));
    for (guint i = 0; i < report->n_threads; i++)
      g_array_append_val (stacks, ((LwReporterStack) { &report->threads[i].frames,
                                                        &report->threads[i].n_frames, TRUE }));
    for (guint i = 0; i < report->n_sampled; i++)
      g_array_append_val (stacks, ((LwReporterStack) { &report->sampled[i].frames,
                                                        &report->sampled[i].n_frames, FALSE }));
    lw_reporter_name_stacks ((const LwReporterStack *) stacks->data, stacks->len);
  }
  lw_report_choose_cause_stack (report, LW_REPORT_STACKS);
  report->phase = lw_reporter_phase (report);
  lw_reporter_name_source_callback (report);
  lw_reporter_name_source_by_language (report);
  lw_report_compute_fingerprints (report);
  if (report->tracing != NULL)
    lw_report_set_calls (report, lw_tracing_tree (report->tracing), TRUE);
}

/* Reporting thread. Builds the lag's call tree from its sampled stacks
 * (named by lw_reporter_complete()), with the settings the watcher put in the report (an
 * exact tree from the tracer, if any, is kept). */
static void
lw_reporter_add_calls (LagWatchReport *report)
{
  lw_report_set_calls (report,
                       lw_call_tree_from_samples (report, report->calls_min_ns, report->calls_depth,
                                                  report->sample_interval_ns),
                       FALSE);
}

/* Reporting thread. Says, ahead of the next record, how many reports the
 * watcher dropped since it last said so. */
static void
lw_reporter_note_drops (LwReporter *reporter)
{
  guint64 dropped = atomic_load (&reporter->dropped_behind);
  g_autofree char *json = NULL;
  g_autofree char *text = NULL;

  if (dropped == reporter->noted_behind)
    return;
  lw_sink_dropped_record (dropped - reporter->noted_behind, "reporting thread behind",
                          "the reporting thread fell behind (a slow report callback)", &json, &text);
  lw_sink_queue_raw (reporter->sinks, json, text);
  reporter->noted_behind = dropped;
}

/* Reporting thread. Saves the copy of the hang @report for the next run,
 * within the size the next run reads back (a hang of a process with
 * thousands of threads can exceed it): the other threads' stacks are left
 * out, the last ones first, as many as it takes, and the record says how
 * many. Only the copy is cut; the sinks get the whole report. */
static void
lw_reporter_save_hang (LwReporter *reporter, LagWatchReport *report)
{
  g_autofree char *json = lagwatch_report_to_json (report);
  g_autofree char *text = lagwatch_report_to_text (report);
  guint64 per_thread = 0;

  report->json = g_strdup (json);

  while (!lw_hang_store_fits (reporter->hangs, json, text) && report->threads_left_out < report->n_threads)
    {
      guint64 size = strlen (json) + strlen (text);
      guint64 excess = size - MIN (size, LW_HANG_MAX_RECORD - LW_HANG_HEAD_MAX);
      guint kept = report->n_threads - report->threads_left_out;

      if (per_thread == 0)
        {
          /* The mean size of a thread's stack, from the record without any. */
          g_autofree char *json_none = NULL;
          g_autofree char *text_none = NULL;

          report->threads_left_out = report->n_threads;
          json_none = lagwatch_report_to_json (report);
          text_none = lagwatch_report_to_text (report);
          report->threads_left_out = 0;
          per_thread = MAX ((size - MIN (size, strlen (json_none) + strlen (text_none))) / report->n_threads, 1);
        }
      report->threads_left_out += (guint) MIN ((guint64) kept, excess / per_thread + 1);
      g_free (json);
      g_free (text);
      json = lagwatch_report_to_json (report);
      text = lagwatch_report_to_text (report);
    }
  report->threads_left_out = 0;
  lw_hang_store_save (reporter->hangs, report->id, json, text);
}

/* Reporting thread. The callback first: it must not wait behind a sink
 * that stalls, which only the sink thread waits for. */
static void
lw_reporter_handle (LwReporter *reporter, LagWatchReport *report, LwReportKind kind)
{
  guint skipped = 0;
  gboolean show;

  lw_reporter_complete (report);
  lw_reporter_note_drops (reporter);
  lw_reporter_add_calls (report);
  /* The report's lines are named: its modules' DWARF, megabytes for
   * libc's alone, is given back; the answers stay. */
  lw_lines_release ();
  if (kind == LW_REPORT_HANG)
    {
      /* The copy for the next run first: whoever sees the record in a sink
       * may kill the process at once (a watchdog, a test). */
      if (reporter->hangs != NULL)
        lw_reporter_save_hang (reporter, report);
      lw_sink_queue_report (reporter->sinks, report, TRUE, 0, TRUE);
      return;
    }

  show = lw_summary_record (reporter->summary, report, &skipped);
  g_rec_mutex_lock (&reporter->report_lock);
  if (reporter->report_func != NULL && !atomic_load (&reporter->finishing))
    reporter->report_func (report, reporter->report_data);
  g_rec_mutex_unlock (&reporter->report_lock);
  lw_sink_queue_report (reporter->sinks, report, show, skipped, FALSE);
  if (kind == LW_REPORT_LAG_AFTER_HANG && reporter->hangs != NULL)
    lw_hang_store_forget (reporter->hangs, report->id);
}

/* Reporting thread. A hang whose lag was then dropped (paused, debugger,
 * queue full...): its copy for the next run goes, nothing is written. */
static void
lw_reporter_forget (LwReporter *reporter, LagWatchReport *report)
{
  if (reporter->hangs != NULL)
    lw_hang_store_forget (reporter->hangs, report->id);
}

/* Any thread. */
static void
lw_reporter_item_free (LwReporterItem *item)
{
  if (item->report != NULL)
    lagwatch_report_unref (item->report);
  g_free (item->stats);
  g_free (item);
}

/* The reporting thread. */
static gpointer
lw_reporter_main (gpointer data)
{
  LwReporter *reporter = data;

  lw_threadinfo_own_enter ();
  lw_reporter_self = reporter;
  for (;;)
    {
      LwReporterItem *item = g_async_queue_pop (reporter->queue);

      /* Finishing: what was handed over before still reached the sinks
       * (not the callback); nothing comes after, the watcher has stopped.
       * Only this item ends the loop: the thread that pushed it is done
       * with @reporter once it is in the queue. */
      if (item->finish)
        {
          g_free (item);
          break;
        }
      if (item->report == NULL && item->stats == NULL)
        {
          g_free (item);
          return NULL;
        }
      if (item->stats != NULL)
        lw_sink_queue_stats (reporter->sinks, item->stats);
      else if (item->kind == LW_REPORT_DROPPED_AFTER_HANG)
        lw_reporter_forget (reporter, item->report);
      else
        {
          lw_reporter_handle (reporter, item->report, item->kind);
          atomic_fetch_sub (&reporter->pending_lags, 1);
        }
      lw_reporter_item_free (item);
      g_mutex_lock (&reporter->idle_lock);
      atomic_fetch_sub (&reporter->pending, 1);
      g_cond_broadcast (&reporter->idle_cond);
      g_mutex_unlock (&reporter->idle_lock);
    }
  reporter->finish (reporter->finish_data);  /* frees @reporter */
  return NULL;
}

LwReporter *
lw_reporter_start (LwSinks *sinks, LwSummary *summary, LwHangStore *hangs,
                   LwReporterFinishFunc finish, gpointer finish_data, GError **error)
{
  LwReporter *reporter = g_new0 (LwReporter, 1);
  sigset_t all, saved;

  reporter->sinks = lw_sink_queue_start (sinks, error);
  if (reporter->sinks == NULL)
    {
      g_free (reporter);
      return NULL;
    }
  reporter->summary = summary;
  reporter->hangs = hangs;
  reporter->finish = finish;
  reporter->finish_data = finish_data;
  g_rec_mutex_init (&reporter->report_lock);
  g_mutex_init (&reporter->idle_lock);
  g_cond_init (&reporter->idle_cond);
  reporter->queue = g_async_queue_new ();
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  reporter->thread = lw_threadinfo_own_thread_new ("lagwatch-report", lw_reporter_main, reporter, error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (reporter->thread == NULL)
    {
      lw_sink_queue_stop (reporter->sinks);
      g_async_queue_unref (reporter->queue);
      g_rec_mutex_clear (&reporter->report_lock);
      g_mutex_clear (&reporter->idle_lock);
      g_cond_clear (&reporter->idle_cond);
      g_free (reporter);
      return NULL;
    }
  return reporter;
}

void
lw_reporter_submit (LwReporter *reporter, LagWatchReport *report, LwReportKind kind)
{
  LwReporterItem *item;

  if (kind != LW_REPORT_DROPPED_AFTER_HANG && atomic_load (&reporter->pending) >= LW_REPORTER_QUEUE_MAX)
    {
      atomic_fetch_add (&reporter->dropped_behind, 1);
      if (kind != LW_REPORT_LAG_AFTER_HANG)
        {
          lagwatch_report_unref (report);
          return;
        }
      kind = LW_REPORT_DROPPED_AFTER_HANG;  /* its hang's copy must still go */
    }
  item = g_new0 (LwReporterItem, 1);
  item->report = report;
  item->kind = kind;
  if (kind != LW_REPORT_DROPPED_AFTER_HANG)
    atomic_fetch_add (&reporter->pending_lags, 1);
  atomic_fetch_add (&reporter->pending, 1);
  g_async_queue_push (reporter->queue, item);
}

void
lw_reporter_set_report_func (LwReporter *reporter, LagWatchReportFunc func, gpointer user_data,
                             GDestroyNotify destroy)
{
  GDestroyNotify old_destroy;
  gpointer old_data;

  g_rec_mutex_lock (&reporter->report_lock);
  old_destroy = reporter->report_destroy;
  old_data = reporter->report_data;
  reporter->report_func = func;
  reporter->report_data = user_data;
  reporter->report_destroy = destroy;
  g_rec_mutex_unlock (&reporter->report_lock);
  if (old_destroy != NULL)
    old_destroy (old_data);
}

void
lw_reporter_write_raw (LwReporter *reporter, const char *json, const char *text)
{
  lw_sink_queue_raw (reporter->sinks, json, text);
}

/* Any thread. Queues the summary table for stderr, where it is a sink. */
static void
lw_reporter_queue_summary (LwReporter *reporter)
{
  g_autofree char *table = NULL;

  if (!lw_sink_queue_has_stderr (reporter->sinks))
    return;
  table = lw_summary_to_text (reporter->summary, lw_sink_queue_dropped (reporter->sinks),
                              atomic_load (&reporter->dropped_behind));
  if (table != NULL)
    lw_sink_queue_stderr (reporter->sinks, table);
}

void
lw_reporter_write_stats (LwReporter *reporter, const char *json)
{
  LwReporterItem *item = g_new0 (LwReporterItem, 1);

  /* Through the reporting thread's queue: after the reports handed over
   * before it, whatever their sinks. */
  item->stats = g_strdup (json);
  atomic_fetch_add (&reporter->pending, 1);
  g_async_queue_push (reporter->queue, item);
}

void
lw_reporter_print_summary (LwReporter *reporter)
{
  gint64 deadline = g_get_monotonic_time () + LW_SINK_QUEUE_STOP_MS * G_TIME_SPAN_MILLISECOND;
  guint left;

  g_mutex_lock (&reporter->idle_lock);
  while (atomic_load (&reporter->pending) > 0
         && g_cond_wait_until (&reporter->idle_cond, &reporter->idle_lock, deadline))
    ;
  g_mutex_unlock (&reporter->idle_lock);
  /* The process ends with them: said, not lost in silence. (On a machine
   * too busy to give the reporting thread a CPU, the first report's
   * symbols can take longer than that to load.) */
  left = atomic_load (&reporter->pending_lags);
  if (left > 0)
    lw_say ("the program exited with %u report%s still being made after %d ms (a busy machine, symbols slow to "
            "load, or a report callback that has not returned): %s lost", left, left == 1 ? "" : "s",
            LW_SINK_QUEUE_STOP_MS, left == 1 ? "it is" : "they are");
  lw_reporter_queue_summary (reporter);
  lw_sink_queue_flush (reporter->sinks, deadline);
}

gboolean
lw_reporter_on_reporting_thread (void)
{
  return lw_reporter_self != NULL;
}

void
lw_reporter_finish_soon (LwReporter *reporter)
{
  LwReporterItem *item = g_new0 (LwReporterItem, 1);

  atomic_store (&reporter->finishing, TRUE);
  item->finish = TRUE;
  g_async_queue_push (reporter->queue, item);
}

/* Any thread, the reporting thread gone or finishing: releases the
 * callback, prints the summary, stops the sink thread (bounded) and frees
 * @reporter with what is left in its queue. */
static void
lw_reporter_free (LwReporter *reporter)
{
  LwReporterItem *item;

  lw_reporter_set_report_func (reporter, NULL, NULL, NULL);
  lw_reporter_queue_summary (reporter);
  lw_sink_queue_stop (reporter->sinks);  /* writes the summary, bounded */
  while ((item = g_async_queue_try_pop (reporter->queue)) != NULL)
    lw_reporter_item_free (item);
  g_async_queue_unref (reporter->queue);
  g_rec_mutex_clear (&reporter->report_lock);
  g_mutex_clear (&reporter->idle_lock);
  g_cond_clear (&reporter->idle_cond);
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
