/* lagwatch.h: catch the moments a GLib main loop stops answering
 *
 * lagwatch watches one GMainContext. Whenever the thread running it stays
 * out of poll() (busy in a callback, a source's prepare/check, or a loop
 * that never polls) for longer than a threshold, lagwatch takes that
 * thread's stack while it is still stuck, names the frames, and reports the
 * lag when the loop comes back: on stderr, as JSON Lines, and to a callback.
 *
 *   LagWatch *watch = lagwatch_attach (NULL);   // the default context
 *   ...
 *   lagwatch_detach (watch);
 *
 * Environment variables (LAGWATCH_THRESHOLD_MS, LAGWATCH_OUTPUT, ...) tune a
 * watch without a rebuild; see README.md. They override what the program set
 * through LagWatchConfig, so a user can always retune or disable lagwatch.
 *
 * Threads: unless a function says otherwise, it may be called from any
 * thread. No function here is async-signal-safe.
 *
 * fork(): lagwatch's threads stay in the parent. In the child, the
 * parent's watches are inert: every function given one of them does
 * nothing (lagwatch_detach() included, quietly), lagwatch_is_attached()
 * returns %FALSE, no summary is printed at exit, and lagwatch_attach()
 * returns %NULL (a lock of lagwatch's symbol tables may have been held by
 * one of the parent's threads at the fork). A child that calls exec() starts
 * afresh. A child of a process with no watch attached may attach.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#if defined(LAGWATCH_COMPILATION)
# define LAGWATCH_API __attribute__((visibility("default")))
#else
# define LAGWATCH_API
#endif

/**
 * LAGWATCH_ERROR:
 *
 * The error domain of lagwatch; its codes are #LagWatchError values.
 *
 * Since: 0.1
 */
#define LAGWATCH_ERROR (lagwatch_error_quark ())

/**
 * LagWatchError:
 * @LAGWATCH_ERROR_INVALID: a configuration value is out of range or malformed
 * @LAGWATCH_ERROR_ALREADY_WATCHED: the context is already watched
 * @LAGWATCH_ERROR_NO_SLOT: every one of the 16 watch slots is in use
 * @LAGWATCH_ERROR_SIGNAL: no signal could be installed to take stacks
 * @LAGWATCH_ERROR_OUTPUT: an output (sink) list is malformed
 * @LAGWATCH_ERROR_DISABLED: `LAGWATCH_DISABLE=1` is set
 * @LAGWATCH_ERROR_THREAD: lagwatch's threads could not be started
 * @LAGWATCH_ERROR_FORKED: a child of fork() whose parent was watched cannot
 *   attach (until it calls exec())
 * @LAGWATCH_ERROR_DETACHED: the monitor is detached: there is no watch left
 *   to change (since 0.2)
 *
 * Why lagwatch could not do what was asked.
 *
 * Since: 0.1
 */
typedef enum
{
  LAGWATCH_ERROR_INVALID,
  LAGWATCH_ERROR_ALREADY_WATCHED,
  LAGWATCH_ERROR_NO_SLOT,
  LAGWATCH_ERROR_SIGNAL,
  LAGWATCH_ERROR_OUTPUT,
  LAGWATCH_ERROR_DISABLED,
  LAGWATCH_ERROR_THREAD,
  LAGWATCH_ERROR_FORKED,
  LAGWATCH_ERROR_DETACHED,
} LagWatchError;

/**
 * lagwatch_error_quark:
 *
 * Returns: the #GQuark of %LAGWATCH_ERROR
 * Since: 0.1
 */
LAGWATCH_API GQuark lagwatch_error_quark (void);

/**
 * LagWatch:
 *
 * An opaque handle on one watched main context, returned by
 * lagwatch_attach() and released by lagwatch_detach().
 *
 * Since: 0.1
 */
typedef struct _LagWatch LagWatch;

/**
 * LagWatchConfig:
 *
 * Settings for lagwatch_attach_with_config(): built-in defaults that the
 * program may change. The environment is applied on top at attach time.
 *
 * Since: 0.1
 */
typedef struct _LagWatchConfig LagWatchConfig;

/**
 * LagWatchReport:
 *
 * One finished lag, immutable and reference counted. Frames are innermost
 * first.
 *
 * Since: 0.1
 */
typedef struct _LagWatchReport LagWatchReport;

/**
 * LagWatchReportFunc:
 * @report: (transfer none): the finished lag; lagwatch_report_ref() it to
 *   keep it past the call
 * @user_data: the data given to lagwatch_set_report_func()
 *
 * Called once per finished lag, on the watch's reporting thread (never on
 * the watched thread: a UI must hand the report over, e.g. with
 * g_idle_add_full() and a reference). Watching goes on while it runs; later
 * reports wait for it to return, 64 of them at most: beyond, the newest are
 * dropped and the sinks say how many. A sink that stalls never delays it:
 * the callback gets each report before the sinks do. It may call
 * lagwatch_detach() on its own watch (reports not yet delivered are then
 * dropped).
 *
 * Since: 0.1
 */
typedef void (*LagWatchReportFunc) (LagWatchReport *report,
                                    gpointer        user_data);

/**
 * lagwatch_config_new:
 *
 * Creates a configuration holding the built-in defaults: threshold 100 ms,
 * hang 2000 ms, output "stderr", signal SIGRTMIN+7, 128 frames.
 *
 * Returns: (transfer full): a new configuration; free with
 *   lagwatch_config_free()
 * Since: 0.1
 */
