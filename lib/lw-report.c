/* lw-report.c: LagWatchReport, its accessors and its renderings */
#include "lw-report.h"
#include "lw-say.h"
#include "lw-tracing.h"

#include "lw-call-tree.h"

#include <inttypes.h>
#include <string.h>

LagWatchReport *
lw_report_new (void)
{
  LagWatchReport *report = g_new0 (LagWatchReport, 1);

  report->ref_count = 1;
  report->caught_ms = -1;
  report->cpu_ms = -1;
  report->event = "lag";
  report->run_delay_ms = -1;
  report->throttled_ms = -1;
  return report;
}

/* Any thread. TRUE when thread @i's stack is left out of @report's
 * output (the hang record's size limit). */
static gboolean
lw_report_thread_left_out (const LagWatchReport *report, guint i)
{
  return i + report->threads_left_out >= report->n_threads;
}

/* Any thread. Why thread @i of @report's hang snapshot shows no stack, or
 * NULL when it shows one. */
static const char *
lw_report_thread_stack_error (const LagWatchReport *report, guint i)
{
  if (lw_report_thread_left_out (report, i))
    return "left out: the hang record would have exceeded its size limit";
  return report->threads[i].stack_error;
}

void
lw_report_stack_clear (LwReportStack *stack)
{
  for (guint i = 0; i < stack->n_frames; i++)
    lw_frame_clear (&stack->frames[i]);
  g_free (stack->frames);
  g_free (stack->thread_name);
  g_free (stack->thread_state);
  g_free (stack->stack_error);
  memset (stack, 0, sizeof *stack);
}

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

#define LW_REPORT_SHORT_NAME 80

/* Any thread. The length of the operator's symbol after "operator" at @p
 * ("<<", "->", "<=>"...), whose angle brackets are no template's. */
static gsize
lw_report_operator_length (const char *name, const char *p)
{
  gsize n = 0;

  if (!g_str_has_prefix (p, "operator") ||
      (p > name && (g_ascii_isalnum (p[-1]) || p[-1] == '_')))
    return 0;
  n = strlen ("operator");
  while (p[n] != '\0' && strchr ("<>=-", p[n]) != NULL)
    n++;
  return n;
}

/* Any thread. */
char *
lw_report_short_name (const char *name)
{
  GString *out;
  int depth = 0;

  g_return_val_if_fail (name != NULL, NULL);
  if (strlen (name) <= LW_REPORT_SHORT_NAME)
    return g_strdup (name);

  out = g_string_sized_new (LW_REPORT_SHORT_NAME);
  for (const char *p = name; *p != '\0'; p++)
    {
      gsize operator_length = depth == 0 ? lw_report_operator_length (name, p) : 0;

      if (operator_length > 0)
        {
          g_string_append_len (out, p, (gssize) operator_length);
          p += operator_length - 1;
        }
      else if (*p == '<')
        {
          if (depth++ == 0)
            g_string_append (out, "<...");
        }
      else if (*p == '>' && depth > 0)
        {
          if (--depth == 0)
            g_string_append_c (out, '>');
        }
      else if (depth == 0)
        g_string_append_c (out, *p);
    }

  /* Still long: the parameters go too, "(...)", the list whose ")" is the
   * last one (a "const" may follow it). */
  if (out->len > LW_REPORT_SHORT_NAME)
    {
      char *close = strrchr (out->str, ')');
      int level = 0;

      for (char *p = close; p != NULL && p >= out->str; p--)
        {
          if (*p == ')')
            level++;
          else if (*p == '(' && --level == 0)
            {
              if (close - p > 4)
                {
                  gsize at = (gsize) (p - out->str) + 1;

                  g_string_erase (out, (gssize) at, close - p - 1);
                  g_string_insert (out, (gssize) at, "...");
                }
              break;
            }
        }
    }
  return g_string_free (out, FALSE);
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

/* Any thread. */
char *
lw_report_stack_label (const LwFrame *frames,
                       guint          n_frames)
{
  g_autofree char *base = NULL;
  const LwFrame *program = lw_report_program_frame (frames, n_frames);

  if (program != NULL)
    return lw_report_short_name (program->symbol);
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].symbol != NULL)
      return lw_report_short_name (frames[i].symbol);
  if (n_frames == 0)
    return g_strdup ("(no stack)");
  base = frames[0].module != NULL ? g_path_get_basename (frames[0].module) : g_strdup ("??");
  return g_strdup_printf ("%s+0x%" PRIxPTR, base, frames[0].module_offset);
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

LagWatchReport *
lagwatch_report_ref (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  g_atomic_int_inc (&report->ref_count);
  return report;
}

