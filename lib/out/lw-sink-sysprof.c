/* lw-sink-sysprof.c: Sysprof marks and capture files (lw-sink-sysprof.h) */
#include "lw-sink-sysprof.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include <sysprof-capture.h>

#include "lw-lang-frames.h"
#include "lw-modules.h"
#include "lw-perfmap.h"
#include "lw-private.h"
#include "lw-report.h"
#include "lw-report-program.h"
#include "lw-fd.h"
#include "lw-say.h"
#include "lw-proc.h"
#include "lw-sink-fd.h"

#define LW_SYSCAP_BUFFER_SIZE (256 * 1024)
#define LW_SYSPROF_GROUP "lagwatch"

/* Any thread. TRUE when the process was started under Sysprof. */
static gboolean
lw_sysprof_collector_active (void)
{
  /* Sysprof hands its control socket to the programs it starts in this
   * variable; libsysprof-capture's collector connects through it. */
  return getenv ("SYSPROF_CONTROL_FD") != NULL;
}

/* Reporting thread. "lag" or "hang" (a hang-killed record is the hang of a
 * run that is gone: not a mark of this process's timeline). */
static const char *
lw_sysprof_mark_name (LagWatchReport *report)
{
  return g_strcmp0 (report->event, "hang") == 0 ? "hang" : "lag";
}

/* Reporting thread. The mark's message: the source (its name, else its
 * callback), the program frame and the duration, "GSource \"name\":
 * function (254.5 ms)" or "callback handler: function (254.5 ms)" (the
 * source or the function may be missing). */
static char *
lw_sysprof_message (LagWatchReport *report)
{
  /* The summary's innermost program frame: a Python lag's Python function. */
  const LwFrame *program = lw_report_program_frame (report->frames, report->n_frames);
  const char *frame = program != NULL ? program->symbol : NULL;
  g_autofree char *source = report->source != NULL ? g_strdup_printf ("GSource \"%s\": ", report->source)
                            : report->source_callback != NULL ? g_strdup_printf ("callback %s: ", report->source_callback)
                            : g_strdup ("");

  if (*source == '\0' && frame == NULL)
    return g_strdup_printf ("%.1f ms", report->duration_ms);
  return g_strdup_printf ("%s%s (%.1f ms)", source, frame != NULL ? frame : "", report->duration_ms);
}

/* Sinks' thread. Adds @report as a Sysprof mark. */
static void
lw_sysprof_mark (LagWatchReport *report)
{
  g_autofree char *message = NULL;

  if (report->start_ns <= 0)
    return;
  message = lw_sysprof_message (report);
  sysprof_collector_mark (report->start_ns, (int64_t) (report->duration_ms * 1e6),
                          LW_SYSPROF_GROUP, lw_sysprof_mark_name (report), message);
}

/* How a capture shows what Sysprof cannot resolve from the memory maps.
 *
 * Interpreted frames. lagwatch puts a Python or JavaScript frame in a stack
 * as a tag (lw-lang-frames.h: the top 24 bits set, an index below). Sysprof
 * names such frames through JITMAP records, which map an address to a name,
 * and only for addresses it reserves for them: SYSPROF_CAPTURE_JITMAP_MARK
 * in the top bits, a small number below (Sysprof 45 and later take
 * nothing else; 3.46 looks the exact address up). So the capture does not
 * hold lagwatch's tags: each tag gets an address from Sysprof's writer
 * (sysprof_capture_writer_add_jitmap(): the mark and the next number) the
 * first time a sample holds it, with its name, "function (file:line)", and
 * keeps it for the rest of the capture.
 *
 * Generated code (lw-perfmap.h) lies in anonymous mappings, which the
 * capture does not map: a frame lagwatch named from the runtime's perf map
 * gets a JITMAP address the same way, one per name (the code of one
 * function has many addresses).
 *
 * Samples of a sleeping thread. Sysprof's own samples are CPU samples:
 * perf samples a thread only while it runs, and a stack taken in the
 * kernel starts with perf's context marks, PERF_CONTEXT_KERNEL then the
 * kernel's frames, PERF_CONTEXT_USER then the program's. lagwatch also
 * samples a thread asleep in a system call (through /proc); such a sample
 * is written as one that entered the kernel from the program:
 * PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER, a "[sleeping]" frame (a JITMAP
 * name), then the program's frames. Sysprof's call graph then blames its
 * time on "- - Kernel - -" (its context-switch category) under
 * "[sleeping]" under the call it slept in, not on that call's own code,
 * and libsysprof lists it among the samples with a context switch
 * (sysprof_document_list_samples_with_context_switch()). */
#define LW_SYSCAP_ASLEEP_NAME "[sleeping]"

