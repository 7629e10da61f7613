/* lw-watcher-sleep.c: the watcher thread's sleeps, on its semaphore */
#include "lw-watcher-sleep.h"

#include <errno.h>

#include "lw-clock.h"

void
lw_watcher_sleep (LwSlot *slot, int64_t deadline_ns)
{
  struct timespec ts;

  if (deadline_ns < 0)
    {
      while (sem_wait (&slot->wake) != 0 && errno == EINTR)
        ;
      return;
    }
  ts = lw_clock_timespec (deadline_ns);
  while (sem_clockwait (&slot->wake, CLOCK_MONOTONIC, &ts) != 0 && errno == EINTR)
    ;
}

void
lw_watcher_park (LagWatch *watch, uint64_t seq, unsigned flags, int64_t deadline_ns)
{
  LwSlot *slot = watch->slot;

  atomic_fetch_or (&slot->wake_flags, flags);
  if (atomic_load (&slot->seq) == seq && !atomic_load (&watch->stopping))
    lw_watcher_sleep (slot, deadline_ns);
  atomic_fetch_and (&slot->wake_flags, ~flags);
}

int64_t
lw_watcher_lag_end (LwSlot *slot, uint64_t busy_seq, int64_t wait_ns)
{
  int64_t end_ns = atomic_load (&slot->lag_end_ns);
  int64_t deadline_ns = lw_clock_now_ns () + wait_ns;

  /* A post can be left over from earlier: only the stamp says. */
  while (end_ns == 0 && atomic_load (&slot->seq) != busy_seq && lw_clock_now_ns () < deadline_ns)
    {
      lw_watcher_sleep (slot, deadline_ns);
      end_ns = atomic_load (&slot->lag_end_ns);
    }
  return end_ns;
}