void
lagwatch_report_unref (LagWatchReport *report)
{
  g_return_if_fail (report != NULL);
  if (!g_atomic_int_dec_and_test (&report->ref_count))
    return;
  for (guint i = 0; i < report->n_frames; i++)
    lw_frame_clear (&report->frames[i]);
  g_free (report->frames);
  for (guint i = 0; i < report->n_stacks; i++)
    lw_report_stack_clear (&report->stacks[i]);
  g_free (report->stacks);
  for (guint i = 0; i < report->n_threads; i++)
    lw_report_stack_clear (&report->threads[i]);
  g_free (report->threads);
  g_free (report->source);
  g_free (report->source_callback);
  g_free (report->wchan);
  g_free (report->fingerprint);
  g_free (report->fingerprint2);
  g_free (report->previous_exe);
  g_free (report->id);
  g_free (report->thread_name);
  g_free (report->stack_method);
  g_free (report->stack_error);
  g_free (report->json);
  for (guint i = 0; i < report->n_windows; i++)
    g_free (report->windows[i].title);
  g_free (report->windows);
  for (guint i = 0; i < report->n_sampled; i++)
    lw_report_stack_clear (&report->sampled[i]);
  g_free (report->sampled);
  g_free (report->timeline);
  lw_call_free (report->calls);
  g_free (report->call_list);
  g_free (report->call_depth);
  lw_tracing_free (report->tracing);
  g_free (report);
}

const char *
lagwatch_report_get_id (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->id;
}

double
lagwatch_report_get_duration_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->duration_ms;
}

guint
lagwatch_report_get_threshold_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->threshold_ms;
}

gint64
lagwatch_report_get_start_time (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->start_time_us;
}

int
lagwatch_report_get_thread_id (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->thread_id;
}

gboolean
lagwatch_report_get_complete (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->complete;
}

guint
lagwatch_report_get_n_frames (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_frames;
}

guint64
lagwatch_report_get_frame (LagWatchReport *report,
                           guint           index,
                           const char    **module,
                           const char    **build_id,
                           guint64        *module_offset,
                           const char    **symbol,
                           guint64        *symbol_offset)
{
  const LwFrame *frame;

  g_return_val_if_fail (report != NULL, 0);
  if (index >= report->n_frames)
    return 0;
  frame = &report->frames[index];
  if (module != NULL)
    *module = frame->module;
  if (build_id != NULL)
    *build_id = frame->build_id;
  if (module_offset != NULL)
    *module_offset = frame->module_offset;
  if (symbol != NULL)
    *symbol = frame->symbol;
  if (symbol_offset != NULL)
    *symbol_offset = frame->symbol_offset;
  return frame->ip;
}

const char *
lagwatch_report_get_frame_location (LagWatchReport *report, guint index, guint *line)
{
  g_return_val_if_fail (report != NULL, NULL);
  if (line != NULL)
    *line = index < report->n_frames ? report->frames[index].line : 0;
  return index < report->n_frames ? report->frames[index].file : NULL;
}

const char *
lagwatch_report_get_source (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->source;
}

const char *
lagwatch_report_get_phase (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->phase;
}

double
lagwatch_report_get_cpu_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, -1);
  return report->cpu_ms;
}

const char *
lagwatch_report_get_thread_state (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->thread_state;
}

const char *
lagwatch_report_get_syscall (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->syscall;
}

guint
lagwatch_report_get_n_samples (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_samples;
}

const char *
lagwatch_report_get_fingerprint (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->fingerprint;
}

/* "2026-11-21T15:40:12.345Z" */
static char *
lw_report_format_time (gint64 time_us)
{
  g_autoptr(GDateTime) utc = g_date_time_new_from_unix_utc (time_us / G_USEC_PER_SEC);
  g_autofree char *seconds = NULL;

  if (utc == NULL)
    return g_strdup ("1970-01-01T00:00:00.000Z");
  seconds = g_date_time_format (utc, "%Y-%m-%dT%H:%M:%S");
  return g_strdup_printf ("%s.%03dZ", seconds, (int) (time_us % G_USEC_PER_SEC / 1000));
}

/* A JSON string, or null. Invalid UTF-8 (a path is only bytes) is repaired
 * so the line stays valid JSON. */
