/* fuzz-gjs-frames.c: the decoder of SpiderMonkey's profiling stack frames
 *
 * lw_gjs_decode_frames() reads frames the watcher copied out of the
 * JavaScript engine's memory while it runs: any bytes, in the layout of a
 * release lagwatch knows. The first input byte is the count of frames asked
 * for (which may be more than the bytes hold), the second picks the
 * release, the rest are the frames. A decode reads no byte past the copy
 * (ASan: the copy is a buffer of exactly that size), and when it succeeds
 * each entry is what its frame's one kind bit says, with that frame's
 * field.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "lw-gjs.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static const char *releases[] = { "mozjs_102", "mozjs_115", "mozjs_128", "mozjs_140" };

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const LwJsLayout *layout;
  LwJsEntry entries[256];
  guint8 *raw;
  guint n;

  if (size < 2)
    return 0;
  n = data[0];
  layout = lw_gjs_layout_for (releases[data[1] % G_N_ELEMENTS (releases)]);
  raw = g_memdup2 (data + 2, size - 2);
  if (lw_gjs_decode_frames (layout, raw, size - 2, n, entries))
    {
      if ((gsize) n * layout->frame_size > size - 2)
        __builtin_trap ();
      for (guint i = 0; i < n; i++)
        {
          const guint8 *frame = raw + (gsize) i * layout->frame_size;
          uint32_t flags;
          uintptr_t field = 0;

          memcpy (&flags, frame + layout->flags, sizeof flags);
          switch (flags & 7)
            {
            case 1:
              if (entries[i].kind != LW_JS_ENTRY_LABEL)
                __builtin_trap ();
              break;
            case 2:
              memcpy (&field, frame + layout->sp_or_script, sizeof field);
              if (entries[i].kind != LW_JS_ENTRY_MARKER || entries[i].value != field)
                __builtin_trap ();
              break;
            case 4:
              memcpy (&field, frame + layout->dynamic_string, sizeof field);
              if (entries[i].kind != LW_JS_ENTRY_FUNCTION || entries[i].value != field)
                __builtin_trap ();
              break;
            default:
              __builtin_trap ();  /* accepted a frame of no kind, or of two */
            }
        }
    }
  g_free (raw);
  return 0;
}