LAGWATCH_API LagWatchConfig *lagwatch_config_new (void);

/**
 * lagwatch_config_free:
 * @config: (nullable) (transfer full): a configuration
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_config_free (LagWatchConfig *config);

/**
 * lagwatch_config_set_threshold_ms: (skip)
 * @config: a configuration
 * @threshold_ms: how long the loop's thread may stay out of poll before it
 *   is a lag, 1 to 3600000
 *
 * Returns: %TRUE if the value was accepted; lagwatch_config_try_set_threshold_ms()
 *   says why not
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_threshold_ms (LagWatchConfig *config,
                                                        guint           threshold_ms);

/**
 * lagwatch_config_set_hang_ms: (skip)
 * @config: a configuration
 * @hang_ms: the duration from which a lag is also a hang, 1 to 3600000
 *
 * Returns: %TRUE if the value was accepted; lagwatch_config_try_set_hang_ms()
 *   says why not
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_hang_ms (LagWatchConfig *config,
                                                   guint           hang_ms);

/**
 * lagwatch_config_set_output:
 * @config: a configuration
 * @spec: comma-separated sinks: "stderr", "json:PATH" (appends JSON Lines to
 *   PATH), "journal" (one structured systemd journal entry per report), "none"
 * @error: return location for a #GError, or %NULL
 *
 * Returns: %TRUE if @spec was valid; on %FALSE the configuration is unchanged
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_output (LagWatchConfig *config,
                                                  const char     *spec,
                                                  GError        **error);

/**
 * lagwatch_config_set_signal: (skip)
 * @config: a configuration
 * @signo: a real-time signal, SIGRTMIN to SIGRTMAX
 *
 * The signal sent to the stuck thread to take its stack (only when the
 * thread is running: a thread blocked in a system call is read from /proc
 * with no signal). When the program already handles @signo, lagwatch chains
 * to that handler and says so.
 *
 * Returns: %TRUE if the value was accepted; lagwatch_config_try_set_signal()
 *   takes the signal by name and says why not
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_signal (LagWatchConfig *config,
                                                  int             signo);

/**
 * lagwatch_config_set_sample_ms: (skip)
 * @config: a configuration
 * @sample_ms: interval between two stacks taken during a lag, 1 to 1000
 *   (default 10): of the thread's CPU time while it runs (no finer than
 *   the kernel's tick), of wall time while it sleeps; a long lag keeps at
 *   most 256 samples, thinned out evenly
 *
 * Returns: %TRUE if the value was accepted; lagwatch_config_try_set_sample_ms()
 *   says why not
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_sample_ms (LagWatchConfig *config,
                                                     guint           sample_ms);

/**
 * lagwatch_config_set_state_dir: (skip)
 * @config: a configuration
 * @dir: (nullable): absolute directory for hang records that must survive
 *   a kill, or %NULL for `$XDG_STATE_HOME/lagwatch`
 *
 * Returns: %TRUE if the value was accepted; lagwatch_config_try_set_state_dir()
 *   says why not
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_state_dir (LagWatchConfig *config,
                                                     const char     *dir);

/**
 * lagwatch_config_set_max_frames: (skip)
 * @config: a configuration
 * @max_frames: most frames kept per stack, 1 to 1024
 *
 * Returns: %TRUE if the value was accepted; lagwatch_config_try_set_max_frames()
 *   says why not
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_config_set_max_frames (LagWatchConfig *config,
                                                      guint           max_frames);

/**
 * lagwatch_config_set_replaceable:
 * @config: a configuration
 * @replaceable: %TRUE for a watch that gives way to a later one
 *
 * A replaceable watch is a default for a program that may bring its own:
 * when another lagwatch_attach() (of a configuration that is not
 * replaceable) names the same context, this watch is detached first and
 * the new one takes its place, instead of the new attach failing with
 * %LAGWATCH_ERROR_ALREADY_WATCHED. A replaceable attach to a context
 * already watched still fails. The `lagwatch` launcher attaches this way.
 * Its handle is invalid once replaced; a watch is replaced by an attach on
 * any thread, also from a report callback.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_config_set_replaceable (LagWatchConfig *config,
                                                   gboolean        replaceable);

/*
 * The setters above answer %FALSE to a value out of range, and keep their
 * signatures for C callers. The lagwatch_config_try_set_*() functions below
 * do the same and say why in a #GError of %LAGWATCH_ERROR
 * (%LAGWATCH_ERROR_INVALID), the configuration unchanged: GObject
 * Introspection gives them the plain setters' names, so that
 * `config.set_threshold_ms(0)` raises a `GLib.Error` in Python and throws
 * in GJS instead of answering False.
 */