typedef struct
{
  SysprofCaptureWriter *writer;
  char                 *path;
  gboolean              error_said;
  int                    fd;        /* the writer's: checked, never closed by lagwatch once lost */
  LwFdId                 fd_id;     /* what fd was when opened (lw-fd.h) */
  gboolean               fd_lost;   /* the program took fd over: the capture ends there */
  GHashTable            *jit_addresses;  /* interpreted frame's tag -> its JITMAP address */
  GHashTable            *jit_names;      /* generated code's name -> its JITMAP address */
  SysprofCaptureAddress  asleep_address; /* the "[sleeping]" frame's JITMAP address, 0 until needed */
} LwSyscap;

/* Any thread. The process's command line, arguments separated by spaces. */
static char *
lw_syscap_cmdline (void)
{
  g_autofree char *path = g_strconcat (lw_proc_self (), "/cmdline", NULL);
  g_autofree char *raw = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &raw, &len, NULL) || len == 0)
    return g_strdup ("?");
  for (gsize i = 0; i + 1 < len; i++)
    if (raw[i] == '\0')
      raw[i] = ' ';
  return g_strndup (raw, len);
}

/* Any thread. Every file-backed and vDSO mapping of the process, as
 * Sysprof maps; their build-ids, which Sysprof 3.46's map record has no
 * field for, go in one metadata record ("lagwatch.build-ids": one
 * "PATH BUILD-ID" line per module). */
static void
lw_syscap_add_maps (LwSyscap *capture, int64_t now, int pid)
{
  g_autofree char *maps = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(GHashTable) build_ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  GString *metadata = g_string_new (NULL);
  GHashTableIter iter;
  gpointer path, build_id;
  g_autofree char *maps_path = g_strconcat (lw_proc_self (), "/maps", NULL);

  if (!g_file_get_contents (maps_path, &maps, NULL, NULL))
    {
      g_string_free (metadata, TRUE);
      return;
    }
  lines = g_strsplit (maps, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      guint64 start, end, offset, inode;
      char perms[8];
      int name_at = 0;
      const char *name;
      LwModule *module;

      if (sscanf (lines[i], "%" G_GINT64_MODIFIER "x-%" G_GINT64_MODIFIER "x %7s %" G_GINT64_MODIFIER "x %*s %"
                  G_GINT64_MODIFIER "u %n", &start, &end, perms, &offset, &inode, &name_at) < 5
          || name_at == 0 || perms[2] != 'x')
        continue;
      name = lines[i] + name_at;
      if (name[0] != '/' && g_strcmp0 (name, "[vdso]") != 0)
        continue;
      sysprof_capture_writer_add_map (capture->writer, now, -1, pid, start, end, offset, inode, name);
      module = lw_modules_ref_module ((uintptr_t) start);
      if (module != NULL)
        {
          if (lw_module_get_build_id_hex (module) != NULL)
            g_hash_table_replace (build_ids, g_strdup (name), g_strdup (lw_module_get_build_id_hex (module)));
          lw_module_unref (module);
        }
    }
  g_hash_table_iter_init (&iter, build_ids);
  while (g_hash_table_iter_next (&iter, &path, &build_id))
    g_string_append_printf (metadata, "%s %s\n", (const char *) path, (const char *) build_id);
  sysprof_capture_writer_add_metadata (capture->writer, now, -1, pid, "lagwatch.build-ids",
                                       metadata->str, (gssize) metadata->len);
  g_string_free (metadata, TRUE);
}

/* Any thread. Starts a capture in the file @fd (taken over: closed by
 * lw_syscap_close()), with this process and its memory maps. NULL with
 * @error when Sysprof's writer refuses it. */
static LwSyscap *
lw_syscap_open (int fd, const char *path, GError **error)
{
  LwSyscap *capture;
  g_autofree char *cmdline = NULL;
  int64_t now = SYSPROF_CAPTURE_CURRENT_TIME;
  int pid = getpid ();

  capture = g_new0 (LwSyscap, 1);
  capture->writer = sysprof_capture_writer_new_from_fd (fd, LW_SYSCAP_BUFFER_SIZE);
  if (capture->writer == NULL)
    {
      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "Sysprof's writer refused \"%s\" (%s)", path,
                   g_strerror (errno));
      close (fd);
      g_free (capture);
      return NULL;
    }
  capture->path = g_strdup (path);
  capture->fd = fd;
  capture->jit_addresses = g_hash_table_new (NULL, NULL);
  capture->jit_names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  lw_fd_id_take (fd, &capture->fd_id);
  cmdline = lw_syscap_cmdline ();
  sysprof_capture_writer_add_process (capture->writer, now, -1, pid, cmdline);
  lw_syscap_add_maps (capture, now, pid);
  sysprof_capture_writer_flush (capture->writer);
  return capture;
}

