/* lw-watcher.c: the watcher thread: its phases, from the loop's poll to a lag's report
 *
 * The watcher is a state machine (docs/how-it-works.md, "The watcher's
 * states"). Its phase changes in one place, lw_watcher_next_phase(), at
 * each look at the loop; lw_watcher_phase_do[] says what it does in each
 * (every one of them ends in a sleep). A lag's own states change in one
 * place too, lw_watcher_lag_round(). How stacks are taken is
 * lw-sampler.c's; what a report says, lw-lag-report.c's.
 */
#include "lw-watcher.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lw-capture.h"
#include "lw-cgroup.h"
#include "lw-clock.h"
#include "lw-config.h"
#include "lw-dispatch.h"
#include "lw-frames.h"
#include "lw-hooks.h"
#include "lw-lag.h"
#include "lw-reporter.h"
#include "lw-stats-read.h"
#include "lw-threadinfo.h"
#include "lw-tracing.h"
#include "lw-watcher-late.h"
#include "lw-watcher-sleep.h"

/* While following a lag, how often at least to check that the thread exists. */
#define LW_LIVENESS_PERIOD_NS   (1000 * LW_NSEC_PER_MSEC)
/* Stack bytes copied per capture: deep GTK stacks fit, the copy stays short. */
#define LW_STACK_COPY_BYTES     (128 * 1024)
/* Samples kept per lag; beyond, every other one is dropped and the interval
 * doubles. 256 at 10 ms covers 2.5 s before the first thinning. */
#define LW_SAMPLE_BUDGET        256
/* The watcher's scheduler slice (lw_watcher_tune_wakeups): the kernel's least. */
#define LW_WATCHER_SLICE_NS     (100 * 1000)
/* The periodic "stats" event, while the loop is active: at most this often. */
#define LW_STATS_PERIOD_NS      (60 * LW_NSEC_PER_SEC)
/* How long lagwatch_attach() waits at most for the watcher thread's
 * first look (lw_watcher_start). */
#define LW_WATCHER_START_WAIT_NS (2000 * LW_NSEC_PER_MSEC)
/* The longest the watcher waits, once a lag's busy period has ended, for
 * the loop's stamp of its end (lw_watcher_lag_end()): the loop thread
 * stamps right after it stores seq, unless the scheduler stops it there. */
#define LW_LAG_END_WAIT_NS      (1000 * LW_NSEC_PER_MSEC)

/* The watcher's phases. */
typedef enum
{
  LW_PHASE_IDLE,      /* the loop polls, as at the last look: parked until it leaves poll */
  LW_PHASE_LOOKING,   /* the loop polls, newly: a look again after a threshold */
  LW_PHASE_ARMED,     /* a busy period under the threshold: asleep to its deadline, its end stamped */
  LW_PHASE_LAGGING,   /* past its deadline: the lag is followed, sampled and reported */
  LW_PHASE_SETTLED,   /* that busy period is dealt with: parked until the loop polls */
  LW_PHASE_STOPPING,  /* the watch stops */
} LwPhase;

/* What the watcher knows between two looks. Watcher thread only. */
typedef struct
{
  LwPhase  phase;
  uint64_t seq;          /* the loop's seq at the last look */
  uint64_t settled_seq;  /* a busy period already dealt with */
  uint64_t quiet_seq;    /* a poll seen at a look, to park on if it lasts */
  int64_t  since_ns;     /* ARMED, LAGGING: the busy period's start */
  int64_t  deadline_ns;  /* ARMED, LAGGING: when it becomes a lag */
  int64_t  timed_from_ns; /* a busy period is timed from here at the earliest
                           * (lw_watcher_lagging: the poll function replaced) */
  LwNap    nap;          /* the sleep that ended last */
  uint64_t unseen_seq;   /* the last busy period judged from the loop's note of it
                          * (lw_watcher_check_unseen) */
} LwWatcher;

/* What a lag's round found. */
typedef enum
{
  LW_LAG_GOES_ON,
  LW_LAG_ENDED,    /* the loop polled again, or the watch stops: reported */
  LW_LAG_DROPPED,  /* not the program's to report: the thread exited, paused, declared long,
                    * busy after the loop returned (at exit) */
} LwLagStep;

/* The starvation sentinel: attached while a lag is followed, at the highest
 * priority, it counts the loop's prepares. Two or more mean the loop is
 * iterating without ever polling. */
typedef struct
{
  GSource  source;
  LwSlot  *slot;
} LwSentinel;

