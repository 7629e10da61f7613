/* slow-constructor: a library whose constructor spins for 300 ms, so that
 * a lag happens inside dlopen() with the loader's lock held. */
#include <glib.h>

__attribute__ ((noipa)) static void
slow_constructor_spin (void)
{
  gint64 end = g_get_monotonic_time () + 300 * 1000;

  while (g_get_monotonic_time () < end)
    ;
}

__attribute__ ((constructor, noipa)) static void
slow_constructor (void)
{
  slow_constructor_spin ();
  __asm__ volatile ("" ::: "memory");
}
