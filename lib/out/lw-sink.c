/* lw-sink.c: the sinks of a watch, and the records that are not reports */
#include "lw-sink.h"

#include <errno.h>
#include <unistd.h>

#include "lw-json.h"
#include "lw-private.h"
#include "lw-report.h"
#include "lw-report-text.h"
#include "lw-say.h"
#include "lw-sink-fd.h"
#include "lw-sink-journal.h"
#include "lw-sink-sysprof.h"

struct _LwSinks
{
  GMutex     lock;         /* the sinks' state, and one record at a time */
  GPtrArray *sinks;        /* of LwSink, in the order of the spec (Sysprof marks first) */
  LwSink    *refused;      /* stderr for the reports the journal refuses when stderr is
                            * no sink of its own; NULL until needed */
};

const char *
lw_sink_report_json (LwSinkReport *report)
{
  if (report->json == NULL)
    {
      g_autofree char *line = lagwatch_report_to_json (report->report);

      report->json = g_strconcat (line, "\n", NULL);
    }
  return report->json;
}

const char *
lw_sink_report_text (LwSinkReport *report)
{
  if (report->text == NULL)
    report->text = lw_report_to_text_full (report->report, report->skipped);
  return report->text;
}

gboolean
lw_sink_spec_validate (const char *spec, GError **error)
{
  g_auto(GStrv) items = g_strsplit (spec, ",", -1);
  g_autofree char *trimmed = g_strstrip (g_strdup (spec));

  if (trimmed[0] == '\0')
    {
      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "the list is empty");
      return FALSE;
    }
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *item = g_strstrip (items[i]);

      if (g_str_equal (item, "stderr") || g_str_equal (item, "none") || g_str_equal (item, "journal"))
        continue;
      if (g_str_has_prefix (item, "json:"))
        {
          if (item[5] == '\0')
            {
              g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "\"json:\" needs a file path");
              return FALSE;
            }
          continue;
        }
      if (g_str_has_prefix (item, "syscap:"))
        {
          if (!lw_sink_syscap_supported ())
            {
              g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT,
                           "\"syscap:\": this lagwatch was built without Sysprof's capture library");
              return FALSE;
            }
          if (item[7] == '\0')
            {
              g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "\"syscap:\" needs a file path");
              return FALSE;
            }
          continue;
        }
      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "unknown sink \"%s\"", item);
      return FALSE;
    }
  return TRUE;
}

/* Any thread, before the sinks are shared. Adds the stderr sink, unless
 * there is one already. */
static void
lw_sinks_add_stderr (LwSinks *sinks)
{
  if (!lw_sinks_has_stderr (sinks))
    g_ptr_array_add (sinks->sinks, lw_sink_stderr_new ());
}

LwSinks *
lw_sinks_open (const char *spec)
{
  return lw_sinks_open_from (spec, "LAGWATCH_OUTPUT");
}

LwSinks *
lw_sinks_open_from (const char *spec, const char *origin)
{
  LwSinks *sinks = g_new0 (LwSinks, 1);
  g_auto(GStrv) items = g_strsplit (spec, ",", -1);
  LwSink *marks = lw_sink_sysprof_marks_open ();

  g_mutex_init (&sinks->lock);
  sinks->sinks = g_ptr_array_new ();
  if (marks != NULL)
    g_ptr_array_add (sinks->sinks, marks);
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *item = g_strstrip (items[i]);
      g_autoptr(GError) error = NULL;
      LwSink *sink;

      if (g_str_equal (item, "stderr"))
        lw_sinks_add_stderr (sinks);
      else if (g_str_equal (item, "journal"))
        {
          if ((sink = lw_sink_journal_open ()) != NULL)
            g_ptr_array_add (sinks->sinks, sink);
          else
            lw_sinks_add_stderr (sinks);
        }
      else if (g_str_has_prefix (item, "syscap:") && lw_sink_syscap_supported ())
        {
          if ((sink = lw_sink_syscap_open (item + 7, &error)) != NULL)
            g_ptr_array_add (sinks->sinks, sink);
          else
            lw_say ("%s: %s; no Sysprof capture is written", origin, error->message);
        }
      else if (g_str_has_prefix (item, "json:"))
        {
          if ((sink = lw_sink_json_open (item + 5, &error)) != NULL)
            g_ptr_array_add (sinks->sinks, sink);
          else
            {
              lw_say ("%s: %s; writing reports to stderr instead", origin, error->message);
              lw_sinks_add_stderr (sinks);
            }
        }
    }
  return sinks;
}