static gboolean
lw_sentinel_prepare (GSource *source, gint *timeout)
{
  atomic_fetch_add (&((LwSentinel *) source)->slot->sentinel_prepares, 1);
  *timeout = -1;
  return FALSE;
}

static gboolean
lw_sentinel_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  return G_SOURCE_CONTINUE;  /* never ready, never dispatched */
}

static GSourceFuncs lw_sentinel_funcs = {
  .prepare = lw_sentinel_prepare,
  .dispatch = lw_sentinel_dispatch,
};

/* Watcher thread. Attaches the starvation sentinel to the context (safe
 * from any thread; the loop thread holds no context lock while stuck). */
static void
lw_watcher_attach_sentinel (LagWatch *watch, LwLag *lag)
{
  GSource *source = g_source_new (&lw_sentinel_funcs, sizeof (LwSentinel));

  ((LwSentinel *) source)->slot = watch->slot;
  g_source_set_priority (source, G_MININT);
  g_source_set_name (source, "lagwatch: starvation sentinel");
  atomic_store (&watch->slot->sentinel_prepares, 0);
  g_source_attach (source, watch->slot->context);
  lag->sentinel = source;
}

/* Watcher thread. TRUE when this busy period must not be reported because
 * the program said so: paused, or declared long. Cheap: checked at every
 * sample. */
static gboolean
lw_watcher_declined (LagWatch *watch, LwLag *lag)
{
  return atomic_load (&watch->paused) || atomic_load (&watch->slot->expected_seq) == lag->busy_seq;
}

/* Watcher thread. TRUE when this busy period is not the program's doing:
 * a debugger is attached. Checked when the lag is caught and when it
 * ends. (A stop of the whole process, SIGSTOP or a frozen cgroup, stops
 * the watcher too: it shows as a watcher oversleep, and is measured and
 * named, not excused: lw_watcher_stood_still.) */
static gboolean
lw_watcher_excused (LagWatch *watch, LwLag *lag)
{
  if (lw_watcher_declined (watch, lag))
    return TRUE;
  if (!watch->config->under_debugger && lw_threadinfo_tracer_pid () != 0)
    {
      if (!watch->noted_debugger)
        g_debug ("a debugger is attached: lags are not reported (LAGWATCH_UNDER_DEBUGGER=1 to report them)");
      watch->noted_debugger = TRUE;
      return TRUE;
    }
  return FALSE;
}

/* Watcher thread. The latency profile as a "stats" event to the JSON
 * sinks, once the loop has iterated (stderr gets it with the summary). */
static void
lw_watcher_write_stats (LagWatch *watch)
{
  LagWatchStats *stats;
  g_autofree char *json = NULL;

  if (!watch->slot->stats_enabled)
    return;
  stats = lw_stats_snapshot (watch->slot, atomic_load (&watch->n_lags));
  watch->stats_written_iterations = lagwatch_stats_get_iterations (stats);
  if (watch->stats_written_iterations > 0)
    json = lw_stats_to_json (stats);
  lagwatch_stats_free (stats);
  if (json != NULL && watch->frames != NULL)
    {
      /* The GTK windows' frame counts ("frames"), inside the object. */
      GString *out = g_string_new (json);

      g_free (json);
      g_string_truncate (out, out->len - 1);
      lw_frames_append_json (watch->frames, out);
      g_string_append_c (out, '}');
      json = g_string_free (out, FALSE);
    }
  if (json != NULL)
    lw_reporter_write_stats (watch->reporter, json);
}

/* Watcher thread, while the loop polls. The periodic "stats" event: at
 * most once a minute, only if the loop iterated since the last one, and
 * only on a wake-up the watcher has anyway (none while the loop idles). */
static void
lw_watcher_maybe_write_stats (LagWatch *watch)
{
  int64_t now_ns = lw_clock_now_ns ();

  if (watch->stats_written_ns == 0)
    watch->stats_written_ns = now_ns;
  if (now_ns - watch->stats_written_ns < LW_STATS_PERIOD_NS
      || atomic_load (&watch->slot->seq) >> 1 == watch->stats_written_iterations + 1)
    return;
  watch->stats_written_ns = now_ns;
  lw_watcher_write_stats (watch);
}

/* The N of lag ids ("PID-N"): one count for all the process's watches,
 * so an id is unique in the process (each watch has its own watcher
 * thread). */
static _Atomic guint64 lw_lag_serial;

/* Watcher thread. Starts @lag, the busy period @busy_seq since @since_ns,
 * unless it is excused (then FALSE). */
