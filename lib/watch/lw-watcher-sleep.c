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
