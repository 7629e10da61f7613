/* program-frame-records OUT.jsonl: lag records, written by the library, of
 * stacks that take each branch of the program-frame rule
 * (lw_report_frame_is_program_in()): C++ standard library frames inlined
 * into the program or in libstdc++, CPython's C API, [jit] code under
 * SpiderMonkey, GJS and libgirepository, PyGObject's extension, Python and JavaScript frames over native ones, the
 * sanitizer runtimes, unnamed frames, no program frame at all, the
 * program's private libraries (its RUNPATH, a directory named after it)
 * under GTK, cairo and pixman, the interpreter's standard library and
 * GJS's own modules. The program is PROGRAM, with RUNPATH
 * "$ORIGIN/../lib/private".
 *
 * Writes one JSON record per stack to OUT.jsonl, as the JSON sink does, and
 * on stdout one line per record: "fingerprint<TAB>case<TAB>label", the
 * label the summary's "innermost program frame" column prints for it.
 * test-program-frame.py reads both and checks that lagwatch-report names
 * each cause as the library does, and that the label is the known answer.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdio.h>

#include "lw-report.h"
#include "lw-report-cause.h"
#include "lw-report-program.h"
#include "lw-report-text.h"

#define PROGRAM "/opt/app/bin/editor"
#define LIBC    "/lib/x86_64-linux-gnu/libc.so.6"
#define GLIB    "/lib/x86_64-linux-gnu/libglib-2.0.so.0"
#define FFI     "/lib/x86_64-linux-gnu/libffi.so.8"
#define MOZJS   "/lib/x86_64-linux-gnu/libmozjs-102.so.0"
#define GJS     "/lib/x86_64-linux-gnu/libgjs.so.0"
#define PYTHON  "/usr/bin/python3.11"
#define SYSLIB  "/usr/lib/x86_64-linux-gnu/"
#define MAX_FRAMES 8

typedef struct
{
  const char *module;
  const char *symbol;   /* NULL: unnamed */
  const char *lang;     /* NULL: native */
  const char *file;
  guint       line;
  gboolean    inlined;
} Frame;

typedef struct
{
  const char *name;
  Frame       frames[MAX_FRAMES];  /* innermost first, ended by a NULL module */
} Case;

