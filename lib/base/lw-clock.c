/* lw-clock.c: choosing the hot path's clock and converting its ticks */
#include "lw-clock.h"

#include <glib.h>
#include <string.h>

int lw_clock_tsc;

static GMutex  lw_clock_lock;
static int64_t lw_clock_base_ticks, lw_clock_base_ns;  /* first calibration point */
static int64_t lw_clock_ref_ticks, lw_clock_ref_ns;    /* latest one */
static double  lw_clock_ns_per_tick;

/* A (ticks, ns) pair read as close together as possible: the best of three
 * TSC-clock-TSC windows, the clock paired with the window's middle. */
static void
lw_clock_pair (int64_t *ticks, int64_t *ns)
{
  int64_t best = INT64_MAX;

  for (int i = 0; i < 3; i++)
    {
      int64_t before = lw_clock_ticks ();
      int64_t now = lw_clock_now_ns ();
      int64_t after = lw_clock_ticks ();

      if (after - before < best)
        {
          best = after - before;
          *ticks = before + (after - before) / 2;
          *ns = now;
        }
    }
}

void
lw_clock_init (void)
{
  static gsize done;
  g_autofree char *source = NULL;

  if (!g_once_init_enter (&done))
    return;
#if defined(__x86_64__)
  if (g_file_get_contents ("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                           &source, NULL, NULL)
      && g_str_equal (g_strstrip (source), "tsc"))
    {
      struct timespec two_ms = { 0, 2 * LW_NSEC_PER_MSEC };

      lw_clock_tsc = 1;
      lw_clock_pair (&lw_clock_base_ticks, &lw_clock_base_ns);
      while (nanosleep (&two_ms, &two_ms) != 0)
        ;
      lw_clock_pair (&lw_clock_ref_ticks, &lw_clock_ref_ns);
      lw_clock_ns_per_tick = (double) (lw_clock_ref_ns - lw_clock_base_ns)
                             / (double) (lw_clock_ref_ticks - lw_clock_base_ticks);
      if (!(lw_clock_ns_per_tick > 0))
        lw_clock_tsc = 0;
    }
#endif
  g_once_init_leave (&done, 1);
}

int64_t
lw_clock_ticks_to_ns (int64_t ticks)
{
  int64_t t, n, result;

  if (!lw_clock_tsc)
    return ticks;
  /* A fresh reference point at every call: the extrapolation stays short,
   * and the rate, measured over the whole time since the first point, is
   * the kernel's average including NTP's slewing. */
  lw_clock_pair (&t, &n);
  g_mutex_lock (&lw_clock_lock);
  lw_clock_ref_ticks = t;
  lw_clock_ref_ns = n;
  if (t - lw_clock_base_ticks > 0)
    lw_clock_ns_per_tick = (double) (n - lw_clock_base_ns) / (double) (t - lw_clock_base_ticks);
  result = lw_clock_ref_ns + (int64_t) ((double) (ticks - lw_clock_ref_ticks) * lw_clock_ns_per_tick);
  g_mutex_unlock (&lw_clock_lock);
  return result;
}

int64_t
lw_clock_span_to_ticks (int64_t ns)
{
  int64_t ticks;

  if (!lw_clock_tsc)
    return ns;
  g_mutex_lock (&lw_clock_lock);
  ticks = (int64_t) ((double) ns / lw_clock_ns_per_tick);
  g_mutex_unlock (&lw_clock_lock);
  return ticks;
}

int64_t
lw_clock_span_to_ns (int64_t ticks)
{
  int64_t ns;

  if (!lw_clock_tsc)
    return ticks;
  g_mutex_lock (&lw_clock_lock);
  ns = (int64_t) ((double) ticks * lw_clock_ns_per_tick);
  g_mutex_unlock (&lw_clock_lock);
  return ns;
}