static gboolean
lw_watcher_lag_begin (LagWatch *watch, LwLag *lag, uint64_t busy_seq, int64_t since_ns)
{
  int64_t now_ns = lw_clock_now_ns ();

  /* Taken up, reported or excused: not a missed lag. */
  lw_stats_claim (&watch->slot->stats, busy_seq);
  *lag = (LwLag) { 0 };
  lag->state = LW_LAG_SAMPLING;
  lag->busy_seq = busy_seq;
  lag->since_ns = since_ns;
  lag->tid = atomic_load (&watch->slot->loop_tid);
  lag->threshold_ms = atomic_load (&watch->threshold_ms);
  lag->start_wall_us = g_get_real_time () - (now_ns - since_ns) / 1000;
  lw_sampler_begin (&lag->sampler, watch, lag->tid, busy_seq);
  lag->stopped_ns = watch->observed_stopped_ns;
  lag->throttled_at_ns = now_ns;
  lag->throttled_begin_ns = lw_cgroup_throttled_ns (watch->cgroup);
  if (lw_watcher_excused (watch, lag))
    return FALSE;
  lag->id = g_strdup_printf ("%d-%" G_GUINT64_FORMAT, (int) getpid (), atomic_fetch_add (&lw_lag_serial, 1) + 1);
  lw_profile_reset (watch->profile);
  return TRUE;
}

/* Watcher thread, @lag cut short by the process's exit. TRUE when it is
 * not a lag of the loop: the loop thread exits outside any iteration of
 * the context (the loop returned), and the lag was not seen in a dispatch
 * (a long last dispatch, then a quit, stays a lag). */
static gboolean
lw_watcher_after_loop (LagWatch *watch, const LwLag *lag)
{
  return atomic_load (&watch->exiting) && atomic_load (&watch->loop_returned)
         && !(lag->dispatch_known && lag->dispatch.dispatching);
}

/* Watcher thread. The busy period @busy_seq outlasted the threshold but
 * ended, at @end_ns by the loop's own stamp, before the watcher woke to
 * look (it woke late: an idle CPU, a loaded machine). Reported, without a
 * stack, rather than lost. */
static void
lw_watcher_report_unseen (LagWatch *watch, uint64_t busy_seq, int64_t since_ns, int64_t end_ns)
{
  LwLag lag;

  if (!lw_watcher_lag_begin (watch, &lag, busy_seq, since_ns))
    return;
  atomic_fetch_add (&watch->n_lags, 1);
  lw_reporter_submit (watch->reporter, lw_lag_report_unseen (watch, &lag, end_ns), LW_REPORT_LAG);
  g_free (lag.id);
}

/* Watcher thread. The hang record of @lag, with every other thread's
 * stack, handed to the reporting thread (durable write, state copy). */
static void
lw_watcher_report_hang (LagWatch *watch, LwLag *lag, int64_t now_ns)
{
  /* The all-threads snapshot reuses the capture request and snapshot. */
  lw_sampler_hold (&lag->sampler, watch);
  lw_reporter_submit (watch->reporter, lw_lag_report (watch, lag, "hang", now_ns, FALSE), LW_REPORT_HANG);
  lw_sampler_resume (&lag->sampler, watch);
}

/* Watcher thread. TRUE when @lag, after @ran_ns of the time the process
 * did not stand still, is due its hang record: from hang_ms on. A record
 * without the stack it is about says little: at the hang point the lag
 * may have none yet when the loop thread has not run the signal's
 * handler (on a busy machine it waits for a CPU, and a watcher woken late
 * may have sent the first signal only just before). So the record waits
 * for the first stack, for at most another hang_ms: the wait is bounded
 * because a kill in it loses the record, and a thread that cannot answer
 * (the signal taken over, /proc closed) is not waited for at all. */
static gboolean
lw_watcher_hang_due (LagWatch *watch, LwLag *lag, int64_t ran_ns)
{
  int64_t hang_ns = (int64_t) watch->config->hang_ms * LW_NSEC_PER_MSEC;

  if (ran_ns < hang_ns)
    return FALSE;
  return ran_ns >= 2 * hang_ns || !lw_sampler_may_catch (&lag->sampler);
}

/* Watcher thread. One round of @lag, and the one place its state changes:
 * ENDED once the loop has left the busy period (or the watch stops);
 * otherwise a sample, then HANG at hang_ms of the time the process did not
 * stand still (once its first stack is in hand, or hang_ms later:
 * lw_watcher_hang_due), DROPPED when the thread exited or the program
 * declines the lag. */
