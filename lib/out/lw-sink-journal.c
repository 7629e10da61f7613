/* lw-sink-journal.c: the journald sink */
#include "lw-sink-journal.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "lw-report.h"
#include "lw-report-program.h"
#include "lw-report-text.h"
#include "lw-say.h"

/* Where sd_journal_sendv() sends: a fixed path in libsystemd. When it is
 * missing, sd_journal_sendv() drops the entry and returns success, so the
 * sink looks for it first. */
#define LW_JOURNAL_SOCKET "/run/systemd/journal/socket"

/* libsystemd is dlopen()ed, only when the journal sink is asked for:
 * liblagwatch still loads where libsystemd is absent (containers, distros
 * without systemd), and the processes that do not write to the journal do
 * not map it and its compression and crypto libraries. Its header is used
 * at build time only, to check the prototype. */
#define LW_LIBSYSTEMD_SONAME "libsystemd.so.0"

typedef __typeof__ (sd_journal_sendv) LwJournalSendv;

typedef struct
{
  LwJournalSendv *sendv;
  gint            warned;  /* atomic: the one warning about a refused entry was given */
} LwJournal;

/* Any thread. The journal writer, or NULL with one warning saying why. */
static LwJournal *
lw_journal_open (void)
{
  LwJournal *journal;
  struct stat st;
  const char *why = NULL;
  void *handle;
  void *sendv;

  if (stat (LW_JOURNAL_SOCKET, &st) != 0)
    why = g_strerror (errno);
  else if (!S_ISSOCK (st.st_mode))
    why = "not a socket";
  if (why != NULL)
    {
      lw_say ("LAGWATCH_OUTPUT: no journal here (%s: %s); writing reports to stderr instead",
              LW_JOURNAL_SOCKET, why);
      return NULL;
    }
  /* Never dlclose()d: libsystemd keeps its socket in a global that another
   * thread may be using. */
  handle = dlopen (LW_LIBSYSTEMD_SONAME, RTLD_NOW | RTLD_LOCAL);
  sendv = handle != NULL ? dlsym (handle, "sd_journal_sendv") : NULL;
  if (sendv == NULL)
    {
      lw_say ("LAGWATCH_OUTPUT: cannot write to the journal (%s); writing reports to stderr instead",
              dlerror ());
      return NULL;
    }
  journal = g_new0 (LwJournal, 1);
  journal->sendv = (LwJournalSendv *) sendv;
  return journal;
}

/* Any thread. */
static void
lw_journal_close (LwJournal *journal)
{
  g_free (journal);
}

/* Any thread. Sends @fields ("NAME=value" strings) as one entry. */
static gboolean
lw_journal_send (LwJournal *journal, GPtrArray *fields)
{
  g_autofree struct iovec *iov = g_new (struct iovec, fields->len);
  int r;

  for (guint i = 0; i < fields->len; i++)
    {
      iov[i].iov_base = fields->pdata[i];
      iov[i].iov_len = strlen (fields->pdata[i]);
    }
  r = journal->sendv (iov, (int) fields->len);
  if (r >= 0)
    return TRUE;
  if (g_atomic_int_compare_and_exchange (&journal->warned, 0, 1))
    lw_say ("LAGWATCH_OUTPUT: the journal refused a report (%s); "
            "the reports it refuses go to stderr instead", g_strerror (-r));
  return FALSE;
}

/* Any thread. MESSAGE_ID and PRIORITY of an event kind (lag: warning; a
 * hang, or a run killed in one: error). */
static void
lw_journal_add_kind (GPtrArray *fields, const char *event)
{
  const char *id = LW_JOURNAL_ID_LAG;
  int priority = LOG_WARNING;

  if (g_strcmp0 (event, "hang") == 0)
    id = LW_JOURNAL_ID_HANG, priority = LOG_ERR;
  else if (g_strcmp0 (event, "hang-killed") == 0)
    id = LW_JOURNAL_ID_HANG_KILLED, priority = LOG_ERR;
  g_ptr_array_add (fields, g_strconcat ("MESSAGE_ID=", id, NULL));
  g_ptr_array_add (fields, g_strdup_printf ("PRIORITY=%d", priority));
  g_ptr_array_add (fields, g_strconcat ("LAGWATCH_EVENT=", event, NULL));
}

/* Any thread. MESSAGE: the first line of @text. */
static void
lw_journal_add_message (GPtrArray *fields, const char *text)
{
  const char *end = strchr (text, '\n');

  g_ptr_array_add (fields, g_strdup_printf ("MESSAGE=%.*s",
                                            (int) (end != NULL ? end - text : (gssize) strlen (text)),
                                            text));
}

/* Any thread. A number with one decimal, locale-independent. */
static char *
lw_journal_ms (const char *name, double ms)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  return g_strconcat (name, "=", g_ascii_formatd (buf, sizeof buf, "%.1f", ms), NULL);
}

