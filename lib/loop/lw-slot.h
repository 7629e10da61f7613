/* lw-slot.h: the state one watch shares between the loop thread, the
 * watcher thread and the signal handler
 *
 * Slots live in a static array (lw-hooks.c) and are never freed, so the poll
 * wrapper and the signal handler can always touch a slot without a lock and
 * without fear of use-after-free, even while a watch is being detached.
 * The part the signal handler reads (the capture request) is a GLib-free
 * struct of its own (lw-capture-core.h), embedded here; the handler finds
 * it through lw_core_register_request(), never through this struct.
 *
 * Who writes what:
 *   seq, busy_since, loop_*           the loop thread (poll wrapper)
 *   wake_flags, capture request       the watcher thread
 *   capture.snapshot, capture.result  the signal handler, once it owns the
 *                                     request ({serial, ARMED} -> {serial, WRITING})
 *   lag_end_ns                        the loop thread, once per lag (CAS)
 *   entry_seq, entry_ticks            the loop thread, once per LW_STAMP_ENTRY;
 *                                     the watcher resets entry_seq before asking
 *   long_seq, long_since, long_end    the loop thread, at a poll entry ending a busy
 *                                     period of the threshold or more (seqlock:
 *                                     long_seq 0 while written)
 *   long_work_seq                     lagwatch_begin_long_work()
 */
#pragma once

#include <glib.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "lw-capture-core.h"
#include "lw-fd.h"
#include "lw-snapshot.h"
#include "lw-stats.h"

/* wake_flags: what the watcher wants to be woken for (sem_post on slot->wake). */
enum
{
  LW_WAKE_ON_BUSY = 1 << 0,  /* parked while the loop polls: wake at poll exit */
  LW_WAKE_ON_IDLE = 1 << 1,  /* following a lag: wake (and stamp lag_end_ns) at poll entry */
  LW_STAMP_ENTRY  = 1 << 2,  /* sleeping to a busy period's deadline: stamp the next poll entry
                              * (entry_seq, entry_ticks), then clear this flag; no wake */
};
/* The poll entry's check: one test for every rare case. */
#define LW_ENTRY_FLAGS (LW_WAKE_ON_IDLE | LW_STAMP_ENTRY)

typedef struct _LwSlot LwSlot;

struct _LwSlot
{
  /* Hot: written by the loop thread at every poll transition. Each group
   * has its own cache line so the watcher's writes never bounce the loop's. */
  _Alignas (64) _Atomic uint64_t seq; /* 0: never iterated; odd: busy; even: in poll */
  _Atomic int64_t  busy_since;     /* lw_clock_ticks() at the last poll exit */
  /* The latency profile's hot part (lw-stats.h): the busy time of every
   * iteration, in ticks (the fast path adds the low 32 bits of each busy
   * period under the cutoff; the slow path the full length of the others),
   * and the cutoff, constant while the slot is in use. */
  uint64_t         busy_ticks;
  uint32_t         stats_cutoff;

  /* Read at every transition, written by the watcher only when it changes
   * what it waits for. */
  _Alignas (64) _Atomic unsigned wake_flags;
  _Atomic int64_t  lag_end_ns;     /* first poll entry while LW_WAKE_ON_IDLE; 0 until then */
  _Atomic uint64_t entry_seq;      /* seq after the poll entry stamped for LW_STAMP_ENTRY, 0 none */
  _Atomic int64_t  entry_ticks;    /* lw_clock_ticks() at that entry */
  /* The last busy period of a threshold or more, as the loop measured it at
   * its end (only with the latency profile, which measures every period
   * over its cutoff): the watcher may have been kept off the CPU for all
   * of it, and then knows of it only from here. */
  _Atomic uint64_t long_seq;       /* its seq (odd), 0 none or being written */
  _Atomic int64_t  long_since;     /* busy_since then */
  _Atomic int64_t  long_end;       /* lw_clock_ticks() at the entry that ended it */
  _Atomic uint64_t long_work_seq;  /* the last busy period declared long (never cleared) */
  sem_t            wake;           /* the watcher's semaphore */

  /* Written by the loop thread when the thread running the context changes. */
  _Alignas (64) void *loop_thread; /* its thread pointer (%fs base: one instruction to read) */
  void            *wrapper_thread; /* the same, as the poll wrapper checks it; NULL once the
                                    * wrapper only passes calls through (wrapper_off) */
  _Atomic pid_t    loop_tid;       /* kernel TID; 0 before the first iteration */
  uintptr_t        loop_stack_lo;  /* [lo, hi) of that thread's stack, 0 if unknown */
  uintptr_t        loop_stack_hi;

  /* Set by lw-hooks at attach; constant while the slot is in use. */
  GPollFunc         prev_poll;
  gboolean          in_use;
  gboolean          leaked;        /* someone chained onto our poll func: never reuse */
  GMainContext     *context;       /* a reference, held until detach */
  unsigned          index;
  GPollFunc         trampoline;    /* the poll function lw-hooks installed for this slot */
  gboolean          wrapped;       /* the trampoline was installed at attach */
  _Atomic gboolean  wrapper_off;   /* the program replaced it: it passes calls through,
                                    * the trackers follow the loop */
  /* Or, where GLib polls g_poll's contexts with ppoll(), the sources that
   * stamp the poll's entry and exit instead (lw-hooks.c); NULL otherwise. */
  GSource          *tracker_entry;
  GSource          *tracker_exit;

  /* GLib's per-thread dispatch record ({ depth, current source }) of the
   * loop thread, found by lw-dispatch's probe; 0 until then. */
  _Atomic uintptr_t dispatch_record;
  _Atomic pid_t     dispatch_tid;  /* the thread the record belongs to */

  /* The busy period the program declared long (lagwatch_begin_long_work). */
  _Atomic uint64_t  expected_seq;

  /* Watcher thread only: /proc/self/task/TID/syscall of the loop thread,
   * kept open (pread at 0 regenerates it), -1 when not open. */
  int               proc_syscall_fd;
  LwFdId            proc_syscall_id;  /* what it was when opened (lw-fd.h) */
  pid_t             proc_syscall_tid;
  /* Its status file the same way, read before every signal sent to it. */
  int               proc_status_fd;
  LwFdId            proc_status_id;
  /* The last look at it through /proc found it running: its status file
   * is read first (lw_capture_start()). */
  gboolean          proc_seen_running;

  /* Prepares seen by the starvation sentinel while a lag is followed. */
  _Atomic unsigned  sentinel_prepares;

  LwCaptureRequest  capture;

  /* The latency profile's slow part and the poll records (lw-stats.h). */
  LwStatsCounters   stats;
  gboolean          stats_enabled; /* set at attach: FALSE with LAGWATCH_STATS=0 */
  /* GLib's own GSourceCallbackFuncs (static in gmain.c): the callback_funcs
   * of a source given its callback by g_source_set_callback(), as the probe
   * saw on itself; 0 until then. */
  _Atomic uintptr_t callback_funcs;
};