static LwLagStep
lw_watcher_lag_round (LagWatch *watch, LwLag *lag, int64_t *next_check_ns)
{
  LwSlot *slot = watch->slot;
  int64_t now_ns;
  unsigned prepares;
  LwDispatchInfo info;

  if (atomic_load (&slot->seq) != lag->busy_seq || atomic_load (&watch->stopping))
    return LW_LAG_ENDED;
  /* The source's name is copied while the loop is provably still in this
   * busy period (so the source is alive): read, then check. Before the
   * sample: a busy machine may keep the watcher from a CPU from the
   * handler's post until the lag has ended, and the lag would have a stack
   * but no source. (The first stack comes about 11 µs later for it.) */
  if (!lag->dispatch_known && lw_dispatch_read (slot, &info) && atomic_load (&slot->seq) == lag->busy_seq)
    {
      lag->dispatch = info;
      lag->dispatch_known = TRUE;
    }
  lw_sampler_round (&lag->sampler, watch);
  if (!lag->input_pending && atomic_load (&slot->seq) == lag->busy_seq)
    lag->input_pending = lw_lag_input_pending (watch);
  /* Counted only while the lag provably goes on: once it ends, the loop's
   * ordinary iterations prepare the sentinel too. */
  prepares = atomic_load (&slot->sentinel_prepares);
  if (atomic_load (&slot->seq) == lag->busy_seq)
    lag->prepares = prepares;

  if (lag->sampler.first_result == LW_CAPTURE_THREAD_GONE && lag->sampler.caught_ns < 0)
    {
      g_debug ("the thread that ran the context exited while out of poll; not a lag");
      return LW_LAG_DROPPED;
    }
  now_ns = lw_clock_now_ns ();
  lw_watcher_note_run_delay (watch, now_ns);
  if (lag->state == LW_LAG_SAMPLING
      && lw_watcher_hang_due (watch, lag, now_ns - lag->since_ns - lag->stopped_ns)
      && atomic_load (&slot->seq) == lag->busy_seq)
    {
      lw_watcher_report_hang (watch, lag, now_ns);
      lag->state = LW_LAG_HANG;
      now_ns = lw_clock_now_ns ();
    }
  if (now_ns >= *next_check_ns)
    {
      *next_check_ns = now_ns + LW_LIVENESS_PERIOD_NS;
      if (lw_threadinfo_state (lag->tid) == LW_THREAD_GONE && atomic_load (&slot->seq) == lag->busy_seq)
        {
          g_debug ("the thread that ran the context exited during a lag; dropped");
          return LW_LAG_DROPPED;
        }
    }
  return lw_watcher_declined (watch, lag) ? LW_LAG_DROPPED : LW_LAG_GOES_ON;
}

/* Watcher thread. Sleeps until @lag's next round. Woken far too late, the
 * whole process may have stood still (SIGSTOP, a frozen cgroup): the lag
 * goes on, and that time is named, not blamed. */
static void
lw_watcher_lag_sleep (LagWatch *watch, LwLag *lag)
{
  int64_t now_ns = lw_clock_now_ns ();
  int64_t next_ns = lw_sampler_next_round_ns (&lag->sampler, now_ns);
  LwNap nap = lw_watcher_nap (watch, next_ns, TRUE);

  lw_watcher_sleep (watch->slot, next_ns);
  now_ns = lw_clock_now_ns ();
  if (now_ns - next_ns > LW_OVERSLEEP_NS)
    lag->stopped_ns += lw_watcher_stood_still (watch, &nap, now_ns - next_ns, now_ns);
}

/* Watcher thread. The loop has been in the busy period @busy_seq since
 * @since_ns for at least the threshold: sample it until it ends, report. */
