/* test-attribution: whose code a frame is, and what a lag's fingerprint
 * keys on (lib/report/lw-report-program.c), on stacks of known shape.
 *
 * - /attribution/rule/...: the program is its executable and the libraries
 *   it ships (its directory, its RUNPATH, a directory named after it);
 *   GTK, cairo, libz and every other system library are the platform, as
 *   are an interpreter's executable and standard library;
 * - /attribution/rule/no-descriptors: with every descriptor taken, the
 *   executable cannot be read for its RUNPATH: the frames are judged
 *   without it, which is said once, and with it once a descriptor is free;
 * - /attribution/fingerprint/leaves: one program function spinning
 *   through different platform leaves (libc, libm, libz, cairo) is one
 *   fingerprint; another callback is another;
 * - /attribution/fingerprint/python-lines: a Python loop whose samples
 *   fall on different lines, in two runs where a different single stack
 *   got the most samples, is named and fingerprinted after the loop's
 *   function both times;
 * - /attribution/cause/js-cut: a JavaScript sample that lost its outer
 *   frames does not become the report's stack over a whole one;
 * - /attribution/cause/spread: the cause is chosen from every stack, not
 *   only from those a report keeps.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib.h>
#include <unistd.h>

#include "../take-descriptors.h"
#include "lw-report.h"
#include "lw-report-cause.h"
#include "lw-report-program.h"

#define SYSLIB "/usr/lib/x86_64-linux-gnu/"

typedef struct
{
  const char *module;
  const char *symbol;
  const char *lang;   /* NULL: native */
  const char *file;
  gboolean    program;
} Case;

/* Main thread. Checks lw_report_frame_is_program() on @cases. */
static void
check_cases (const Case *cases, gsize n)
{
  for (gsize i = 0; i < n; i++)
    {
      LwFrame frame = { .module = cases[i].module, .symbol = (char *) cases[i].symbol,
                        .lang = cases[i].lang, .file = (char *) cases[i].file };

      g_test_message ("%s %s: %s", cases[i].module, cases[i].symbol, cases[i].program ? "program" : "platform");
      g_assert_cmpint (lw_report_frame_is_program (&frame), ==, cases[i].program);
    }
}

/* A program in /opt with private libraries through its RUNPATH, a
 * directory named after it, and every kind of system library. */
static void
test_rule_native (void)
{
  static const Case cases[] = {
    { "/opt/editor/bin/editor", "main", NULL, NULL, TRUE },
    { "/opt/editor/bin/libnear.so", "near_fn", NULL, NULL, TRUE },
    /* RUNPATH $ORIGIN/../lib/editor, and the loader's unnormalized name. */
    { "/opt/editor/lib/editor/libcanvas.so.1", "canvas_draw", NULL, NULL, TRUE },
    { "/opt/editor/bin/../lib/editor/libcanvas.so.1", "canvas_draw", NULL, NULL, TRUE },
    { "/opt/editor/lib/other/libx.so", "x", NULL, NULL, FALSE },
    /* RUNPATH /usr/lib/x86_64-linux-gnu: a system directory adds nothing. */
    { SYSLIB "libgtk-4.so.1", "gtk_widget_snapshot", NULL, NULL, FALSE },
    { SYSLIB "libgdk_pixbuf-2.0.so.0", "gdk_pixbuf_scale", NULL, NULL, FALSE },
    { SYSLIB "libcairo.so.2", "cairo_save", NULL, NULL, FALSE },
    { SYSLIB "libpixman-1.so.0", "pixman_fill", NULL, NULL, FALSE },
    { SYSLIB "libxcb.so.1", "xcb_wait_for_reply64", NULL, NULL, FALSE },
    { SYSLIB "libgtop-2.0.so.11", "glibtop_get_proclist", NULL, NULL, FALSE },
    { SYSLIB "libsystemd.so.0", "sd_bus_call", NULL, NULL, FALSE },
    { SYSLIB "libglibmm-2.68.so.1", "Glib::ustring::ustring()", NULL, NULL, FALSE },
    { "/lib/x86_64-linux-gnu/libz.so.1", "deflate", NULL, NULL, FALSE },
    /* Private directories named after the program. */
    { SYSLIB "editor/libeditor-core.so", "core_load", NULL, NULL, TRUE },
    { SYSLIB "editor/plugins/libspell.so", "spell_check", NULL, NULL, TRUE },
    { "/lib/x86_64-linux-gnu/editor/libeditor-core.so", "core_load", NULL, NULL, TRUE },
    { "/usr/lib/editor/libeditor-core.so", "core_load", NULL, NULL, TRUE },
    { "/usr/libexec/editor/helper", "helper_main", NULL, NULL, TRUE },
    { SYSLIB "editor-extra/libx.so", "x", NULL, NULL, FALSE },
    /* Shipped, but never written by the program. */
    { "/opt/editor/lib/editor/libstdc++.so.6", "operator new(unsigned long)", NULL, NULL, FALSE },
    { "/opt/editor/bin/editor", "std::vector<int, std::allocator<int> >::push_back(int const&)", NULL, NULL, FALSE },
    { "/opt/editor/lib/editor/libglib-2.0.so.0", "g_main_context_dispatch", NULL, NULL, FALSE },
    { "[vdso]", "__vdso_clock_gettime", NULL, NULL, FALSE },
    /* Replaced on disk while it runs. */
    { "/opt/editor/bin/editor (deleted)", "main", NULL, NULL, TRUE },
    { NULL, NULL, NULL, NULL, FALSE },
  };

  lw_report_program_set_executable ("/opt/editor/bin/editor",
                                    "$ORIGIN/../lib/editor:" SYSLIB ":relative/dir:${ORIGIN}/$ORIGIN");
  check_cases (cases, G_N_ELEMENTS (cases));
  lw_report_program_set_executable (NULL, NULL);
}