/**
 * lagwatch_config_try_set_threshold_ms: (rename-to lagwatch_config_set_threshold_ms)
 * @config: a configuration
 * @threshold_ms: how long the loop's thread may stay out of poll before it
 *   is a lag, 1 to 3600000
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_config_set_threshold_ms(), failing with %LAGWATCH_ERROR_INVALID.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_config_try_set_threshold_ms (LagWatchConfig *config,
                                                            guint           threshold_ms,
                                                            GError        **error);

/**
 * lagwatch_config_try_set_hang_ms: (rename-to lagwatch_config_set_hang_ms)
 * @config: a configuration
 * @hang_ms: the duration from which a lag is also a hang, 1 to 3600000
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_config_set_hang_ms(), failing with %LAGWATCH_ERROR_INVALID.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_config_try_set_hang_ms (LagWatchConfig *config,
                                                       guint           hang_ms,
                                                       GError        **error);

/**
 * lagwatch_config_try_set_signal: (rename-to lagwatch_config_set_signal)
 * @config: a configuration
 * @signal: a real-time signal named as the `LAGWATCH_SIGNAL` variable
 *   names it: "SIGRTMIN+N", "SIGRTMAX-N", "SIGRTMIN", "SIGRTMAX" (the "SIG"
 *   prefix optional) or its number, within SIGRTMIN to SIGRTMAX
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_config_set_signal(), with the signal by name (a number's value
 * differs between C libraries, a name does not), failing with
 * %LAGWATCH_ERROR_INVALID.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_config_try_set_signal (LagWatchConfig *config,
                                                      const char     *signal,
                                                      GError        **error);

/**
 * lagwatch_config_try_set_sample_ms: (rename-to lagwatch_config_set_sample_ms)
 * @config: a configuration
 * @sample_ms: interval between two stacks taken during a lag, 1 to 1000
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_config_set_sample_ms(), failing with %LAGWATCH_ERROR_INVALID.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_config_try_set_sample_ms (LagWatchConfig *config,
                                                         guint           sample_ms,
                                                         GError        **error);

/**
 * lagwatch_config_try_set_state_dir: (rename-to lagwatch_config_set_state_dir)
 * @config: a configuration
 * @dir: (nullable): absolute directory for hang records that must survive
 *   a kill, or %NULL for `$XDG_STATE_HOME/lagwatch`
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_config_set_state_dir(), failing with %LAGWATCH_ERROR_INVALID.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_config_try_set_state_dir (LagWatchConfig *config,
                                                         const char     *dir,
                                                         GError        **error);

/**
 * lagwatch_config_try_set_max_frames: (rename-to lagwatch_config_set_max_frames)
 * @config: a configuration
 * @max_frames: most frames kept per stack, 1 to 1024
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_config_set_max_frames(), failing with %LAGWATCH_ERROR_INVALID.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_config_try_set_max_frames (LagWatchConfig *config,
                                                          guint           max_frames,
                                                          GError        **error);

/**
 * lagwatch_attach: (skip)
 * @context: (nullable): the context to watch, or %NULL for the global
 *   default context
 *
 * Starts watching @context with the defaults and the environment. Equivalent
 * to lagwatch_attach_with_config (@context, NULL).
 *
 * Returns: (transfer full) (nullable): the watch, or %NULL when @context
 *   cannot be watched (one warning says why) or LAGWATCH_DISABLE=1 is set
 * Since: 0.1
 */
LAGWATCH_API LagWatch *lagwatch_attach (GMainContext *context);

/**
 * lagwatch_attach_with_config: (skip)
 * @context: (nullable): the context to watch, or %NULL for the default one
 * @config: (nullable): settings, or %NULL for the defaults; the environment
 *   overrides them. Copied: the caller keeps ownership.
 *
 * Starts watching @context: wraps its poll function and starts two threads,
 * the watcher (catches and samples lags) and the reporting thread (names,
 * writes and hands over reports) with a third that only writes to the
 * sinks, so that a sink nobody reads (a full pipe) delays neither the
 * callback nor lagwatch_detach(). Nothing runs per iteration but the poll
 * wrapper; the threads sleep while the loop does. The watch holds a reference on @context: a context the
 * program drops while watched is finalized at lagwatch_detach().
 *
 * Returns: (transfer full) (nullable): the watch, or %NULL with one warning
 *   (already watched, no free slot, libunwind missing, ...), or quietly under
 *   LAGWATCH_DISABLE=1 or in a child of fork() whose parent had a watch
 * Since: 0.1
 */
LAGWATCH_API LagWatch *lagwatch_attach_with_config (GMainContext         *context,
                                                    const LagWatchConfig *config);

/**
 * lagwatch_attach_full: (skip)
 * @context: (nullable): the context to watch, or %NULL for the default one
 * @config: (nullable): settings, or %NULL for the defaults; the environment
 *   overrides them. Copied: the caller keeps ownership.
 * @error: return location for a #GError, or %NULL
 *
 * lagwatch_attach_with_config(), but failing with @error instead of a
 * warning (%LAGWATCH_ERROR_DISABLED, quietly, under `LAGWATCH_DISABLE=1`).
 * Problems that leave the watch usable (no signal for running threads, no
 * libunwind) are still warnings.
 *
 * Returns: (transfer full) (nullable): the watch, or %NULL with @error set
 * Since: 0.1
 */
LAGWATCH_API LagWatch *lagwatch_attach_full (GMainContext         *context,
                                             const LagWatchConfig *config,
                                             GError              **error);