static void
lw_watcher_follow_lag (LagWatch *watch, uint64_t busy_seq, int64_t since_ns)
{
  LwSlot *slot = watch->slot;
  int64_t next_check_ns = lw_clock_now_ns () + LW_LIVENESS_PERIOD_NS;
  int64_t end_ns;
  gboolean complete;
  LwLagStep step;
  LwTracing *tracing;
  LwLag lag;

  if (!lw_watcher_lag_begin (watch, &lag, busy_seq, since_ns))
    return;
  lw_watcher_attach_sentinel (watch, &lag);
  /* Exact calls from here on, if the thread runs code built for it. */
  tracing = lw_tracing_start (lag.tid);
  while ((step = lw_watcher_lag_round (watch, &lag, &next_check_ns)) == LW_LAG_GOES_ON)
    lw_watcher_lag_sleep (watch, &lag);
  lw_sampler_finish (&lag.sampler, watch);

  g_source_destroy (lag.sentinel);
  g_source_unref (lag.sentinel);
  end_ns = lw_watcher_lag_end (slot, busy_seq, LW_LAG_END_WAIT_NS);
  complete = end_ns != 0;
  if (!complete)
    end_ns = lw_clock_now_ns ();
  if (tracing != NULL)
    lw_tracing_stop (tracing, since_ns, end_ns);
  if (step == LW_LAG_ENDED && !complete && lw_watcher_after_loop (watch, &lag))
    {
      g_debug ("busy %.0f ms after the loop returned, at exit: not a lag of the loop",
               (double) (end_ns - lag.since_ns) / LW_NSEC_PER_MSEC);
      step = LW_LAG_DROPPED;
    }
  if (step == LW_LAG_ENDED && !lw_watcher_excused (watch, &lag))
    {
      LagWatchReport *report = lw_lag_report (watch, &lag, "lag", end_ns, complete);

      atomic_fetch_add (&watch->n_lags, 1);
      report->tracing = g_steal_pointer (&tracing);
      lw_reporter_submit (watch->reporter, report,
                          lag.state == LW_LAG_HANG ? LW_REPORT_LAG_AFTER_HANG : LW_REPORT_LAG);
    }
  else if (lag.state == LW_LAG_HANG)
    {
      LagWatchReport *report = lw_report_new ();

      report->id = g_strdup (lag.id);
      lw_reporter_submit (watch->reporter, report, LW_REPORT_DROPPED_AFTER_HANG);
    }
  lw_tracing_free (tracing);
  lw_sampler_clear (&lag.sampler);
  g_free (lag.id);
}

/* Watcher thread. Notes the first sight of a busy period: when, and the
 * thread's CPU clock then (for cpu_ms). */
static void
lw_watcher_observe (LagWatch *watch, uint64_t seq, int64_t now_ns)
{
  if (watch->observed_seq == seq)
    return;
  watch->observed_seq = seq;
  watch->observed_at_ns = now_ns;
  watch->observed_cpu_ns = lw_threadinfo_cpu_ns (atomic_load (&watch->slot->loop_tid));
  watch->observed_stopped_ns = 0;
  watch->observed_delay_ns = lw_threadinfo_run_delay_ns (atomic_load (&watch->slot->loop_tid));
}

/* Watcher thread. The loop is in the busy period w->seq: times it, from
 * the loop's own stamp (busy_since) to its deadline, the threshold later.
 * If the watcher woke far later than it should have, the process stood
 * still (that time is not the program's: the deadline moves by it), or the
 * watcher waited for a CPU (the machine is busy: the time stands).
 * Measured once per wake-up. */
static void
lw_watcher_time_busy_period (LagWatch *watch, LwWatcher *w, int64_t now_ns)
{
  int64_t expected_ns, late_ns, stopped_ns;

  lw_watcher_observe (watch, w->seq, now_ns);
  w->since_ns = MAX (lw_clock_ticks_to_ns (atomic_load (&watch->slot->busy_since)), w->timed_from_ns);
  expected_ns = w->nap.deadline_ns >= 0 ? w->nap.deadline_ns : MAX (w->since_ns, w->nap.from_ns);
  late_ns = now_ns - expected_ns;
  if (late_ns > LW_OVERSLEEP_NS)
    {
      /* (Not in MIN (): it would measure twice.) Never more than the busy
       * period so far. */
      stopped_ns = lw_watcher_stood_still (watch, &w->nap, late_ns, now_ns);
      watch->observed_stopped_ns += MIN (stopped_ns, now_ns - w->since_ns - watch->observed_stopped_ns);
      /* Judged by the watcher, its stop left out: if it ends before its
       * moved deadline, it was no lag, and none missed either. */
      if (stopped_ns > 0)
        lw_stats_claim (&watch->slot->stats, w->seq);
    }
  w->nap = (LwNap) { now_ns, now_ns, -1 };
  lw_watcher_note_run_delay (watch, now_ns);
  w->deadline_ns = w->since_ns + (int64_t) atomic_load (&watch->threshold_ms) * LW_NSEC_PER_MSEC
                   + watch->observed_stopped_ns;
}