/* A program in /usr/bin: its directory is everybody's. */
static void
test_rule_system_dir (void)
{
  static const Case cases[] = {
    { "/usr/bin/gnome-system-monitor", "cb_update_tree", NULL, NULL, TRUE },
    { "/usr/bin/gnome-calculator", "main", NULL, NULL, FALSE },
    { "/usr/bin/gnome-system-monitor (deleted)", "cb_update_tree", NULL, NULL, TRUE },
    { SYSLIB "gnome-system-monitor/libgsm.so", "gsm_x", NULL, NULL, TRUE },
    { SYSLIB "libgtop-2.0.so.11", "glibtop_get_proc_state", NULL, NULL, FALSE },
  };

  lw_report_program_set_executable ("/usr/bin/gnome-system-monitor", "");
  check_cases (cases, G_N_ELEMENTS (cases));
  lw_report_program_set_executable (NULL, NULL);
}

/* An interpreter runs its script: no native code is the program's; the
 * standard library, the platform's bindings and GJS's modules are not. */
static void
test_rule_interpreted (void)
{
  static const Case python[] = {
    { "/usr/bin/python3.11", "main", NULL, NULL, FALSE },
    { SYSLIB "libpython3.11.so.1.0", "gc_collect_main", NULL, NULL, FALSE },
    { "/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so", "scanstring_unicode", NULL, NULL, FALSE },
    { "/srv/app/app.py", "handler", "python", "/srv/app/app.py", TRUE },
    { "/usr/lib/python3/dist-packages/meld/filediff.py", "FileDiff.refresh", "python",
      "/usr/lib/python3/dist-packages/meld/filediff.py", TRUE },
    { "/home/u/venv/lib/python3.12/site-packages/requests/api.py", "get", "python",
      "/home/u/venv/lib/python3.12/site-packages/requests/api.py", TRUE },
    { "/usr/lib/python3.11/json/decoder.py", "JSONDecoder.raw_decode", "python",
      "/usr/lib/python3.11/json/decoder.py", FALSE },
    { "/root/.pyenv/versions/3.12.1/lib/python3.12/threading.py", "Thread.run", "python",
      "/root/.pyenv/versions/3.12.1/lib/python3.12/threading.py", FALSE },
    { "<frozen importlib._bootstrap>", "_find_and_load", "python", "<frozen importlib._bootstrap>", FALSE },
    { "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", "MainLoop.run", "python",
      "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", FALSE },
    { "/usr/lib/python3/dist-packages/gi/__init__.py", "require_version", "python",
      "/usr/lib/python3/dist-packages/gi/__init__.py", FALSE },
    { "/usr/lib/python3/dist-packages/gio/x.py", "f", "python", "/usr/lib/python3/dist-packages/gio/x.py", TRUE },
    { "[jit]", "Panel.refresh", "javascript", "/usr/share/app/js/panel.js", TRUE },
    { "[jit]", "_init", "javascript", "resource:///org/gnome/gjs/modules/core/overrides/GObject.js", FALSE },
    { "[jit]", "Main.start", "javascript", "resource:///org/gnome/shell/ui/main.js", TRUE },
    { "[jit]", "sort", "javascript", "self-hosted", FALSE },
  };

  lw_report_program_set_executable ("/usr/bin/python3.11", "");
  check_cases (python, G_N_ELEMENTS (python));
  lw_report_program_set_executable ("/usr/bin/gjs-console", "");
  {
    LwFrame gjs = { .module = "/usr/bin/gjs-console", .symbol = (char *) "main" };

    g_assert_false (lw_report_frame_is_program (&gjs));
  }
  lw_report_program_set_executable (NULL, NULL);
}

