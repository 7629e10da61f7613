/* lw-report-program.c: which frames are the program's, and the fingerprint */
#include "lw-report.h"
#include "lw-report-program.h"

#include <inttypes.h>
#include <string.h>

/* Frames of these modules are the platform, not the program: a fingerprint
 * made of them would group unrelated lags (every lag passes through GLib). */
gboolean
lw_report_frame_is_platform (const LwFrame *frame)
{
  static const char *const platform[] = {
    "libc.so", "ld-linux", "libglib-2.0.so", "libgobject-2.0.so", "libgio-2.0.so",
    "libgmodule-2.0.so", "libgthread-2.0.so", "liblagwatch.so", "[vdso]", "libpthread.so",
    "libm.so", "libdl.so", "librt.so",
    /* Sanitizer runtimes interpose libc functions in instrumented builds. */
    "libasan.so", "libubsan.so", "libtsan.so", "liblsan.so",
    /* Generated code (lw-perfmap.h): its addresses change from run to run. */
    "[jit]",
  };
  const char *base;

  if (frame->module == NULL)
    return FALSE;
  base = strrchr (frame->module, '/');
  base = base != NULL ? base + 1 : frame->module;
  for (gsize i = 0; i < G_N_ELEMENTS (platform); i++)
    if (g_str_has_prefix (base, platform[i]))
      return TRUE;
  return FALSE;
}

/* Any thread. TRUE when @report's stack holds frames of an interpreted
 * language (Python). */
static gboolean
lw_report_has_language_frames (const LagWatchReport *report)
{
  return lw_report_frames_interpreted (report->frames, report->n_frames);
}

/* Any thread. */
gboolean
lw_report_frames_interpreted (const LwFrame *frames,
                              guint          n_frames)
{
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].lang != NULL)
      return TRUE;
  return FALSE;
}

/* Any thread. */
gboolean
lw_report_frame_is_program_in (const LwFrame *frame,
                               gboolean       interpreted)
{
  if (interpreted)
    return frame->lang != NULL;
  return lw_report_frame_is_program (frame);
}

/* Any thread. Where the function's qualified name starts in @name, after
 * a template's return type ("void std::sort<...>(...)"): past the last
 * space outside <> and () before the parameter list. */
static const char *
lw_report_name_start (const char *name)
{
  const char *start = name;
  int depth = 0;

  for (const char *p = name; *p != '\0'; p++)
    {
      if (*p == '<' || *p == '(')
        {
          if (*p == '(' && depth == 0 && p > name)
            break;
          depth++;
        }
      else if ((*p == '>' || *p == ')') && depth > 0)
        depth--;
      else if (*p == ' ' && depth == 0)
        start = p + 1;
    }
  return start;
}

/* Any thread. */
gboolean
lw_report_frame_is_program (const LwFrame *frame)
{
  static const char *const modules[] = {
    "libstdc++.so", "libc++.so", "libc++abi.so", "libgcc_s.so",
    "libpython", "python3", "libmozjs", "libgjs.so", "libffi.so",
    /* GObject Introspection's machinery: GJS calls C through it, PyGObject
     * through its own extension modules. */
    "libgirepository-", "_gi.", "_gi_cairo.",
  };
  static const char *const functions[] = {
    "std::", "__gnu_cxx::", "__cxxabiv1::", "_Py", "Py",
  };
  const char *base;

  /* Code in an interpreted language is the program's, whatever its file
   * is called ("python3_tools.py") or its function ("PyLoader.run"). */
  if (frame->lang != NULL)
    return TRUE;
  if (lw_report_frame_is_platform (frame))
    return FALSE;
  if (frame->module != NULL)
    {
      base = strrchr (frame->module, '/');
      base = base != NULL ? base + 1 : frame->module;
      for (gsize i = 0; i < G_N_ELEMENTS (modules); i++)
        if (g_str_has_prefix (base, modules[i]))
          return FALSE;
    }
  if (frame->symbol != NULL)
    {
      const char *name = lw_report_name_start (frame->symbol);

      for (gsize i = 0; i < G_N_ELEMENTS (functions); i++)
        if (g_str_has_prefix (name, functions[i]))
          {
            /* "Py" only as the C API's "PyObject_Call": not "Python_app". */
            if (g_str_equal (functions[i], "Py") && !g_ascii_isupper (name[2]))
              continue;
            return FALSE;
          }
    }
  return TRUE;
}

/* Any thread. */
const LwFrame *
lw_report_program_frame (const LwFrame *frames,
                         guint          n_frames)
{
  gboolean interpreted = lw_report_frames_interpreted (frames, n_frames);

  /* The frame the fingerprint starts from: in a Python lag that runs
   * zlib's deflate(), the Python function, not deflate. */
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].symbol != NULL && lw_report_frame_is_program_in (&frames[i], interpreted))
      return &frames[i];
  return NULL;
}

/* 64-bit FNV-1a of the innermost @depth program frames, each as
 * "module-basename!symbol" (or "!+0xoffset" without a symbol): stable across
 * runs and address-space layouts of the same build. */
static char *
lw_report_fingerprint (const LagWatchReport *report, guint depth)
{
  guint64 h = 1469598103934665603ULL;
  guint used = 0;
  gboolean interpreted = lw_report_has_language_frames (report);

  for (guint pass = 0; pass < 2 && used == 0; pass++)
    for (guint i = 0; i < report->n_frames && used < depth; i++)
      {
        const LwFrame *frame = &report->frames[i];
        g_autofree char *key = NULL;
        const char *base;

        /* First pass: named program frames only, those the summary names
         * (an unnamed one is mostly a PLT stub a sample may or may not
         * land in); if there is none, any frame. */
        if (pass == 0 && (!lw_report_frame_is_program (frame) || frame->symbol == NULL))
          continue;
        /* A lag in interpreted code is told by its interpreted frames: the
         * interpreter's own frames are the same for every handler. */
        if (interpreted && frame->lang == NULL)
          continue;
        base = frame->module ? strrchr (frame->module, '/') : NULL;
        base = base ? base + 1 : (frame->module ? frame->module : "?");
        key = frame->symbol ? g_strdup_printf ("%s!%s", base, frame->symbol)
                            : g_strdup_printf ("%s!+0x%" PRIxPTR, base, frame->module_offset);
        for (const char *p = key; *p; p++)
          h = (h ^ (guchar) *p) * 1099511628211ULL;
        h = (h ^ '\n') * 1099511628211ULL;
        used++;
      }
  return g_strdup_printf ("%016" G_GINT64_MODIFIER "x", h);
}

void
lw_report_compute_fingerprints (LagWatchReport *report)
{
  g_free (report->fingerprint);
  g_free (report->fingerprint2);
  report->fingerprint = lw_report_fingerprint (report, 4);
  report->fingerprint2 = lw_report_fingerprint (report, 2);
}

/* The public accessor of the rule, lagwatch.h. */
/* Any thread. */
gboolean
lagwatch_report_get_frame_is_program (LagWatchReport *report,
                                      guint           index)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return index < report->n_frames
         && lw_report_frame_is_program_in (&report->frames[index],
                                           lw_report_frames_interpreted (report->frames, report->n_frames));
}
