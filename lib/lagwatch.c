/* lagwatch.c: the public entry points, tying hooks, capture and watcher */
#include "lagwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "lw-capture.h"
#include "lw-capture-core.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-gjs.h"
#include "lw-hang.h"
#include "lw-lines.h"
#include "lw-hooks.h"
#include "lw-last-thread.h"
#include "lw-modules.h"
#include "lw-private.h"
#include "lw-sink.h"
#include "lw-stats-read.h"
#include "lw-unwind.h"
#include "lw-watch-private.h"
#include "lw-watcher.h"
#include "lw-say.h"
#include "lw-seccomp.h"

/* Serializes attach and detach (signal ownership) and holds the set of live
 * watches, so that a stale handle is refused instead of dereferenced. */
static GMutex      lw_lock;
static GHashTable *lw_watches;
/* In a child of fork(): the watches of the parent, whose threads do not
 * exist here. Their handles are accepted and ignored. */
static GHashTable *lw_inherited;

LagWatch *
lagwatch_attach (GMainContext *context)
{
  return lagwatch_attach_with_config (context, NULL);
}

static gboolean lw_process_hooks_registered;

/* Any thread, @watch's watcher stopped. Gives the summary of @watch its
 * first line, the latency profile's counts ("12,340 iterations, p99 4 ms,
 * 37 over 16.7 ms, 2 lags"). The "stats" event is not written here: the
 * watcher writes it as it stops (at detach and at exit alike), once. */
static void
lw_note_stats (LagWatch *watch)
{
  LagWatchStats *stats;
  g_autofree char *counts = NULL;
  g_autofree char *missed = NULL;

  if (!watch->slot->stats_enabled)
    return;
  stats = lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
  counts = lw_stats_to_text (stats);
  missed = lw_stats_missed_to_text (stats);
  lagwatch_stats_free (stats);
  lw_summary_set_run_line (watch->summary, counts);
  if (missed != NULL)
    lw_summary_set_missed_line (watch->summary, missed);
}

/* At exit, the exiting thread. Notes whether the loop had returned: the
 * thread that exits is the loop's and owns no iteration of its context (GLib
 * acquires the context for every iteration; g_main_loop_run() has returned,
 * or main() after it). A busy period that goes on then is the program's
 * exit (Python's finalization, atexit handlers, work after the loop), not
 * a lag of the loop. exit() from inside a handler is inside an iteration:
 * that lag is the loop's. */
static void
lw_note_loop_returned (LagWatch *watch)
{
  if (atomic_load (&watch->slot->loop_tid) == gettid ()
      && !g_main_context_is_owner (watch->slot->context))
    atomic_store (&watch->loop_returned, TRUE);
}

/* At exit: the summaries of the watches never detached, each waiting for
 * its sinks a bounded time (LW_SINK_QUEUE_STOP_MS). None in a child of
 * fork(): the parent's lags are not the child's. */
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
          /* A lag under way (exit() from a handler that froze the loop
           * never returns to it) is reported as still running, as at
           * detach, before the summary: not lost with the process. The
           * watcher's stop is bounded: it waits on nothing but its own
           * clock and the capture's bounded handshake. */
          atomic_store (&((LagWatch *) watch)->exiting, TRUE);
          lw_note_loop_returned (watch);
          lw_watcher_stop (watch);
          lw_note_stats (watch);
          lw_reporter_print_summary (((LagWatch *) watch)->reporter);
        }
    }
  g_mutex_unlock (&lw_lock);
}

/* The forking thread, before fork(): no attach or detach is half done in
 * the child, and lw_lock is free there. The other locks of lagwatch (the
 * summary's, the callback's, the sinks', the symbolizer's) may be held by
 * its threads at that moment; the child never takes them. */
static void
lw_atfork_prepare (void)
{
  g_mutex_lock (&lw_lock);
}

/* The forking thread, in the parent after fork(). */
static void
lw_atfork_parent (void)
{
  g_mutex_unlock (&lw_lock);
}

/* The only thread of the child, after fork(): the watcher and reporting
 * threads stayed in the parent, so the parent's watches become inert
 * handles (no summary at exit, detach does nothing). No allocation: the
 * table moves. */
static void
lw_atfork_child (void)
{
  if (lw_watches != NULL && g_hash_table_size (lw_watches) > 0)
    lw_inherited = g_steal_pointer (&lw_watches);
  g_mutex_unlock (&lw_lock);
}

/* Any thread. TRUE when *@table (lw_watches or lw_inherited) holds @watch. */
static gboolean
lw_watch_listed (GHashTable *const *table, LagWatch *watch)
{
  gboolean listed;

  g_mutex_lock (&lw_lock);
  listed = *table != NULL && g_hash_table_contains (*table, watch);
  g_mutex_unlock (&lw_lock);
  return listed;
}