static const Case cases[] = {
  { "c++ std::sort inlined into the program's method", {
      { PROGRAM, "void std::__introsort_loop<int*, long, __gnu_cxx::__ops::_Iter_less_iter>"
                 "(int*, int*, long, __gnu_cxx::__ops::_Iter_less_iter)", NULL, "/usr/include/c++/12/bits/stl_algo.h", 1937, TRUE },
      { PROGRAM, "__gnu_cxx::__ops::_Iter_less_iter::operator()<int*, int*>(int*, int*) const", NULL, NULL, 0, TRUE },
      { PROGRAM, "Sorter<int>::sort_many(long)", NULL, "/src/sorter.cpp", 38, FALSE },
      { PROGRAM, "lag_in_sort(void*)", NULL, "/src/sorter.cpp", 50, FALSE },
      { GLIB, "g_main_context_dispatch", NULL, NULL, 0, FALSE } } },
  { "c++ runtime modules", {
      { LIBC, "malloc", NULL, NULL, 0, FALSE },
      { "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "operator new(unsigned long)", NULL, NULL, 0, FALSE },
      { "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1", "_Unwind_Find_FDE", NULL, NULL, 0, FALSE },
      { PROGRAM, "Cache::grow()", NULL, "/src/cache.cpp", 12, FALSE },
      { PROGRAM, "main", NULL, "/src/main.cpp", 3, FALSE } } },
  { "c functions named like CPython's C API", {
      { PROGRAM, "_Py_Dealloc", NULL, NULL, 0, FALSE },
      { PROGRAM, "PyObject_Call", NULL, NULL, 0, FALSE },
      { PROGRAM, "Python_app_tick", NULL, "/src/app.c", 7, FALSE },
      { PROGRAM, "main", NULL, "/src/app.c", 30, FALSE } } },
  { "jit code under SpiderMonkey and GJS", {
      { "[jit]", NULL, NULL, NULL, 0, FALSE },
      { "[jit]", "Ion: compiled", NULL, NULL, 0, FALSE },
      { MOZJS, "JS_CallFunction", NULL, NULL, 0, FALSE },
      { GJS, "gjs_closure_invoke", NULL, NULL, 0, FALSE },
      { "/lib/x86_64-linux-gnu/libgirepository-1.0.so.1", "g_callable_info_invoke", NULL, NULL, 0, FALSE },
      { FFI, "ffi_call", NULL, NULL, 0, FALSE },
      { "/usr/bin/gjs-console", "main", NULL, NULL, 0, FALSE } } },
  { "c through PyGObject's extension, no Python frame read", {
      { "/usr/lib/python3/dist-packages/gi/_gi.cpython-311-x86_64-linux-gnu.so", "pygi_invoke_c_callable", NULL, NULL, 0, FALSE },
      { "/usr/lib/python3/dist-packages/gi/_gi_cairo.cpython-311-x86_64-linux-gnu.so", "pygi_arg_cairo", NULL, NULL, 0, FALSE },
      { PROGRAM, "render_page", NULL, "/src/render.c", 12, FALSE } } },
  { "python over a named C library", {
      { "/lib/x86_64-linux-gnu/libz.so.1", "deflate", NULL, NULL, 0, FALSE },
      { PYTHON, "PyObject_Vectorcall", NULL, NULL, 0, FALSE },
      { "/srv/app/app.py", "zlib_handler", "python", "/srv/app/app.py", 21, FALSE },
      { "/usr/lib/python3/dist-packages/gi/_gi.cpython-311-x86_64-linux-gnu.so", "pygi_invoke_c_callable", NULL, NULL, 0, FALSE },
      { "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", "MainLoop.run", "python", "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", 497, FALSE },
      { PYTHON, "main", NULL, NULL, 0, FALSE } } },
  { "python named like the interpreter", {
      { PYTHON, "_PyEval_EvalFrameDefault", NULL, NULL, 0, FALSE },
      { "/srv/app/python3_tools.py", "PyLoader.run", "python", "/srv/app/python3_tools.py", 4, FALSE },
      { "/srv/app/python3_tools.py", "<module>", "python", "/srv/app/python3_tools.py", 9, FALSE } } },
  { "javascript over jit code", {
      { "[jit]", NULL, NULL, NULL, 0, FALSE },
      { MOZJS, "js::RunScript", NULL, NULL, 0, FALSE },
      { "[jit]", "slowHandler", "javascript", "/srv/app/app.js", 14, FALSE },
      { GJS, "gjs_closure_invoke", NULL, NULL, 0, FALSE },
      { "/srv/app/app.js", "main", "javascript", "/srv/app/app.js", 40, FALSE } } },
  { "sanitizer runtime and an unnamed program frame", {
      { "/usr/lib/x86_64-linux-gnu/libasan.so.8", "__interceptor_memcpy", NULL, NULL, 0, FALSE },
      { PROGRAM, NULL, NULL, NULL, 0, FALSE },
      { PROGRAM, "copy_all", NULL, "/src/copy.c", 20, FALSE },
      { PROGRAM, "main", NULL, "/src/copy.c", 40, FALSE } } },
  { "gtk painting over the program's private library", {
      { SYSLIB "libpixman-1.so.0", "pixman_fill", NULL, NULL, 0, FALSE },
      { SYSLIB "libcairo.so.2", "cairo_fill", NULL, NULL, 0, FALSE },
      { "/opt/app/lib/private/libcanvas.so.1", "canvas_draw_grid", NULL, "/src/canvas.c", 40, FALSE },
      { SYSLIB "libgtk-4.so.1", "gtk_widget_snapshot", NULL, NULL, 0, FALSE },
      { PROGRAM, "editor_view_snapshot", NULL, "/src/view.c", 80, FALSE },
      { SYSLIB "libgtk-4.so.1", "gtk_main_do_event", NULL, NULL, 0, FALSE },
      { GLIB, "g_main_context_dispatch", NULL, NULL, 0, FALSE } } },
  { "system libraries under a plugin in a directory named after the program", {
      { SYSLIB "libsystemd.so.0", "sd_bus_call", NULL, NULL, 0, FALSE },
      { SYSLIB "libgtop-2.0.so.11", "glibtop_get_proclist", NULL, NULL, 0, FALSE },
      { "/usr/lib/x86_64-linux-gnu/editor/plugins/libprocs.so", "procs_refresh", NULL, "/src/procs.c", 9, FALSE },
      { SYSLIB "libglibmm-2.68.so.1", "Glib::SignalProxyNormal::slot0_void_callback(_GObject*, void*)", NULL, NULL, 0, FALSE },
      { PROGRAM, "main", NULL, "/src/main.c", 3, FALSE } } },
  { "python in the standard library under the program's script", {
      { PYTHON, "_PyEval_EvalFrameDefault", NULL, NULL, 0, FALSE },
      { "/usr/lib/python3.11/json/decoder.py", "JSONDecoder.raw_decode", "python", "/usr/lib/python3.11/json/decoder.py", 353, FALSE },
      { "/usr/lib/python3.11/json/__init__.py", "loads", "python", "/usr/lib/python3.11/json/__init__.py", 346, FALSE },
      { "/usr/lib/python3/dist-packages/editor/store.py", "Store.load", "python", "/usr/lib/python3/dist-packages/editor/store.py", 12, FALSE },
      { "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", "MainLoop.run", "python", "/usr/lib/python3/dist-packages/gi/overrides/GLib.py", 497, FALSE } } },
  { "javascript in gjs's own modules under the program's", {
      { "[jit]", "_init", "javascript", "resource:///org/gnome/gjs/modules/core/overrides/GObject.js", 700, FALSE },
      { "[jit]", "Panel.refresh", "javascript", "/usr/share/app/panel.js", 30, FALSE },
      { "[jit]", "run", "javascript", "resource:///org/gnome/gjs/modules/core/overrides/Gio.js", 90, FALSE } } },
  { "no program frame", {
      { LIBC, "poll", NULL, NULL, 0, FALSE },
      { GLIB, "g_main_loop_run", NULL, NULL, 0, FALSE } } },
};

/* Main thread. The record of @c, its fingerprint and label. */
static char *
case_record (const Case *c, char **fingerprint, char **label)
{
  LagWatchReport *report = lw_report_new ();
  char *json;
  guint n = 0;

  while (n < MAX_FRAMES && c->frames[n].module != NULL)
    n++;
  report->frames = g_new0 (LwFrame, n);
  report->n_frames = n;
  for (guint i = 0; i < n; i++)
    {
      const Frame *from = &c->frames[i];
      LwFrame *frame = &report->frames[i];

      frame->ip = 0x7f0000001000 + 16 * i;
      frame->module = g_intern_string (from->module);
      frame->module_offset = 0x1000 + 16 * i;
      frame->symbol = g_strdup (from->symbol);
      frame->file = g_strdup (from->file);
      frame->line = from->line;
      frame->lang = from->lang;
      frame->inlined = from->inlined;
    }
  report->id = g_strdup ("1-1");
  report->duration_ms = 300;
  report->threshold_ms = 100;
  report->complete = TRUE;
  lw_report_compute_fingerprints (report);
  json = lagwatch_report_to_json (report);
  *fingerprint = g_strdup (report->fingerprint);
  *label = lw_report_stack_label (report->frames, report->n_frames);
  lagwatch_report_unref (report);
  return json;
}

int
main (int argc, char **argv)
{
  FILE *out;

  if (argc != 2)
    {
      fprintf (stderr, "usage: %s OUT.jsonl\n", argv[0]);
      return 2;
    }
  /* The program these stacks are of, not this one. */
  lw_report_program_set_executable (PROGRAM, "$ORIGIN/../lib/private");
  out = fopen (argv[1], "w");
  if (out == NULL)
    {
      perror (argv[1]);
      return 1;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *fingerprint = NULL;
      g_autofree char *label = NULL;
      g_autofree char *json = case_record (&cases[i], &fingerprint, &label);

      fprintf (out, "%s\n", json);
      printf ("%s\t%s\t%s\n", fingerprint, cases[i].name, label);
    }
  return fclose (out) == 0 ? 0 : 1;
}