/**
 * lagwatch_is_attached: (skip)
 * @context: (nullable): a context, or %NULL for the default one
 *
 * Returns: %TRUE when a watch is attached to @context
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_is_attached (GMainContext *context);

/**
 * lagwatch_detach: (skip)
 * @watch: (transfer full): a watch from lagwatch_attach()
 *
 * Stops watching and restores what lagwatch changed (the poll function, the
 * signal disposition once no capture is in flight). Safe at any moment, also
 * in the middle of a lag, from any thread including the watched one and a
 * report callback. A lag in progress that was already caught is reported,
 * marked incomplete. @watch is invalid afterwards; its context can be
 * watched again as soon as this returns, also from the report callback
 * that detached it.
 *
 * Reports already handed over reach the callback first; the sinks then get
 * 2 seconds at most to take what is queued and the summary: a sink thread
 * stuck in a write() to a sink nobody reads is left to finish on its own
 * (it frees what it holds if it ever returns). In a child of fork(), a watch
 * of the parent is ignored.
 *
 * From a report callback (or its destroy notify), of @watch or of any other
 * watch, lagwatch_detach() never waits for a reporting thread: that thread
 * may be the caller's own, or one whose callback is detaching the caller's
 * watch at the same moment. The context is given back before it returns;
 * no callback of @watch starts afterwards, one already running (or starting
 * at that moment) finishes, and @watch's reporting thread then hands the
 * reports still queued to the sinks only, and ends the watch: the
 * callback's destroy notify, called then, says it is done.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_detach (LagWatch *watch);

/**
 * lagwatch_set_threshold_ms: (skip)
 * @watch: a watch
 * @threshold_ms: the new threshold, 1 to 3600000
 *
 * Changes the threshold of a running watch; the busy period in progress is
 * judged against the new value.
 *
 * Returns: %TRUE if the value was accepted
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_set_threshold_ms (LagWatch *watch,
                                                 guint     threshold_ms);

/**
 * lagwatch_get_threshold_ms: (skip)
 * @watch: a watch
 *
 * Returns: the threshold in force, in milliseconds
 * Since: 0.1
 */
LAGWATCH_API guint lagwatch_get_threshold_ms (LagWatch *watch);

/**
 * lagwatch_set_report_func: (skip)
 * @watch: a watch
 * @func: (nullable): called for every finished lag, on the reporting thread
 * @user_data: passed to @func
 * @destroy: (nullable): frees @user_data when replaced or at detach
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_set_report_func (LagWatch          *watch,
                                            LagWatchReportFunc func,
                                            gpointer           user_data,
                                            GDestroyNotify     destroy);

/**
 * lagwatch_pause: (skip)
 * @watch: a watch
 *
 * Stops reporting until lagwatch_resume(); a lag in progress is dropped.
 * The poll wrapper keeps running (it costs the same), the watcher stays
 * asleep.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_pause (LagWatch *watch);

/**
 * lagwatch_resume: (skip)
 * @watch: a watch
 *
 * Reports again, from the next busy period on.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_resume (LagWatch *watch);

/**
 * lagwatch_begin_long_work: (skip)
 * @watch: a watch
 *
 * Declares that the work the loop's thread is doing now is expected to be
 * long (a deliberate blocking load at start-up, a modal export): the busy
 * period in progress is not reported. Call it on the watched thread, from
 * inside the callback that does the work.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_begin_long_work (LagWatch *watch);

/**
 * lagwatch_end_long_work: (skip)
 * @watch: a watch
 *
 * Ends what lagwatch_begin_long_work() declared: later busy periods are
 * judged again. Call it on the watched thread.
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_end_long_work (LagWatch *watch);

/**
 * lagwatch_report_ref:
 * @report: a report
 *
 * Returns: (transfer full): @report
 * Since: 0.1
 */
LAGWATCH_API LagWatchReport *lagwatch_report_ref (LagWatchReport *report);
/**
 * lagwatch_report_unref:
 * @report: (transfer full): a report
 *
 * Since: 0.1
 */
LAGWATCH_API void lagwatch_report_unref (LagWatchReport *report);

/**
 * lagwatch_report_get_id:
 * @report: a report
 *
 * Returns: a string unique to this lag in this process ("PID-N")
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_id (LagWatchReport *report);

/**
 * lagwatch_report_get_duration_ms:
 * @report: a report
 *
 * Returns: how long the thread stayed out of poll
 * Since: 0.1
 */
LAGWATCH_API double lagwatch_report_get_duration_ms (LagWatchReport *report);
/**
 * lagwatch_report_get_threshold_ms:
 * @report: a report
 *
 * Returns: the threshold in force when the lag was caught
 * Since: 0.1
 */
LAGWATCH_API guint lagwatch_report_get_threshold_ms (LagWatchReport *report);
/**
 * lagwatch_report_get_start_time:
 * @report: a report
 *
 * Returns: wall-clock time the lag began, µs since the epoch
 * Since: 0.1
 */
LAGWATCH_API gint64 lagwatch_report_get_start_time (LagWatchReport *report);
/**
 * lagwatch_report_get_thread_id:
 * @report: a report
 *
 * Returns: the kernel thread id (TID) of the stuck thread
 * Since: 0.1
 */
LAGWATCH_API int lagwatch_report_get_thread_id (LagWatchReport *report);
/**
 * lagwatch_report_get_complete:
 * @report: a report
 *
 * Returns: %FALSE when the lag had not ended yet (detach in the middle of it)
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_report_get_complete (LagWatchReport *report);
/**
 * lagwatch_report_get_n_frames:
 * @report: a report
 *
 * Returns: frames in the stack, 0 when none could be taken
 * Since: 0.1
 */
LAGWATCH_API guint lagwatch_report_get_n_frames (LagWatchReport *report);
/**
 * lagwatch_report_get_frame:
 * @report: a report
 * @index: 0 (innermost) to n_frames - 1
 * @module: (out) (optional) (transfer none) (nullable): absolute module path
 * @build_id: (out) (optional) (transfer none) (nullable): build-id in hex
 * @module_offset: (out) (optional): address relative to the module's load bias
 * @symbol: (out) (optional) (transfer none) (nullable): function name
 * @symbol_offset: (out) (optional): offset into @symbol
 *
 * Returns: the frame's instruction address, 0 if @index is out of range
 * Since: 0.1
 */
