/* lw-hooks.c: the poll wrapper, the poll trackers and the registry of watched contexts
 *
 * GPollFunc has no user_data, so each slot gets its own trampoline: a copy of
 * the wrapper bound to one static slot. The registry lock (recursive: GLib
 * may call our finalize notify from inside g_source_destroy() in detach)
 * guards slot ownership and slot->context.
 */
#include "lw-hooks.h"

#include <errno.h>
#include <unistd.h>

#include "lw-altstack.h"
#include "lw-clock.h"
#include "lw-dispatch.h"
#include "lw-last-thread.h"
#include "lw-private.h"
#include "lw-stats.h"
#include "lw-threadinfo.h"
#include "lw-say.h"

static LwSlot     lw_slots[LW_MAX_SLOTS];
static GMutex     lw_registry_lock;
static unsigned   lw_next_slot;  /* round robin: a freed slot rests as long as possible */

/* The exiting thread, from its pthread key destructor: @data is the mask
 * of the slots it was adopted by. glibc gives a dead thread's stack and
 * thread block (so its thread pointer) to a later thread, but only after
 * the key destructors ran: a slot still naming this thread forgets it
 * here, and the next thread to poll is adopted. The poll wrapper keeps its
 * one-load thread check. */
static void
lw_hooks_forget_thread (gpointer data)
{
  unsigned adopted = GPOINTER_TO_UINT (data);
  void *self = __builtin_thread_pointer ();

  for (unsigned i = 0; i < LW_MAX_SLOTS; i++)
    if (adopted & (1u << i))
      {
        void *expected = self;

        /* Only if no other thread took the context over since. */
        __atomic_compare_exchange_n (&lw_slots[i].loop_thread, &expected, NULL, FALSE,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      }
}

/* Per thread: the slots it was adopted by, as a bit mask (non-zero once
 * set, so the destructor runs). */
static GPrivate lw_adopted_slots = G_PRIVATE_INIT (lw_hooks_forget_thread);
G_STATIC_ASSERT (LW_MAX_SLOTS <= 32);

/* Loop thread, normal context (GLib does not hold the context lock while it
 * polls). Records the thread that now runs the context: its TID for the
 * signal and /proc, and its stack bounds for the stack copy; and has the
 * thread forget the slot when it exits, and look then whether it was the
 * program's last (lw-last-thread.h). */
static G_GNUC_NO_INLINE void
lw_hooks_adopt_thread (LwSlot *slot)
{
  int saved_errno = errno;
  unsigned adopted = GPOINTER_TO_UINT (g_private_get (&lw_adopted_slots));

  lw_threadinfo_own_stack (&slot->loop_stack_lo, &slot->loop_stack_hi);
  lw_altstack_prepare ();
  lw_last_thread_track_self ();
  atomic_store (&slot->loop_tid, gettid ());
  slot->loop_thread = __builtin_thread_pointer ();
  if (!atomic_load (&slot->wrapper_off))
    slot->wrapper_thread = slot->loop_thread;
  if (!(adopted & (1u << slot->index)))
    g_private_set (&lw_adopted_slots, GUINT_TO_POINTER (adopted | (1u << slot->index)));

  /* A new thread runs the context: find its dispatch record. */
  g_mutex_lock (&lw_registry_lock);
  if (slot->in_use)
    lw_dispatch_schedule_probe (slot);
  g_mutex_unlock (&lw_registry_lock);
  errno = saved_errno;
}

/* Loop thread. Only while the watcher follows a lag: stamp the first poll
 * entry as the lag's end, and wake the watcher. */
static G_GNUC_NO_INLINE void
lw_hooks_note_idle (LwSlot *slot)
{
  int64_t expected = 0;
  int saved_errno = errno;

  atomic_compare_exchange_strong (&slot->lag_end_ns, &expected, lw_clock_now_ns ());
  sem_post (&slot->wake);
  errno = saved_errno;
}

/* Loop thread. The watcher sleeps to the deadline of the busy period that
 * this poll entry ends: stamp when it ended, in case the watcher wakes too
 * late to see it (it then reports the lag without a stack). Once per
 * watcher deadline. */
static G_GNUC_NO_INLINE void
lw_hooks_stamp_entry (LwSlot *slot)
{
  atomic_store_explicit (&slot->entry_ticks, lw_clock_ticks (), memory_order_relaxed);
  atomic_store_explicit (&slot->entry_seq, atomic_load_explicit (&slot->seq, memory_order_relaxed),
                         memory_order_release);
  atomic_fetch_and (&slot->wake_flags, ~(unsigned) LW_STAMP_ENTRY);
}

/* Loop thread. Wake the parked watcher: a busy period starts. */
static G_GNUC_NO_INLINE void
lw_hooks_note_busy (LwSlot *slot)
{
  int saved_errno = errno;

  sem_post (&slot->wake);
  errno = saved_errno;
}

/* Loop thread, inside g_main_context_iterate(): the hot path. Entering
 * poll: one store of seq (even); leaving: a TSC read (lw-clock.h) and a
 * store of seq (odd); each followed by one load of wake_flags. The seq_cst
 * stores pair with the watcher's fetch_or on wake_flags (a Dekker
 * handshake: neither side can miss the other). seq has a single writer,
 * this thread, so it is re-read rather than kept in a register. */
static inline __attribute__ ((always_inline)) void
lw_hooks_store_enter (LwSlot *slot)
{
  atomic_store_explicit (&slot->seq, (atomic_load_explicit (&slot->seq, memory_order_relaxed) | 1) + 1,
                         memory_order_seq_cst);
}

static inline __attribute__ ((always_inline)) void
lw_hooks_leave_poll (LwSlot *slot)
{
  atomic_store_explicit (&slot->busy_since, lw_clock_ticks (), memory_order_relaxed);
  atomic_store_explicit (&slot->seq, atomic_load_explicit (&slot->seq, memory_order_relaxed) + 1,
                         memory_order_seq_cst);
  if (G_UNLIKELY (atomic_load_explicit (&slot->wake_flags, memory_order_seq_cst) & LW_WAKE_ON_BUSY))
    lw_hooks_note_busy (slot);
}

#if defined(__x86_64__)
/* The low half of busy_since, as the instruction reads it. */
typedef uint32_t LwLow32 __attribute__ ((may_alias));

/* Loop thread, at a poll entry, in the trampolines with the latency
 * profile (lw-stats.h), used only where the ticks are the TSC. The low 32
 * bits of the busy period this entry ends (TSC now less busy_since) are
 * added to busy_ticks when under the cutoff (1 ms): TRUE. FALSE sends the
 * entry to the slow path, which measures the period in full and counts it
 * in its bucket. Five instructions, written out because the compiler's
 * version of the same C takes eight (it loads busy_since whole, and adds
 * through a register). */
static inline __attribute__ ((always_inline)) gboolean
lw_hooks_count_short_busy (LwSlot *slot)
{
  asm goto ("rdtsc\n\t"
            "subl %[since], %%eax\n\t"  /* also zeroes the upper half of rax */
            "cmpl %[cutoff], %%eax\n\t"
            "jae %l[slow]\n\t"
            "addq %%rax, %[total]"
            : [total] "+m" (slot->busy_ticks)
            : [since] "m" (*(const LwLow32 *) &slot->busy_since), [cutoff] "m" (slot->stats_cutoff)
            : "rax", "rdx", "cc"
            : slow);
  return TRUE;
slow:
  return FALSE;
}

/* Loop thread, at a poll exit, in the trampolines with the latency
 * profile: lw_hooks_leave_poll() with the TSC read directly (those
 * trampolines are only used where the ticks are the TSC). */
static inline __attribute__ ((always_inline)) void
lw_hooks_leave_poll_tsc (LwSlot *slot)
{
  atomic_store_explicit (&slot->busy_since, (int64_t) __rdtsc (), memory_order_relaxed);
  atomic_store_explicit (&slot->seq, atomic_load_explicit (&slot->seq, memory_order_relaxed) + 1,
                         memory_order_seq_cst);
  if (G_UNLIKELY (atomic_load_explicit (&slot->wake_flags, memory_order_seq_cst) & LW_WAKE_ON_BUSY))
    lw_hooks_note_busy (slot);
}
#endif

/* Loop thread, at the entry that ends the busy period seq, begun at
 * @since ticks and ended at @end. Notes it when it lasted the watcher's
 * threshold or more (and was not declared long): a watcher kept off the
 * CPU for the whole period (a busy machine) never saw it, and reports it
 * from this note (lw_watcher_check_unseen()). */
static void
lw_hooks_note_long (LwSlot *slot, int64_t since, int64_t end)
{
  uint64_t seq = atomic_load_explicit (&slot->seq, memory_order_relaxed);
  int64_t min_ticks = atomic_load_explicit (&slot->stats.lag_ticks, memory_order_relaxed);

  if (min_ticks <= 0 || end - since < min_ticks
      || atomic_load_explicit (&slot->long_work_seq, memory_order_relaxed) == seq)
    return;
  atomic_store_explicit (&slot->long_seq, 0, memory_order_relaxed);
  atomic_thread_fence (memory_order_release);
  atomic_store_explicit (&slot->long_since, since, memory_order_relaxed);
  atomic_store_explicit (&slot->long_end, end, memory_order_relaxed);
  atomic_store_explicit (&slot->long_seq, seq, memory_order_release);
}

/* Loop thread, at a poll entry on the slow path. The busy period this
 * entry ends, measured in full and counted in its bucket; when
 * @short_counted (the fast path added its low 32 bits to busy_ticks
 * already, and seq counts it) only a period too long for those bits, over
 * 2^32 ticks, is counted, and its busy time corrected. Also copies the
 * context's poll records for the input_pending check. */
static G_GNUC_NO_INLINE void
lw_hooks_count_busy (LwSlot *slot, GPollFD *fds, guint nfds, gboolean short_counted)
{
  int64_t busy, since, now;
  uint64_t seq;

  lw_stats_note_fds (&slot->stats, fds, nfds);
  if (!slot->stats_enabled)
    return;
  /* seq even before this entry: the first poll since attach, no busy
   * period ends here. */
  if (!short_counted && !(atomic_load_explicit (&slot->seq, memory_order_relaxed) & 1))
    return;
  since = atomic_load_explicit (&slot->busy_since, memory_order_relaxed);
  now = lw_clock_ticks ();
  busy = now - since;
  if (busy < 0)
    return;
  if (!short_counted)
    lw_hooks_note_long (slot, since, now);
  if (short_counted && busy <= UINT32_MAX)
    return;
  /* seq is still the busy period's (odd) unless the fast path stored the
   * entry: then it is the next one. */
  seq = atomic_load_explicit (&slot->seq, memory_order_relaxed);
  if (!(seq & 1))
    seq--;
  lw_stats_note_busy (&slot->stats, seq, busy, atomic_load_explicit (&slot->expected_seq, memory_order_relaxed) == seq);
  if (short_counted)
    busy -= (uint32_t) busy;
  __atomic_store_n (&slot->busy_ticks, __atomic_load_n (&slot->busy_ticks, __ATOMIC_RELAXED) + busy,
                    __ATOMIC_RELAXED);
}

/* Loop thread. Everything rare about a poll entry: a new thread running
 * the context, a watcher following a lag, or one asking for a stamp.
 * @entered: the fast path stored the entry already (and, with the latency
 * profile, counted a short busy period). */
static inline __attribute__ ((always_inline)) void
lw_hooks_enter_slow (LwSlot *slot, GPollFD *fds, guint nfds, gboolean entered)
{
  unsigned flags;

  if (!entered)
    {
      if (slot->loop_thread != __builtin_thread_pointer ())
        lw_hooks_adopt_thread (slot);
      lw_hooks_count_busy (slot, fds, nfds, FALSE);
      lw_hooks_store_enter (slot);
    }
  else
    lw_hooks_count_busy (slot, fds, nfds, TRUE);
  flags = atomic_load_explicit (&slot->wake_flags, memory_order_seq_cst);
  if (flags & LW_STAMP_ENTRY)
    lw_hooks_stamp_entry (slot);
  if (flags & LW_WAKE_ON_IDLE)
    lw_hooks_note_idle (slot);
}

/* Loop thread. The poll wrapper's rare case (lw_hooks_enter_slow()).
 * Reached by tail call, so the fast path keeps its arguments in registers
 * and spills nothing. */
static G_GNUC_NO_INLINE gint
lw_hooks_poll_slow (LwSlot *slot, GPollFD *fds, guint nfds, gint timeout, gboolean entered)
{
  gint ret;

  /* The program's poll function, set after attach, still calls this one:
   * the trackers follow the loop now. */
  if (G_UNLIKELY (atomic_load (&slot->wrapper_off)))
    return slot->prev_poll (fds, nfds, timeout);
  lw_hooks_enter_slow (slot, fds, nfds, entered);
  ret = slot->prev_poll (fds, nfds, timeout);
  lw_hooks_leave_poll (slot);
  return ret;
}

/* A trampoline per slot: the slot's address is a constant in each. A poll
 * still in progress when its watch is detached writes into the slot once
 * more on its way out: harmless, the slot is free, and a free slot is
 * handed out again only after every other one (round robin). Two families:
 * the plain one, and (x86-64, where the ticks are the TSC) the one with
 * the latency profile's fast half, which reads the TSC without asking
 * which clock to use: the three instructions that saves at each poll exit
 * pay for part of the profile. */
#define LW_TRAMPOLINE_FAMILY(i, name, STATS_CHECK, LEAVE) \
  static gint name (GPollFD *fds, guint nfds, gint timeout) \
  { \
    LwSlot *slot = &lw_slots[i]; \
    gint ret; \
    if (G_UNLIKELY (slot->wrapper_thread != __builtin_thread_pointer ()) || STATS_CHECK) \
      return lw_hooks_poll_slow (slot, fds, nfds, timeout, FALSE); \
    lw_hooks_store_enter (slot); \
    if (G_UNLIKELY (atomic_load_explicit (&slot->wake_flags, memory_order_seq_cst) & LW_ENTRY_FLAGS)) \
      return lw_hooks_poll_slow (slot, fds, nfds, timeout, TRUE); \
    ret = slot->prev_poll (fds, nfds, timeout); \
    LEAVE (slot); \
    return ret; \
  }
#if defined(__x86_64__)
# define LW_TRAMPOLINE(i) \
  LW_TRAMPOLINE_FAMILY (i, lw_hooks_poll_##i, FALSE, lw_hooks_leave_poll) \
  LW_TRAMPOLINE_FAMILY (i, lw_hooks_poll_stats_##i, G_UNLIKELY (!lw_hooks_count_short_busy (slot)), \
                        lw_hooks_leave_poll_tsc)
#else
# define LW_TRAMPOLINE(i) LW_TRAMPOLINE_FAMILY (i, lw_hooks_poll_##i, FALSE, lw_hooks_leave_poll)
#endif
LW_TRAMPOLINE (0)  LW_TRAMPOLINE (1)  LW_TRAMPOLINE (2)  LW_TRAMPOLINE (3)
LW_TRAMPOLINE (4)  LW_TRAMPOLINE (5)  LW_TRAMPOLINE (6)  LW_TRAMPOLINE (7)
LW_TRAMPOLINE (8)  LW_TRAMPOLINE (9)  LW_TRAMPOLINE (10) LW_TRAMPOLINE (11)
LW_TRAMPOLINE (12) LW_TRAMPOLINE (13) LW_TRAMPOLINE (14) LW_TRAMPOLINE (15)

static const GPollFunc lw_trampolines[LW_MAX_SLOTS] = {
  lw_hooks_poll_0,  lw_hooks_poll_1,  lw_hooks_poll_2,  lw_hooks_poll_3,
  lw_hooks_poll_4,  lw_hooks_poll_5,  lw_hooks_poll_6,  lw_hooks_poll_7,
  lw_hooks_poll_8,  lw_hooks_poll_9,  lw_hooks_poll_10, lw_hooks_poll_11,
  lw_hooks_poll_12, lw_hooks_poll_13, lw_hooks_poll_14, lw_hooks_poll_15,
};

#if defined(__x86_64__)
static const GPollFunc lw_trampolines_stats[LW_MAX_SLOTS] = {
  lw_hooks_poll_stats_0,  lw_hooks_poll_stats_1,  lw_hooks_poll_stats_2,  lw_hooks_poll_stats_3,
  lw_hooks_poll_stats_4,  lw_hooks_poll_stats_5,  lw_hooks_poll_stats_6,  lw_hooks_poll_stats_7,
  lw_hooks_poll_stats_8,  lw_hooks_poll_stats_9,  lw_hooks_poll_stats_10, lw_hooks_poll_stats_11,
  lw_hooks_poll_stats_12, lw_hooks_poll_stats_13, lw_hooks_poll_stats_14, lw_hooks_poll_stats_15,
};
#endif

/* The trackers: on GLib 2.81 and later, a context whose poll function is
 * g_poll() is polled with ppoll() and the full timeout (microseconds, then
 * nanoseconds); any other poll function gets the timeout rounded up to
 * whole milliseconds (gmain.c, g_main_context_poll_unlocked(): `if
 * (poll_func == g_poll)`). The wrapper would make a source due in 0.3 ms
 * fire after 1 ms: lagwatch would change when sources fire. There, the
 * poll function stays g_poll and two GSources stamp the same transitions.
 *
 * The entry: a prepare at priority 0, the priority of the context's wakeup
 * fd. GLib prepares a source only while no source of a better (lower)
 * priority is ready, and polls the wakeup fd under the same condition: this
 * prepare runs exactly in the iterations that poll. A ready source of
 * priority < 0 makes GLib skip the poll, and this prepare: the loop stays
 * busy, its input starved, as with the wrapper.
 *
 * The exit: a check at G_MININT, the first check after the poll. GLib
 * checks a source only while none of a better priority became ready in
 * this check phase: a check at priority 0 would be skipped whenever a
 * source of priority < 0 turns ready after the poll (an fd or a timeout
 * at G_PRIORITY_HIGH), and its dispatch would go unwatched. An iteration
 * that skipped the poll reaches this check with no entry before it: the
 * busy period goes on.
 *
 * What they cannot see: the prepares after the entry (priority > 0, or 0
 * and attached later) and the checks of sources attached before the exit
 * count as poll time, not busy time. GLib walks each tracker in the
 * prepare and the check of every iteration: more instructions than the
 * wrapper (docs/performance.md), paid only where the wrapper would change
 * the loop's timing. */
typedef struct
{
  GSource source;
  LwSlot *slot;
} LwTracker;

/* Loop thread, in the entry tracker's prepare off the fast path: the
 * wrapper's slow entry, with the context's poll records asked from GLib
 * (the poll function is not ours: no fds are handed to us). */
static G_GNUC_NO_INLINE void
lw_hooks_tracker_enter_slow (LwSlot *slot, gboolean entered)
{
  GPollFD fds[LW_STATS_POLL_FDS];
  gint nfds = g_main_context_query (slot->context, G_MAXINT, NULL, fds, G_N_ELEMENTS (fds));

  lw_hooks_enter_slow (slot, fds, (guint) CLAMP (nfds, 0, (gint) G_N_ELEMENTS (fds)), entered);
}

/* Loop thread, inside g_main_context_prepare(): the poll entry. */
static gboolean
lw_hooks_tracker_prepare (GSource *source, gint *timeout)
{
  LwSlot *slot = ((LwTracker *) source)->slot;

  *timeout = -1;
#if defined(__x86_64__)
  if (G_UNLIKELY (slot->loop_thread != __builtin_thread_pointer ())
      || (slot->stats_enabled && G_UNLIKELY (!lw_hooks_count_short_busy (slot))))
#else
  if (G_UNLIKELY (slot->loop_thread != __builtin_thread_pointer ()))
#endif
    {
      lw_hooks_tracker_enter_slow (slot, FALSE);
      return FALSE;
    }
  lw_hooks_store_enter (slot);
  if (G_UNLIKELY (atomic_load_explicit (&slot->wake_flags, memory_order_seq_cst) & LW_ENTRY_FLAGS))
    lw_hooks_tracker_enter_slow (slot, TRUE);
  return FALSE;
}

/* Loop thread, inside g_main_context_check(): the poll exit, when there
 * was an entry. A new thread's first check (the trackers attached while
 * the loop polled, under the launcher) is a poll of no length: entered
 * here. */
static gboolean
lw_hooks_tracker_check (GSource *source)
{
  LwSlot *slot = ((LwTracker *) source)->slot;

  if (G_UNLIKELY (slot->loop_thread != __builtin_thread_pointer ()))
    lw_hooks_tracker_enter_slow (slot, FALSE);
  else if (atomic_load_explicit (&slot->seq, memory_order_relaxed) & 1)
    return FALSE;
  lw_hooks_leave_poll (slot);
  return FALSE;
}

static gboolean
lw_hooks_tracker_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  return G_SOURCE_CONTINUE;  /* never ready, never dispatched */
}

static GSourceFuncs lw_tracker_entry_funcs = {
  .prepare = lw_hooks_tracker_prepare,
  .dispatch = lw_hooks_tracker_dispatch,
};

static GSourceFuncs lw_tracker_exit_funcs = {
  .check = lw_hooks_tracker_check,
  .dispatch = lw_hooks_tracker_dispatch,
};

/* Any thread. A tracker of @slot's context (see LwTracker), attached. */
static GSource *
lw_hooks_tracker_new (LwSlot *slot, GSourceFuncs *funcs, gint priority, const char *name)
{
  GSource *source = g_source_new (funcs, sizeof (LwTracker));

  ((LwTracker *) source)->slot = slot;
  g_source_set_priority (source, priority);
  g_source_set_name (source, name);
  g_source_attach (source, slot->context);
  return source;
}

/* Any thread. TRUE when GLib polls @poll_func's context with the full
 * timeout, which a wrapper would round to milliseconds (see LwTracker). */
static gboolean
lw_hooks_polls_precisely (GPollFunc poll_func)
{
  return poll_func == g_poll && glib_check_version (2, 81, 0) == NULL;
}

/* Any thread, the registry lock held. Attaches @slot's trackers. */
static void
lw_hooks_attach_trackers (LwSlot *slot)
{
  slot->tracker_entry = lw_hooks_tracker_new (slot, &lw_tracker_entry_funcs, G_PRIORITY_DEFAULT,
                                              "lagwatch: poll entry");
  slot->tracker_exit = lw_hooks_tracker_new (slot, &lw_tracker_exit_funcs, G_MININT,
                                             "lagwatch: poll exit");
}

gboolean
lw_hooks_follow_replaced_poll (LwSlot *slot)
{
  gboolean switched = FALSE;

  g_mutex_lock (&lw_registry_lock);
  if (slot->in_use && slot->wrapped && !atomic_load (&slot->wrapper_off)
      && g_main_context_get_poll_func (slot->context) != slot->trampoline)
    {
      /* The wrapper first: from now on it stamps nothing, even when the
       * program's function calls it. Attaching the trackers wakes the
       * loop if it sits in poll: their first entry comes at once. */
      atomic_store (&slot->wrapper_off, TRUE);
      slot->wrapper_thread = NULL;
      lw_hooks_attach_trackers (slot);
      g_debug ("the poll function of context %p was replaced after lagwatch_attach(); "
               "lagwatch follows the loop with two sources instead", (void *) slot->context);
      switched = TRUE;
    }
  g_mutex_unlock (&lw_registry_lock);
  return switched;
}

LwSlot *
lw_hooks_get_slot (unsigned index)
{
  return index < LW_MAX_SLOTS ? &lw_slots[index] : NULL;
}

/* Any thread. */
LwSlot *
lw_hooks_attach (GMainContext *context,
                 GError      **error)
{
  return lw_hooks_attach_full (context, TRUE, error);
}

/* Any thread. */
LwSlot *
lw_hooks_attach_full (GMainContext *context,
                      gboolean      stats,
                      GError      **error)
{
  LwSlot *slot = NULL;

  g_mutex_lock (&lw_registry_lock);
  for (unsigned i = 0; i < LW_MAX_SLOTS; i++)
    if (lw_slots[i].in_use && lw_slots[i].context == context)
      {
        g_mutex_unlock (&lw_registry_lock);
        g_set_error (error, LW_ERROR, LW_ERROR_ALREADY_WATCHED,
                     "context %p is already watched; detach the first watch before attaching again",
                     (void *) context);
        return NULL;
      }

  for (unsigned n = 0; n < LW_MAX_SLOTS && slot == NULL; n++)
    {
      unsigned i = (lw_next_slot + n) % LW_MAX_SLOTS;

      if (!lw_slots[i].in_use && !lw_slots[i].leaked)
        {
          slot = &lw_slots[i];
          lw_next_slot = i + 1;
        }
    }
  if (slot == NULL)
    {
      g_mutex_unlock (&lw_registry_lock);
      g_set_error (error, LW_ERROR, LW_ERROR_NO_SLOT,
                   "already watching %d contexts, the most lagwatch can watch at once",
                   LW_MAX_SLOTS);
      return NULL;
    }

  if (slot->trampoline == NULL)
    {
      slot->index = (unsigned) (slot - lw_slots);
      sem_init (&slot->wake, 0, 0);
      sem_init (&slot->capture.done, 0, 0);
      slot->proc_syscall_fd = -1;
      slot->proc_status_fd = -1;
    }
  atomic_store (&slot->seq, 0);
  atomic_store (&slot->busy_since, 0);
  atomic_store (&slot->expected_seq, 0);
  /* Probe again for this context, whichever thread runs it. */
  slot->loop_thread = NULL;
  slot->wrapper_thread = NULL;
  atomic_store (&slot->wrapper_off, FALSE);
  atomic_store (&slot->wake_flags, 0);
  atomic_store (&slot->lag_end_ns, 0);
  atomic_store (&slot->entry_seq, 0);
  atomic_store (&slot->long_seq, 0);
  atomic_store (&slot->long_work_seq, 0);
  slot->busy_ticks = 0;
  lw_stats_reset (&slot->stats, &slot->stats_cutoff);
  /* The profile's fast path needs the TSC (lw_hooks_count_short_busy). */
#if defined(__x86_64__)
  slot->stats_enabled = stats && lw_clock_tsc;
  slot->trampoline = slot->stats_enabled ? lw_trampolines_stats[slot->index] : lw_trampolines[slot->index];
#else
  slot->stats_enabled = FALSE;
  slot->trampoline = lw_trampolines[slot->index];
#endif
  while (sem_trywait (&slot->wake) == 0)
    ;
  slot->in_use = TRUE;
  slot->context = g_main_context_ref (context);
  slot->prev_poll = g_main_context_get_poll_func (context);
  slot->wrapped = !lw_hooks_polls_precisely (slot->prev_poll);
  if (slot->wrapped)
    g_main_context_set_poll_func (context, slot->trampoline);
  else
    lw_hooks_attach_trackers (slot);
  g_mutex_unlock (&lw_registry_lock);
  return slot;
}

/* Any thread. */
void
lw_hooks_detach (LwSlot *slot)
{
  GMainContext *context;

  g_mutex_lock (&lw_registry_lock);
  context = g_steal_pointer (&slot->context);
  if (slot->tracker_entry != NULL)
    {
      g_source_destroy (slot->tracker_entry);
      g_source_destroy (slot->tracker_exit);
      g_clear_pointer (&slot->tracker_entry, g_source_unref);
      g_clear_pointer (&slot->tracker_exit, g_source_unref);
    }
  if (!slot->wrapped)
    ;
  else if (g_main_context_get_poll_func (context) == slot->trampoline)
    g_main_context_set_poll_func (context, slot->prev_poll);
  else
    {
      lw_say ("the poll function of context %p was replaced after lagwatch_attach(); "
              "lagwatch leaves its wrapper behind, passing every call through",
              (void *) context);
      slot->leaked = TRUE;
    }
  atomic_store (&slot->wake_flags, 0);
  slot->in_use = FALSE;
  g_mutex_unlock (&lw_registry_lock);
  /* Maybe the last reference: the context is finalized here, not while
   * we still used it. */
  g_main_context_unref (context);
}
