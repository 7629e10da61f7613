/* churn.c: libchurn.so, the private library of attribution-app, installed
 * beside it in APP/lib/private and found through the app's RUNPATH
 * ($ORIGIN/../lib/private). churn() spends @ms of the thread's CPU time in
 * one platform library or another, called from here: every lag is
 * churn()'s, whatever leaf the samples land in.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <math.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#ifdef HAVE_CAIRO
#include <cairo.h>
#endif

#define NOIPA __attribute__ ((noipa))

static double
thread_cpu_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static unsigned char buffer[1 << 20];
static unsigned char copy[1 << 20];
volatile double sink;

/* Any thread. Spends @ms of CPU time: in libc (0), libm (1), libz (2) or
 * cairo and pixman (3). */
NOIPA void
churn (int leaf, int ms)
{
  double end = thread_cpu_ms () + ms;
#ifdef HAVE_CAIRO
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1024, 1024);
  cairo_t *cr = cairo_create (surface);
#endif

  while (thread_cpu_ms () < end)
    switch (leaf)
      {
      case 0:
        memmove (copy, buffer, sizeof buffer);
        memset (buffer, copy[7] + 1, sizeof buffer);
        break;
      case 1:
        for (int i = 0; i < 100000; i++)
          sink += sin (sink + i) * cos (i);
        break;
      case 2:
        sink += crc32 (0, buffer, sizeof buffer);
        break;
#ifdef HAVE_CAIRO
      case 3:
        cairo_set_source_rgba (cr, 0.2, 0.4, 0.6, 0.5);
        cairo_paint (cr);
        break;
#endif
      default:
        return;
      }
#ifdef HAVE_CAIRO
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
#endif
}
