/* lw-clock.h: the one clock lagwatch measures lags with
 *
 * CLOCK_MONOTONIC through the vDSO (about 27 ns, no system call). It does
 * not advance while the machine is suspended, so a suspend never looks like a
 * lag. Async-signal-safe (clock_gettime is on the POSIX list).
 */
#pragma once

#include <stdint.h>
#include <time.h>

#define LW_NSEC_PER_MSEC INT64_C (1000000)
#define LW_NSEC_PER_SEC  INT64_C (1000000000)

/* Any thread, async-signal-safe. */
static inline int64_t
lw_clock_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * LW_NSEC_PER_SEC + ts.tv_nsec;
}

/* Any thread, async-signal-safe. */
static inline struct timespec
lw_clock_timespec (int64_t ns)
{
  struct timespec ts = { ns / LW_NSEC_PER_SEC, ns % LW_NSEC_PER_SEC };

  return ts;
}
