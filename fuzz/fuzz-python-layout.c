/* fuzz-python-layout.c: the CPython layout reader of lw-python-layout.c
 *
 * What lagwatch parses of a CPython's memory, from arbitrary bytes: a
 * _Py_DebugOffsets blob (the start of _PyRuntime, whose offsets are then
 * used to read everything else: every one must be checked), frame records
 * read with the layout it gives (or with a version's table), and location
 * tables. The first byte picks the version the blob must claim and
 * whether the input gets the cookie; the rest is the blob, then a frame,
 * then a location table.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lw-python-layout.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const guint32 versions[] = { 0x030d00f0, 0x030e0af0, 0x030b02f0, 0x030c01f0, 0x030f02f0 };
  gsize blob_size = lw_python_layout_debug_offsets_size ();
  g_autofree guint8 *blob = NULL;
  guint8 frame[LW_PY_FRAME_READ] = { 0 };
  const LwPyOffsets *layout;
  LwPyOffsets parsed;
  LwPyFrameRecord record;
  guint32 version;
  char why[160];
  gsize used;

  if (size < 1)
    return 0;
  /* Bits 0, 1 and 4 pick it (bits 2 and 3 are the flags below). */
  version = versions[((data[0] & 3) | ((data[0] & 0x10) >> 2)) % G_N_ELEMENTS (versions)];
  data++;
  size--;
  /* The exact size read, as lw-python-stack.c reads it; shorter ones too. */
  used = MIN (size, blob_size);
  blob = g_malloc0 (blob_size);
  memcpy (blob, data, used);
  if (used >= 16 && (data[-1] & 4))
    {
      /* A cookie and the claimed version: deeper into the parser. */
      memcpy (blob, "xdebugpy", 8);
      memcpy (blob + 8, &version, sizeof version);
      memset (blob + 12, 0, 4);
    }
  if (lw_python_layout_from_debug_offsets (blob, (data[-1] & 8) ? used : blob_size, version, &parsed, why,
                                           sizeof why) == LW_PY_LAYOUT_OK)
    {
      g_assert (parsed.frame_read <= LW_PY_FRAME_READ);
      g_assert (parsed.code_code_adaptive <= LW_PY_CODE_HEAD);
      g_assert (parsed.compact_utf8 + sizeof (uintptr_t) <= LW_PY_STRING_HEAD);
      g_assert (parsed.bytes_data <= LW_PY_BYTES_HEAD);
      g_assert (parsed.tstate_native_thread_id + sizeof (uintptr_t) <= LW_PY_TSTATE_READ);
      g_assert (!parsed.has_base_frame || parsed.version >= 0x030f);
      layout = &parsed;
    }
  else
    {
      g_assert (why[0] != '\0');
      layout = lw_python_layout_table ((version >> 16) & 0xffff);
    }
  data += used;
  size -= used;
  if (layout != NULL)
    {
      used = MIN (size, layout->frame_read);
      memcpy (frame, data, used);
      lw_python_layout_frame (layout, frame, &record);
      g_assert (record.kind <= LW_PY_FRAME_BAD);
      data += used;
      size -= used;
    }
  lw_python_layout_line (data, size, size > 0 ? data[0] : 1, (gssize) (size / 2));
  lw_python_layout_line (data, size, -1, 0);
  lw_python_layout_line (data, size, G_MAXINT, G_MAXSSIZE);
  return 0;
}