/* This test's own executable, read from /proc: its code is the program's,
 * GLib's is not. */
static void
test_rule_self (void)
{
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *dir = g_path_get_dirname (exe);
  g_autofree char *beside = g_build_filename (dir, "libbeside.so", NULL);
  LwFrame own = { .module = exe, .symbol = (char *) "main" };
  LwFrame near = { .module = beside, .symbol = (char *) "f" };
  LwFrame glib = { .module = "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", .symbol = (char *) "g_main_loop_run" };

  lw_report_program_set_executable (NULL, NULL);
  g_assert_true (lw_report_frame_is_program (&own));
  g_assert_true (lw_report_frame_is_program (&near));
  g_assert_false (lw_report_frame_is_program (&glib));
}

/* This test's executable has a RUNPATH outside its directory (its
 * meson.build gives it one): a library there is the program's. Read while
 * no descriptor is free, the executable's RUNPATH is unknown. */
static void
test_rule_no_descriptors (void)
{
  if (g_test_subprocess ())
    {
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autofree char *dir = g_path_get_dirname (exe);
      g_autofree char *private = g_build_filename (dir, "..", "attribution-private", "libprivate.so", NULL);
      g_autoptr(GArray) taken = g_array_new (FALSE, FALSE, sizeof (int));
      LwFrame own = { .module = exe, .symbol = (char *) "main" };
      LwFrame lib = { .module = private, .symbol = (char *) "f" };
      LwFrame glib = { .module = "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", .symbol = (char *) "g_main_loop_run" };

      lw_report_program_set_executable (NULL, NULL);
      take_every_descriptor (taken);
      for (int round = 0; round < 2; round++)
        {
          g_assert_true (lw_report_frame_is_program (&own));
          g_assert_false (lw_report_frame_is_program (&lib));
          g_assert_false (lw_report_frame_is_program (&glib));
        }
      for (guint i = 0; i < taken->len; i++)
        close (g_array_index (taken, int, i));
      g_assert_true (lw_report_frame_is_program (&own));
      g_assert_true (lw_report_frame_is_program (&lib));
      g_assert_false (lw_report_frame_is_program (&glib));
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*lagwatch: cannot read the program's executable (*Too many open files): "
                             "until it can, libraries found through its RUNPATH count as the platform's, "
                             "not the program's\n");
  /* Said once, for the two rounds. */
  g_test_trap_assert_stderr_unmatched ("*RUNPATH*RUNPATH*");
}

typedef struct
{
  const char *module;
  const char *symbol;
  const char *lang;
  guint       line;
} Frame;

