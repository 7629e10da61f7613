/* lagwatch.c: the public entry points, tying hooks, capture and watcher */
#include "lagwatch.h"

#include <stdlib.h>

#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-hang.h"
#include "lw-lines.h"
#include "lw-hooks.h"
#include "lw-modules.h"
#include "lw-private.h"
#include "lw-sink.h"
#include "lw-stats-private.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

/* Serializes attach and detach (signal ownership) and holds the set of live
 * watches, so that a stale handle is refused instead of dereferenced. */
static GMutex      lw_lock;
static GHashTable *lw_watches;

LagWatch *
lagwatch_attach (GMainContext *context)
{
  return lagwatch_attach_with_config (context, NULL);
}

static gboolean lw_atexit_registered;

/* Any thread. The table of @watch's lags by fingerprint, on stderr (only
 * where reports go to stderr). */
static void
lw_print_summary (LagWatch *watch)
{
  g_autofree char *table = NULL;

  if (!lw_sinks_has_stderr (watch->sinks) || (table = lw_summary_to_text (watch->summary)) == NULL)
    return;
  if (watch->slot->stats_enabled)
    {
      /* The latency profile's line first: "lagwatch: this run: 12,340
       * iterations, p99 4 ms, 37 over 16.7 ms, 2 lags". */
      LagWatchStats *stats = lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
      g_autofree char *counts = lw_stats_to_text (stats);
      char *both = g_strdup_printf ("lagwatch: this run: %s\n%s", counts, table);

      lagwatch_stats_free (stats);
      g_free (table);
      table = both;
    }
  lw_sinks_write_raw_stderr (table);
}

/* At exit, for a watch never detached: its latency profile as a "stats"
 * event to the JSON sinks (a detached watch's watcher wrote it as it
 * stopped). */
static void
lw_write_stats_at_exit (LagWatch *watch)
{
  LagWatchStats *stats;
  g_autofree char *json = NULL;

  if (!watch->slot->stats_enabled)
    return;
  stats = lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
  if (lagwatch_stats_get_iterations (stats) > 0)
    json = lw_stats_to_json (stats);
  lagwatch_stats_free (stats);
  if (json != NULL)
    lw_sinks_write_stats (watch->sinks, json);
}

/* At exit: the summaries of the watches never detached. */
static void
lw_print_summaries_at_exit (void)
{
  GHashTableIter iter;
  gpointer watch;

  g_mutex_lock (&lw_lock);
  if (lw_watches != NULL)
    {
      g_hash_table_iter_init (&iter, lw_watches);
      while (g_hash_table_iter_next (&iter, &watch, NULL))
        {
          lw_write_stats_at_exit (watch);
          lw_print_summary (watch);
        }
    }
  g_mutex_unlock (&lw_lock);
}

/* Attaching thread. Reports the hangs earlier runs of this program were
 * killed in (found in the state directory). */
static void
lw_report_previous_hangs (LagWatch *watch)
{
  g_autoptr(GPtrArray) previous = lw_hang_store_take_previous (watch->hangs);

  for (guint i = 0; i < previous->len; i++)
    {
      const LwPreviousHang *hang = previous->pdata[i];
      g_autofree char *json = g_strdup_printf ("{\"event\":\"hang-killed\",\"previous_pid\":%d,"
                                               "\"hang\":%s}", hang->pid, hang->json);
      g_autofree char *text = g_strdup_printf ("lagwatch: the previous run (pid %d) was killed during "
                                               "a hang; its last record:\n%s", hang->pid, hang->text);

      lw_sinks_write_raw (watch->sinks, json, text);
    }
}

/* Any thread. Frees what a watch owns, once its threads are gone. */
static void
lw_watch_free (LagWatch *watch)
{
  lw_snapshot_free (watch->snapshot);
  g_free (watch->ips);
  lw_sinks_free (watch->sinks);
  lw_summary_free (watch->summary);
  lw_hang_store_close (watch->hangs);
  lagwatch_config_free (watch->config);
  g_rec_mutex_clear (&watch->report_lock);
  g_free (watch);
}

/* Any thread, lw_lock held. Undoes a partial attach. */
static void
lw_attach_abort (LagWatch *watch)
{
  if (watch->reporter != NULL)
    lw_reporter_stop (watch->reporter);
  if (watch->slot != NULL)
    lw_hooks_detach (watch->slot);
  if (watch->signo != 0)
    lw_capture_release_signal ();
  lw_watch_free (watch);
}