/* Watcher thread, at each look. A busy period of the threshold or more
 * that the loop ended and noted (lw_hooks_note_long) while the watcher
 * never saw it. When the watcher's own run-queue delay (and its cgroup's
 * throttling) explains half of its lateness or more (from the period's
 * start plus the threshold to now: lw_watcher_kept_off_cpu()), it was
 * runnable and kept off the CPU
 * (a busy machine; seen: 240 to 450 ms after the loop woke it, on two cores
 * under a load of 15): the lag is reported without a stack, as one that
 * ended while the watcher slept to its deadline is. Otherwise the watcher
 * or the whole process was stopped (SIGSTOP, a frozen cgroup, a tracer):
 * the period stays counted missed (lw-stats.h). */
static void
lw_watcher_check_unseen (LagWatch *watch, LwWatcher *w)
{
  LwSlot *slot = watch->slot;
  guint threshold_ms = atomic_load (&watch->threshold_ms);
  uint64_t seq;
  int64_t since, end, since_ns, end_ns, now_ns, from_ns;

  /* The note is written whole, its seq last (lw-slot.h): read as a seqlock. */
  seq = atomic_load_explicit (&slot->long_seq, memory_order_acquire);
  since = atomic_load_explicit (&slot->long_since, memory_order_relaxed);
  end = atomic_load_explicit (&slot->long_end, memory_order_relaxed);
  atomic_thread_fence (memory_order_acquire);
  if (seq == 0 || seq != atomic_load_explicit (&slot->long_seq, memory_order_relaxed)
      || seq <= w->unseen_seq || seq <= watch->observed_seq || seq <= atomic_load (&watch->resumed_seq))
    return;
  w->unseen_seq = seq;
  since_ns = lw_clock_ticks_to_ns (since);
  end_ns = lw_clock_ticks_to_ns (end);
  now_ns = lw_clock_now_ns ();
  from_ns = since_ns + (int64_t) threshold_ms * LW_NSEC_PER_MSEC;
  if (!lw_watcher_kept_off_cpu (watch, from_ns, now_ns - from_ns))
    {
      g_debug ("a busy period of %.0f ms ended while the watcher did not run, not kept off the CPU: "
               "counted missed, not reported", (double) (end_ns - since_ns) / LW_NSEC_PER_MSEC);
      return;
    }
  lw_watcher_report_unseen (watch, seq, since_ns, end_ns);
}

/* Watcher thread. The one place the watcher's phase changes: at each look
 * at the loop, from its seq (docs/how-it-works.md draws the transitions). */
static LwPhase
lw_watcher_next_phase (LagWatch *watch, LwWatcher *w)
{
  gboolean paused = atomic_load (&watch->paused);
  int64_t now_ns;

  w->seq = atomic_load (&watch->slot->seq);
  if (atomic_load (&watch->stopping))
    return LW_PHASE_STOPPING;
  lw_watcher_check_unseen (watch, w);
  if (w->seq == 0 || !(w->seq & 1) || paused)
    return w->seq == w->quiet_seq || w->seq == 0 || paused ? LW_PHASE_IDLE : LW_PHASE_LOOKING;
  if (w->seq == w->settled_seq)
    return LW_PHASE_SETTLED;
  now_ns = lw_clock_now_ns ();
  lw_watcher_time_busy_period (watch, w, now_ns);
  return now_ns < w->deadline_ns ? LW_PHASE_ARMED : LW_PHASE_LAGGING;
}

/* Watcher thread, IDLE. Parks until the next poll exit: no wake-up while
 * the loop idles. */
static void
lw_watcher_idle (LagWatch *watch, LwWatcher *w)
{
  lw_watcher_maybe_write_stats (watch);
  w->nap = lw_watcher_nap (watch, -1, FALSE);
  lw_watcher_park (watch, w->seq, LW_WAKE_ON_BUSY, -1);
}

/* Watcher thread, LOOKING. Parks only once the loop has sat in this same
 * poll since the last look: a loop that keeps polling briefly would
 * otherwise post a re-parked watcher at nearly every iteration. Looks
 * again after a threshold; a busy period that starts meanwhile is still
 * caught at its own start + threshold (the watcher then sleeps until
 * that). */
static void
lw_watcher_look_later (LagWatch *watch, LwWatcher *w)
{
  lw_watcher_maybe_write_stats (watch);
  w->quiet_seq = w->seq;
  w->nap = lw_watcher_nap (watch, lw_clock_now_ns () + (int64_t) atomic_load (&watch->threshold_ms) * LW_NSEC_PER_MSEC,
                           FALSE);
  lw_watcher_sleep (watch->slot, w->nap.deadline_ns);
}

