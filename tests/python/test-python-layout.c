/* test-python-layout.c: CPython layouts from _Py_DebugOffsets, and refusals
 *
 * The blobs are built from the values real interpreters publish (pyenv's
 * 3.13.0, Debian's 3.14.10 and 3.15.2), at the positions of each version's form; one
 * value changed at a time must turn a good layout into a clean refusal.
 */
#include <string.h>

#include "lw-python-layout.h"

typedef struct
{
  gsize   at;
  guint64 value;
} Word;

/* CPython 3.13.0's _Py_DebugOffsets, the values lagwatch reads. */
static const Word blob_3_13[] = {
  { 8, 0x030d00f0 }, { 16, 0 },
  { 24, 283320 }, { 40, 632 },
  { 48, 194968 }, { 64, 7264 }, { 72, 7344 },
  { 152, 304 }, { 168, 8 }, { 184, 72 }, { 200, 160 },
  { 224, 80 }, { 232, 8 }, { 240, 0 }, { 248, 56 }, { 264, 70 },
  { 272, 208 }, { 280, 112 }, { 296, 128 }, { 304, 136 }, { 312, 68 }, { 344, 200 },
  { 352, 16 }, { 360, 8 },
  { 512, 40 }, { 520, 16 }, { 528, 32 },
  { 536, 64 }, { 544, 32 }, { 552, 16 }, { 560, 40 },
};

/* CPython 3.14.10's. */
static const Word blob_3_14[] = {
  { 8, 0x030e0af0 }, { 16, 0 },
  { 24, 316616 }, { 40, 808 },
  { 48, 225864 }, { 64, 7272 }, { 72, 7344 },
  { 176, 832 }, { 192, 8 }, { 208, 72 }, { 224, 160 },
  { 248, 88 }, { 256, 8 }, { 264, 0 }, { 272, 56 }, { 288, 74 },
  { 312, 216 }, { 320, 112 }, { 336, 128 }, { 344, 136 }, { 352, 68 }, { 384, 208 },
  { 400, 16 }, { 408, 8 },
  { 592, 40 }, { 600, 16 }, { 608, 32 },
  { 616, 64 }, { 624, 32 }, { 632, 16 }, { 640, 40 },
};

/* CPython 3.15.2's: its thread state's native_thread_id moved (184, at
 * 248 of the blob) and it points to its base frame (80, at 216), the frame's
 * and code's offsets are 3.14's. */
static const Word blob_3_15[] = {
  { 8, 0x030f02f0 }, { 16, 0 },
  { 24, 346568 }, { 40, 936 },
  { 48, 226240 }, { 64, 7264 }, { 72, 7336 },
  { 176, 888 }, { 192, 8 }, { 208, 72 }, { 216, 80 }, { 248, 184 },
  { 312, 88 }, { 320, 8 }, { 328, 0 }, { 336, 56 }, { 352, 74 },
  { 376, 216 }, { 384, 112 }, { 400, 128 }, { 408, 136 }, { 416, 68 }, { 448, 208 },
  { 464, 16 }, { 472, 8 },
  { 688, 40 }, { 696, 16 }, { 704, 32 },
  { 712, 64 }, { 720, 32 }, { 728, 16 }, { 736, 40 },
};

static guint8 *
make_blob (const Word *words, gsize n_words, gsize *len)
{
  guint8 *blob;

  *len = lw_python_layout_debug_offsets_size ();
  blob = g_malloc0 (*len);
  memcpy (blob, "xdebugpy", 8);
  for (gsize i = 0; i < n_words; i++)
    memcpy (blob + words[i].at, &words[i].value, sizeof words[i].value);
  return blob;
}

static void
put (guint8 *blob, gsize at, guint64 value)
{
  memcpy (blob + at, &value, sizeof value);
}

static LwPyLayoutStatus
parse (const guint8 *blob, gsize len, guint32 version, LwPyOffsets *out, char *why)
{
  return lw_python_layout_from_debug_offsets (blob, len, version, out, why, 160);
}

