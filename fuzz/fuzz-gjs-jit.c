/* fuzz-gjs-jit.c: the decoder of the compiled frames' records
 *
 * lw_gjs_jit_decode() reads the records the signal handler wrote into a
 * snapshot (lw-gjs-jit.c): bytes the watcher trusts only as far as the
 * decoder checks them. Any bytes: every frame decoded has a kind of the
 * JIT's and a description of 1 to 1023 bytes that lies inside the input
 * (ASan: the copy is a buffer of exactly that size), each record right
 * after the one before; and writing the decoded frames again gives the
 * same bytes.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "lw-gjs-jit.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  LwJsJitFrame frames[64];
  guint8 *lang = g_memdup2 (data, size);
  guint8 *again = g_malloc (size + 1);
  const guint8 *next = lang;
  gsize at = 0;
  guint n = lw_gjs_jit_decode (lang, size, frames, G_N_ELEMENTS (frames));

  for (guint i = 0; i < n; i++)
    {
      const guint8 *label = (const guint8 *) frames[i].label;

      if (frames[i].kind >= LW_JS_JIT_KINDS || frames[i].label_len == 0 || frames[i].label_len > 1023
          || label != next + 11 || label + frames[i].label_len > lang + size)
        __builtin_trap ();
      next = label + frames[i].label_len;
      if (!lw_gjs_jit_put (again, size, &at, frames[i].stack_address, frames[i].kind, frames[i].label,
                           frames[i].label_len))
        __builtin_trap ();
    }
  /* (lang is NULL for the empty input, which memcmp() may not be given) */
  if (at != (gsize) (next - lang) || (at > 0 && memcmp (again, lang, at) != 0))
    __builtin_trap ();
  g_free (again);
  g_free (lang);
  return 0;
}
