/* lw-clock.h: the clocks lagwatch measures lags with
 *
 * Durations are CLOCK_MONOTONIC nanoseconds: it does not advance while the
 * machine is suspended, so a suspend never looks like a lag.
 *
 * The poll wrapper runs on every loop iteration, where even the vDSO's
 * clock_gettime (about 30 instructions through the PLT and libc) is a
 * visible share of a no-op iteration. It stamps "ticks" instead: the raw TSC
 * when the kernel itself uses the TSC as its clocksource (then it is
 * invariant and synchronized across CPUs), CLOCK_MONOTONIC nanoseconds
 * otherwise. The watcher converts ticks to nanoseconds with
 * lw_clock_ticks_to_ns(), from a calibration against CLOCK_MONOTONIC that
 * it refreshes whenever it wakes.
 */
#pragma once

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
# include <x86intrin.h>
#endif

#define LW_NSEC_PER_MSEC INT64_C (1000000)
#define LW_NSEC_PER_SEC  INT64_C (1000000000)

/* TRUE once lw_clock_init() found a TSC the kernel trusts. Set once, before
 * any watch exists; read-only afterwards. */
extern int lw_clock_tsc __attribute__ ((visibility ("hidden")));

/* Any thread, async-signal-safe. CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t
lw_clock_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * LW_NSEC_PER_SEC + ts.tv_nsec;
}

/* Any thread, async-signal-safe: the hot path's timestamp. */
static inline int64_t
lw_clock_ticks (void)
{
#if defined(__x86_64__)
  if (lw_clock_tsc)
    return (int64_t) __rdtsc ();
#endif
  return lw_clock_now_ns ();
}

/* Any thread, async-signal-safe. */
static inline struct timespec
lw_clock_timespec (int64_t ns)
{
  struct timespec ts = { ns / LW_NSEC_PER_SEC, ns % LW_NSEC_PER_SEC };

  return ts;
}

/* Any thread, normal context; call before the first watch starts. Decides
 * between TSC and clock_gettime and calibrates (about 2 ms, once). */
void    lw_clock_init          (void);

/* Watcher thread. The CLOCK_MONOTONIC time of @ticks (from
 * lw_clock_ticks()). Refreshes the calibration as it goes. */
int64_t lw_clock_ticks_to_ns   (int64_t ticks);

/* Any thread. @ns nanoseconds as a span of ticks, and back, at the latest
 * calibrated rate (no refresh). */
int64_t lw_clock_span_to_ticks (int64_t ns);
int64_t lw_clock_span_to_ns    (int64_t ticks);