/* Reporting thread. Says once that @capture's file is incomplete. */
static gboolean
lw_syscap_failed (LwSyscap *capture)
{
  if (!capture->error_said)
    {
      capture->error_said = TRUE;
      lw_say ("LAGWATCH_OUTPUT: cannot write the Sysprof capture \"%s\" (%s); it is incomplete",
              capture->path, g_strerror (errno));
    }
  return FALSE;
}

/* Reporting thread. TRUE while @capture's descriptor is still its file.
 * If the program closed it (and reused the number) or dup2()ed something
 * over it, the writer is never used again: it would write into the
 * program's file, and its unref would close the program's descriptor. Its
 * buffer is empty (every write ends in a flush): it is left as it is. */
static gboolean
lw_syscap_still_ours (LwSyscap *capture)
{
  if (!capture->fd_lost && !lw_fd_is (capture->fd, &capture->fd_id))
    {
      capture->fd_lost = TRUE;
      lw_say ("the program closed or replaced descriptor %d, which held the Sysprof capture \"%s\": "
              "the capture ends there", capture->fd, capture->path);
    }
  return !capture->fd_lost;
}

/* Sinks' thread. The name Sysprof shows for the interpreted @frame:
 * "function (file:line)". */
static char *
lw_syscap_jit_name (const LwFrame *frame)
{
  const char *function = frame->symbol != NULL ? frame->symbol : "?";

  if (frame->file == NULL)
    return g_strdup (function);
  if (frame->line == 0)
    return g_strdup_printf ("%s (%s)", function, frame->file);
  return g_strdup_printf ("%s (%s:%u)", function, frame->file, frame->line);
}

/* Sinks' thread. The address @frame has in the capture: its own for native
 * code in a module (and for generated code without a name); for an
 * interpreted frame, or named generated code, its JITMAP address, given
 * (and its name written) the first time. 0 when the writer failed. */
static SysprofCaptureAddress
lw_syscap_frame_address (LwSyscap *capture, const LwFrame *frame)
{
  gboolean interpreted = frame->lang != NULL || lw_lang_frame_is (frame->ip);
  gpointer known;
  char *name;
  SysprofCaptureAddress address;

  if (interpreted)
    known = g_hash_table_lookup (capture->jit_addresses, GSIZE_TO_POINTER (frame->ip));
  else if (frame->symbol != NULL && g_strcmp0 (frame->module, LW_JIT_MODULE) == 0)
    known = g_hash_table_lookup (capture->jit_names, frame->symbol);
  else
    return frame->ip;
  if (known != NULL)
    return (SysprofCaptureAddress) GPOINTER_TO_SIZE (known);
  name = interpreted ? lw_syscap_jit_name (frame) : g_strdup (frame->symbol);
  address = sysprof_capture_writer_add_jitmap (capture->writer, name);
  if (address == 0)
    g_free (name);
  else if (interpreted)
    {
      g_hash_table_insert (capture->jit_addresses, GSIZE_TO_POINTER (frame->ip), GSIZE_TO_POINTER (address));
      g_free (name);
    }
  else
    g_hash_table_insert (capture->jit_names, name, GSIZE_TO_POINTER (address));
  return address;
}

/* Sinks' thread. Fills @addrs (room for @stack's frames and 3 more) with
 * the sample of @stack, innermost first, as Sysprof reads it (see
 * "How a capture shows" above); the count, or 0 when the writer failed. */
static guint
lw_syscap_sample_addresses (LwSyscap *capture, const LwReportStack *stack, gboolean asleep,
                            SysprofCaptureAddress *addrs)
{
  guint n = 0;

  if (asleep)
    {
      if (capture->asleep_address == 0)
        capture->asleep_address = sysprof_capture_writer_add_jitmap (capture->writer, LW_SYSCAP_ASLEEP_NAME);
      if (capture->asleep_address == 0)
        return 0;
      addrs[n++] = PERF_CONTEXT_KERNEL;
      addrs[n++] = PERF_CONTEXT_USER;
      addrs[n++] = capture->asleep_address;
    }
  for (guint f = 0; f < stack->n_frames; f++)
    {
      /* A call inlined into the next frame has that frame's address:
       * Sysprof finds both from the one address. */
      if (stack->frames[f].inlined)
        continue;
      addrs[n] = lw_syscap_frame_address (capture, &stack->frames[f]);
      if (addrs[n++] == 0)
        return 0;
    }
  return n;
}

/* Sinks' thread. Adds @report: its mark and its samples. FALSE when the
 * writer failed (the file is then said to be incomplete once). */