G_DEFINE_QUARK (lagwatch-error-quark, lagwatch_error)
/* The internal codes are the public ones (one quark, one numbering). */
G_STATIC_ASSERT ((int) LW_ERROR_INVALID == (int) LAGWATCH_ERROR_INVALID);
G_STATIC_ASSERT ((int) LW_ERROR_ALREADY_WATCHED == (int) LAGWATCH_ERROR_ALREADY_WATCHED);
G_STATIC_ASSERT ((int) LW_ERROR_NO_SLOT == (int) LAGWATCH_ERROR_NO_SLOT);
G_STATIC_ASSERT ((int) LW_ERROR_SIGNAL == (int) LAGWATCH_ERROR_SIGNAL);
G_STATIC_ASSERT ((int) LW_ERROR_OUTPUT == (int) LAGWATCH_ERROR_OUTPUT);

LagWatch *
lagwatch_attach_with_config (GMainContext *context, const LagWatchConfig *config)
{
  g_autoptr(GError) error = NULL;
  LagWatch *watch = lagwatch_attach_full (context, config, &error);

  if (watch == NULL && !g_error_matches (error, LAGWATCH_ERROR, LAGWATCH_ERROR_DISABLED))
    g_warning ("%s", error->message);
  return watch;
}

LagWatch *
lagwatch_attach_full (GMainContext *context, const LagWatchConfig *config, GError **out_error)
{
  g_autoptr(GError) error = NULL;
  LagWatch *watch;

  if (lw_config_disabled ())
    {
      g_set_error_literal (out_error, LAGWATCH_ERROR, LAGWATCH_ERROR_DISABLED,
                           "lagwatch is disabled (LAGWATCH_DISABLE=1)");
      return NULL;
    }
  if (context == NULL)
    context = g_main_context_default ();

  watch = g_new0 (LagWatch, 1);
  g_rec_mutex_init (&watch->report_lock);
  watch->config = lw_config_copy (config);
  lw_config_apply_environment (watch->config);
  watch->threshold_ms = watch->config->threshold_ms;

  if (!lw_unwind_init (&error))
    {
      g_warning ("%s; stacks will hold only the innermost frame", error->message);
      g_clear_error (&error);
    }
  lw_modules_init ();
  lw_config_apply_debug_dirs ();
  lw_lines_init ();  /* may dlopen libdebuginfod: here, never on the watcher during a lag */
  lw_clock_init ();

  g_mutex_lock (&lw_lock);
  if (lw_watches == NULL)
    lw_watches = g_hash_table_new (NULL, NULL);

  watch->signo = lw_capture_acquire_signal (watch->config->signo ? watch->config->signo
                                                                 : lw_config_default_signal (),
                                            watch->config->signal_explicit, &error);
  if (watch->signo == 0)
    {
      g_warning ("%s; the stacks of running threads cannot be taken, "
                 "only those of threads sleeping in a system call", error->message);
      g_clear_error (&error);
    }

  watch->slot = lw_hooks_attach_full (context, lw_config_stats_enabled (), &error);
  if (watch->slot == NULL)
    {
      g_set_error (out_error, LAGWATCH_ERROR, error->code, "cannot watch: %s", error->message);
      lw_attach_abort (watch);
      g_mutex_unlock (&lw_lock);
      return NULL;
    }

  watch->sinks = lw_sinks_open (watch->config->output);
  watch->summary = lw_summary_new ();
  watch->hangs = lw_hang_store_open (watch->config->state_dir);
  if (watch->hangs != NULL)
    lw_report_previous_hangs (watch);
  watch->reporter = lw_reporter_start (watch, &error);
  if (watch->reporter == NULL || !lw_watcher_start (watch, &error))
    {
      g_set_error (out_error, LAGWATCH_ERROR, LAGWATCH_ERROR_THREAD,
                   "cannot start the watcher thread: %s", error->message);
      lw_attach_abort (watch);
      g_mutex_unlock (&lw_lock);
      return NULL;
    }
  g_hash_table_add (lw_watches, watch);
  if (!lw_atexit_registered)
    {
      atexit (lw_print_summaries_at_exit);
      lw_atexit_registered = TRUE;
    }
  g_mutex_unlock (&lw_lock);
  return watch;
}

