/* lw-private.c: the error domain, and whether the environment is trusted */
#include "lw-private.h"

#include <sys/auxv.h>

G_DEFINE_QUARK (lagwatch-error-quark, lw_error)

gboolean
lw_process_secure (void)
{
  return getauxval (AT_SECURE) != 0;
}