static gboolean
lw_syscap_write (LwSyscap *capture, LagWatchReport *report)
{
  g_autofree char *message = NULL;
  g_autofree SysprofCaptureAddress *addrs = NULL;
  int pid = getpid ();

  if (report->start_ns <= 0)
    return TRUE;  /* a hang-killed record: a run that is not in this capture */
  if (!lw_syscap_still_ours (capture))
    return FALSE;
  message = lw_sysprof_message (report);
  if (!sysprof_capture_writer_add_mark (capture->writer, report->start_ns, -1, pid,
                                        (uint64_t) (report->duration_ms * 1e6), LW_SYSPROF_GROUP,
                                        lw_sysprof_mark_name (report), message))
    return lw_syscap_failed (capture);
  for (guint i = 0; i < report->n_timeline; i++)
    {
      const LwReportSample *sample = &report->timeline[i];
      const LwReportStack *stack = &report->sampled[sample->stack];
      guint n;

      addrs = g_renew (SysprofCaptureAddress, addrs, stack->n_frames + 3);
      n = lw_syscap_sample_addresses (capture, stack, sample->asleep, addrs);
      if (n == 0 && (stack->n_frames > 0 || sample->asleep))
        return lw_syscap_failed (capture);
      if (!sysprof_capture_writer_add_sample (capture->writer, report->start_ns + sample->offset_ns, -1, pid,
                                              report->thread_id, addrs, n))
        return lw_syscap_failed (capture);
    }
  if (!sysprof_capture_writer_flush (capture->writer))
    return lw_syscap_failed (capture);
  return TRUE;
}

/* Writers whose descriptor the program took over. They are never
 * unref'd (that would close the program's descriptor) and kept here, so
 * that what they hold stays reachable: one writer per capture lost. */
static GMutex lw_syscap_abandoned_lock;
static GSList *lw_syscap_abandoned;

/* Any thread. Flushes and closes the capture. */
static void
lw_syscap_close (LwSyscap *capture)
{
  if (capture == NULL)
    return;
  if (lw_syscap_still_ours (capture))
    {
      sysprof_capture_writer_flush (capture->writer);
      sysprof_capture_writer_unref (capture->writer);
    }
  else
    {
      g_mutex_lock (&lw_syscap_abandoned_lock);
      lw_syscap_abandoned = g_slist_prepend (lw_syscap_abandoned, capture->writer);
      g_mutex_unlock (&lw_syscap_abandoned_lock);
    }
  g_hash_table_unref (capture->jit_addresses);
  g_hash_table_unref (capture->jit_names);
  g_free (capture->path);
  g_free (capture);
}

/* ---- the two sinks (lw-sink-private.h) ---- */

typedef struct
{
  LwSink    parent;
  LwSyscap *capture;
} LwSyscapSink;

/* Sinks' thread. A capture holds this run's lags: a failed write is said
 * once (the capture is incomplete), the report goes on to the other sinks. */
static gboolean
lw_sink_syscap_write_report (LwSink *sink, LwSinkReport *report)
{
  lw_syscap_write (((LwSyscapSink *) sink)->capture, report->report);
  return TRUE;
}

/* Sinks' thread. A capture holds this run's lags only, not notes or
 * earlier runs' records. */
static gboolean
lw_sink_sysprof_write_raw (LwSink *sink, const char *json, const char *text)
{
  return TRUE;
}

/* Sinks' thread. Every report is flushed as it is written: nothing is held. */
static void
lw_sink_sysprof_flush (LwSink *sink)
{
}

/* Sinks' thread. */
static void
lw_sink_syscap_close (LwSink *sink)
{
  lw_syscap_close (((LwSyscapSink *) sink)->capture);
  g_free (sink);
}

static const LwSinkClass lw_sink_syscap_class = {
  lw_sink_syscap_write_report, lw_sink_sysprof_write_raw, lw_sink_sysprof_flush, lw_sink_syscap_close,
};

LwSink *
lw_sink_syscap_open (const char *path, GError **error)
{
  int fd = lw_sink_open_file (path, "a Sysprof capture", TRUE, error);
  LwSyscap *capture;
  LwSyscapSink *sink;

  if (fd < 0 || (capture = lw_syscap_open (fd, path, error)) == NULL)
    return NULL;
  sink = g_new0 (LwSyscapSink, 1);
  sink->parent.klass = &lw_sink_syscap_class;
  sink->capture = capture;
  return &sink->parent;
}

/* Sinks' thread. */
static gboolean
lw_sink_marks_write_report (LwSink *sink, LwSinkReport *report)
{
  lw_sysprof_mark (report->report);
  return TRUE;
}

/* Sinks' thread. */
static void
lw_sink_marks_close (LwSink *sink)
{
  g_free (sink);
}

static const LwSinkClass lw_sink_marks_class = {
  lw_sink_marks_write_report, lw_sink_sysprof_write_raw, lw_sink_sysprof_flush, lw_sink_marks_close,
};

LwSink *
lw_sink_sysprof_marks_open (void)
{
  LwSink *sink;

  if (!lw_sysprof_collector_active ())
    return NULL;
  sink = g_new0 (LwSink, 1);
  sink->klass = &lw_sink_marks_class;
  return sink;
}