LAGWATCH_API guint64 lagwatch_report_get_frame (LagWatchReport *report,
                                                guint           index,
                                                const char    **module,
                                                const char    **build_id,
                                                guint64        *module_offset,
                                                const char    **symbol,
                                                guint64        *symbol_offset);

/**
 * lagwatch_report_get_source:
 * @report: a report
 *
 * Returns: (nullable): the name of the GSource being dispatched when the
 *   lag was caught (g_source_set_name()), or %NULL when it had none or none
 *   was being dispatched
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_source (LagWatchReport *report);

/**
 * lagwatch_report_get_phase:
 * @report: a report
 *
 * Returns: (nullable): "dispatch", "prepare", "check", "starved" (the loop
 *   kept iterating without polling: input starved), "loop" (busy outside
 *   those phases), or %NULL when unknown
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_phase (LagWatchReport *report);

/**
 * lagwatch_report_get_cpu_ms:
 * @report: a report
 *
 * Returns: CPU time the thread used during the lag, or -1 when unknown: close
 *   to the duration when it computed, near 0 when it waited
 * Since: 0.1
 */
LAGWATCH_API double lagwatch_report_get_cpu_ms (LagWatchReport *report);

/**
 * lagwatch_report_get_thread_state:
 * @report: a report
 *
 * Returns: (nullable): "running", "sleeping" or "disk" when the lag was
 *   caught
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_thread_state (LagWatchReport *report);

/**
 * lagwatch_report_get_syscall:
 * @report: a report
 *
 * Returns: (nullable): the system call the thread slept in when caught
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_syscall (LagWatchReport *report);

/**
 * lagwatch_report_get_n_samples:
 * @report: a report
 *
 * Returns: how many stacks were taken during the lag (the reported stack is
 *   the one most of them share)
 * Since: 0.1
 */
LAGWATCH_API guint lagwatch_report_get_n_samples (LagWatchReport *report);

/**
 * lagwatch_report_get_fingerprint:
 * @report: a report
 *
 * Returns: a stable hash of the lag's cause: the function of the
 *   innermost program frame (see lagwatch_report_get_frame_is_program()),
 *   without its address, line or the platform's frames below it, and the
 *   source's callback: lags with the same fingerprint have the same cause
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_fingerprint (LagWatchReport *report);

/**
 * lagwatch_report_get_frame_location:
 * @report: a report
 * @index: 0 (innermost) to n_frames - 1
 * @line: (out) (optional): the line, 0 when unknown
 *
 * The source position of a frame of the reported stack, from DWARF debug
 * info when the module has some (built with libdw).
 *
 * Returns: (nullable): the source file path as the debug info states it
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_frame_location (LagWatchReport *report,
                                                             guint           index,
                                                             guint          *line);

/**
 * lagwatch_report_to_json:
 * @report: a report
 *
 * Returns: (transfer full): the report as one JSON object, no newline, the
 *   line written to "json:" sinks
 * Since: 0.1
 */
LAGWATCH_API char *lagwatch_report_to_json (LagWatchReport *report);

/**
 * lagwatch_report_to_text:
 * @report: a report
 *
 * Returns: (transfer full): the human-readable block written to stderr
 * Since: 0.1
 */
LAGWATCH_API char *lagwatch_report_to_text (LagWatchReport *report);

/**
 * lagwatch_report_get_n_windows:
 * @report: a report
 *
 * The GTK 4 windows the lag froze: when GTK 4 is loaded in the process and
 * the watched context is the default one, lagwatch follows the frame clock
 * of each toplevel window (at run time: lagwatch does not link GTK).
 *
 * Returns: how many mapped windows the report counts missed frames for (0
 *   when GTK 4 is not loaded)
 * Since: 0.2
 */
LAGWATCH_API guint lagwatch_report_get_n_windows (LagWatchReport *report);

/**
 * lagwatch_report_get_frames_missed:
 * @report: a report
 * @index: 0 to lagwatch_report_get_n_windows() - 1
 * @title: (out) (optional) (nullable) (transfer none): the window's title
 * @refresh_interval_ms: (out) (optional): the interval at which the
 *   window's frame clock draws (1000 / the display's refresh rate)
 *
 * Returns: how many frames the window missed during the lag: the whole
 *   refresh intervals the lag lasted, since no frame can be drawn while the
 *   loop is stuck ("the window 'Text Editor' missed 24 frames"); 0, with
 *   @title %NULL and @refresh_interval_ms 0, when @index is out of range
 *   (as the frame getters, quietly: a binding may ask for window 0 of a
 *   report with none)
 * Since: 0.2
 */
LAGWATCH_API guint lagwatch_report_get_frames_missed (LagWatchReport *report,
                                                      guint           index,
                                                      const char    **title,
                                                      double         *refresh_interval_ms);

/**
 * lagwatch_report_get_frame_language:
 * @report: a report
 * @index: 0 (innermost) to n_frames - 1
 *
 * The language of a frame of the reported stack. A frame of interpreted
 * code stands for one function call of that language, not a machine
 * address: its symbol is the function's qualified name, its module and
 * location the source file and line (lagwatch_report_get_frame() returns
 * an address of no meaning for it). For "python", the frames replace the
 * interpreter's evaluation loop frames that were running them.
 *
 * Returns: (nullable): "native" for machine code, "python" for a CPython
 *   frame; NULL when @index is out of range
 * Since: 0.2
 */
LAGWATCH_API const char *lagwatch_report_get_frame_language (LagWatchReport *report,
                                                             guint           index);

