/* lw-private.h: small declarations shared by every part of the library:
 * its error domain, and whether it may trust the environment */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define LW_ERROR (lw_error_quark ())

typedef enum
{
  LW_ERROR_INVALID,        /* a bad configuration value */
  LW_ERROR_ALREADY_WATCHED,
  LW_ERROR_NO_SLOT,
  LW_ERROR_SIGNAL,
  LW_ERROR_OUTPUT,
} LwError;

/* Any thread. */
GQuark lw_error_quark (void);

/* Any thread. TRUE when the process runs setuid or setgid (AT_SECURE):
 * its environment then belongs to whoever started it, not to the program,
 * and lagwatch reads no setting or directory from it
 * (LAGWATCH_DISABLE=1 aside). */
gboolean lw_process_secure (void);

G_END_DECLS