static void
lw_json_string (GString *out, const char *text)
{
  g_autofree char *valid = NULL;

  if (text == NULL)
    {
      g_string_append (out, "null");
      return;
    }
  valid = g_utf8_make_valid (text, -1);
  g_string_append_c (out, '"');
  for (const char *p = valid; *p != '\0'; p++)
    {
      unsigned char c = (unsigned char) *p;

      if (c == '"' || c == '\\')
        g_string_append_printf (out, "\\%c", c);
      else if (c == '\n')
        g_string_append (out, "\\n");
      else if (c == '\t')
        g_string_append (out, "\\t");
      else if (c < 0x20)
        g_string_append_printf (out, "\\u%04x", c);
      else
        g_string_append_c (out, (char) c);
    }
  g_string_append_c (out, '"');
}

/* A number with one decimal, locale-independent. */
static void
lw_json_ms (GString *out, double ms)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append (out, g_ascii_formatd (buf, sizeof buf, "%.1f", ms));
}

static void
lw_json_frames (GString *out, const LwFrame *frames, guint n_frames)
{
  gboolean interpreted = lw_report_frames_interpreted (frames, n_frames);

  g_string_append_c (out, '[');
  for (guint i = 0; i < n_frames; i++)
    {
      const LwFrame *frame = &frames[i];

      g_string_append_printf (out, "%s{\"ip\":\"0x%" PRIxPTR "\",\"module\":", i ? "," : "", frame->ip);
      lw_json_string (out, frame->module);
      g_string_append (out, ",\"build_id\":");
      lw_json_string (out, frame->build_id);
      g_string_append_printf (out, ",\"module_offset\":\"0x%" PRIxPTR "\",\"symbol\":", frame->module_offset);
      lw_json_string (out, frame->symbol);
      g_string_append_printf (out, ",\"symbol_offset\":%" PRIuPTR ",\"file\":", frame->symbol_offset);
      lw_json_string (out, frame->file);
      if (frame->file != NULL && frame->line > 0)
        g_string_append_printf (out, ",\"line\":%u", frame->line);
      else
        g_string_append (out, ",\"line\":null");
      /* Only frames of an interpreted language say which: native ones do not. */
      if (frame->lang != NULL)
        {
          g_string_append (out, ",\"lang\":");
          lw_json_string (out, frame->lang);
        }
      g_string_append_printf (out, ",\"inlined\":%s", frame->inlined ? "true" : "false");
      /* The rule behind the summary's innermost program frame, so that a
       * reader of the record names the same frame without its own copy. */
      g_string_append_printf (out, ",\"is_program\":%s}",
                              lw_report_frame_is_program_in (frame, interpreted) ? "true" : "false");
    }
  g_string_append_c (out, ']');
}

static void
lw_json_optional_ms (GString *out, const char *name, double ms)
{
  g_string_append_printf (out, ",\"%s\":", name);
  if (ms >= 0)
    lw_json_ms (out, ms);
  else
    g_string_append (out, "null");
}

/* "frames_missed": per GTK window, the frames it missed; only when GTK's
 * windows are followed. The refresh interval keeps three decimals: the
 * count is the lag over it, and 16.7 for 16.667 ms would be off by one in
 * a 400 ms lag. */
static void
lw_json_frames_missed (GString *out, LagWatchReport *report)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (!report->frames_followed)
    return;
  g_string_append (out, ",\"frames_missed\":[");
  for (guint i = 0; i < report->n_windows; i++)
    {
      g_string_append (out, i ? ",{\"title\":" : "{\"title\":");
      lw_json_string (out, report->windows[i].title);
      g_string_append_printf (out, ",\"refresh_interval_ms\":%s,\"frames_missed\":%u}",
                              g_ascii_formatd (buf, sizeof buf, "%.3f", report->windows[i].refresh_interval_ms),
                              report->windows[i].frames_missed);
    }
  g_string_append_c (out, ']');
}

static void
lw_json_call_list (GString *out, const LwCall *parent)
{
  g_string_append_c (out, '[');
  for (guint i = 0; parent->children != NULL && i < parent->children->len; i++)
    {
      const LwCall *call = parent->children->pdata[i];

      g_string_append (out, i ? ",{\"name\":" : "{\"name\":");
      lw_json_string (out, call->name);
      g_string_append (out, ",\"start_ms\":");
      lw_json_ms (out, (double) call->start_ns / 1e6);
      g_string_append (out, ",\"duration_ms\":");
      lw_json_ms (out, (double) call->duration_ns / 1e6);
      g_string_append (out, ",\"children\":");
      lw_json_call_list (out, call);
      g_string_append_c (out, '}');
    }
  g_string_append_c (out, ']');
}

/* The call tree, when the lag has one: "calls" (the outermost calls, each
 * with its children) and "calls_exact". */
static void
lw_json_calls (GString *out, const LagWatchReport *report)
{
  if (report->calls == NULL)
    return;
  g_string_append (out, ",\"calls\":");
  lw_json_call_list (out, report->calls);
  g_string_append_printf (out, ",\"calls_exact\":%s", report->calls_exact ? "true" : "false");
}