gboolean
lw_write_all (int fd, const char *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = write (fd, data, len);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          if (n == 0)
            errno = EIO;
          return FALSE;
        }
      data += n;
      len -= (gsize) n;
    }
  return TRUE;
}

/* Sinks' lock held. Where a record @sink refused goes: the stderr sink
 * has it already; without one, stderr all the same. NULL: nowhere more. */
static LwSink *
lw_sinks_refused_to (LwSinks *sinks)
{
  if (lw_sinks_has_stderr (sinks))
    return NULL;
  if (sinks->refused == NULL)
    sinks->refused = lw_sink_stderr_new ();
  return sinks->refused;
}

void
lw_sinks_write (LwSinks *sinks, LagWatchReport *report, gboolean show_human, guint skipped,
                gboolean durable)
{
  LwSinkReport rendered = { report, show_human, skipped, durable, NULL, NULL };

  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = sinks->sinks->pdata[i];
      LwSink *instead;

      if (!sink->klass->write_report (sink, &rendered) && (instead = lw_sinks_refused_to (sinks)) != NULL)
        instead->klass->write_report (instead, &rendered);
    }
  g_mutex_unlock (&sinks->lock);
  g_free (rendered.json);
  g_free (rendered.text);
}

/* Any thread. @json and @text to every sink that takes them. */
static void
lw_sinks_write_record (LwSinks *sinks, const char *json, const char *text)
{
  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = sinks->sinks->pdata[i];
      LwSink *instead;

      if (!sink->klass->write_raw (sink, json, text) && (instead = lw_sinks_refused_to (sinks)) != NULL)
        instead->klass->write_raw (instead, json, text);
    }
  g_mutex_unlock (&sinks->lock);
}

void
lw_sinks_write_raw (LwSinks *sinks, const char *json, const char *text)
{
  lw_sinks_write_record (sinks, json, text);
}

void
lw_sinks_write_stats (LwSinks *sinks, const char *json)
{
  lw_sinks_write_record (sinks, json, NULL);
}

void
lw_sinks_write_stderr_text (LwSinks *sinks, const char *text)
{
  if (lw_sinks_has_stderr (sinks))
    lw_sinks_write_record (sinks, NULL, text);
  else
    lw_stderr_say (text);
}

guint
lw_sinks_dropped (LwSinks *sinks)
{
  guint total = 0;

  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    total += ((LwSink *) sinks->sinks->pdata[i])->dropped_total;
  if (sinks->refused != NULL)
    total += sinks->refused->dropped_total;
  g_mutex_unlock (&sinks->lock);
  return total;
}

gboolean
lw_sinks_has_stderr (LwSinks *sinks)
{
  for (guint i = 0; i < sinks->sinks->len; i++)
    if (lw_sink_is_stderr (sinks->sinks->pdata[i]))
      return TRUE;
  return FALSE;
}

void
lw_sinks_free (LwSinks *sinks)
{
  if (sinks == NULL)
    return;
  if (sinks->refused != NULL)
    g_ptr_array_add (sinks->sinks, sinks->refused);
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = sinks->sinks->pdata[i];

      sink->klass->flush (sink);
      sink->klass->close (sink);
    }
  g_ptr_array_unref (sinks->sinks);
  g_mutex_clear (&sinks->lock);
  g_free (sinks);
}
