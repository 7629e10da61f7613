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
 */
#include <glib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lw-gjs.h"
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gjs/parse-label", test_parse_label);
  g_test_add_func ("/gjs/read-string", test_read_string);
  return g_test_run ();
}
