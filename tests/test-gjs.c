/* test-gjs.c: SpiderMonkey's descriptions of JavaScript functions, parsed
 *
 * The profiling stack describes each function as "name (file:line:col)",
 * "file:line:col" (anonymous) or "file" (a script's top level); GJS's
 * module files are often resource:// URIs, whose colons must not be taken
 * for the line's. Anything else is refused, never half-read.
 *
 * The descriptions are read from the engine's memory with
 * lw_modules_read_string(): a string that ends just before an unmapped
 * page is read whole, one that runs into it is refused, one longer than
 * the room is cut and said to be.
 *
 * The profiling stack is read only in a layout lagwatch knows, by the
 * release's symbol version node, and only once a probe through the
 * engine's own pushLabelFrame()/pop() found it there: the probe accepts an
 * engine written to the known layout and refuses one laid out otherwise
 * (fakes below), and passes on the SpiderMonkey the installed GJS runs on
 * (102 on Debian 12, 128 on Debian 13, 140 on sid). Frames copied from the
 * stack decode by their kind bits; a frame of no kind or of two is refused.
 * The stack is read after the native stack was captured: a read that
 * cannot be the captured stack's (an entry gone, or one deeper) is not
 * merged.
 *
 * Compiled frames are taken in the signal handler as records in the
 * snapshot (stack address, kind, description): what is written reads
 * back the same, a record that does not fit is not written, and the
 * decoder stops at a record that is cut, too long or of a kind not the
 * JIT's, keeping those before it.
 */
#include <dlfcn.h>
#include <glib.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lw-gjs.h"
#include "lw-gjs-jit.h"
#include "lw-modules.h"

typedef struct
{
  const char *text;
  const char *name;  /* NULL: refused */
  const char *file;
  guint       line;
} LabelCase;

static const LabelCase label_cases[] = {
  { "jsSpinFor (/home/u/app.js:8:18)", "jsSpinFor", "/home/u/app.js", 8 },
  { "MyWindow.prototype._onClicked (resource:///org/example/js/window.js:120:5)",
    "MyWindow.prototype._onClicked", "resource:///org/example/js/window.js", 120 },
  { "get size (file:///tmp/a b.js:3:1)", "get size", "file:///tmp/a b.js", 3 },
  { "/home/u/app.js:40:12", "(anonymous)", "/home/u/app.js", 40 },
  { "resource:///org/example/js/main.js:7:30", "(anonymous)", "resource:///org/example/js/main.js", 7 },
  { "/home/u/app.js", "(top level)", "/home/u/app.js", 0 },
  { "", NULL, NULL, 0 },
  { "name (app.js)", NULL, NULL, 0 },
  { "name (app.js:x:3)", NULL, NULL, 0 },
  { "name (:8:1)", NULL, NULL, 0 },
  { "name (app.js:99999999999:1)", NULL, NULL, 0 },
};

static void
test_parse_label (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (label_cases); i++)
    {
      const LabelCase *c = &label_cases[i];
      g_autofree char *name = NULL, *file = NULL;
      guint line = 12345;
      gboolean parsed = lw_gjs_parse_label (c->text, &name, &file, &line);

      g_test_message ("\"%s\"", c->text);
      if (c->name == NULL)
        {
          g_assert_false (parsed);
          continue;
        }
      g_assert_true (parsed);
      g_assert_cmpstr (name, ==, c->name);
      g_assert_cmpstr (file, ==, c->file);
      g_assert_cmpuint (line, ==, c->line);
    }
}

