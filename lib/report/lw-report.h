/* lw-report.h: one finished lag (LagWatchReport): its fields and its life
 *
 * Built on the watcher thread once the lag has ended, completed by the
 * reporting thread, immutable afterwards, handed to the sinks and the
 * program's callback. Which frames are the program's is decided in
 * lw-report-program.h, its cause and fingerprints in lw-report-cause.h;
 * the report is written as JSON by lw-report-json.c
 * (lagwatch_report_to_json()) and as text by lw-report-text.h (both
 * headers included here).
 */
#pragma once

#include "lagwatch.h"
#include "lw-calls.h"
#include "lw-lang-frames.h"
#include "lw-symbols.h"

G_BEGIN_DECLS

/* One GTK window during a lag (lw-frames.c): the frames it could not draw. */
typedef struct
{
  char     *title;                /* the window's title, or NULL */
  double    refresh_interval_ms;  /* as its frame clock reports it */
  guint     frames_missed;
} LwReportWindow;

/* One distinct stack of a lag's profile, or one thread of a hang snapshot. */
typedef struct
{
  guint     samples;         /* samples in this stack (profile), 0 for a thread */
  int       thread_id;       /* thread snapshot only */
  char     *thread_name;
  char     *thread_state;
  gboolean  truncated;
  gboolean  at_limit;        /* truncated at the frame limit, not where the unwind stopped */
  LwLangMissing lang_missing;  /* profile: why its samples ran Python but hold no Python
                                * frame (lw-lang-frames.h), or LW_LANG_MISSING_NONE */
  LwFrame  *frames;
  guint     n_frames;
  char     *stack_error;     /* thread snapshot: why it has no stack, or NULL */
} LwReportStack;

/* One sample of a lag's timeline. */
typedef struct
{
  int64_t   offset_ns;       /* when it was taken, from the lag's start */
  guint     stack;           /* index into the report's sampled stacks */
  gboolean  asleep;          /* taken while the thread slept (through /proc), not while it ran */
} LwReportSample;

struct _LagWatchReport
{
  gint      ref_count;       /* atomic */
  char     *id;
  guint     threshold_ms;
  double    duration_ms;
  gint64    start_time_us;   /* wall clock, µs since the epoch */
  int       pid;
  int       thread_id;
  char     *thread_name;     /* /proc comm, or NULL */
  gboolean  complete;        /* FALSE: still going when the watch was detached */
  const char *stopped_by;    /* a lag record not complete: the watch's end that cut it,
                              * "detach" or "exit" (static); NULL otherwise, a hang's too */
  double    caught_ms;       /* lag start to stack in hand; < 0 when no stack was taken */
  char     *stack_method;    /* "signal", "proc" (taken while the thread slept), or NULL */
  char     *stack_error;     /* why the stack is missing or short, or NULL */
  gboolean  stack_truncated; /* stopped at the frame limit or the end of the copy */
  LwFrame  *frames;          /* the stack that names the cause (lw_report_choose_cause_stack()) */
  guint     n_frames;

  const char *event;         /* "lag" or "hang" (static strings) */
  guint     n_samples;       /* stacks taken during the lag */
  LwReportStack *stacks;     /* distinct stacks, heaviest first but frames' first, capped */
  guint     n_stacks;
  char     *source;          /* name of the GSource being dispatched when caught, or NULL */
  gboolean  source_known;    /* FALSE: which source could not be known */
  int       priority;        /* its priority (valid when in dispatch) */
  const char *phase;         /* "dispatch", "prepare", "check", "starved", "loop", or NULL */
  double    cpu_ms;          /* CPU time the thread used during the lag, < 0 unknown */
  const char *thread_state;  /* when caught: "running", "sleeping", "disk" */
  const char *syscall;       /* the system call it slept in, or NULL */
  char     *wchan;           /* the kernel wait point, or NULL */
  char     *fingerprint;     /* hash of the innermost program function and the callback */
  char     *fingerprint2;    /* hash of the innermost program function */
  guint     occurrence;      /* how many lags with this fingerprint so far, this one included */
  LwReportStack *threads;    /* hang: every other thread of the process */
  guint     n_threads;
  /* Set only while the hang record is written (lw-reporter.c): the stacks
   * of the last threads_left_out threads are left out of the output, to
   * keep the record within LW_HANG_MAX_RECORD. */
  guint     threads_left_out;
  /* lagwatch_report_to_json() of the whole report (no stack left out),
   * kept by the reporting thread once it made it for a hang's copy, before
   * the sinks get the report: a hang's record holds every thread and is
   * not serialized twice. NULL until then. */
  char     *json;
  char     *previous_exe;    /* "hang-killed" records: the program of the killed run */

