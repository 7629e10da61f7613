/* lw-report.h: one finished lag, and its two renderings (text and JSON)
 *
 * Built on the watcher thread once the lag has ended, immutable afterwards,
 * handed to the sinks and the program's callback.
 */
#pragma once

#include "lagwatch.h"
#include "lw-calls.h"
#include "lw-symbols.h"

G_BEGIN_DECLS

/* One distinct stack of a lag's profile, or one thread of a hang snapshot. */
typedef struct
{
  guint     samples;         /* samples in this stack (profile), 0 for a thread */
  int       thread_id;       /* thread snapshot only */
  char     *thread_name;
  char     *thread_state;
  gboolean  truncated;
  LwFrame  *frames;
  guint     n_frames;
} LwReportStack;

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
  double    caught_ms;       /* lag start to stack in hand; < 0 when no stack was taken */
  char     *stack_method;    /* "signal", "proc" (taken while the thread slept), or NULL */
  char     *stack_error;     /* why the stack is missing or short, or NULL */
  gboolean  stack_truncated; /* stopped at the frame limit or the end of the copy */
  LwFrame  *frames;          /* the heaviest stack */
  guint     n_frames;

  const char *event;         /* "lag" or "hang" (static strings) */
  guint     n_samples;       /* stacks taken during the lag */
  LwReportStack *stacks;     /* distinct stacks, heaviest first, capped */
  guint     n_stacks;
  char     *source;          /* name of the GSource being dispatched when caught, or NULL */
  gboolean  source_known;    /* FALSE: which source could not be known */
  int       priority;        /* its priority (valid when in dispatch) */
  const char *phase;         /* "dispatch", "prepare", "check", "starved", "loop", or NULL */
  double    cpu_ms;          /* CPU time the thread used during the lag, < 0 unknown */
  const char *thread_state;  /* when caught: "running", "sleeping", "disk" */
  const char *syscall;       /* the system call it slept in, or NULL */
  char     *wchan;           /* the kernel wait point, or NULL */
  char     *fingerprint;     /* hash of the innermost 4 program frames */
  char     *fingerprint2;    /* hash of the innermost 2 */
  guint     occurrence;      /* how many lags with this fingerprint so far, this one included */
  LwReportStack *threads;    /* hang: every other thread of the process */
  guint     n_threads;
  char     *previous_exe;    /* "hang-killed" records: the program of the killed run */

  /* Set by the watcher for the reporting thread, which derives phase. */
  gboolean  dispatching;     /* GLib's dispatch record showed a source in dispatch */
  guint     prepares;        /* starvation sentinel prepares during the lag */

  /* The lag's calls as liblagwatch-trace recorded them (lw-tracing.h), for
   * the reporting thread, which turns them into calls; NULL without it. */
  struct _LwTracing *tracing;
  /* Stand-in until the sampled call tree's branch lands (it owns these). */
  LwCall   *calls;
  gboolean  calls_exact;
};

/* Watcher thread. Frees the frames of @stack. */
void lw_report_stack_clear (LwReportStack *stack);

/* Any thread. TRUE for a frame of libc, GLib, lagwatch or the vDSO: the
 * platform every lag passes through, not the program. */
gboolean lw_report_frame_is_platform (const LwFrame *frame);

/* Watcher thread. Computes fingerprint and fingerprint2 from the frames. */
void lw_report_compute_fingerprints (LagWatchReport *report);

/* Reporting thread. The report as text; @skipped_since_shown: lags like it
 * the back-off kept off stderr since the last one shown (0: none). */
char *lw_report_to_text_full (LagWatchReport *report,
                              guint           skipped_since_shown);

/* Any thread. @frames as the text report shows them, one line each. */
char *lw_report_stack_to_text (const LwFrame *frames,
                               guint          n_frames);

/* Reporting thread. Gives @report its call tree @root (transfer full),
 * built from samples or (@exact) from every call the tracer recorded.
 * Stand-in (lw-tracing.c) for the sampled call tree's branch, which owns it. */
void lw_report_set_calls (LagWatchReport *report,
                          LwCall         *root,
                          gboolean        exact);

/* Watcher thread. A zeroed report holding one reference. */
LagWatchReport *lw_report_new (void);

G_END_DECLS