static void
test_debug_offsets_3_13 (void)
{
  gsize len;
  g_autofree guint8 *blob = make_blob (blob_3_13, G_N_ELEMENTS (blob_3_13), &len);
  LwPyOffsets o;
  char why[160] = "";

  g_assert_cmpint (parse (blob, len, 0x030d00f0, &o, why), ==, LW_PY_LAYOUT_OK);
  g_assert_cmpuint (o.version, ==, 0x030d);
  g_assert_cmpuint (o.runtime_interpreters_head, ==, 632);
  g_assert_cmpuint (o.interp_next, ==, 7264);
  g_assert_cmpuint (o.interp_threads_head, ==, 7344);
  g_assert_cmpuint (o.tstate_next, ==, 8);
  g_assert_cmpuint (o.tstate_frame, ==, 72);
  g_assert_false (o.has_cframe);
  g_assert_cmpuint (o.tstate_native_thread_id, ==, 160);
  g_assert_cmpuint (o.frame_code, ==, 0);
  g_assert_false (o.code_tagged);
  g_assert_cmpuint (o.frame_previous, ==, 8);
  g_assert_cmpuint (o.frame_instr, ==, 56);
  g_assert_cmpint (o.entry, ==, LW_PY_ENTRY_SHIM);
  g_assert_cmpuint (o.frame_owner, ==, 70);
  g_assert_cmpuint (o.frame_read, ==, 71);
  g_assert_cmpuint (o.code_filename, ==, 112);
  g_assert_cmpuint (o.code_qualname, ==, 128);
  g_assert_cmpuint (o.code_linetable, ==, 136);
  g_assert_cmpuint (o.code_firstlineno, ==, 68);
  g_assert_cmpuint (o.code_code_adaptive, ==, 200);
  g_assert_cmpuint (o.object_type, ==, 8);
  g_assert_cmpuint (o.var_size, ==, 16);
  g_assert_cmpuint (o.bytes_data, ==, 32);
  g_assert_cmpuint (o.unicode_state, ==, 32);
  g_assert_cmpuint (o.unicode_length, ==, 16);
  g_assert_cmpuint (o.ascii_size, ==, 40);
  g_assert_cmpuint (o.compact_utf8_length, ==, 40);
  g_assert_cmpuint (o.compact_utf8, ==, 48);
  g_assert_cmpuint (o.compact_size, ==, 56);
}

static void
test_debug_offsets_3_14 (void)
{
  gsize len;
  g_autofree guint8 *blob = make_blob (blob_3_14, G_N_ELEMENTS (blob_3_14), &len);
  LwPyOffsets o;
  char why[160] = "";

  g_assert_cmpint (parse (blob, len, 0x030e0af0, &o, why), ==, LW_PY_LAYOUT_OK);
  g_assert_cmpuint (o.version, ==, 0x030e);
  g_assert_cmpuint (o.runtime_interpreters_head, ==, 808);
  g_assert_cmpuint (o.interp_next, ==, 7272);
  g_assert_cmpuint (o.tstate_frame, ==, 72);
  g_assert_cmpuint (o.tstate_native_thread_id, ==, 160);
  g_assert_true (o.code_tagged);
  g_assert_cmpuint (o.frame_owner, ==, 74);
  g_assert_cmpuint (o.frame_read, ==, 75);
  g_assert_cmpuint (o.code_code_adaptive, ==, 208);
  g_assert_cmpuint (o.compact_size, ==, 56);
  g_assert_false (o.has_base_frame);
}

static void
test_debug_offsets_3_15 (void)
{
  gsize len;
  g_autofree guint8 *blob = make_blob (blob_3_15, G_N_ELEMENTS (blob_3_15), &len);
  LwPyOffsets o;
  char why[160] = "";

  g_assert_cmpint (parse (blob, len, 0x030f02f0, &o, why), ==, LW_PY_LAYOUT_OK);
  g_assert_cmpuint (o.version, ==, 0x030f);
  g_assert_cmpuint (o.runtime_interpreters_head, ==, 936);
  g_assert_cmpuint (o.interp_next, ==, 7264);
  g_assert_cmpuint (o.interp_threads_head, ==, 7336);
  g_assert_cmpuint (o.tstate_next, ==, 8);
  g_assert_cmpuint (o.tstate_frame, ==, 72);
  g_assert_cmpuint (o.tstate_native_thread_id, ==, 184);
  g_assert_true (o.code_tagged);
  g_assert_cmpint (o.entry, ==, LW_PY_ENTRY_SHIM);
  g_assert_cmpuint (o.frame_code, ==, 0);
  g_assert_cmpuint (o.frame_previous, ==, 8);
  g_assert_cmpuint (o.frame_instr, ==, 56);
  g_assert_cmpuint (o.frame_owner, ==, 74);
  g_assert_cmpuint (o.frame_read, ==, 75);
  g_assert_cmpuint (o.code_filename, ==, 112);
  g_assert_cmpuint (o.code_qualname, ==, 128);
  g_assert_cmpuint (o.code_linetable, ==, 136);
  g_assert_cmpuint (o.code_firstlineno, ==, 68);
  g_assert_cmpuint (o.code_code_adaptive, ==, 208);
  g_assert_cmpuint (o.bytes_data, ==, 32);
  g_assert_cmpuint (o.unicode_state, ==, 32);
  g_assert_cmpuint (o.compact_size, ==, 56);
  g_assert_true (o.has_base_frame);
  g_assert_cmpuint (o.tstate_base_frame, ==, 80);

  /* A base frame pointer that would reach past the thread state (888
   * bytes) is no layout. */
  put (blob, 216, 888 - 4);
  g_assert_cmpint (parse (blob, len, 0x030f02f0, &o, why), ==, LW_PY_LAYOUT_INVALID);
  g_assert_nonnull (strstr (why, "cannot be right"));
}