gboolean
lagwatch_is_attached (GMainContext *context)
{
  GHashTableIter iter;
  gpointer watch;
  gboolean found = FALSE;

  if (context == NULL)
    context = g_main_context_default ();
  g_mutex_lock (&lw_lock);
  if (lw_watches != NULL)
    {
      g_hash_table_iter_init (&iter, lw_watches);
      while (!found && g_hash_table_iter_next (&iter, &watch, NULL))
        found = ((LagWatch *) watch)->slot->context == context;
    }
  g_mutex_unlock (&lw_lock);
  return found;
}

void
lw_watch_finish (LagWatch *watch)
{
  GDestroyNotify destroy;
  gpointer data;

  lw_hooks_detach (watch->slot);
  g_mutex_lock (&lw_lock);
  if (watch->signo != 0)
    lw_capture_release_signal ();
  g_mutex_unlock (&lw_lock);

  g_rec_mutex_lock (&watch->report_lock);
  destroy = watch->report_destroy;
  data = watch->report_data;
  watch->report_func = NULL;
  watch->report_destroy = NULL;
  g_rec_mutex_unlock (&watch->report_lock);
  if (destroy != NULL)
    destroy (data);

  if (watch->reporter != NULL)
    lw_reporter_abandon (g_steal_pointer (&watch->reporter));  /* finishing on it */
  lw_print_summary (watch);
  lw_watch_free (watch);
}

void
lagwatch_detach (LagWatch *watch)
{
  gboolean known;

  g_return_if_fail (watch != NULL);

  g_mutex_lock (&lw_lock);
  known = lw_watches != NULL && g_hash_table_remove (lw_watches, watch);
  g_mutex_unlock (&lw_lock);
  g_return_if_fail (known);

  lw_watcher_stop (watch);
  if (lw_reporter_is_current (watch->reporter))
    {
      /* Called from the report callback: the reporting thread finishes the
       * job once the callback has returned. */
      atomic_store (&watch->self_free, TRUE);
      return;
    }
  lw_reporter_stop (g_steal_pointer (&watch->reporter));
  lw_watch_finish (watch);
}

/* Any thread. TRUE when @watch is a live handle. */
static gboolean
lw_watch_is_live (LagWatch *watch)
{
  gboolean live;

  g_mutex_lock (&lw_lock);
  live = lw_watches != NULL && g_hash_table_contains (lw_watches, watch);
  g_mutex_unlock (&lw_lock);
  return live;
}

gboolean
lagwatch_set_threshold_ms (LagWatch *watch, guint threshold_ms)
{
  g_return_val_if_fail (watch != NULL && lw_watch_is_live (watch), FALSE);
  if (threshold_ms < 1 || threshold_ms > LW_MAX_DURATION_MS)
    return FALSE;
  atomic_store (&watch->threshold_ms, threshold_ms);
  sem_post (&watch->slot->wake);  /* re-judge the busy period in progress */
  return TRUE;
}

guint
lagwatch_get_threshold_ms (LagWatch *watch)
{
  g_return_val_if_fail (watch != NULL, 0);
  return atomic_load (&watch->threshold_ms);
}

void
lagwatch_pause (LagWatch *watch)
{
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->paused, TRUE);
  sem_post (&watch->slot->wake);
}

void
lagwatch_resume (LagWatch *watch)
{
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->paused, FALSE);
  sem_post (&watch->slot->wake);
}

void
lagwatch_begin_long_work (LagWatch *watch)
{
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->slot->expected_seq, atomic_load (&watch->slot->seq));
}

void
lagwatch_end_long_work (LagWatch *watch)
{
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->slot->expected_seq, 0);
}

void
lagwatch_set_report_func (LagWatch          *watch,
                          LagWatchReportFunc func,
                          gpointer           user_data,
                          GDestroyNotify     destroy)
{
  GDestroyNotify old_destroy;
  gpointer old_data;

  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));

  g_rec_mutex_lock (&watch->report_lock);
  old_destroy = watch->report_destroy;
  old_data = watch->report_data;
  watch->report_func = func;
  watch->report_data = user_data;
  watch->report_destroy = destroy;
  g_rec_mutex_unlock (&watch->report_lock);
  if (old_destroy != NULL)
    old_destroy (old_data);
}

LagWatchStats *
lagwatch_get_stats (LagWatch *watch)
{
  g_return_val_if_fail (watch != NULL && lw_watch_is_live (watch), NULL);
  if (!watch->slot->stats_enabled)
    return NULL;
  return lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
}
