/* lw-private.h: small declarations shared by every part of the library */
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

GQuark lw_error_quark (void);

G_END_DECLS