/**
 * lagwatch_report_get_frame_inlined:
 * @report: a report
 * @index: a frame index, 0 the innermost
 *
 * Frames include the calls the compiler inlined, expanded from the debug
 * info as `addr2line -i` does: an inlined frame is a logical frame, with
 * its own function name and file:line, that shares the instruction address
 * of the next frame (the function it was inlined into).
 *
 * Returns: %TRUE when frame @index is such an inlined call; %FALSE for a
 *   real frame or an index out of range
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_report_get_frame_inlined (LagWatchReport *report,
                                                         guint           index);

/**
 * lagwatch_report_get_frame_is_program:
 * @report: a report
 * @index: a frame index, 0 the innermost
 *
 * The rule behind "the innermost program frame" of lagwatch's summary and
 * fingerprints, for a program's own lists. The program is its executable
 * and the libraries it ships itself: in the executable's directory, its
 * RUNPATH, or a directory named after it in a system library directory;
 * every other library (GTK, cairo, libsystemd, ...) is the platform, as are
 * libc, GLib, lagwatch, the C++ standard library (`std::`, `__gnu_cxx::`,
 * libstdc++, libc++) and an interpreter's or a binding's machinery
 * (libpython, `_Py...`, libmozjs, libgjs, libffi, libgirepository,
 * PyGObject's `_gi`, an interpreter's own executable). In a stack with
 * frames of an interpreted language (lagwatch_report_get_frame_language()
 * is not "native"), only those frames can be the program's, and not those
 * of the interpreter's standard library, PyGObject's `gi` or GJS's own
 * modules: a Python handler that spends its time in zlib's `deflate()` is
 * the handler's lag, as its fingerprint says.
 *
 * Returns: %TRUE when frame @index is the program's own code; %FALSE
 *   otherwise or for an index out of range
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_report_get_frame_is_program (LagWatchReport *report,
                                                            guint           index);

/**
 * LagWatchStats:
 *
 * A snapshot of a watch's latency profile: every busy period of the
 * watched loop (from a poll's return to the next poll call: the time the
 * loop could not answer), counted in buckets on a log-like scale from
 * under 1 ms to 10 s and over. One frame at 60 Hz (16.7 ms) and at 30 Hz
 * (33.3 ms) are bucket limits. Taken with lagwatch_get_stats(), freed with
 * lagwatch_stats_free(); plain data, any thread may read it.
 *
 * Since: 0.2
 */
typedef struct _LagWatchStats LagWatchStats;

/**
 * lagwatch_get_stats:
 * @watch: a watch
 *
 * The latency profile of every iteration of @watch's loop since attach. Any
 * thread; costs no wake-up of the loop.
 *
 * Returns: (transfer full) (nullable): the snapshot, or %NULL when the
 *   profile is off (LAGWATCH_STATS=0)
 * Since: 0.2
 */
LAGWATCH_API LagWatchStats *lagwatch_get_stats (LagWatch *watch);

/**
 * lagwatch_stats_copy:
 * @stats: a snapshot
 *
 * Returns: (transfer full): a copy of @stats
 * Since: 0.2
 */
LAGWATCH_API LagWatchStats *lagwatch_stats_copy (LagWatchStats *stats);

/**
 * lagwatch_stats_free:
 * @stats: (nullable): a snapshot
 *
 * Since: 0.2
 */
LAGWATCH_API void lagwatch_stats_free (LagWatchStats *stats);

/**
 * lagwatch_stats_get_iterations:
 * @stats: a snapshot
 *
 * Returns: the busy periods the loop finished since attach (one per loop
 *   iteration)
 * Since: 0.2
 */
LAGWATCH_API guint64 lagwatch_stats_get_iterations (LagWatchStats *stats);

/**
 * lagwatch_stats_get_n_buckets:
 * @stats: a snapshot
 *
 * Returns: the number of buckets (15)
 * Since: 0.2
 */
LAGWATCH_API guint lagwatch_stats_get_n_buckets (LagWatchStats *stats);

/**
 * lagwatch_stats_get_bucket_start_ms:
 * @stats: a snapshot
 * @bucket: 0 to n_buckets - 1
 *
 * Bucket @bucket holds the busy periods from its start (included) to the
 * next bucket's start; the last one has no end. The starts: 0, 1, 2, 4, 8,
 * 16.7, 33.3, 50, 100, 250, 500, 1000, 2500, 5000, 10000 ms.
 *
 * Returns: the bucket's start in milliseconds
 * Since: 0.2
 */
LAGWATCH_API double lagwatch_stats_get_bucket_start_ms (LagWatchStats *stats,
                                                        guint          bucket);

/**
 * lagwatch_stats_get_bucket_count:
 * @stats: a snapshot
 * @bucket: 0 to n_buckets - 1
 *
 * Returns: the busy periods in bucket @bucket
 * Since: 0.2
 */
LAGWATCH_API guint64 lagwatch_stats_get_bucket_count (LagWatchStats *stats,
                                                      guint          bucket);

/**
 * lagwatch_stats_get_over_60hz_frame:
 * @stats: a snapshot
 *
 * Returns: the busy periods of 16.7 ms or more: each one made a 60 Hz
 *   window miss at least one frame
 * Since: 0.2
 */
LAGWATCH_API guint64 lagwatch_stats_get_over_60hz_frame (LagWatchStats *stats);

/**
 * lagwatch_stats_get_over_30hz_frame:
 * @stats: a snapshot
 *
 * Returns: the busy periods of 33.3 ms or more
 * Since: 0.2
 */