static void
test_read_string (void)
{
  long page = sysconf (_SC_PAGESIZE);
  char *map = mmap (NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *edge, buf[64];
  gboolean whole = FALSE;

  g_assert_true (map != MAP_FAILED);
  g_assert_cmpint (mprotect (map + page, page, PROT_NONE), ==, 0);
  /* "f (a.js:1:1)" and its terminator, the last bytes before the hole. */
  edge = map + page - 13;
  memcpy (edge, "f (a.js:1:1)", 13);
  g_assert_true (lw_modules_read_string ((uintptr_t) edge, buf, sizeof buf, &whole));
  g_assert_true (whole);
  g_assert_cmpstr (buf, ==, "f (a.js:1:1)");

  /* No terminator before the hole. */
  edge[12] = 'x';
  g_assert_false (lw_modules_read_string ((uintptr_t) edge, buf, sizeof buf, &whole));

  /* Longer than the room: cut, and said to be. */
  memset (map, 'y', 100);
  map[100] = '\0';
  g_assert_true (lw_modules_read_string ((uintptr_t) map, buf, 10, &whole));
  g_assert_false (whole);
  g_assert_cmpstr (buf, ==, "yyyyyyyyy");
  munmap (map, 2 * page);
}

static void
test_layout_known (void)
{
  const char *known[] = { "mozjs_102", "mozjs_115", "mozjs_128", "mozjs_140" };
  const char *unknown[] = { "mozjs_91", "mozjs_153", "mozjs_1280", "", "MOZJS_128" };

  for (guint i = 0; i < G_N_ELEMENTS (known); i++)
    {
      const LwJsLayout *layout = lw_gjs_layout_for (known[i]);

      g_assert_nonnull (layout);
      g_assert_cmpuint (layout->frame_size, ==, 40);
      g_assert_cmpuint (layout->flags, ==, 36);
    }
  for (guint i = 0; i < G_N_ELEMENTS (unknown); i++)
    g_assert_null (lw_gjs_layout_for (unknown[i]));
}

/* A fake engine: pushLabelFrame(), pop() and the destructor written to a
 * layout of frames of fake_frame_size bytes, flags at fake_flags, growing
 * the stack as SpiderMonkey does (4096 bytes' worth first). The stack is
 * {uint32_t capacity; Frame *frames; uint32_t stackPointer}. */
static guint fake_frame_size;
static guint fake_flags;
static guint fake_destroyed;

typedef struct
{
  uint32_t capacity;
  guint8  *frames;
  uint32_t stack_pointer;
} FakeStack;

static void
fake_push (void *stack, const char *label, const char *dynamic_string, void *sp,
           uint32_t category_pair, uint32_t flags)
{
  FakeStack *s = stack;
  guint8 *frame;
  uint32_t word = (category_pair << 16) | flags | 1;

  if (s->stack_pointer >= s->capacity)
    {
      guint8 *frames = g_malloc0 (4096);

      if (s->frames != NULL)
        memcpy (frames, s->frames, s->capacity * fake_frame_size);
      g_free (s->frames);
      s->frames = frames;
      s->capacity = 4096 / fake_frame_size;
    }
  frame = s->frames + s->stack_pointer * fake_frame_size;
  memcpy (frame, &label, 8);
  memcpy (frame + 8, &dynamic_string, 8);
  memcpy (frame + 16, &sp, 8);
  memcpy (frame + fake_flags, &word, 4);
  s->stack_pointer++;
}

static void
fake_pop (void *stack)
{
  ((FakeStack *) stack)->stack_pointer--;
}

static void
fake_destroy (void *stack)
{
  g_free (((FakeStack *) stack)->frames);
  fake_destroyed++;
}

static void
test_layout_probe (void)
{
  const LwJsLayout *layout = lw_gjs_layout_for ("mozjs_128");
  LwJsLayout moved;
  g_autofree char *why = NULL;

  g_assert_nonnull (layout);
  /* An engine laid out as known: accepted, its frames freed. */
  fake_frame_size = 40;
  fake_flags = 36;
  fake_destroyed = 0;
  g_assert_true (lw_gjs_check_layout (layout, fake_push, fake_pop, fake_destroy, &why));
  g_assert_null (why);
  g_assert_cmpuint (fake_destroyed, ==, 1);

  /* A release that adds a field (48-byte frames, flags at 40): refused
   * by the frame size, never destroyed. */
  fake_frame_size = 48;
  fake_flags = 40;
  g_assert_false (lw_gjs_check_layout (layout, fake_push, fake_pop, fake_destroy, &why));
  g_test_message ("48-byte frames: %s", why);
  g_assert_nonnull (strstr (why, "capacity"));
  g_assert_cmpuint (fake_destroyed, ==, 1);
  g_clear_pointer (&why, g_free);

  /* Same size, flags moved (to where realmID was): refused by the flags. */
  fake_frame_size = 40;
  fake_flags = 24;
  g_assert_false (lw_gjs_check_layout (layout, fake_push, fake_pop, fake_destroy, &why));
  g_test_message ("flags moved: %s", why);
  g_assert_nonnull (strstr (why, "flags"));
  g_clear_pointer (&why, g_free);

  /* A layout whose fields do not fit its frame: refused before any call. */
  moved = *layout;
  moved.flags = 40;
  g_assert_false (lw_gjs_check_layout (&moved, fake_push, fake_pop, fake_destroy, &why));
  g_assert_nonnull (strstr (why, "do not fit"));
  g_assert_cmpuint (fake_destroyed, ==, 1);
}

/* One 40-byte frame of the known layout. */
static void
put_frame (guint8 *raw, uintptr_t dynamic_string, uintptr_t sp_or_script, uint32_t flags)
{
  memset (raw, 0, 40);
  memcpy (raw + 8, &dynamic_string, 8);
  memcpy (raw + 16, &sp_or_script, 8);
  memcpy (raw + 36, &flags, 4);
}

static void
test_decode (void)
{
  const LwJsLayout *layout = lw_gjs_layout_for ("mozjs_140");
  guint8 raw[4 * 40];
  LwJsEntry entries[4];

  g_assert_nonnull (layout);
  put_frame (raw, 0, 0x7ffd0000, (0x2u << 16) | (1u << 1));            /* marker */
  put_frame (raw + 40, 0x1000, 0x5000, (0x7u << 16) | (1u << 2));     /* JS */
  put_frame (raw + 80, 0x2000, 0x7ffc0000, (0x9u << 16) | 1u | (1u << 7)); /* label, RELEVANT_FOR_JS */
  put_frame (raw + 120, 0x3000, 0x6000, (1u << 2) | (1u << 3) | (1u << 10)); /* JS, OSR, blinterp */
  g_assert_true (lw_gjs_decode_frames (layout, raw, sizeof raw, 4, entries));
  g_assert_cmpint (entries[0].kind, ==, LW_JS_ENTRY_MARKER);
  g_assert_cmphex (entries[0].value, ==, 0x7ffd0000);
  g_assert_cmpint (entries[1].kind, ==, LW_JS_ENTRY_FUNCTION);
  g_assert_cmphex (entries[1].value, ==, 0x1000);
  g_assert_cmpint (entries[2].kind, ==, LW_JS_ENTRY_LABEL);
  g_assert_cmpint (entries[3].kind, ==, LW_JS_ENTRY_FUNCTION);
  g_assert_cmphex (entries[3].value, ==, 0x3000);
  /* Went on in compiled code (JS_OSR): a compiled frame stands for it. */
  g_assert_false (entries[1].osr);
  g_assert_true (entries[3].osr);

  /* Shorter than the frames asked for. */
  g_assert_false (lw_gjs_decode_frames (layout, raw, sizeof raw - 1, 4, entries));
  /* Two kinds at once, or none. */
  put_frame (raw + 40, 0x1000, 0x5000, (1u << 1) | (1u << 2));
  g_assert_false (lw_gjs_decode_frames (layout, raw, sizeof raw, 4, entries));
  put_frame (raw + 40, 0x1000, 0x5000, 0x7u << 16);
  g_assert_false (lw_gjs_decode_frames (layout, raw, sizeof raw, 4, entries));
}

static void
test_jit_records (void)
{
  static const char inner[] = "jitHot (/home/u/app.js:22:15)", outer[] = "resource:///org/x/js/w.js:7:30";
  guint8 lang[64];
  LwJsJitFrame frames[4];
  gsize at = 0, full;

  g_assert_true (lw_gjs_jit_put (lang, sizeof lang, &at, 0x7ffd1000, 2, inner, strlen (inner)));
  g_assert_false (lw_gjs_jit_put (lang, sizeof lang, &at, 0x7ffd2000, 0, outer, strlen (outer)));  /* no room */
  full = at;
  g_assert_cmpuint (lw_gjs_jit_decode (lang, at, frames, G_N_ELEMENTS (frames)), ==, 1);
  g_assert_cmphex (frames[0].stack_address, ==, 0x7ffd1000);
  g_assert_cmpuint (frames[0].kind, ==, 2);
  g_assert_cmpmem (frames[0].label, frames[0].label_len, inner, strlen (inner));

  {
    guint8 big[256];

    at = 0;
    g_assert_true (lw_gjs_jit_put (big, sizeof big, &at, 0x7ffd1000, 2, inner, strlen (inner)));
    g_assert_true (lw_gjs_jit_put (big, sizeof big, &at, 0x7ffd2000, 0, outer, strlen (outer)));
    g_assert_cmpuint (lw_gjs_jit_decode (big, at, frames, G_N_ELEMENTS (frames)), ==, 2);
    g_assert_cmpmem (frames[1].label, frames[1].label_len, outer, strlen (outer));
    g_assert_cmpuint (frames[1].kind, ==, 0);
    /* Room for one only; the second cut short. */
    g_assert_cmpuint (lw_gjs_jit_decode (big, at, frames, 1), ==, 1);
    g_assert_cmpuint (lw_gjs_jit_decode (big, at - 1, frames, G_N_ELEMENTS (frames)), ==, 1);
    /* A kind that is not the JIT's (wasm) ends them. */
    big[full + 8] = 3;
    g_assert_cmpuint (lw_gjs_jit_decode (big, at, frames, G_N_ELEMENTS (frames)), ==, 1);
    /* A length past the bytes, or none. */
    big[8] = 2;
    big[9] = 0xff, big[10] = 0xff;
    g_assert_cmpuint (lw_gjs_jit_decode (big, at, frames, G_N_ELEMENTS (frames)), ==, 0);
    big[9] = 0, big[10] = 0;
    g_assert_cmpuint (lw_gjs_jit_decode (big, at, frames, G_N_ELEMENTS (frames)), ==, 0);
  }
  g_assert_cmpuint (lw_gjs_jit_decode (lang, 0, frames, G_N_ELEMENTS (frames)), ==, 0);
}

/* A stack read after the capture, checked against the captured stack.
 * The captured stack, innermost first: GJS's C (a call out of JavaScript),
 * the JIT code of a handler, the engine, the handler's entry (frame 5),
 * GLib's dispatch, JIT code of the script's top level, the engine, the
 * script's entry (frame 9). */
static void
test_read_fits (void)
{
  const guint8 kinds[] = {
    LW_JS_NATIVE_OTHER, LW_JS_NATIVE_JIT, LW_JS_NATIVE_JIT, LW_JS_NATIVE_ENGINE, LW_JS_NATIVE_ENGINE,
    LW_JS_NATIVE_ENGINE, LW_JS_NATIVE_OTHER, LW_JS_NATIVE_OTHER, LW_JS_NATIVE_JIT, LW_JS_NATIVE_ENGINE,
    LW_JS_NATIVE_OTHER,
  };
  uintptr_t sps[G_N_ELEMENTS (kinds)];
  guint n = G_N_ELEMENTS (kinds);

  for (guint k = 0; k < n; k++)
    sps[k] = 0x7ffd0000 + 0x100 * k;
  /* The handler's entry is the innermost one read: the stack captured. */
  g_assert_true (lw_gjs_read_fits (kinds, sps, n, 5, sps[5] + 8));
  /* Only the script's entry read: the handler returned after the capture,
   * its JIT code inward of a call out of the engine has no entry. */
  g_assert_false (lw_gjs_read_fits (kinds, sps, n, 9, sps[9] + 8));
  /* An entry deeper than the captured stack: made after the capture. */
  g_assert_false (lw_gjs_read_fits (kinds, sps, n, -1, sps[0] - 64));
  /* An entry not on the walked stack, no stack pointers: nothing to tell. */
  g_assert_true (lw_gjs_read_fits (kinds, sps, n, -1, sps[n - 1] + 0x1000));
  g_assert_true (lw_gjs_read_fits (kinds, NULL, n, -1, 0x1000));
  /* Generated code run from the engine itself, without a call out: fits. */
  g_assert_true (lw_gjs_read_fits (kinds + 1, sps + 1, n - 1, 4, sps[5] + 8));
}

static int
find_mozjs (struct dl_phdr_info *info, size_t size, void *data)
{
  const char *name = strrchr (info->dlpi_name, '/');
  guint *release = data;

  name = name != NULL ? name + 1 : info->dlpi_name;
  if (g_str_has_prefix (name, "libmozjs-"))
    *release = (guint) g_ascii_strtoull (name + strlen ("libmozjs-"), NULL, 10);
  return *release != 0;
}

/* The installed GJS's SpiderMonkey: found under its release's version
 * node, its layout checked by the probe. */
static void
test_engine_installed (void)
{
  void *gjs = dlopen ("libgjs.so.0", RTLD_NOW | RTLD_GLOBAL);
  g_autofree char *why = NULL, *node = NULL;
  LwJsEngine engine = { 0 };
  guint release = 0;

  if (gjs == NULL)
    {
      g_test_skip ("libgjs.so.0 is not installed (package libgjs0g or gjs)");
      return;
    }
  dl_iterate_phdr (find_mozjs, &release);
  g_assert_cmpuint (release, !=, 0);
  node = g_strdup_printf ("mozjs_%u", release);
  g_test_message ("GJS runs on SpiderMonkey %u", release);
  if (!lw_gjs_find_engine (&engine, &why))
    g_error ("SpiderMonkey %u: %s", release, why);
  g_assert_null (why);
  g_assert_cmpstr (engine.node, ==, node);
  g_assert_true (engine.layout == lw_gjs_layout_for (node));
  g_assert_nonnull (engine.set_stack);
  g_assert_nonnull (engine.enable_stack);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  lw_modules_init ();
  g_test_add_func ("/gjs/parse-label", test_parse_label);
  g_test_add_func ("/gjs/read-string", test_read_string);
  g_test_add_func ("/gjs/layout/known", test_layout_known);
  g_test_add_func ("/gjs/layout/probe", test_layout_probe);
  g_test_add_func ("/gjs/decode", test_decode);
  g_test_add_func ("/gjs/read-fits", test_read_fits);
  g_test_add_func ("/gjs/jit/records", test_jit_records);
  g_test_add_func ("/gjs/engine/installed", test_engine_installed);
  return g_test_run ();
}