char *
lagwatch_report_to_json (LagWatchReport *report)
{
  GString *out;
  g_autofree char *time = NULL;

  g_return_val_if_fail (report != NULL, NULL);
  if (report->json != NULL && report->threads_left_out == 0)
    return g_strdup (report->json);
  out = g_string_sized_new (512 + 200 * report->n_frames);
  time = lw_report_format_time (report->start_time_us);

  g_string_append (out, "{\"event\":");
  lw_json_string (out, report->event);
  g_string_append (out, ",\"id\":");
  lw_json_string (out, report->id);
  g_string_append (out, ",\"time\":");
  lw_json_string (out, time);
  g_string_append (out, ",\"duration_ms\":");
  lw_json_ms (out, report->duration_ms);
  g_string_append_printf (out, ",\"threshold_ms\":%u,\"complete\":%s,\"pid\":%d,\"thread_id\":%d,"
                          "\"thread_name\":",
                          report->threshold_ms, report->complete ? "true" : "false",
                          report->pid, report->thread_id);
  lw_json_string (out, report->thread_name);
  lw_json_optional_ms (out, "caught_ms", report->caught_ms);
  g_string_append (out, ",\"source\":");
  lw_json_string (out, report->source);
  g_string_append (out, ",\"priority\":");
  if (report->phase != NULL && g_str_equal (report->phase, "dispatch") && report->source_known)
    g_string_append_printf (out, "%d", report->priority);
  else
    g_string_append (out, "null");
  g_string_append (out, ",\"phase\":");
  lw_json_string (out, report->phase);
  lw_json_optional_ms (out, "cpu_ms", report->cpu_ms);
  g_string_append (out, ",\"thread_state\":");
  lw_json_string (out, report->thread_state);
  g_string_append (out, ",\"syscall\":");
  lw_json_string (out, report->syscall);
  g_string_append (out, ",\"wchan\":");
  lw_json_string (out, report->wchan);
  g_string_append (out, ",\"fingerprint\":");
  lw_json_string (out, report->fingerprint);
  g_string_append (out, ",\"fingerprint2\":");
  lw_json_string (out, report->fingerprint2);
  g_string_append_printf (out, ",\"occurrence\":%u,\"samples\":%u", report->occurrence, report->n_samples);
  g_string_append (out, ",\"stack_method\":");
  lw_json_string (out, report->stack_method);
  g_string_append (out, ",\"stack_error\":");
  lw_json_string (out, report->stack_error);
  g_string_append_printf (out, ",\"stack_truncated\":%s,\"stack\":",
                          report->stack_truncated ? "true" : "false");
  lw_json_frames (out, report->frames, report->n_frames);
  g_string_append (out, ",\"stacks\":[");
  for (guint i = 0; i < report->n_stacks; i++)
    {
      g_string_append_printf (out, "%s{\"samples\":%u,\"truncated\":%s,\"stack\":", i ? "," : "",
                              report->stacks[i].samples, report->stacks[i].truncated ? "true" : "false");
      lw_json_frames (out, report->stacks[i].frames, report->stacks[i].n_frames);
      g_string_append_c (out, '}');
    }
  g_string_append_c (out, ']');
  if (report->threads != NULL)
    {
      g_string_append (out, ",\"threads\":[");
      for (guint i = 0; i < report->n_threads; i++)
        {
          const LwReportStack *thread = &report->threads[i];

          g_string_append_printf (out, "%s{\"id\":%d,\"name\":", i ? "," : "", thread->thread_id);
          lw_json_string (out, thread->thread_name);
          g_string_append (out, ",\"state\":");
          lw_json_string (out, thread->thread_state);
          g_string_append (out, ",\"stack_error\":");
          lw_json_string (out, lw_report_thread_stack_error (report, i));
          g_string_append (out, ",\"stack\":");
          if (lw_report_thread_left_out (report, i))
            g_string_append (out, "[]");
          else
            lw_json_frames (out, thread->frames, thread->n_frames);
          g_string_append_c (out, '}');
        }
      g_string_append_c (out, ']');
      if (report->threads_left_out > 0)
        g_string_append_printf (out, ",\"threads_stacks_left_out\":%u", report->threads_left_out);
    }
  if (report->previous_exe != NULL)
    {
      g_string_append (out, ",\"exe\":");
      lw_json_string (out, report->previous_exe);
    }
  lw_json_frames_missed (out, report);
  /* Why "stack" ends where it does: its outermost frame, the frame limit,
   * or a frame the unwinder could not step past. */
  g_string_append (out, ",\"stack_end\":");
  lw_json_string (out, !report->stack_truncated ? "outermost"
                       : report->stack_at_limit ? "frame-limit" : "unwind-stopped");
  lw_json_optional_ms (out, "run_delay_ms", report->run_delay_ms);
  lw_json_optional_ms (out, "stopped_ms", report->stopped_ms);
  lw_json_optional_ms (out, "throttled_ms", report->throttled_ms);
  g_string_append_printf (out, ",\"cpu_starved\":%s,\"input_pending\":%s",
                          report->cpu_starved ? "true" : "false", report->input_pending ? "true" : "false");
  if (report->source_callback != NULL)
    {
      g_string_append (out, ",\"source_callback\":");
      lw_json_string (out, report->source_callback);
      g_string_append (out, ",\"source_callback_kind\":");
      lw_json_string (out, report->source_callback_kind);
    }
  lw_json_calls (out, report);
  if (report->stopped_by != NULL)
    {
      g_string_append (out, ",\"stopped_by\":");
      lw_json_string (out, report->stopped_by);
    }
  g_string_append_c (out, '}');
  return g_string_free (out, FALSE);
}

