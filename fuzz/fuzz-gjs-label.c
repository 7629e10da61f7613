/* fuzz-gjs-label.c: the parser of SpiderMonkey's function descriptions
 *
 * lw_gjs_parse_label() reads strings the watcher copied out of the
 * JavaScript engine's memory while it runs: up to 511 bytes of anything,
 * NUL-terminated. A parse either fills all three outputs or none.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "lw-gjs.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char text[512];
  char *name = NULL, *file = NULL;
  guint line = 0;

  size = MIN (size, sizeof text - 1);
  memcpy (text, data, size);
  text[size] = '\0';
  if (lw_gjs_parse_label (text, &name, &file, &line))
    {
      if (name == NULL || file == NULL || strlen (file) > strlen (text))
        __builtin_trap ();
    }
  else if (name != NULL || file != NULL)
    __builtin_trap ();
  g_free (name);
  g_free (file);
  return 0;
}