/* Any thread. TRUE for a watch of the parent, in a child of fork(). */
static gboolean
lw_watch_is_inherited (LagWatch *watch)
{
  return lw_watch_listed (&lw_inherited, watch);
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
      g_autofree char *json = NULL;
      g_autofree char *text = NULL;

      lw_sink_hang_killed_record (hang->pid, hang->json, hang->text, &json, &text);
      lw_reporter_write_raw (watch->reporter, json, text);
    }
}

/* Any thread. Frees what a watch owns, once its threads are gone. */
static void
lw_watch_free (LagWatch *watch)
{
  lw_frames_stop (watch->frames);
  lw_gjs_stop (watch->gjs);
  lw_snapshot_free (watch->snapshot);
  g_free (watch->ips);
  lw_summary_free (watch->summary);
  lw_hang_store_close (watch->hangs);
  lagwatch_config_free (watch->config);
  g_free (watch);
}

/* Any thread, @watch's watcher thread gone: gives its context back (its
 * slot, the poll function) and its hold on the capture signal. */
static void
lw_watch_unhook (LagWatch *watch)
{
  lw_hooks_detach (watch->slot);
  g_mutex_lock (&lw_lock);
  if (watch->signo != 0)
    lw_capture_release_signal ();
  g_mutex_unlock (&lw_lock);
}

/* Any thread, both of @watch's threads gone: unhooks it and frees it. */
static void
lw_watch_release (LagWatch *watch)
{
  lw_watch_unhook (watch);
  lw_watch_free (watch);
}

/* Reporting thread of @data, once the callback running when @data was
 * detached from a report callback has returned (the detach unhooked it). */