/* Any thread. @text as the text report shows it, for a terminal: control
 * bytes as \xNN (a name can hold anything: a GSource's, a thread's, a
 * Python function's). The copy is kept in @keep; NULL stays NULL. */
static const char *
lw_text_safe (GPtrArray *keep, const char *text)
{
  char *escaped = lw_text_escape (text);

  if (escaped != NULL)
    g_ptr_array_add (keep, escaped);
  return escaped;
}

/* A frame of an interpreted language: "function (file.py:12)  [python]",
 * no address (it is not one); "(file.js)" when the line is not known. */
static void
lw_text_language_frame (GString *out, guint index, const LwFrame *frame)
{
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *file = frame->file ? g_path_get_basename (frame->file) : g_strdup ("?");

  g_string_append_printf (out, "  #%-2u %s (%s", index,
                          frame->symbol ? lw_text_safe (keep, frame->symbol) : "??", lw_text_safe (keep, file));
  if (frame->line > 0)
    g_string_append_printf (out, ":%u", frame->line);
  g_string_append_printf (out, ")  [%s]\n", lw_text_safe (keep, frame->lang));
}

/* Any thread. The share of the lag the process stood still, the share its
 * cgroup's quota held it back, the machine's share, and waiting input. */
static void
lw_text_whose_fault (GString *out, const LagWatchReport *report)
{
  if (report->stopped_ms >= 1)
    g_string_append_printf (out, "  stopped for %.0f ms (SIGSTOP, a frozen cgroup): the program did not run "
                            "then, not its doing\n", report->stopped_ms);
  if (report->throttled_ms >= 1 && report->duration_ms > 0)
    g_string_append_printf (out, "  throttled by its cgroup for %.0f ms (%.0f%% of the lag): its CPU quota "
                            "was used up\n", report->throttled_ms,
                            MIN (100.0 * report->throttled_ms / report->duration_ms, 100.0));
  if (report->run_delay_ms >= 1 && report->duration_ms > 0
      && (report->cpu_starved || report->run_delay_ms >= report->duration_ms / 10))
    g_string_append_printf (out, "  waiting for a CPU: %.0f ms (%.0f%% of the lag)%s\n", report->run_delay_ms,
                            MIN (100.0 * report->run_delay_ms / report->duration_ms, 100.0),
                            report->cpu_starved ? ": the machine was busy" : "");
  if (report->input_pending)
    g_string_append (out, "  input was waiting: a file descriptor the loop polls was readable during the lag\n");
}

static void
lw_text_frames (GString *out, const LwFrame *frames, guint n_frames, guint limit)
{
  for (guint i = 0; i < n_frames && i < limit; i++)
    {
      const LwFrame *frame = &frames[i];
      g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
      g_autofree char *base = frame->module ? g_path_get_basename (frame->module) : g_strdup ("?");

      if (frame->lang != NULL)
        {
          lw_text_language_frame (out, i, frame);
          continue;
        }
      g_string_append_printf (out, "  #%-2u 0x%016" PRIxPTR "  ", i, frame->ip);
      if (frame->symbol != NULL)
        {
          g_autofree char *name = lw_report_short_name (frame->symbol);

          if (frame->inlined)
            g_string_append_printf (out, "%s (inlined)", lw_text_safe (keep, name));
          else if (i > 0 && frame->symbol_offset == 0)
            /* A return address is never a function's start: a frame
             * named by its address alone (GLib's dispatch), offset unknown. */
            g_string_append (out, lw_text_safe (keep, name));
          else
            g_string_append_printf (out, "%s+0x%" PRIxPTR, lw_text_safe (keep, name), frame->symbol_offset);
        }
      else
        g_string_append (out, "??");
      g_string_append_printf (out, "  (%s +0x%" PRIxPTR ")", lw_text_safe (keep, base), frame->module_offset);
      if (frame->file != NULL)
        {
          g_autofree char *file = g_path_get_basename (frame->file);

          g_string_append_printf (out, "  at %s:%u", lw_text_safe (keep, file), frame->line);
        }
      g_string_append_c (out, '\n');
    }
}