/* Main thread. @n frames (innermost first) into @frames. */
static void
fill_frames (LwFrame **frames, guint *n_frames, const Frame *from, guint n)
{
  *frames = g_new0 (LwFrame, n);
  *n_frames = n;
  for (guint i = 0; i < n; i++)
    {
      LwFrame *frame = &(*frames)[i];

      frame->ip = 0x7f0000001000 + 16 * i + 4096 * from[i].line;
      frame->module = g_intern_string (from[i].module);
      frame->module_offset = frame->ip - 0x7f0000000000;
      frame->symbol = g_strdup (from[i].symbol);
      frame->lang = from[i].lang;
      if (from[i].lang != NULL)
        {
          frame->file = g_strdup (from[i].module);
          frame->line = from[i].line;
        }
    }
}

#define APP "/opt/editor/bin/editor"
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define GLIB "/lib/x86_64-linux-gnu/libglib-2.0.so.0"

/* Platform functions a program function spins through: the leaves of its
 * samples. */
static const char *const leaves[][2] = {
  { LIBC, "memmove" },
  { "/lib/x86_64-linux-gnu/libm.so.6", "__sin_fma" },
  { "/lib/x86_64-linux-gnu/libz.so.1", "crc32_z" },
  { SYSLIB "libcairo.so.2", "cairo_save" },
  { SYSLIB "libpixman-1.so.0", "pixman_fill" },
  { LIBC, "strlen" },
};

/* A report whose stack is @leaf under the program's churn(), run by
 * @callback, from an unnamed source (its callback recorded) or, with
 * @source, a source of that name (its callback only on the stack). */
static LagWatchReport *
leaf_report (const char *leaf_module, const char *leaf, const char *callback, const char *source)
{
  LagWatchReport *report = lw_report_new ();
  const Frame frames[] = {
    { leaf_module, leaf, NULL, 0 },
    { APP, "churn", NULL, 0 },
    { APP, callback, NULL, 0 },
    { GLIB, "g_main_context_dispatch", NULL, 0 },
    { APP, "main", NULL, 0 },
  };

  fill_frames (&report->frames, &report->n_frames, frames, G_N_ELEMENTS (frames));
  if (source != NULL)
    report->source = g_strdup (source);
  else
    report->source_callback = g_strdup (callback);
  lw_report_compute_fingerprints (report);
  return report;
}

/* One program function spinning through different platform leaves is one
 * cause; the same function under another callback is another. */
static void
test_fingerprint_leaves (void)
{
  LagWatchReport *first, *other;

  lw_report_program_set_executable (APP, "");
  first = leaf_report (leaves[0][0], leaves[0][1], "on_tick", NULL);
  for (gsize i = 1; i < G_N_ELEMENTS (leaves); i++)
    {
      LagWatchReport *report = leaf_report (leaves[i][0], leaves[i][1], "on_tick", i % 2 ? "ticker" : NULL);

      g_test_message ("leaf %s: %s", leaves[i][1], report->fingerprint);
      g_assert_cmpstr (report->fingerprint, ==, first->fingerprint);
      g_assert_cmpstr (report->fingerprint2, ==, first->fingerprint2);
      g_assert_cmpstr (lw_report_program_frame (report->frames, report->n_frames)->symbol, ==, "churn");
      lagwatch_report_unref (report);
    }
  other = leaf_report (leaves[0][0], leaves[0][1], "on_idle", NULL);
  g_assert_cmpstr (other->fingerprint, !=, first->fingerprint);
  g_assert_cmpstr (other->fingerprint2, ==, first->fingerprint2);
  lagwatch_report_unref (other);
  /* Named sources: the callback is on the stack. */
  other = leaf_report (leaves[0][0], leaves[0][1], "on_idle", "ticker");
  g_assert_cmpstr (other->fingerprint, !=, first->fingerprint);
  g_assert_cmpstr (other->fingerprint2, ==, first->fingerprint2);
  lagwatch_report_unref (other);
  lagwatch_report_unref (first);
  lw_report_program_set_executable (NULL, NULL);
}

/* The report's own stack cut before GLib's dispatch (the unwind stopped
 * in code without frame pointers), a lighter stack of the same lag whole:
 * the callback, and so the fingerprint, is the whole stack's. Seen under
 * the launcher on Debian 12's GJS: the same handler run twice got two
 * fingerprints, one keyed on an empty callback. */