static void
lw_watch_finish_detached (gpointer data)
{
  LagWatch *watch = data;

  lw_reporter_abandon (g_steal_pointer (&watch->reporter));
  lw_watch_free (watch);
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

/* Any thread, @watch just taken out of lw_watches: stops its watcher,
 * unhooks and frees it. From a report callback, of this watch or another,
 * the context is given back at once (the callback may attach to it again)
 * and the watch's reporting thread frees the rest once its callback, if
 * one runs, has returned: waiting for that thread here could be waiting
 * on this very thread, or on one whose callback is detaching this
 * thread's watch at the same moment. */
static void
lw_watch_stop (LagWatch *watch)
{
  lw_watcher_stop (watch);
  lw_note_stats (watch);
  if (lw_reporter_on_reporting_thread ())
    {
      lw_watch_unhook (watch);
      lw_reporter_finish_soon (watch->reporter);
      return;
    }
  lw_reporter_stop (g_steal_pointer (&watch->reporter));
  lw_watch_release (watch);
}

/* Any thread, lw_lock held. Takes the replaceable watch of @context (the
 * launcher's) out of lw_watches and returns it, or NULL when there is none.
 * A watch is listed once fully attached, under lw_lock: a replaceable
 * attach under way on another thread is either listed or has taken no
 * slot yet. */
static LagWatch *
lw_take_replaceable_unlocked (GMainContext *context)
{
  GHashTableIter iter;
  gpointer watch;

  if (lw_watches == NULL)
    return NULL;
  g_hash_table_iter_init (&iter, lw_watches);
  while (g_hash_table_iter_next (&iter, &watch, NULL))
    if (((LagWatch *) watch)->slot->context == context && ((LagWatch *) watch)->config->replaceable)
      {
        g_hash_table_iter_remove (&iter);
        return watch;
      }
  return NULL;
}

/* Attaching thread, after lw_seccomp_check(): works around the calls the
 * process's seccomp filter forbids, once per process, saying what is lost
 * when the filter would have killed or blocked lagwatch for the call (a
 * call that only fails is handled where it is made). */
static void
lw_avoid_forbidden_calls (void)
{
  static GMutex lock;
  static pid_t done_pid;
  static int mem_fd = -1;

  g_mutex_lock (&lock);
  if (done_pid == getpid ())
    {
      g_mutex_unlock (&lock);
      return;
    }
  done_pid = getpid ();
  if (lw_seccomp_verdict (LW_SYSCALL_MINCORE) == LW_SYSCALL_FATAL)
    {
      lw_unwind_forgo ();
      lw_say ("this process's seccomp filter kills mincore(), which libunwind calls as it starts: "
              "libunwind is not used, and a stack ends at a frame lagwatch's own unwinder cannot step");
    }
  if (lw_seccomp_verdict (LW_SYSCALL_PROCESS_VM_READV) != LW_SYSCALL_WORKS)
    {
      /* A descriptor inherited from a parent reads the parent's memory. */
      if (mem_fd >= 0)
        close (mem_fd);
      mem_fd = open ("/proc/self/mem", O_RDONLY | O_CLOEXEC);
      lw_core_set_memory_fd (mem_fd >= 0 ? mem_fd : LW_CORE_MEMORY_NONE);
      if (mem_fd < 0)
        lw_say ("this process's seccomp filter forbids process_vm_readv() and /proc/self/mem "
                "cannot be opened (%s): lagwatch reads no unwind tables, source names or "
                "interpreter frames, so stacks hold only their innermost frame", g_strerror (errno));
    }
  if (lw_seccomp_verdict (LW_SYSCALL_SIGALTSTACK) == LW_SYSCALL_FATAL)
    lw_say ("this process's seccomp filter kills sigaltstack(): lagwatch's signal handler runs "
            "on the interrupted thread's own stack");
  if (lw_seccomp_verdict (LW_SYSCALL_TIMER_CREATE) == LW_SYSCALL_FATAL)
    lw_say ("this process's seccomp filter kills timer_create(): lags are sampled by "
            "explicit signals");
  g_mutex_unlock (&lock);
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

  if (watch == NULL && g_error_matches (error, LAGWATCH_ERROR, LAGWATCH_ERROR_FORKED))
    g_debug ("%s", error->message);
  else if (watch == NULL && !g_error_matches (error, LAGWATCH_ERROR, LAGWATCH_ERROR_DISABLED))
    lw_say ("%s", error->message);
  return watch;
}

LagWatch *
lagwatch_attach_full (GMainContext *context, const LagWatchConfig *config, GError **out_error)
{
  g_autoptr(GError) error = NULL;
  LagWatch *watch, *replaced;

  if (lw_config_disabled ())
    {
      g_set_error_literal (out_error, LAGWATCH_ERROR, LAGWATCH_ERROR_DISABLED,
                           "lagwatch is disabled (LAGWATCH_DISABLE=1)");
      return NULL;
    }
  g_mutex_lock (&lw_lock);
  if (lw_inherited != NULL)
    {
      /* The parent's threads may have held lagwatch's locks (symbol
       * tables, module list, clock calibration) when it forked: nothing
       * lagwatch would use here can be trusted to be consistent, so not
       * even its initialization runs. */
      g_mutex_unlock (&lw_lock);
      g_set_error_literal (out_error, LAGWATCH_ERROR, LAGWATCH_ERROR_FORKED,
                           "not attaching in a child of fork() whose parent was watched");
      return NULL;
    }
  g_mutex_unlock (&lw_lock);
  /* Before any of lagwatch's threads or its handler makes a call that a
   * seccomp filter could turn fatal. */
  if (!lw_seccomp_check (&error))
    {
      g_set_error (out_error, LAGWATCH_ERROR, LAGWATCH_ERROR_THREAD, "%s", error->message);
      return NULL;
    }
  lw_avoid_forbidden_calls ();
  if (context == NULL)
    context = g_main_context_default ();
  /* The program's thread: if it is its last, the process ends when it
   * exits, lagwatch's threads or not. */
  lw_last_thread_track_self ();

  watch = g_new0 (LagWatch, 1);
  watch->config = lw_config_copy (config);
  lw_config_apply_environment (watch->config);
  watch->threshold_ms = watch->config->threshold_ms;

  if (!lw_unwind_init (&error))
    {
      lw_say ("%s; stacks will hold only the innermost frame", error->message);
      g_clear_error (&error);
    }
  lw_modules_init ();
  lw_config_apply_debug_dirs ();
  lw_lines_init ();  /* may dlopen libdebuginfod: here, never on the watcher during a lag */
  lw_clock_init ();

  g_mutex_lock (&lw_lock);
  /* A program attaching its own watch: a replaceable one there (the
   * launcher's) is detached first, so that this attach succeeds and each
   * lag is reported once, by the program's watch. */
  while (!watch->config->replaceable && (replaced = lw_take_replaceable_unlocked (context)) != NULL)
    {
      g_mutex_unlock (&lw_lock);
      lw_watch_stop (replaced);
      g_mutex_lock (&lw_lock);
    }
  if (lw_watches == NULL)
    lw_watches = g_hash_table_new (NULL, NULL);

  if (lw_seccomp_verdict (LW_SYSCALL_RT_TGSIGQUEUEINFO) != LW_SYSCALL_WORKS)
    g_set_error_literal (&error, LAGWATCH_ERROR, LAGWATCH_ERROR_SIGNAL,
                         "this process's seccomp filter forbids rt_tgsigqueueinfo(), which sends "
                         "lagwatch's signal");
  else
    watch->signo = lw_capture_acquire_signal (watch->config->signo ? watch->config->signo
                                                                   : lw_config_default_signal (),
                                              watch->config->signal_explicit, &error);
  if (watch->signo == 0)
    {
      lw_say ("%s; the stacks of running threads cannot be taken, "
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

  lw_stats_set_threshold_ms (&watch->slot->stats, watch->threshold_ms);
  watch->summary = lw_summary_new ();
  watch->hangs = lw_hang_store_open (watch->config->state_dir);
  watch->reporter = lw_reporter_start (lw_sinks_open_from (watch->config->output,
                                                           lw_config_output_origin (watch->config)),
                                       watch->summary, watch->hangs, lw_watch_finish_detached, watch,
                                       &error);
  if (watch->reporter != NULL && watch->hangs != NULL)
    lw_report_previous_hangs (watch);
  watch->frames = lw_frames_start (context, watch->threshold_ms);
  watch->gjs = lw_gjs_start (context, watch->config->js_frames);
  if (watch->reporter == NULL || !lw_watcher_start (watch, &error))
    {
      g_set_error (out_error, LAGWATCH_ERROR, LAGWATCH_ERROR_THREAD,
                   "cannot start the watcher thread: %s", error->message);
      lw_attach_abort (watch);
      g_mutex_unlock (&lw_lock);
      return NULL;
    }
  g_hash_table_add (lw_watches, watch);
  if (!lw_process_hooks_registered)
    {
      atexit (lw_print_summaries_at_exit);
      pthread_atfork (lw_atfork_prepare, lw_atfork_parent, lw_atfork_child);
      lw_process_hooks_registered = TRUE;
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
lagwatch_detach (LagWatch *watch)
{
  gboolean known;

  g_return_if_fail (watch != NULL);
  if (lw_watch_is_inherited (watch))
    return;

  g_mutex_lock (&lw_lock);
  known = lw_watches != NULL && g_hash_table_remove (lw_watches, watch);
  g_mutex_unlock (&lw_lock);
  g_return_if_fail (known);

  lw_watch_stop (watch);
}

/* Any thread. TRUE when @watch is a live handle. */
static gboolean
lw_watch_is_live (LagWatch *watch)
{
  return lw_watch_listed (&lw_watches, watch);
}

gboolean
lagwatch_set_threshold_ms (LagWatch *watch, guint threshold_ms)
{
  if (lw_watch_is_inherited (watch))
    return FALSE;
  g_return_val_if_fail (watch != NULL && lw_watch_is_live (watch), FALSE);
  if (threshold_ms < 1 || threshold_ms > LW_MAX_DURATION_MS)
    return FALSE;
  atomic_store (&watch->threshold_ms, threshold_ms);
  lw_stats_set_threshold_ms (&watch->slot->stats, threshold_ms);
  lw_frames_set_threshold_ms (watch->frames, threshold_ms);
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
  if (lw_watch_is_inherited (watch))
    return;
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->paused, TRUE);
  atomic_store (&watch->slot->stats.paused, TRUE);
  sem_post (&watch->slot->wake);
}

void
lagwatch_resume (LagWatch *watch)
{
  if (lw_watch_is_inherited (watch))
    return;
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  /* The busy periods until now were paused, all of them. */
  atomic_store (&watch->resumed_seq, atomic_load (&watch->slot->seq));
  atomic_store (&watch->paused, FALSE);
  atomic_store (&watch->slot->stats.paused, FALSE);
  sem_post (&watch->slot->wake);
}

void
lagwatch_begin_long_work (LagWatch *watch)
{
  if (lw_watch_is_inherited (watch))
    return;
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->slot->expected_seq, atomic_load (&watch->slot->seq));
  atomic_store (&watch->slot->long_work_seq, atomic_load (&watch->slot->seq));
}

void
lagwatch_end_long_work (LagWatch *watch)
{
  if (lw_watch_is_inherited (watch))
    return;
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  atomic_store (&watch->slot->expected_seq, 0);
}

void
lagwatch_set_report_func (LagWatch          *watch,
                          LagWatchReportFunc func,
                          gpointer           user_data,
                          GDestroyNotify     destroy)
{
  if (lw_watch_is_inherited (watch))
    return;
  g_return_if_fail (watch != NULL && lw_watch_is_live (watch));
  lw_reporter_set_report_func (watch->reporter, func, user_data, destroy);
}

LagWatchStats *
lagwatch_get_stats (LagWatch *watch)
{
  g_return_val_if_fail (watch != NULL && lw_watch_is_live (watch), NULL);
  if (!watch->slot->stats_enabled)
    return NULL;
  return lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
}