static const char *
lw_text_ordinal_suffix (guint n)
{
  if (n % 100 >= 11 && n % 100 <= 13)
    return "th";
  switch (n % 10)
    {
    case 1: return "st";
    case 2: return "nd";
    case 3: return "rd";
    default: return "th";
    }
}

/* One line per GTK window that missed frames during the lag. */
static void
lw_text_frames_missed (GString *out, LagWatchReport *report)
{
  for (guint i = 0; i < report->n_windows; i++)
    {
      const LwReportWindow *window = &report->windows[i];

      g_autofree char *title = lw_text_escape (window->title);

      if (window->frames_missed == 0)
        continue;
      if (title != NULL)
        g_string_append_printf (out, "  the window '%s'", title);
      else
        g_string_append (out, "  a window with no title");
      g_string_append_printf (out, " missed %u frame%s (one every %.1f ms)\n", window->frames_missed,
                              window->frames_missed == 1 ? "" : "s", window->refresh_interval_ms);
    }
}

/* Calls listed on stderr: a tree is read at a glance or not at all. */
#define LW_TEXT_CALLS 40

/* The call tree after the heaviest stack, one call a line, indented by depth. */
static void
lw_text_calls (GString *out, LagWatchReport *report)
{
  if (report->n_calls == 0)
    return;
  if (report->calls_exact)
    g_string_append (out, "  calls, in order (exact, from the tracer):\n");
  else
    g_string_append_printf (out, "  calls, in order (from %u samples ~%.0f ms apart: each within about that):\n",
                            report->n_timeline, (double) lw_call_tree_interval (report, 0) / 1e6);
  for (guint i = 0; i < report->n_calls && i < LW_TEXT_CALLS; i++)
    {
      const LwCall *call = report->call_list[i];
      g_autofree char *name = lw_text_escape (call->name);

      g_string_append_printf (out, "    %*s%s  %.0f ms  (at %.0f ms)\n", 2 * report->call_depth[i], "",
                              name != NULL ? name : "??", (double) call->duration_ns / 1e6,
                              (double) call->start_ns / 1e6);
    }
  if (report->n_calls > LW_TEXT_CALLS)
    g_string_append_printf (out, "    ... (%u more calls)\n", report->n_calls - LW_TEXT_CALLS);
}