/* Watcher thread, ARMED. Sleeps to the busy period's deadline, having the
 * loop stamp the poll entry that ends it: if the watcher then wakes late,
 * a lag that ended meanwhile is still known, and reported. */
static void
lw_watcher_armed (LagWatch *watch, LwWatcher *w)
{
  LwSlot *slot = watch->slot;

  w->nap = lw_watcher_nap (watch, w->deadline_ns, TRUE);
  atomic_store (&slot->entry_seq, 0);
  lw_watcher_park (watch, w->seq, LW_STAMP_ENTRY, w->deadline_ns);
  if (atomic_load_explicit (&slot->entry_seq, memory_order_acquire) == w->seq + 1)
    {
      int64_t end_ns = lw_clock_ticks_to_ns (atomic_load_explicit (&slot->entry_ticks, memory_order_relaxed));

      int64_t late_ns = lw_clock_now_ns () - w->deadline_ns;

      /* (A watcher far later still was stopped with the whole process,
       * nothing it measured meanwhile is trusted; unless it was runnable,
       * kept off the CPU all along.) */
      if (end_ns >= w->deadline_ns
          && (late_ns <= LW_OVERSLEEP_NS || lw_watcher_kept_off_cpu (watch, w->deadline_ns, late_ns)))
        lw_watcher_report_unseen (watch, w->seq, w->since_ns, end_ns);
    }
}

/* Watcher thread, LAGGING. Asks to be woken at the next poll entry, then
 * confirms the loop is still in the same busy period: from there on its
 * end cannot be missed. Follows the lag to its report. */
static void
lw_watcher_lagging (LagWatch *watch, LwWatcher *w)
{
  LwSlot *slot = watch->slot;

  /* A poll function the program set after attach, in place of the
   * wrapper: the loop's polls no longer reach lagwatch, and this busy
   * period may be the loop sleeping in the program's poll. The trackers
   * take over (their attach wakes the loop: a loop in poll enters their
   * prepare at once); the period is timed again from now, and is a lag
   * only if the loop stays busy a whole threshold more. */
  if (lw_hooks_follow_replaced_poll (slot))
    {
      w->timed_from_ns = lw_clock_now_ns ();
      w->nap = lw_watcher_nap (watch, w->timed_from_ns, FALSE);
      return;
    }
  atomic_store (&slot->lag_end_ns, 0);
  atomic_fetch_or (&slot->wake_flags, LW_WAKE_ON_IDLE);
  if (atomic_load (&slot->seq) == w->seq)
    lw_watcher_follow_lag (watch, w->seq, w->since_ns);
  atomic_fetch_and (&slot->wake_flags, ~(unsigned) LW_WAKE_ON_IDLE);
  w->settled_seq = w->seq;
  w->nap = lw_watcher_nap (watch, lw_clock_now_ns (), FALSE);  /* it ran until now: not late */
}

/* Watcher thread, SETTLED. Parks until the loop polls again. */
static void
lw_watcher_settled (LagWatch *watch, LwWatcher *w)
{
  w->nap = lw_watcher_nap (watch, -1, FALSE);
  lw_watcher_park (watch, w->seq, LW_WAKE_ON_IDLE, -1);
}

/* What the watcher does in each phase: each ends in a sleep. */
static void (*const lw_watcher_phase_do[]) (LagWatch *watch, LwWatcher *w) = {
  [LW_PHASE_IDLE] = lw_watcher_idle,
  [LW_PHASE_LOOKING] = lw_watcher_look_later,
  [LW_PHASE_ARMED] = lw_watcher_armed,
  [LW_PHASE_LAGGING] = lw_watcher_lagging,
  [LW_PHASE_SETTLED] = lw_watcher_settled,
};

/* Watcher thread. Makes its wake-ups prompt. No timer slack: it sleeps to
 * a deadline at most once per busy period (and never while the loop
 * sleeps), so precision costs nothing. A short scheduler slice: on EEVDF
 * kernels (Linux 6.12 and later) a thread woken onto the CPU of a busy one
 * then preempts it at once, rather than after the busy thread's protected
 * slice. Measured with both threads on one CPU (taskset -c 0, 100 lags):
 * detection latency p90 3.5-3.9 ms without, 0.3-0.4 ms with. Only under
 * SCHED_OTHER (a real-time policy inherited from the program is better
 * still, and kept); best effort: older kernels refuse a slice for
 * SCHED_OTHER, and then nothing changes. */