static void
test_fingerprint_cut_stack (void)
{
  const Frame cut[] = {
    { APP, "churn", NULL, 0 },
    { APP, "on_tick", NULL, 0 },
  };
  const Frame whole[] = {
    { APP, "churn", NULL, 0 },
    { APP, "on_tick", NULL, 0 },
    { GLIB, "g_main_context_dispatch", NULL, 0 },
    { APP, "main", NULL, 0 },
  };
  LagWatchReport *first, *report = lw_report_new ();

  lw_report_program_set_executable (APP, "");
  first = leaf_report (LIBC, "memmove", "on_tick", "ticker");
  fill_frames (&report->frames, &report->n_frames, cut, G_N_ELEMENTS (cut));
  report->n_stacks = 2;
  report->stacks = g_new0 (LwReportStack, 2);
  report->stacks[0].samples = 5;
  report->stacks[0].truncated = TRUE;
  fill_frames (&report->stacks[0].frames, &report->stacks[0].n_frames, cut, G_N_ELEMENTS (cut));
  report->stacks[1].samples = 3;
  fill_frames (&report->stacks[1].frames, &report->stacks[1].n_frames, whole, G_N_ELEMENTS (whole));
  report->source = g_strdup ("ticker");
  lw_report_compute_fingerprints (report);
  g_assert_cmpstr (report->fingerprint, ==, first->fingerprint);
  lagwatch_report_unref (report);
  lagwatch_report_unref (first);
  lw_report_program_set_executable (NULL, NULL);
}

#define PYTHON "/usr/bin/python3.11"
#define SCRIPT "/srv/app/app.py"

/* A sampled stack of the Python loop: in loop() at @line, or in its
 * generator expression when @genexpr; under interpreter frames that
 * differ with what the line calls. */
static void
python_stack (LwReportStack *stack, guint samples, guint line, gboolean genexpr)
{
  const Frame in_loop[] = {
    { PYTHON, line % 2 ? "builtin_sum" : "_PyEval_EvalFrameDefault", NULL, 0 },
    { SCRIPT, "loop", "python", line },
    { "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", "MainLoop.run", "python", 497 },
    { SCRIPT, "main", "python", 80 },
    { PYTHON, "main", NULL, 0 },
  };
  const Frame in_genexpr[] = {
    { PYTHON, "_PyEval_EvalFrameDefault", NULL, 0 },
    { SCRIPT, "<genexpr>", "python", 67 },
    { SCRIPT, "loop", "python", 67 },
    { "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", "MainLoop.run", "python", 497 },
    { SCRIPT, "main", "python", 80 },
    { PYTHON, "main", NULL, 0 },
  };

  stack->samples = samples;
  if (genexpr)
    fill_frames (&stack->frames, &stack->n_frames, in_genexpr, G_N_ELEMENTS (in_genexpr));
  else
    fill_frames (&stack->frames, &stack->n_frames, in_loop, G_N_ELEMENTS (in_loop));
}

/* A report of the loop's freeze whose stacks are, heaviest first, the
 * generator expression (@genexpr samples) and loop() at lines @first
 * onwards (@per_line samples each), as the reporting thread has them
 * once named: the report's stack is a copy of the heaviest. */
static LagWatchReport *
python_report (guint genexpr, guint first, guint per_line)
{
  LagWatchReport *report = lw_report_new ();
  guint n = 0;

  report->stacks = g_new0 (LwReportStack, 6);
  if (genexpr > per_line)
    python_stack (&report->stacks[n++], genexpr, 67, TRUE);
  for (guint i = 0; i < 4; i++)
    python_stack (&report->stacks[n++], per_line, first + i, FALSE);
  if (genexpr <= per_line)
    python_stack (&report->stacks[n++], genexpr, 67, TRUE);
  report->n_stacks = n;
  report->n_samples = genexpr + 4 * per_line;
  report->frames = g_new0 (LwFrame, report->stacks[0].n_frames);
  report->n_frames = report->stacks[0].n_frames;
  for (guint i = 0; i < report->n_frames; i++)
    {
      report->frames[i] = report->stacks[0].frames[i];
      report->frames[i].symbol = g_strdup (report->stacks[0].frames[i].symbol);
      report->frames[i].file = g_strdup (report->stacks[0].frames[i].file);
    }
  report->source_callback = g_strdup ("loop");
  lw_report_choose_cause_stack (report, G_MAXUINT);
  lw_report_compute_fingerprints (report);
  return report;
}

