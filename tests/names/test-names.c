/* test-names.c: names as a program's developers read them:
 * inlined calls expanded from DWARF, the innermost program frame, Rust
 * names, long C++ names in the text report, and a text report that says
 * why a stack ends where it does.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <dlfcn.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "lw-build-config.h"
#include "lw-demangle.h"
#include "lw-lines.h"
#include "lw-report.h"
#include "lw-report-cause.h"
#include "lw-report-program.h"
#include "lw-report-text.h"
#include "lw-summary.h"
#include "lw-symbols.h"

/* The line of @source holding @marker (a comment in a fixture). */
static guint
lw_test_marker_line (const char *source, const char *marker)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;

  g_assert_true (g_file_get_contents (source, &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (strstr (lines[i], marker) != NULL)
      return i + 1;
  g_error ("%s: no line with %s", source, marker);
}

static const char *
lw_test_basename (const char *path)
{
  const char *slash = path != NULL ? strrchr (path, '/') : NULL;

  return slash != NULL ? slash + 1 : path;
}

static void
lw_test_free_frames (LwFrame *frames, guint n_frames)
{
  for (guint i = 0; i < n_frames; i++)
    lw_frame_clear (&frames[i]);
  g_free (frames);
}

/* Vala at -O2: the method inlined into its _..._gsource_func wrapper is a
 * frame of its own, at its own line; the wrapper is at the call's line. */
static G_GNUC_UNUSED void
test_inline_vala_style (void)
{
  void *handle = dlopen (LW_NAMES_INLINE_FIXTURE, RTLD_NOW | RTLD_LOCAL);
  uintptr_t (*run) (void);
  guint capture_line = lw_test_marker_line (LW_NAMES_SOURCE_DIR "/names-inline-fixture.c",
                                            "/* LW_NAMES_CAPTURE */");
  guint call_line = lw_test_marker_line (LW_NAMES_SOURCE_DIR "/names-inline-fixture.c",
                                         "/* LW_NAMES_CALL */");
  LwFrame *frames = g_new0 (LwFrame, 2);
  guint n_frames = 2;

  g_assert_nonnull (handle);
  *(void **) &run = dlsym (handle, "lw_names_inline_run");
  g_assert_nonnull (run);

  /* Frame 0 is any exact pc; frame 1 the return address in the method. */
  lw_symbols_resolve ((uintptr_t) run, FALSE, &frames[0]);
  lw_symbols_resolve (run (), TRUE, &frames[1]);
  g_assert_cmpstr (frames[1].symbol, ==, "_demo_window_frobnicate_gsource_func");
  lw_lines_resolve_stack (&frames, &n_frames);

  g_assert_cmpuint (n_frames, ==, 3);
  g_assert_false (frames[0].inlined);
  g_assert_true (frames[1].inlined);
  g_assert_cmpstr (frames[1].symbol, ==, "demo_window_frobnicate");
  g_assert_cmpstr (lw_test_basename (frames[1].file), ==, "names-inline-fixture.c");
  g_assert_cmpuint (frames[1].line, ==, capture_line);
  g_assert_cmpuint (frames[1].ip, ==, frames[2].ip);
  g_assert_cmpuint (frames[1].module_offset, ==, frames[2].module_offset);
  g_assert_cmpstr (frames[1].module, ==, frames[2].module);
  g_assert_false (frames[2].inlined);
  g_assert_cmpstr (frames[2].symbol, ==, "_demo_window_frobnicate_gsource_func");
  g_assert_cmpstr (lw_test_basename (frames[2].file), ==, "names-inline-fixture.c");
  g_assert_cmpuint (frames[2].line, ==, call_line);

  /* The innermost program frame is the method, not its wrapper. */
  {
    g_autofree char *label = lw_report_stack_label (frames + 1, n_frames - 1);

    g_assert_cmpstr (label, ==, "demo_window_frobnicate");
  }
  lw_test_free_frames (frames, n_frames);
  dlclose (handle);
}

/* C++ at -O2: std::sort inlined into Sorter<int>::sort_many(). The user's
 * method keeps its own file:line (not stl_algo.h's), the standard library
 * frames come before it as inlined frames, and the innermost program frame
 * past the comparator is the user's method. */
static G_GNUC_UNUSED void
test_inline_cxx_template (void)
{
#ifdef LW_NAMES_CXX_FIXTURE
  void *handle = dlopen (LW_NAMES_CXX_FIXTURE, RTLD_NOW | RTLD_LOCAL);
  void **(*run) (int *depth);
  guint sort_line = lw_test_marker_line (LW_NAMES_SOURCE_DIR "/names-cxx-fixture.cpp",
                                         "// LW_NAMES_SORT");
  void **stack;
  int depth = 0;
  LwFrame *frames;
  guint n_frames;
  int user = -1, first_std = -1;
  guint inlined_std = 0;

  g_assert_nonnull (handle);
  *(void **) &run = dlsym (handle, "lw_names_cxx_run");
  g_assert_nonnull (run);
  stack = run (&depth);
  g_assert_cmpint (depth, >, 3);

  n_frames = (guint) depth;
  frames = g_new0 (LwFrame, n_frames);
  for (guint i = 0; i < n_frames; i++)
    lw_symbols_resolve ((uintptr_t) stack[i], i > 0, &frames[i]);
  lw_lines_resolve_stack (&frames, &n_frames);

  for (guint i = 0; i < n_frames; i++)
    {
      g_test_message ("#%u %s%s at %s:%u", i, frames[i].symbol ? frames[i].symbol : "??",
                      frames[i].inlined ? " (inlined)" : "",
                      frames[i].file ? lw_test_basename (frames[i].file) : "?", frames[i].line);
      if (frames[i].symbol != NULL && strstr (frames[i].symbol, "std::") != NULL && user < 0)
        {
          if (first_std < 0)
            first_std = (int) i;
          if (frames[i].inlined)
            inlined_std++;
        }
      if (user < 0 && g_strcmp0 (frames[i].symbol, "Sorter<int>::sort_many()") == 0)
        user = (int) i;
    }
  g_assert_cmpint (user, >=, 0);
  g_assert_cmpint (first_std, >=, 0);
  g_assert_cmpint (first_std, <, user);
  /* std::sort itself at least is inlined into the user's method. */
  g_assert_cmpuint (inlined_std, >=, 1);
  g_assert_true (frames[user - 1].inlined);
  g_assert_false (frames[user].inlined);
  g_assert_cmpstr (lw_test_basename (frames[user].file), ==, "names-cxx-fixture.cpp");
  g_assert_cmpuint (frames[user].line, ==, sort_line);

  /* Past the comparator, the standard library is skipped. */
  {
    g_autofree char *label = lw_report_stack_label (frames + first_std, n_frames - (guint) first_std);

    g_assert_cmpstr (label, ==, "Sorter<int>::sort_many()");
  }
  lw_test_free_frames (frames, n_frames);
  dlclose (handle);
#else
  g_test_skip ("no C++ compiler");
#endif
}

/* Rust functions, either mangling, named as rustfilt names them. */
static void
test_rust_names (void)
{
#ifdef LW_NAMES_RUST_LEGACY
  const char *const libraries[] = { LW_NAMES_RUST_LEGACY, LW_NAMES_RUST_V0 };

  for (guint i = 0; i < G_N_ELEMENTS (libraries); i++)
    {
      void *handle = dlopen (libraries[i], RTLD_NOW | RTLD_LOCAL);
      uintptr_t (*address) (void);
      LwFrame frame;

      g_assert_nonnull (handle);
      *(void **) &address = dlsym (handle, "lw_rust_work_address");
      g_assert_nonnull (address);
      lw_symbols_resolve (address (), FALSE, &frame);
      g_assert_cmpstr (frame.module, ==, libraries[i]);
      g_assert_cmpstr (frame.symbol, ==, "lwrust::deep::work");
      lw_frame_clear (&frame);
      dlclose (handle);
    }
#else
  g_test_skip ("no rustc");
#endif
}

/* Known answers of binutils' c++filt 2.40 (which knows both Rust
 * manglings) on symbols rustc 1.95 wrote, without the hash that c++filt
 * keeps and rustfilt drops; C++ and C names are not Rust's. */
static void
test_rust_demangle_known (void)
{
  static const struct
  {
    const char *mangled;
    const char *shown;
  } cases[] = {
    { "_ZN6lwrust4deep4work17h2a0d08768d9acd3dE", "lwrust::deep::work" },
    { "_ZN42_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$3fmt17h17e4da6f3a70e3b3E",
      "<&T as core::fmt::Debug>::fmt" },
    { "_RNvNtCs7RDaApRlZLf_6lwrust4deep4work", "lwrust::deep::work" },
    { "_RNvMCs2wvwJDwge2F_6adler2NtB2_7Adler3211write_slice", "<adler2::Adler32>::write_slice" },
    { "_RNvMsD_NtCsgEmfK2I1SDS_4core3numy16from_ascii_radix", "<u64>::from_ascii_radix" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *shown = lw_demangle_name (cases[i].mangled);

      g_assert_cmpstr (shown, ==, cases[i].shown);
    }
  /* Not Rust, and no libstdc++ asked for here: left alone. */
  g_assert_null (lw_demangle_name ("main"));
  g_assert_null (lw_demangle_name ("_R"));
  g_assert_null (lw_demangle_name ("_RNvC"));
}

/* The program-frame rule: standard library and interpreter frames are not
 * the program's, whatever their module. */
static void
test_program_frames (void)
{
  static const struct
  {
    const char *module;
    const char *symbol;
    gboolean    program;
  } cases[] = {
    { "/usr/bin/app", "Sorter<int>::sort_many()", TRUE },
    { "/usr/bin/app", "void std::__introsort_loop<int*, long>(int*, int*, long)", FALSE },
    { "/usr/bin/app", "std::vector<int, std::allocator<int> >::push_back(int const&)", FALSE },
    { "/usr/bin/app", "__gnu_cxx::__ops::_Iter_less_iter::operator()(int*, int*) const", FALSE },
    { "/usr/bin/app", "Python_style_name", TRUE },
    { "/usr/bin/app", "my_std::thing()", TRUE },
    { "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "operator new(unsigned long)", FALSE },
    { "/usr/bin/python3.11", "_PyEval_EvalFrameDefault", FALSE },
    { "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "method_vectorcall", FALSE },
    { "/usr/lib/app/plugin.so", "PyObject_Call", FALSE },
    { "/usr/lib/x86_64-linux-gnu/libmozjs-102.so.0", "js::RunScript", FALSE },
    { "/usr/lib/x86_64-linux-gnu/libgjs.so.0", "gjs_closure_invoke", FALSE },
    { "/usr/lib/x86_64-linux-gnu/libffi.so.8", "ffi_call", FALSE },
    { "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", "g_main_context_dispatch", FALSE },
    { "/usr/lib/app/libwidgets.so", NULL, TRUE },
    { "/usr/lib/x86_64-linux-gnu/libgtk-4.so.1", "gtk_widget_snapshot", FALSE },
    { "/usr/lib/x86_64-linux-gnu/libz.so.1", "deflate", FALSE },
  };

  /* The stacks are /usr/bin/app's, not this test's. */
  lw_report_program_set_executable ("/usr/bin/app", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      LwFrame frame = { .module = cases[i].module, .symbol = (char *) cases[i].symbol };

      g_test_message ("%s %s", cases[i].module, cases[i].symbol);
      g_assert_cmpint (lw_report_frame_is_program (&frame), ==, cases[i].program);
    }
  lw_report_program_set_executable (NULL, NULL);
}

/* Long C++ names lose their template arguments in text, never in JSON. */
static void
test_short_names (void)
{
  static const char introsort[] =
    "void std::__introsort_loop<__gnu_cxx::__normal_iterator<int*, std::vector<int, "
    "std::allocator<int> > >, long, __gnu_cxx::__ops::_Iter_comp_iter<bool (*)(int, int)> >"
    "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
    "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, long, "
    "__gnu_cxx::__ops::_Iter_comp_iter<bool (*)(int, int)>)";
  static const char method[] =
    "std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, "
    "std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > "
    ">::push_back(int) const";
  static const char shift[] =
    "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
    "(std::basic_ostream<char, std::char_traits<char> >&, char const*)";
  g_autofree char *a = lw_report_short_name (introsort);
  g_autofree char *b = lw_report_short_name (method);
  g_autofree char *c = lw_report_short_name (shift);
  g_autofree char *d = lw_report_short_name ("Sorter<int>::sort_many()");
  LagWatchReport *report = lw_report_new ();
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;
  g_autofree char *escaped = NULL;

  g_assert_cmpstr (a, ==, "void std::__introsort_loop<...>(...)");
  g_assert_cmpstr (b, ==, "std::vector<...>::push_back(int) const");
  g_assert_cmpstr (c, ==, "std::basic_ostream<...>& std::operator<< <...>(...)");
  g_assert_cmpstr (d, ==, "Sorter<int>::sort_many()");

  report->id = g_strdup ("test");
  report->frames = g_new0 (LwFrame, 1);
  report->n_frames = 1;
  report->frames[0].ip = 0x1000;
  report->frames[0].module = "/usr/bin/app";
  report->frames[0].symbol = g_strdup (introsort);
  text = lagwatch_report_to_text (report);
  json = lagwatch_report_to_json (report);
  g_assert_nonnull (strstr (text, "void std::__introsort_loop<...>(...)+0x0"));
  g_assert_null (strstr (text, "_Iter_comp_iter"));
  g_assert_nonnull (strstr (json, introsort));
  lagwatch_report_unref (report);
}

/* A report with @n_frames frames, unnamed unless @symbol. */
static LagWatchReport *
lw_test_report (guint n_frames, const char *symbol, gboolean truncated, gboolean at_limit)
{
  LagWatchReport *report = lw_report_new ();

  report->id = g_strdup ("test");
  report->complete = TRUE;
  report->frames = g_new0 (LwFrame, MAX (n_frames, 1));
  report->n_frames = n_frames;
  for (guint i = 0; i < n_frames; i++)
    {
      report->frames[i].ip = 0x1000 + i;
      report->frames[i].module_offset = 0x10 + i;
      report->frames[i].symbol = g_strdup (symbol);
    }
  report->stack_truncated = truncated;
  report->stack_at_limit = at_limit;
  lw_report_compute_fingerprints (report);
  return report;
}

/* The text never says frames were hidden when the unwind just stopped,
 * and the summary names the frames the text printed. */
static void
test_consistent_output (void)
{
  LwSummary *summary = lw_summary_new ();
  LagWatchReport *unnamed = lw_test_report (2, NULL, TRUE, FALSE);
  LagWatchReport *limited = lw_test_report (3, "deep_recursion", TRUE, TRUE);
  LagWatchReport *whole = lw_test_report (2, "work", FALSE, FALSE);
  LagWatchReport *empty = lw_test_report (0, NULL, FALSE, FALSE);
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;
  g_autofree char *table = NULL;
  guint skipped;

  /* An unwind that stopped after two unnamed frames. */
  text = lagwatch_report_to_text (unnamed);
  json = lagwatch_report_to_json (unnamed);
  g_assert_null (strstr (text, "more frames not shown"));
  g_assert_nonnull (strstr (text, "the unwind stopped here"));
  g_assert_nonnull (strstr (json, "\"stack_end\":\"unwind-stopped\""));
  g_assert_nonnull (strstr (json, "\"inlined\":false"));
  g_clear_pointer (&text, g_free);
  g_clear_pointer (&json, g_free);

  text = lagwatch_report_to_text (limited);
  json = lagwatch_report_to_json (limited);
  g_assert_nonnull (strstr (text, "more frames not shown"));
  g_assert_nonnull (strstr (json, "\"stack_end\":\"frame-limit\""));
  g_clear_pointer (&text, g_free);
  g_clear_pointer (&json, g_free);

  text = lagwatch_report_to_text (whole);
  json = lagwatch_report_to_json (whole);
  g_assert_null (strstr (text, "..."));
  g_assert_nonnull (strstr (json, "\"stack_end\":\"outermost\""));

  lw_summary_record (summary, unnamed, &skipped);
  lw_summary_record (summary, empty, &skipped);
  table = lw_summary_to_text (summary, 0, 0);
  g_test_message ("%s", table);
  /* Frames were printed: the summary names the innermost, "?? +0x10". */
  g_assert_nonnull (strstr (table, "??+0x10"));
  /* Only the report without a frame has "(no stack)". */
  g_assert_nonnull (strstr (table, "(no stack)"));
  g_assert_null (strstr (strstr (table, "(no stack)") + 1, "(no stack)"));

  /* A hang's other threads show 12 lines each and say what they left;
   * their unnamed frames of one module fold into one line. */
  g_clear_pointer (&text, g_free);
  whole->event = "hang";
  whole->threads = g_new0 (LwReportStack, 2);
  whole->n_threads = 2;
  whole->threads[0].thread_id = 101;
  whole->threads[1].thread_id = 102;
  whole->threads[0].frames = g_new0 (LwFrame, 14);
  whole->threads[0].n_frames = 14;
  whole->threads[1].frames = g_new0 (LwFrame, 12);
  whole->threads[1].n_frames = 12;
  for (guint i = 0; i < 14; i++)
    whole->threads[0].frames[i].symbol = g_strdup_printf ("f%u", i);
  text = lagwatch_report_to_text (whole);
  g_assert_nonnull (strstr (text, "  ... (2 more frames not shown here: all are in the JSON)\n  thread 102"));
  g_assert_nonnull (strstr (text, "  thread 102 \"?\" (?):\n  #0-11 ?? x12 in ?\n"));
  g_assert_null (strstr (strstr (text, "  thread 102"), "more frames"));

  lagwatch_report_unref (unnamed);
  lagwatch_report_unref (limited);
  lagwatch_report_unref (whole);
  lagwatch_report_unref (empty);
  lw_summary_free (summary);
}

/* A sample in a PLT stub (an unnamed frame of the program's module) and
 * one in the vDSO under the same named frames are the same lag: one
 * fingerprint, as the summary names both after the same frame. */
static void
test_fingerprint_named_frames (void)
{
  static const char *const names[] = { "spin_ms", "run_lag_cb", "test_main" };
  LagWatchReport *plt = lw_report_new ();
  LagWatchReport *vdso = lw_report_new ();

  plt->frames = g_new0 (LwFrame, 4);
  plt->n_frames = 4;
  plt->frames[0] = (LwFrame) { .ip = 0x3630, .module = "/usr/bin/app", .module_offset = 0x3630 };
  vdso->frames = g_new0 (LwFrame, 5);
  vdso->n_frames = 5;
  vdso->frames[0] = (LwFrame) { .ip = 0xb46, .module = "[vdso]", .symbol = g_strdup ("__vdso_clock_gettime") };
  vdso->frames[1] = (LwFrame) { .ip = 0x5000, .module = "/lib/x86_64-linux-gnu/libc.so.6",
                                .symbol = g_strdup ("clock_gettime") };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      plt->frames[1 + i] = (LwFrame) { .ip = 0x4000 + i, .module = "/usr/bin/app",
                                       .symbol = g_strdup (names[i]) };
      vdso->frames[2 + i] = (LwFrame) { .ip = 0x4000 + i, .module = "/usr/bin/app",
                                        .symbol = g_strdup (names[i]) };
    }
  lw_report_program_set_executable ("/usr/bin/app", NULL);
  lw_report_compute_fingerprints (plt);
  lw_report_compute_fingerprints (vdso);
  lw_report_program_set_executable (NULL, NULL);
  g_assert_cmpstr (plt->fingerprint, ==, vdso->fingerprint);
  g_assert_cmpstr (plt->fingerprint2, ==, vdso->fingerprint2);
  lagwatch_report_unref (plt);
  lagwatch_report_unref (vdso);
}

#ifndef LW_HAVE_LIBDW
/* Inlined frames come from DWARF, read by libdw. */
static void
test_skip_without_libdw (void)
{
  g_test_skip ("built with -Dlibdw=disabled: no inlined frames, no file:line");
}
#endif

/* An inlined frame reads as one in text and JSON, and through the API. */
static void
test_inlined_outputs (void)
{
  LagWatchReport *report = lw_test_report (2, NULL, FALSE, FALSE);
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;

  /* The program's frames: of its executable (a frame of no module is
   * nobody's). */
  lw_report_program_set_executable ("/usr/bin/demo", NULL);
  report->frames[0].module = report->frames[1].module = "/usr/bin/demo";
  report->frames[0].symbol = g_strdup ("demo_window_frobnicate");
  report->frames[0].inlined = TRUE;
  report->frames[0].file = g_strdup ("/src/window.vala");
  report->frames[0].line = 42;
  report->frames[1].symbol = g_strdup ("_demo_window_frobnicate_gsource_func");
  report->frames[1].symbol_offset = 0x15;
  text = lagwatch_report_to_text (report);
  json = lagwatch_report_to_json (report);
  g_assert_nonnull (strstr (text, "demo_window_frobnicate (inlined)"));
  g_assert_nonnull (strstr (text, "window.vala:42"));
  g_assert_nonnull (strstr (text, "_demo_window_frobnicate_gsource_func+0x15"));
  g_assert_nonnull (strstr (json, "\"line\":42,\"inlined\":true,\"is_program\":true}"));
  g_assert_true (lagwatch_report_get_frame_inlined (report, 0));
  g_assert_false (lagwatch_report_get_frame_inlined (report, 1));
  g_assert_false (lagwatch_report_get_frame_inlined (report, 2));
  g_assert_true (lagwatch_report_get_frame_is_program (report, 0));
  g_assert_false (lagwatch_report_get_frame_is_program (report, 9));
  lw_report_program_set_executable (NULL, NULL);
  lagwatch_report_unref (report);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

#ifdef LW_HAVE_LIBDW
  g_test_add_func ("/names/inline/vala-style", test_inline_vala_style);
  g_test_add_func ("/names/inline/cxx-template", test_inline_cxx_template);
#else
  g_test_add_func ("/names/inline/vala-style", test_skip_without_libdw);
  g_test_add_func ("/names/inline/cxx-template", test_skip_without_libdw);
#endif
  g_test_add_func ("/names/inline/outputs", test_inlined_outputs);
  g_test_add_func ("/names/rust/libraries", test_rust_names);
  g_test_add_func ("/names/rust/known-answers", test_rust_demangle_known);
  g_test_add_func ("/names/program-frames", test_program_frames);
  g_test_add_func ("/names/short-names", test_short_names);
  g_test_add_func ("/names/consistent-output", test_consistent_output);
  g_test_add_func ("/names/fingerprint-named-frames", test_fingerprint_named_frames);
  return g_test_run ();
}