static void
lw_watcher_tune_wakeups (void)
{
  /* The kernel's struct sched_attr (its header clashes with <sched.h>). */
  struct
  {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t  sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
  } attr;

  prctl (PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (sched_getscheduler (0) != SCHED_OTHER)
    return;
  memset (&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_OTHER;
  errno = 0;
  attr.sched_nice = getpriority (PRIO_PROCESS, 0);  /* this thread's: kept */
  if (errno != 0)
    return;
  attr.sched_runtime = LW_WATCHER_SLICE_NS;
  if (syscall (SYS_sched_setattr, 0, &attr, 0U) != 0)
    g_debug ("the kernel keeps the watcher's default scheduler slice: %s", g_strerror (errno));
}

/* The watcher thread. */
static gpointer
lw_watcher_main (gpointer data)
{
  LagWatch *watch = data;
  LwWatcher w = { .phase = LW_PHASE_IDLE };

  lw_threadinfo_own_enter ();
  lw_watcher_tune_wakeups ();
  /* Watching from here on: a busy period, begun before or after, is timed
   * from the loop's own stamp (busy_since). Not late: it runs now (its
   * first CPU may come late, after the process was stopped). Posted
   * before the unwinder is made, which may dlopen() libunwind: an attach
   * made under the loader's lock (from a library constructor) must not
   * wait for it. */
  w.nap = lw_watcher_nap (watch, lw_clock_now_ns (), FALSE);
  /* The first baseline of its own run-queue delay, before it says it
   * watches: a watcher kept off the CPU while it sets itself up (a busy
   * machine) must have one from before any lag it then misses, or it
   * could not tell that wait from a stop (lw_watcher_kept_off_cpu()). */
  watch->cgroup = lw_cgroup_new ();
  lw_watcher_note_run_delay (watch, lw_clock_now_ns ());
  sem_post (&watch->watching);
  watch->unwinder = lw_unwinder_new ();
  watch->profile = lw_profile_new (LW_SAMPLE_BUDGET);
  watch->python = lw_python_new ();
  while ((w.phase = lw_watcher_next_phase (watch, &w)) != LW_PHASE_STOPPING)
    lw_watcher_phase_do[w.phase] (watch, &w);

  lw_watcher_write_stats (watch);
  lw_profile_free (g_steal_pointer (&watch->profile));
  lw_unwinder_free (g_steal_pointer (&watch->unwinder));
  lw_python_free (g_steal_pointer (&watch->python));
  lw_cgroup_free (g_steal_pointer (&watch->cgroup));
  lw_capture_forget_thread (watch->slot);
  return NULL;
}

/* The attaching thread. Waits until the new watcher thread watches: a
 * thread is not running the moment it is created, and on a loaded machine
 * its first CPU can come hundreds of milliseconds later (measured up to
 * 440 ms in the stress test). A lag that began after attach and ended
 * before that first look was never seen, and never said. Bounded: past the
 * wait, attach returns anyway, and says so. */
static void
lw_watcher_wait_watching (LagWatch *watch)
{
  struct timespec deadline = lw_clock_timespec (lw_clock_now_ns () + LW_WATCHER_START_WAIT_NS);

  while (sem_clockwait (&watch->watching, CLOCK_MONOTONIC, &deadline) != 0)
    if (errno != EINTR)
      {
        g_debug ("the watcher thread has not run %d ms after attach: a lag that ends before it "
                 "does goes unseen", (int) (LW_WATCHER_START_WAIT_NS / LW_NSEC_PER_MSEC));
        return;
      }
}

gboolean
lw_watcher_start (LagWatch *watch, GError **error)
{
  sigset_t all, saved;

  watch->snapshot = lw_snapshot_new (LW_STACK_COPY_BYTES);
  watch->ips = g_new0 (uintptr_t, watch->config->max_frames);
  lw_python_init ();
  watch->started_ns = lw_clock_now_ns ();
  sem_init (&watch->watching, 0, 0);
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &saved);
  watch->thread = lw_threadinfo_own_thread_new ("lagwatch", lw_watcher_main, watch, error);
  pthread_sigmask (SIG_SETMASK, &saved, NULL);
  if (watch->thread == NULL)
    {
      sem_destroy (&watch->watching);
      return FALSE;
    }
  lw_watcher_wait_watching (watch);
  return TRUE;
}

void
lw_watcher_stop (LagWatch *watch)
{
  /* Stopped already: at exit, before a detach from a later exit handler. */
  if (watch->thread == NULL)
    return;
  atomic_store (&watch->stopping, TRUE);
  sem_post (&watch->slot->wake);
  g_thread_join (g_steal_pointer (&watch->thread));
  sem_destroy (&watch->watching);
}