char *
lw_report_to_text_full (LagWatchReport *report, guint skipped_since_shown)
{
  GString *out = g_string_sized_new (512 + 100 * report->n_frames);
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *time = lw_report_format_time (report->start_time_us);
  const char *what;

  if (g_str_equal (report->event, "hang"))
    what = "HANG, still going after";
  else if (g_str_equal (report->event, "hang-killed"))
    what = "the previous run was killed during a hang, after";
  else
    what = report->complete ? "lag of"
           : g_strcmp0 (report->stopped_by, "exit") == 0 ? "lag still running at exit, after"
           : "lag still running at detach, after";
  g_string_append_printf (out, "lagwatch: %s %.1f ms (threshold %u ms) on thread %d",
                          what, report->duration_ms, report->threshold_ms, report->thread_id);
  if (report->thread_name != NULL)
    g_string_append_printf (out, " \"%s\"", lw_text_safe (keep, report->thread_name));
  g_string_append_printf (out, ", began %s [%s]\n", time, lw_text_safe (keep, report->id));
  if (report->previous_exe != NULL)
    g_string_append_printf (out, "  program: %s (pid %d)\n", lw_text_safe (keep, report->previous_exe),
                            report->pid);

  if (report->phase != NULL)
    {
      g_string_append (out, "  ");
      if (g_str_equal (report->phase, "dispatch"))
        {
          if (report->source != NULL)
            g_string_append_printf (out, "in GSource \"%s\" (priority %d)", lw_text_safe (keep, report->source),
                                    report->priority);
          else if (report->source_callback != NULL)
            g_string_append_printf (out, "in %s callback %s (unnamed GSource, priority %d)",
                                    report->source_callback_kind != NULL
                                    ? lw_text_safe (keep, report->source_callback_kind) : "GSource",
                                    lw_text_safe (keep, report->source_callback), report->priority);
          else
            g_string_append_printf (out, "in an unnamed GSource (priority %d)", report->priority);
        }
      else if (g_str_equal (report->phase, "starved"))
        g_string_append (out, "the loop kept iterating without polling: its input was starved");
      else
        g_string_append_printf (out, "in the loop's %s phase", lw_text_safe (keep, report->phase));
      g_string_append (out, "\n");
    }
  if (report->cpu_ms >= 0 && report->duration_ms > 0)
    {
      double share = 100.0 * report->cpu_ms / report->duration_ms;

      if (share >= 50)
        g_string_append_printf (out, "  computing: %.1f ms on CPU (%.0f%% of the lag)\n",
                                report->cpu_ms, MIN (share, 100.0));
      else if (g_strcmp0 (report->thread_state, "running") == 0)
        {
          /* What kept it off the CPU most: not the machine when the
           * process stood still or its cgroup's quota held it back. */
          double rest = report->duration_ms - report->cpu_ms;

          g_string_append_printf (out, "  runnable: %.1f ms on CPU (%.0f%%), %s\n", report->cpu_ms, share,
                                  report->stopped_ms >= rest / 2 ? "the process was stopped most of the rest"
                                  : report->throttled_ms >= rest / 2 ? "its cgroup's CPU quota held it back"
                                  : "the CPU was busy elsewhere");
        }
      else
        {
          g_string_append_printf (out, "  waiting: %.1f ms on CPU (%.0f%%)", report->cpu_ms, share);
          if (report->thread_state != NULL)
            g_string_append_printf (out, ", %s", report->thread_state);
          if (report->syscall != NULL)
            g_string_append_printf (out, " in %s()", report->syscall);
          if (report->wchan != NULL)
            g_string_append_printf (out, " [kernel: %s]", lw_text_safe (keep, report->wchan));
          g_string_append (out, "\n");
        }
    }
  lw_text_frames_missed (out, report);
  lw_text_whose_fault (out, report);
  if (report->n_samples > 0 && report->n_stacks > 0)
    g_string_append_printf (out, "  %u sample%s; heaviest stack (%.0f%%)", report->n_samples,
                            report->n_samples == 1 ? "" : "s",
                            100.0 * report->stacks[0].samples / report->n_samples);
  if (report->caught_ms >= 0)
    g_string_append_printf (out, "%sfirst taken %.1f ms in, %s:\n",
                            report->n_samples > 0 ? ", " : "  ", report->caught_ms,
                            g_strcmp0 (report->stack_method, "signal") == 0
                              ? "by signal (the thread was running)"
                              : "from /proc (the thread was sleeping in a system call)");
  else if (report->n_samples > 0)
    g_string_append (out, ":\n");
  if (report->stack_error != NULL)
    g_string_append_printf (out, "  (%s)\n", lw_text_safe (keep, report->stack_error));
  lw_text_frames (out, report->frames, report->n_frames, G_MAXUINT);
  if (report->stack_truncated && report->stack_at_limit)
    g_string_append (out, "  ... (more frames not shown: the frame limit)\n");
  else if (report->stack_truncated && report->n_frames > 0)
    g_string_append (out, "  ... (the unwind stopped here: no way to step past this frame; "
                          "the stack may be incomplete)\n");
  for (guint i = 1; i < report->n_stacks && i < 4; i++)
    {
      g_autofree char *label = lw_report_stack_label (report->stacks[i].frames,
                                                      report->stacks[i].n_frames);

      g_string_append_printf (out, "  also %.0f%% in %s\n",
                              100.0 * report->stacks[i].samples / MAX (report->n_samples, 1),
                              lw_text_safe (keep, label));
    }
  lw_text_calls (out, report);
  for (guint i = 0; i < report->n_threads; i++)
    {
      const LwReportStack *thread = &report->threads[i];

      const char *error = lw_report_thread_stack_error (report, i);

      g_string_append_printf (out, "  thread %d \"%s\" (%s):\n", thread->thread_id,
                              thread->thread_name ? lw_text_safe (keep, thread->thread_name) : "?",
                              thread->thread_state ? lw_text_safe (keep, thread->thread_state) : "?");
      if (error != NULL)
        {
          g_string_append_printf (out, "    (no stack: %s)\n", lw_text_safe (keep, error));
          continue;
        }
      lw_text_frames (out, thread->frames, thread->n_frames, 12);
      if (thread->n_frames > 12)
        g_string_append_printf (out, "  ... (%u more frames not shown here: all are in the JSON)\n",
                                thread->n_frames - 12);
    }
  if (report->occurrence > 1)
    {
      g_string_append_printf (out, "  (the %u%s lag with this stack", report->occurrence,
                              lw_text_ordinal_suffix (report->occurrence));
      if (skipped_since_shown > 0)
        g_string_append_printf (out, "; %u like it not shown since the last one", skipped_since_shown);
      g_string_append (out, ")\n");
    }
  return g_string_free (out, FALSE);
}