/* The same freeze sampled at different lines: one cause, named after the
 * loop's function, not after whichever stack got one sample more. */
static void
test_fingerprint_python_lines (void)
{
  LagWatchReport *a, *b, *c;
  const LwFrame *named;

  lw_report_program_set_executable (PYTHON, "");
  /* The generator expression is the heaviest single stack... */
  a = python_report (7, 40, 5);
  /* ...or one line of the loop is, at other lines. */
  b = python_report (3, 52, 6);
  c = python_report (0, 10, 2);
  named = lw_report_program_frame (a->frames, a->n_frames);
  g_assert_nonnull (named);
  g_assert_cmpstr (named->symbol, ==, "loop");
  g_assert_cmpstr (a->stacks[0].frames[1].symbol, ==, "loop");
  g_assert_cmpuint (a->stacks[0].samples, ==, 5);
  g_assert_cmpstr (a->fingerprint, ==, b->fingerprint);
  g_assert_cmpstr (a->fingerprint, ==, c->fingerprint);
  g_assert_cmpstr (a->fingerprint2, ==, b->fingerprint2);
  lagwatch_report_unref (a);
  lagwatch_report_unref (b);
  lagwatch_report_unref (c);
  lw_report_program_set_executable (NULL, NULL);
}

/* A lag of the program's churn(), its samples one each in the six
 * platform leaves, after a spike() of five samples in one stack: the heaviest
 * stack is spike()'s, the heaviest function churn(). A report keeps five
 * stacks; the cause is chosen from all seven, so it is churn(), its stack
 * first among the five kept. Seen in a Python loop over twenty lines under
 * load: samples spread over many stacks, the five kept said otherwise. */
static void
test_cause_spread (void)
{
  const Frame spike[] = {
    { APP, "spike", NULL, 0 },
    { APP, "on_tick", NULL, 0 },
    { GLIB, "g_main_context_dispatch", NULL, 0 },
    { APP, "main", NULL, 0 },
  };
  LagWatchReport *report = lw_report_new ();

  lw_report_program_set_executable (APP, "");
  report->n_stacks = 1 + G_N_ELEMENTS (leaves);
  report->stacks = g_new0 (LwReportStack, report->n_stacks);
  report->stacks[0].samples = 5;
  fill_frames (&report->stacks[0].frames, &report->stacks[0].n_frames, spike, G_N_ELEMENTS (spike));
  for (guint i = 0; i < G_N_ELEMENTS (leaves); i++)
    {
      const Frame churn[] = {
        { leaves[i][0], leaves[i][1], NULL, 0 },
        { APP, "churn", NULL, 0 },
        { APP, "on_tick", NULL, 0 },
        { GLIB, "g_main_context_dispatch", NULL, 0 },
        { APP, "main", NULL, 0 },
      };

      report->stacks[1 + i].samples = 1;
      fill_frames (&report->stacks[1 + i].frames, &report->stacks[1 + i].n_frames, churn, G_N_ELEMENTS (churn));
    }
  fill_frames (&report->frames, &report->n_frames, spike, G_N_ELEMENTS (spike));
  report->n_samples = 5 + G_N_ELEMENTS (leaves);
  lw_report_choose_cause_stack (report, 5);
  g_assert_cmpuint (report->n_stacks, ==, 5);
  g_assert_cmpstr (lw_report_program_frame (report->frames, report->n_frames)->symbol, ==, "churn");
  g_assert_cmpstr (lw_report_program_frame (report->stacks[0].frames, report->stacks[0].n_frames)->symbol, ==,
                   "churn");
  g_assert_cmpstr (report->stacks[1].frames[0].symbol, ==, "spike");
  lagwatch_report_unref (report);
  lw_report_program_set_executable (NULL, NULL);
}

#define GJS "/usr/bin/gjs-console"
#define JS "/srv/app/app.js"

