/* fuzz-perfmap.c: the perf map parser of lw-perfmap.c
 *
 * A perf map (/tmp/perf-PID.map) is written by whatever runs as the user,
 * or planted: "START SIZE name" lines in hex, of any length, without a
 * terminator. Looked up for addresses at the edges of 64-bit space and
 * taken from the input itself.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lw-perfmap.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uintptr_t addrs[4] = { 0, 0x1000, UINTPTR_MAX, 0 };
  uintptr_t starts[4] = { 0 };
  char *names[4];

  if (size >= sizeof addrs[3])
    memcpy (&addrs[3], data, sizeof addrs[3]);
  lw_perfmap_parse ((const char *) data, size, addrs, 4, names, starts);
  for (guint i = 0; i < 4; i++)
    g_free (names[i]);
  return 0;
}
