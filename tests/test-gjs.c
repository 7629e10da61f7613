/* test-gjs.c: SpiderMonkey's descriptions of JavaScript functions, parsed
 *
 * The profiling stack describes each function as "name (file:line:col)",
 * "file:line:col" (anonymous) or "file" (a script's top level); GJS's
 * module files are often resource:// URIs, whose colons must not be taken
 * for the line's. Anything else is refused, never half-read.
 */
#include <glib.h>

#include "lw-gjs.h"

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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gjs/parse-label", test_parse_label);
  return g_test_run ();
}