  /* Set by the watcher for the reporting thread, which derives phase. */
  gboolean  dispatching;     /* GLib's dispatch record showed a source in dispatch */
  guint     prepares;        /* starvation sentinel prepares during the lag */

  /* GTK windows of the loop (lw-frames.c), set by the watcher. */
  gboolean  frames_followed; /* GTK 4 is loaded and its windows followed */
  LwReportWindow *windows;   /* mapped windows, with the frames each missed */
  guint     n_windows;
  gboolean  stack_at_limit;  /* stack_truncated at the frame limit, not where the unwind
                              * could go no further */
  /* Whose fault: set by the watcher. */
  double    run_delay_ms;    /* runnable but waiting for a CPU during the lag, < 0 unknown */
  gboolean  cpu_starved;     /* run_delay_ms >= duration_ms / 2 */
  double    stopped_ms;      /* the process stood still (SIGSTOP, a frozen cgroup) during the lag */
  double    throttled_ms;    /* its cgroup's CPU quota held it back during the lag, < 0 unknown */
  gboolean  input_pending;   /* an input fd of the context was readable during the lag */
  /* An unnamed source named by its callback (lw-dispatch.h): the watcher
   * sets the function's address (and the name an interpreter hook gave),
   * the reporting thread names the function. */
  uintptr_t   source_callback_ip;
  char       *source_callback;      /* "freeze_busy", or NULL */
  const char *source_callback_kind; /* "g_timeout_add", "g_idle_add", or NULL */
  /* The samples in time order (lw-profile.h), named by the reporting thread. */
  int64_t   start_ns;        /* the lag's start, CLOCK_MONOTONIC; 0 for a record of a past run */
  LwReportStack *sampled;    /* every distinct stack of the lag, exact addresses */
  guint     n_sampled;
  LwReportSample *timeline;  /* every sample kept, oldest first */
  guint     n_timeline;
  int64_t   sample_interval_ns; /* the interval asked for (LAGWATCH_SAMPLE_MS) */
  int64_t   calls_min_ns;    /* LAGWATCH_CALLS_MIN_MS, for the reporting thread; 0: default */
  guint     calls_depth;     /* LAGWATCH_CALLS_DEPTH; 0: all */

  /* The call tree (lw-calls.h), set by the reporting thread: its root
   * stands for the lag, its children are the outermost calls. */
  LwCall   *calls;
  gboolean  calls_exact;     /* from the tracer's calls and returns, not from samples */
  LwCall  **call_list;       /* the calls under the root, pre-order */
  guint    *call_depth;      /* their depths, 0 for the outermost */
  guint     n_calls;
  /* The lag's calls as liblagwatch-trace recorded them (lw-tracing.h), for
   * the reporting thread, which turns them into calls; NULL without it. */
  struct _LwTracing *tracing;
};

/* Any thread. TRUE when thread @i's stack is left out of @report's
 * output (the hang record's size limit). */
gboolean    lw_report_thread_left_out    (const LagWatchReport *report,
                                          guint                 i);

/* Any thread. Why thread @i of @report's hang snapshot shows no stack, or
 * NULL when it shows one. */
const char *lw_report_thread_stack_error (const LagWatchReport *report,
                                          guint                 i);

/* Watcher thread. Frees the frames of @stack. */
void lw_report_stack_clear (LwReportStack *stack);

/* Reporting thread, before the report is handed to sinks or the callback.
 * Gives @report the call tree @root (taken over; NULL: none): a root
 * standing for the lag (no name, start 0, the lag's duration) whose
 * children are the outermost calls below the dispatch frame. @exact: from
 * a tracer's calls and returns. An exact tree is preferred: a sampled tree
 * given after an exact one is dropped, an exact one replaces a sampled one. */
void lw_report_set_calls (LagWatchReport *report,
                          LwCall         *root,
                          gboolean        exact);

/* Any thread. The sampling interval of @report's timeline: the median gap
 * between consecutive samples, or @fallback_ns with fewer than two. */
int64_t lw_report_sample_interval (const LagWatchReport *report,
                                   int64_t               fallback_ns);

/* Watcher thread. A zeroed report holding one reference. */
LagWatchReport *lw_report_new (void);

/* Any thread. The samples of @report's lag that ran Python but hold none
 * of its frames, for reason @why (lw-lang-frames.h): counted over every
 * sample (the lag's timeline), or over its kept stacks when it has no
 * timeline. */
guint lw_report_python_missing (const LagWatchReport *report,
                                LwLangMissing         why);

G_END_DECLS