LAGWATCH_API guint64 lagwatch_stats_get_over_30hz_frame (LagWatchStats *stats);

/**
 * lagwatch_stats_get_busy_ms:
 * @stats: a snapshot
 *
 * Returns: the total time the loop spent out of poll, in milliseconds
 * Since: 0.2
 */
LAGWATCH_API double lagwatch_stats_get_busy_ms (LagWatchStats *stats);

/**
 * lagwatch_stats_get_longest_ms:
 * @stats: a snapshot
 *
 * Returns: the longest busy period in milliseconds; 0 while none reached
 *   1 ms
 * Since: 0.2
 */
LAGWATCH_API double lagwatch_stats_get_longest_ms (LagWatchStats *stats);

/**
 * lagwatch_stats_get_percentile_ms:
 * @stats: a snapshot
 * @percent: 0 to 100
 *
 * An upper bound of the @percent-th percentile of the busy periods: the
 * end of the bucket that holds it (or the longest busy period, when
 * shorter).
 *
 * Returns: the bound in milliseconds, 0 when there was no iteration
 * Since: 0.2
 */
LAGWATCH_API double lagwatch_stats_get_percentile_ms (LagWatchStats *stats,
                                                      double         percent);

/**
 * lagwatch_stats_get_lags:
 * @stats: a snapshot
 *
 * Returns: the lags reported since attach
 * Since: 0.2
 */
LAGWATCH_API guint lagwatch_stats_get_lags (LagWatchStats *stats);

/**
 * lagwatch_stats_get_lags_missed:
 * @stats: a snapshot
 *
 * The lags seen only after they ended: busy periods over the threshold
 * that the watcher thread did not get to while they lasted (it got no CPU
 * in time, on a loaded machine), so no report was made of them. Not
 * counted: periods while the watch was paused or declared long
 * (lagwatch_begin_long_work()).
 *
 * Returns: their number since attach
 * Since: 0.2
 */
LAGWATCH_API guint64 lagwatch_stats_get_lags_missed (LagWatchStats *stats);

/**
 * lagwatch_stats_get_bucket_missed:
 * @stats: a snapshot
 * @bucket: a bucket, 0 to lagwatch_stats_get_n_buckets() - 1
 *
 * Returns: the lags missed (lagwatch_stats_get_lags_missed()) whose busy
 *   period fell in @bucket
 * Since: 0.2
 */
LAGWATCH_API guint64 lagwatch_stats_get_bucket_missed (LagWatchStats *stats,
                                                       guint          bucket);

/**
 * lagwatch_report_get_run_delay_ms:
 * @report: a report
 *
 * How long the stuck thread was runnable but waiting for a CPU during the
 * lag (its run-queue delay, /proc/self/task/TID/schedstat): the part of
 * the lag the machine, not the program, is to blame for.
 *
 * Returns: milliseconds, or a negative value when unknown
 * Since: 0.2
 */
LAGWATCH_API double lagwatch_report_get_run_delay_ms (LagWatchReport *report);

/**
 * lagwatch_report_get_cpu_starved:
 * @report: a report
 *
 * Returns: %TRUE when half of the lag or more was spent waiting for a CPU
 *   (run_delay_ms >= duration_ms / 2): the machine was busy
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_report_get_cpu_starved (LagWatchReport *report);

/**
 * lagwatch_report_get_input_pending:
 * @report: a report
 *
 * Returns: %TRUE when an input file descriptor the loop polls (say the
 *   display connection of a GTK program) was readable while the loop was
 *   stuck: input was waiting, a user probably was too
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_report_get_input_pending (LagWatchReport *report);

/**
 * lagwatch_report_get_n_calls:
 * @report: a report
 *
 * The lag's call tree, walked in pre-order: which functions ran, in what
 * order, for how long. From the samples taken during the lag (a call is
 * seen within about one sampling interval), or exact when the program was
 * built for lagwatch's tracer (lagwatch_report_get_calls_exact()). Calls
 * too short to time are summarised per function
 * (lagwatch_report_get_call_summary()); calls deeper than
 * LAGWATCH_CALLS_DEPTH are left out. Any thread.
 *
 * Returns: how many calls lagwatch_report_get_call() walks, 0 when the
 *   lag has no call tree
 * Since: 0.1
 */
LAGWATCH_API guint lagwatch_report_get_n_calls (LagWatchReport *report);

/**
 * lagwatch_report_get_call:
 * @report: a report
 * @index: 0 to n_calls - 1, in pre-order (a call comes before what it
 *   called, calls in the order they began)
 * @depth: (out) (optional): 0 for a call made by the dispatched callback's
 *   outermost program function, one more per nesting level
 * @start_ms: (out) (optional): when the call began, in ms from the lag's start
 * @duration_ms: (out) (optional): how long it lasted, in ms
 *
 * One call of the lag's call tree. Any thread.
 *
 * Returns: (nullable): the function's name, NULL when no symbol names it
 *   or @index is out of range
 * Since: 0.1
 */
LAGWATCH_API const char *lagwatch_report_get_call (LagWatchReport *report,
                                                   guint           index,
                                                   guint          *depth,
                                                   double         *start_ms,
                                                   double         *duration_ms);