char *
lagwatch_report_to_text (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return lw_report_to_text_full (report, 0);
}

char *
lw_report_stack_to_text (const LwFrame *frames, guint n_frames)
{
  GString *out = g_string_sized_new (100 * n_frames);

  lw_text_frames (out, frames, n_frames, G_MAXUINT);
  return g_string_free (out, FALSE);
}

void
lw_report_append_json_string (GString *out, const char *text)
{
  lw_json_string (out, text);
}

guint
lagwatch_report_get_n_windows (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_windows;
}

guint
lagwatch_report_get_frames_missed (LagWatchReport *report,
                                   guint           index,
                                   const char    **title,
                                   double         *refresh_interval_ms)
{
  g_return_val_if_fail (report != NULL, 0);
  g_return_val_if_fail (index < report->n_windows, 0);
  if (title != NULL)
    *title = report->windows[index].title;
  if (refresh_interval_ms != NULL)
    *refresh_interval_ms = report->windows[index].refresh_interval_ms;
  return report->windows[index].frames_missed;
}

const char *
lagwatch_report_get_frame_language (LagWatchReport *report,
                                    guint           index)
{
  g_return_val_if_fail (report != NULL, NULL);
  if (index >= report->n_frames)
    return NULL;
  return report->frames[index].lang != NULL ? report->frames[index].lang : "native";
}

/* Any thread. */
gboolean
lagwatch_report_get_frame_inlined (LagWatchReport *report,
                                   guint           index)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return index < report->n_frames && report->frames[index].inlined;
}

/* Any thread. */
gboolean
lagwatch_report_get_frame_is_program (LagWatchReport *report,
                                      guint           index)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return index < report->n_frames
         && lw_report_frame_is_program_in (&report->frames[index], lw_report_has_language_frames (report));
}

double
lagwatch_report_get_run_delay_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, -1);
  return report->run_delay_ms;
}

gboolean
lagwatch_report_get_cpu_starved (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->cpu_starved;
}

gboolean
lagwatch_report_get_input_pending (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->input_pending;
}

/* The calls under @call into @list, pre-order. */
static void
lw_report_list_calls (LwCall *call, guint depth, GPtrArray *list, GArray *depths)
{
  for (guint i = 0; call->children != NULL && i < call->children->len; i++)
    {
      g_ptr_array_add (list, call->children->pdata[i]);
      g_array_append_val (depths, depth);
      lw_report_list_calls (call->children->pdata[i], depth + 1, list, depths);
    }
}

void
lw_report_set_calls (LagWatchReport *report, LwCall *root, gboolean exact)
{
  GPtrArray *list;
  GArray *depths;

  if (report->calls != NULL && report->calls_exact && !exact)
    {
      lw_call_free (root);
      return;
    }
  lw_call_free (report->calls);
  g_clear_pointer (&report->call_list, g_free);
  g_clear_pointer (&report->call_depth, g_free);
  report->n_calls = 0;
  report->calls = root;
  report->calls_exact = exact && root != NULL;
  if (root == NULL)
    return;
  list = g_ptr_array_new ();
  depths = g_array_new (FALSE, FALSE, sizeof (guint));
  lw_report_list_calls (root, 0, list, depths);
  report->n_calls = list->len;
  report->call_list = (LwCall **) g_ptr_array_free (list, FALSE);
  report->call_depth = (guint *) g_array_free (depths, FALSE);
}

guint
lagwatch_report_get_n_calls (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_calls;
}

const char *
lagwatch_report_get_call (LagWatchReport *report, guint index, guint *depth, double *start_ms,
                          double *duration_ms)
{
  const LwCall *call;

  g_return_val_if_fail (report != NULL, NULL);
  if (index >= report->n_calls)
    return NULL;
  call = report->call_list[index];
  if (depth != NULL)
    *depth = report->call_depth[index];
  if (start_ms != NULL)
    *start_ms = (double) call->start_ns / 1e6;
  if (duration_ms != NULL)
    *duration_ms = (double) call->duration_ns / 1e6;
  return call->name;
}

gboolean
lagwatch_report_get_calls_exact (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->calls_exact;
}
