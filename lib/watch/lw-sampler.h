/* lw-sampler.h: how a lag's stacks are taken
 *
 * Three ways, chosen per lag and per round:
 * - an explicit signal (lw_capture_start): the first sample of every lag,
 *   and all of them where no CPU-time timer can be used. Until the first
 *   stack is in hand a round waits for the handler (that is the detection
 *   latency); after that it does not: the handler's copy is collected at
 *   the next round, so the watcher never spins or sleeps for it;
 * - a timer on the loop thread's CPU clock (lw_capture_periodic_*, which
 *   says why), once the first stack is in hand: the handler posts the
 *   watcher for each stack, so a running thread is sampled per interval of
 *   its CPU time;
 * - /proc, for a thread asleep in the kernel (no CPU time, so no timer
 *   signal): looked at when no timer stack came for an interval and a
 *   half, so the blocked part of a lag is sampled by wall time.
 * Every stack goes into the watch's profile; the first one also records
 * how the thread was caught. When the profile is full it thins, and the
 * interval doubles.
 *
 * Every function: the watcher thread.
 */
#pragma once

#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-threadinfo.h"
#include "lw-watch-private.h"

G_BEGIN_DECLS

/* How long a capture may wait for the signal handler. A thread that does not
 * run it by then blocks the signal or sleeps uninterruptibly. */
#define LW_CAPTURE_TIMEOUT_NS   (50 * LW_NSEC_PER_MSEC)

/* How @LwSampler takes its stacks now. */
typedef enum
{
  LW_SAMPLER_BY_SIGNAL,   /* explicit signals, none out */
  LW_SAMPLER_SIGNAL_OUT,  /* explicit signals, one out, its stack not collected yet */
  LW_SAMPLER_BY_TIMER,    /* the CPU-time timer; /proc while the thread sleeps */
} LwSamplerWay;

typedef struct
{
  pid_t            tid;
  uint64_t         busy_seq;
  LwSamplerWay     way;
  gboolean         timer_allowed;   /* may switch to the timer (refused once: not again) */
  int64_t          interval_ns;     /* between samples: doubles as the profile thins */
  int64_t          look_at_ns;      /* by timer: look through /proc if no stack came by then */

  /* How the thread was caught: its first stack. */
  int64_t          caught_ns;       /* first stack in hand, -1 none */
  LwCaptureResult  first_result;    /* the first capture's outcome (why there is no stack) */
  gboolean         via_signal;
  LwThreadState    state;           /* when caught */
  long             syscall_nr;
  char            *wchan;
} LwSampler;

/* Starts sampling thread @tid in the busy period @busy_seq (the profile
 * is reset by the caller). */
void        lw_sampler_begin         (LwSampler *sampler,
                                      LagWatch  *watch,
                                      pid_t      tid,
                                      uint64_t   busy_seq);

/* One sampling round. */
void        lw_sampler_round         (LwSampler *sampler,
                                      LagWatch  *watch);

/* TRUE while @sampler has no stack yet but may still get one: no capture
 * has answered, or the latest said "not yet" (a signal out or answered
 * late, the thread waiting for a CPU on a busy machine; the signal
 * blocked for a moment). FALSE once a stack is in hand, or when the
 * latest outcome cannot change while the lag goes on (the signal taken
 * over, /proc closed, no signal could be sent, the thread gone). */
gboolean    lw_sampler_may_catch     (const LwSampler *sampler);

/* When the next round is due, after @now_ns: by timer, the handler posts
 * the watcher for each stack, so only the /proc look has a time. */
int64_t     lw_sampler_next_round_ns (LwSampler *sampler,
                                      int64_t    now_ns);

/* Puts the capture request back in the watcher's hands (for the hang's
 * snapshot of every thread): stops the timer, waits a little for a
 * signal still out, then gives it up. lw_sampler_resume() goes on. */
void        lw_sampler_hold          (LwSampler *sampler,
                                      LagWatch  *watch);
void        lw_sampler_resume        (LwSampler *sampler,
                                      LagWatch  *watch);

/* The lag ended: files the stack the last signal took, if its handler
 * ran in time (it checked the loop was still in this busy period). */
void        lw_sampler_finish        (LwSampler *sampler,
                                      LagWatch  *watch);

/* Why a capture gave no stack, for the report; NULL for a stack. */
const char *lw_sampler_capture_error (LwCaptureResult result);

/* Frees what the sampler holds. */
void        lw_sampler_clear         (LwSampler *sampler);

G_END_DECLS