/* Sinks' thread. One entry for @report; FALSE when the journal refused it. */
static gboolean
lw_journal_write (LwJournal *journal, LagWatchReport *report)
{
  g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *text = lw_report_to_text_full (report, 0);
  g_autofree char *json = lagwatch_report_to_json (report);
  /* The summary's innermost program frame: in a Python lag, the Python
   * function and its .py file. */
  const LwFrame *code = lw_report_program_frame (report->frames, report->n_frames);

  lw_journal_add_message (fields, text);
  lw_journal_add_kind (fields, report->event);
  if (code != NULL)
    {
      g_ptr_array_add (fields, g_strconcat ("CODE_FUNC=", code->symbol, NULL));
      if (code->file != NULL)
        g_ptr_array_add (fields, g_strconcat ("CODE_FILE=", code->file, NULL));
      if (code->file != NULL && code->line > 0)
        g_ptr_array_add (fields, g_strdup_printf ("CODE_LINE=%u", code->line));
    }
  g_ptr_array_add (fields, g_strconcat ("LAGWATCH_ID=", report->id, NULL));
  g_ptr_array_add (fields, lw_journal_ms ("LAGWATCH_DURATION_MS", report->duration_ms));
  g_ptr_array_add (fields, g_strdup_printf ("LAGWATCH_THRESHOLD_MS=%u", report->threshold_ms));
  if (report->source != NULL)
    g_ptr_array_add (fields, g_strconcat ("LAGWATCH_SOURCE=", report->source, NULL));
  if (report->source_callback != NULL)
    g_ptr_array_add (fields, g_strconcat ("LAGWATCH_SOURCE_CALLBACK=", report->source_callback, NULL));
  if (report->phase != NULL)
    g_ptr_array_add (fields, g_strconcat ("LAGWATCH_PHASE=", report->phase, NULL));
  if (report->cpu_ms >= 0)
    g_ptr_array_add (fields, lw_journal_ms ("LAGWATCH_CPU_MS", report->cpu_ms));
  if (report->fingerprint != NULL)
    g_ptr_array_add (fields, g_strconcat ("LAGWATCH_FINGERPRINT=", report->fingerprint, NULL));
  g_ptr_array_add (fields, g_strdup_printf ("LAGWATCH_OCCURRENCE=%u", report->occurrence));
  g_ptr_array_add (fields, g_strdup_printf ("LAGWATCH_THREAD=%d \"%s\"", report->thread_id,
                                            report->thread_name != NULL ? report->thread_name : "?"));
  if (report->n_frames > 0)
    {
      g_autofree char *stack = lw_report_stack_to_text (report->frames, report->n_frames);

      g_ptr_array_add (fields, g_strconcat ("LAGWATCH_STACK=", stack, NULL));
    }
  g_ptr_array_add (fields, g_strconcat ("LAGWATCH_RECORD=", json, NULL));
  return lw_journal_send (journal, fields);
}

/* Any thread. The "event" of a record lagwatch wrote (always its first
 * member), or NULL. */
static char *
lw_journal_record_event (const char *json)
{
  static const char prefix[] = "{\"event\":\"";
  const char *end;

  if (!g_str_has_prefix (json, prefix))
    return NULL;
  end = strchr (json + strlen (prefix), '"');
  return end != NULL ? g_strndup (json + strlen (prefix), end - json - strlen (prefix)) : NULL;
}

/* Any thread. The id of the hang a hang-killed record carries, or NULL:
 * lagwatch writes it as the hang record's second member, and makes ids of
 * digits and a dash ("PID-N"). */
static char *
lw_journal_killed_hang_id (const char *json)
{
  static const char prefix[] = "\"hang\":{\"event\":\"hang\",\"id\":\"";
  const char *id = strstr (json, prefix);
  gsize len;

  if (id == NULL)
    return NULL;
  id += strlen (prefix);
  len = strspn (id, "0123456789-");
  return len > 0 && id[len] == '"' ? g_strndup (id, len) : NULL;
}

/* Any thread. One entry for a ready-made record: @json its JSON line (no
 * newline), @text its text block. It carries MESSAGE, MESSAGE_ID, PRIORITY,
 * LAGWATCH_EVENT, LAGWATCH_RECORD and a hang-killed record's LAGWATCH_ID.
 * FALSE when the journal refused it. */
static gboolean
lw_journal_write_raw (LwJournal *journal, const char *json, const char *text)
{
  g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *event = lw_journal_record_event (json);
  g_autofree char *hang_id = lw_journal_killed_hang_id (json);

  lw_journal_add_message (fields, text);
  /* The only ready-made records lagwatch writes are hang-killed ones. */
  lw_journal_add_kind (fields, event != NULL ? event : "hang-killed");
  /* The killed run's hang entry has the same LAGWATCH_ID: one filter shows both. */
  if (hang_id != NULL)
    g_ptr_array_add (fields, g_strconcat ("LAGWATCH_ID=", hang_id, NULL));
  g_ptr_array_add (fields, g_strconcat ("LAGWATCH_RECORD=", json, NULL));
  return lw_journal_send (journal, fields);
}

typedef struct
{
  LwSink     parent;
  LwJournal *journal;
} LwJournalSink;

/* Sinks' thread. */
static gboolean
lw_sink_journal_write_report (LwSink *sink, LwSinkReport *report)
{
  return lw_journal_write (((LwJournalSink *) sink)->journal, report->report);
}

/* Sinks' thread. Records that come as JSON and text: not a stats event
 * (JSON only), not the exit summary (text only). */
static gboolean
lw_sink_journal_write_raw (LwSink *sink, const char *json, const char *text)
{
  if (json == NULL || text == NULL)
    return TRUE;
  return lw_journal_write_raw (((LwJournalSink *) sink)->journal, json, text);
}

/* Sinks' thread. Every entry is sent whole: nothing is held. */
static void
lw_sink_journal_flush (LwSink *sink)
{
}

/* Sinks' thread. */
static void
lw_sink_journal_close (LwSink *sink)
{
  lw_journal_close (((LwJournalSink *) sink)->journal);
  g_free (sink);
}

static const LwSinkClass lw_sink_journal_class = {
  lw_sink_journal_write_report, lw_sink_journal_write_raw, lw_sink_journal_flush, lw_sink_journal_close,
};

LwSink *
lw_sink_journal_open (void)
{
  LwJournal *journal = lw_journal_open ();
  LwJournalSink *sink;

  if (journal == NULL)
    return NULL;
  sink = g_new0 (LwJournalSink, 1);
  sink->parent.klass = &lw_sink_journal_class;
  sink->journal = journal;
  return &sink->parent;
}