/* A GJS report of spin() (compiled, at @line) under the two stacks
 * @first and @second (@n1 and @n2 frames), @w1 and @w2 samples: the
 * index, in the stacks as given, of the one lw_report_choose_cause_stack()
 * makes the report's. */
static int
js_cause (const Frame *first, guint n1, guint w1, const Frame *second, guint n2, guint w2)
{
  LagWatchReport *report = lw_report_new ();
  int chosen;

  report->n_stacks = 2;
  report->stacks = g_new0 (LwReportStack, 2);
  report->stacks[0].samples = w1;
  fill_frames (&report->stacks[0].frames, &report->stacks[0].n_frames, first, n1);
  report->stacks[1].samples = w2;
  fill_frames (&report->stacks[1].frames, &report->stacks[1].n_frames, second, n2);
  fill_frames (&report->frames, &report->n_frames, first, n1);
  lw_report_choose_cause_stack (report, G_MAXUINT);
  /* The stacks differ in length: the report's own tells which it is. */
  g_assert_cmpuint (n1, !=, n2);
  g_assert_true (report->n_frames == n1 || report->n_frames == n2);
  chosen = report->n_frames == n1 ? 0 : 1;
  lagwatch_report_unref (report);
  return chosen;
}

/* A JavaScript sample whose outer frames were not read (only the compiled
 * function the signal handler took) is heavier than the whole one: the
 * report's stack is the whole one, naming the handler. A lighter stack of
 * the same function under another handler is another path, not a cut
 * copy: the heavier stack stays. Seen on Debian 12's GJS as an
 * unprivileged user: the report named jsSpinFor alone. */
static void
test_cause_js_cut (void)
{
  const Frame cut[] = {
    { "[jit]", "spin", "javascript", 9 },
    { GLIB, "g_main_context_dispatch", NULL, 0 },
    { GJS, "main", NULL, 0 },
  };
  const Frame whole[] = {
    { "[jit]", "spin", "javascript", 9 },
    { "[jit]", "onTimeout", "javascript", 17 },
    { GLIB, "g_main_context_dispatch", NULL, 0 },
    { "[jit]", "(top level)", "javascript", 0 },
    { GJS, "main", NULL, 0 },
  };
  const Frame other[] = {
    { "[jit]", "spin", "javascript", 9 },
    { "[jit]", "onIdle", "javascript", 30 },
    { "[jit]", "refresh", "javascript", 40 },
    { GLIB, "g_main_context_dispatch", NULL, 0 },
    { "[jit]", "(top level)", "javascript", 0 },
    { GJS, "main", NULL, 0 },
  };

  lw_report_program_set_executable (GJS, "");
  g_assert_cmpint (js_cause (cut, G_N_ELEMENTS (cut), 5, whole, G_N_ELEMENTS (whole), 3), ==, 1);
  g_assert_cmpint (js_cause (whole, G_N_ELEMENTS (whole), 5, cut, G_N_ELEMENTS (cut), 3), ==, 0);
  g_assert_cmpint (js_cause (whole, G_N_ELEMENTS (whole), 5, other, G_N_ELEMENTS (other), 3), ==, 0);
  g_assert_cmpint (js_cause (other, G_N_ELEMENTS (other), 5, whole, G_N_ELEMENTS (whole), 3), ==, 0);
  lw_report_program_set_executable (NULL, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/attribution/rule/native", test_rule_native);
  g_test_add_func ("/attribution/rule/system-dir", test_rule_system_dir);
  g_test_add_func ("/attribution/rule/interpreted", test_rule_interpreted);
  g_test_add_func ("/attribution/rule/self", test_rule_self);
  g_test_add_func ("/attribution/rule/no-descriptors", test_rule_no_descriptors);
  g_test_add_func ("/attribution/fingerprint/leaves", test_fingerprint_leaves);
  g_test_add_func ("/attribution/fingerprint/python-lines", test_fingerprint_python_lines);
  g_test_add_func ("/attribution/fingerprint/cut-stack", test_fingerprint_cut_stack);
  g_test_add_func ("/attribution/cause/js-cut", test_cause_js_cut);
  g_test_add_func ("/attribution/cause/spread", test_cause_spread);
  return g_test_run ();
}