/* Each change (one value, or two where one alone cannot show it), on a
 * good 3.13 blob, and what it must give. */
static void
test_debug_offsets_refused (void)
{
  static const struct
  {
    const char      *what;
    gsize            at;
    guint64          value;
    gsize            at2;     /* 0: one change only */
    guint64          value2;
    LwPyLayoutStatus status;
    const char      *said;
  } cases[] = {
    { "no cookie", 0, 0x6262626262626262, 0, 0, LW_PY_LAYOUT_NOT_PUBLISHED, "no _Py_DebugOffsets" },
    { "3.16", 8, 0x031000a0, 0, 0, LW_PY_LAYOUT_UNKNOWN_VERSION, "0x31000a0" },
    { "3.12 with a blob", 8, 0x030c01f0, 0, 0, LW_PY_LAYOUT_UNKNOWN_VERSION, "form this lagwatch does not know" },
    { "high bits in the version", 8, 0x10030d00f0, 0, 0, LW_PY_LAYOUT_UNKNOWN_VERSION, "form" },
    { "free-threaded", 16, 1, 0, 0, LW_PY_LAYOUT_FREE_THREADED, "free-threaded" },
    { "owner past the frame's size", 264, 80, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "previous past the bytes read of a frame", 232, 200, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "a frame size past 4 GiB", 224, G_MAXUINT64, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "native thread id past the thread state's size", 200, 300, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "native thread id inside its struct but past the bytes read of it", 200, 600, 152, 1000,
      LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "first code unit past the code's head read", 344, 1000, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "qualname after the first code unit", 296, 204, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "bytes data before its size", 528, 16, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "a str's size that is not PyUnicodeObject's", 536, 72, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
    { "a str header that holds not its state", 560, 24, 0, 0, LW_PY_LAYOUT_INVALID, "cannot be right" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      gsize len;
      g_autofree guint8 *blob = make_blob (blob_3_13, G_N_ELEMENTS (blob_3_13), &len);
      LwPyOffsets o, untouched;
      char why[160] = "";

      memset (&o, 0xa5, sizeof o);
      untouched = o;
      put (blob, cases[i].at, cases[i].value);
      if (cases[i].at2 != 0)
        put (blob, cases[i].at2, cases[i].value2);
      g_test_message ("%s", cases[i].what);
      g_assert_cmpint (parse (blob, len, cases[i].at == 8 ? (guint32) cases[i].value : 0x030d00f0, &o, why),
                       ==, cases[i].status);
      g_assert_nonnull (strstr (why, cases[i].said));
      g_assert_cmpmem (&o, sizeof o, &untouched, sizeof untouched);
    }
}

/* The blob's version must be the interpreter's own, and the blob whole. */
static void
test_debug_offsets_mismatch (void)
{
  gsize len;
  g_autofree guint8 *blob = make_blob (blob_3_13, G_N_ELEMENTS (blob_3_13), &len);
  LwPyOffsets o;
  char why[160] = "";

  g_assert_cmpint (parse (blob, len, 0x030d01f0, &o, why), ==, LW_PY_LAYOUT_UNKNOWN_VERSION);
  g_assert_cmpint (parse (blob, 500, 0x030d00f0, &o, why), ==, LW_PY_LAYOUT_INVALID);
  g_assert_cmpint (parse (blob, 20, 0x030d00f0, &o, why), ==, LW_PY_LAYOUT_NOT_PUBLISHED);
}

static void
test_tables (void)
{
  g_assert_cmpuint (lw_python_layout_table (0x030b)->entry, ==, LW_PY_ENTRY_FLAG);
  g_assert_cmpuint (lw_python_layout_table (0x030c)->entry, ==, LW_PY_ENTRY_SHIM);
  g_assert_true (lw_python_layout_table (0x030c)->has_cframe);
  g_assert_null (lw_python_layout_table (0x030a));
  g_assert_null (lw_python_layout_table (0x030d));
}

static void
test_frame_records (void)
{
  gsize len;
  g_autofree guint8 *blob = make_blob (blob_3_14, G_N_ELEMENTS (blob_3_14), &len);
  guint8 frame[LW_PY_FRAME_READ] = { 0 };
  LwPyFrameRecord record;
  LwPyOffsets o;
  char why[160];
  guint64 code = 0x7f0000001001;  /* a deferred reference: tag bit set */

  g_assert_cmpint (parse (blob, len, 0x030e0af0, &o, why), ==, LW_PY_LAYOUT_OK);
  memcpy (frame + o.frame_code, &code, sizeof code);
  put (frame, o.frame_previous, 0x7f0000002000);
  put (frame, o.frame_instr, 0x7f00000010d8);
  lw_python_layout_frame (&o, frame, &record);
  g_assert_cmpint (record.kind, ==, LW_PY_FRAME_CODE);
  g_assert_cmphex (record.code, ==, 0x7f0000001000);
  g_assert_cmphex (record.previous, ==, 0x7f0000002000);
  g_assert_cmphex (record.instr, ==, 0x7f00000010d8);
  frame[o.frame_owner] = LW_PY_OWNER_SHIM;
  put (frame, o.frame_code, 1);  /* PyStackRef None-ish: a shim's code is not read */
  lw_python_layout_frame (&o, frame, &record);
  g_assert_cmpint (record.kind, ==, LW_PY_FRAME_SHIM);
  frame[o.frame_owner] = 4;
  lw_python_layout_frame (&o, frame, &record);
  g_assert_cmpint (record.kind, ==, LW_PY_FRAME_BAD);
  frame[o.frame_owner] = 0;
  put (frame, o.frame_code, 0);
  lw_python_layout_frame (&o, frame, &record);
  g_assert_cmpint (record.kind, ==, LW_PY_FRAME_BAD);

  /* 3.11: is_entry, untagged. */
  memset (frame, 0, sizeof frame);
  put (frame, lw_python_layout_table (0x030b)->frame_code, 0x7f0000001001);
  lw_python_layout_frame (lw_python_layout_table (0x030b), frame, &record);
  g_assert_cmpint (record.kind, ==, LW_PY_FRAME_BAD);
  put (frame, lw_python_layout_table (0x030b)->frame_code, 0x7f0000001000);
  frame[lw_python_layout_table (0x030b)->frame_is_entry] = 1;
  lw_python_layout_frame (lw_python_layout_table (0x030b), frame, &record);
  g_assert_cmpint (record.kind, ==, LW_PY_FRAME_CODE_ENTRY);
}

static void
test_lines (void)
{
  /* Code 13 (one signed varint, +2), 2 units; code 15 (no line), 1 unit;
   * code 11 (+1, two bytes of columns), 4 units. */
  static const guint8 table[] = { 0x80 | (13 << 3) | 1, 4, 0x80 | (15 << 3), 0x80 | (11 << 3) | 3, 1, 2 };

  g_assert_cmpuint (lw_python_layout_line (table, sizeof table, 10, -1), ==, 10);
  g_assert_cmpuint (lw_python_layout_line (table, sizeof table, 10, 0), ==, 12);
  g_assert_cmpuint (lw_python_layout_line (table, sizeof table, 10, 1), ==, 12);
  g_assert_cmpuint (lw_python_layout_line (table, sizeof table, 10, 2), ==, 0);
  g_assert_cmpuint (lw_python_layout_line (table, sizeof table, 10, 6), ==, 13);
  g_assert_cmpuint (lw_python_layout_line (table, sizeof table, 10, 7), ==, 0);
  g_assert_cmpuint (lw_python_layout_line (table, 1, 10, 0), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/python-layout/debug-offsets/3.13", test_debug_offsets_3_13);
  g_test_add_func ("/python-layout/debug-offsets/3.14", test_debug_offsets_3_14);
  g_test_add_func ("/python-layout/debug-offsets/3.15", test_debug_offsets_3_15);
  g_test_add_func ("/python-layout/debug-offsets/refused", test_debug_offsets_refused);
  g_test_add_func ("/python-layout/debug-offsets/mismatch", test_debug_offsets_mismatch);
  g_test_add_func ("/python-layout/tables", test_tables);
  g_test_add_func ("/python-layout/frame-records", test_frame_records);
  g_test_add_func ("/python-layout/lines", test_lines);
  return g_test_run ();
}