/**
 * lagwatch_report_get_call_summary:
 * @report: a report
 * @index: 0 to n_calls - 1, as for lagwatch_report_get_call()
 * @n_calls: (out) (optional): for a summary, how many calls it stands for;
 *   1 for a timed call
 * @share: (out) (optional): the share of the lag's samples that saw the
 *   entry's call or calls, 0 to 1 (the share of the lag it took); 0 in an
 *   exact tree
 *
 * A call tree built from samples keeps a call seen by fewer than two
 * samples (shorter than about two sampling intervals, unless
 * LAGWATCH_CALLS_MIN_MS sets the bound) as part of a summary: one entry
 * per function at that place in the tree, standing for all its calls
 * there too short to time one by one. A summary's start
 * (lagwatch_report_get_call()) is its first call's, its duration the
 * estimated total time of its calls (their samples times the sampling
 * interval), not a span of time: its calls are spread among its
 * siblings. Any thread.
 *
 * Returns: %TRUE when entry @index is such a summary, %FALSE for a timed
 *   call or an @index out of range
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_report_get_call_summary (LagWatchReport *report,
                                                        guint           index,
                                                        guint          *n_calls,
                                                        double         *share);

/**
 * lagwatch_report_get_calls_exact:
 * @report: a report
 *
 * Any thread.
 *
 * Returns: %TRUE when the call tree comes from the tracer's record of
 *   every call and return (exact to the microsecond), %FALSE when it was
 *   built from samples or there is none
 * Since: 0.1
 */
LAGWATCH_API gboolean lagwatch_report_get_calls_exact (LagWatchReport *report);

/**
 * LagWatchReportKind:
 * @LAGWATCH_REPORT_KIND_LAG: a lag, reported once it ended (or, marked
 *   incomplete, when the watch was detached or the program exited in it)
 * @LAGWATCH_REPORT_KIND_HANG: a lag that reached the hang threshold
 *   (lagwatch_config_set_hang_ms()), reported while it still goes on, with
 *   every thread's stack; its end is reported later as a lag of the same id
 * @LAGWATCH_REPORT_KIND_HANG_KILLED: the hang of an earlier run of the
 *   program, which was killed before the hang ended
 *
 * What a report stands for: the "event" member of its JSON record.
 *
 * Since: 0.2
 */
typedef enum
{
  LAGWATCH_REPORT_KIND_LAG,
  LAGWATCH_REPORT_KIND_HANG,
  LAGWATCH_REPORT_KIND_HANG_KILLED,
} LagWatchReportKind;

/**
 * lagwatch_report_get_kind:
 * @report: a report
 *
 * Any thread.
 *
 * Returns: whether @report is a lag or a hang
 * Since: 0.2
 */
LAGWATCH_API LagWatchReportKind lagwatch_report_get_kind (LagWatchReport *report);

/**
 * lagwatch_report_get_source_callback:
 * @report: a report
 *
 * The function a GSource the program did not name was dispatching when the
 * lag was caught: the callback given to g_timeout_add(), g_idle_add() and
 * the like, named from the program's symbols (or by the interpreter, for a
 * Python callback). Any thread.
 *
 * Returns: (nullable): the callback's name ("freeze_busy"), or %NULL when
 *   the source had a name, none was being dispatched, or the callback
 *   could not be named
 * Since: 0.2
 */
LAGWATCH_API const char *lagwatch_report_get_source_callback (LagWatchReport *report);

/**
 * lagwatch_report_get_source_callback_kind:
 * @report: a report
 *
 * Any thread.
 *
 * Returns: (nullable): how the source of
 *   lagwatch_report_get_source_callback() was made: "g_timeout_add" or
 *   "g_idle_add" (from its source type), or %NULL for another kind
 * Since: 0.2
 */
LAGWATCH_API const char *lagwatch_report_get_source_callback_kind (LagWatchReport *report);

/**
 * lagwatch_report_get_priority:
 * @report: a report
 * @priority: (out) (optional): the priority of the GSource being
 *   dispatched when the lag was caught (%G_PRIORITY_DEFAULT is 0, lower
 *   is more urgent); 0 when there is none
 *
 * Any thread.
 *
 * Returns: %TRUE when the lag was caught in a source's dispatch whose
 *   source lagwatch knows (the "priority" of the JSON record is then a
 *   number, null otherwise)
 * Since: 0.2
 */
LAGWATCH_API gboolean lagwatch_report_get_priority (LagWatchReport *report,
                                                    int            *priority);

/**
 * lagwatch_report_get_caught_ms:
 * @report: a report
 *
 * Any thread.
 *
 * Returns: the time from the lag's start to its first stack in hand, in
 *   milliseconds, or -1 when no stack was taken
 * Since: 0.2
 */
LAGWATCH_API double lagwatch_report_get_caught_ms (LagWatchReport *report);

/**
 * lagwatch_report_get_occurrence:
 * @report: a report
 *
 * Any thread.
 *
 * Returns: how many lags of this process had @report's fingerprint
 *   (lagwatch_report_get_fingerprint()) so far, this one included: 1 the
 *   first time a cause is seen
 * Since: 0.2
 */
LAGWATCH_API guint lagwatch_report_get_occurrence (LagWatchReport *report);

/**
 * lagwatch_report_get_wchan:
 * @report: a report
 *
 * Any thread.
 *
 * Returns: (nullable): the kernel function the thread slept in when the
 *   lag was caught (/proc/self/task/TID/wchan), or %NULL when it ran or
 *   the kernel does not say
 * Since: 0.2
 */
LAGWATCH_API const char *lagwatch_report_get_wchan (LagWatchReport *report);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (LagWatchConfig, lagwatch_config_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (LagWatchReport, lagwatch_report_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (LagWatchStats, lagwatch_stats_free)

G_END_DECLS
