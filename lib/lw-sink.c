/* lw-sink.c: the stderr and JSON Lines sinks */
#include "lw-sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lw-private.h"
#include "lw-report.h"
#include "lw-sink-journal.h"

typedef struct
{
  int   fd;
  char *path;     /* NULL for stderr */
  gboolean json;
  LwJournal *journal;  /* the journal sink (fd: stderr, for what it refuses), else NULL */
} LwSink;

struct _LwSinks
{
  GArray *sinks;  /* of LwSink */
};

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
      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "unknown sink \"%s\"", item);
      return FALSE;
    }
  return TRUE;
}

static void
lw_sinks_add_stderr (LwSinks *sinks)
{
  LwSink sink = { STDERR_FILENO, NULL, FALSE, NULL };

  for (guint i = 0; i < sinks->sinks->len; i++)
    if (g_array_index (sinks->sinks, LwSink, i).path == NULL
        && g_array_index (sinks->sinks, LwSink, i).journal == NULL)
      return;
  g_array_append_val (sinks->sinks, sink);
}

LwSinks *
lw_sinks_open (const char *spec)
{
  LwSinks *sinks = g_new0 (LwSinks, 1);
  g_auto(GStrv) items = g_strsplit (spec, ",", -1);

  sinks->sinks = g_array_new (FALSE, FALSE, sizeof (LwSink));
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *item = g_strstrip (items[i]);

      if (g_str_equal (item, "stderr"))
        lw_sinks_add_stderr (sinks);
      else if (g_str_equal (item, "journal"))
        {
          LwSink sink = { STDERR_FILENO, NULL, FALSE, lw_journal_open () };

          if (sink.journal != NULL)
            g_array_append_val (sinks->sinks, sink);
          else
            lw_sinks_add_stderr (sinks);
        }
      else if (g_str_has_prefix (item, "json:"))
        {
          LwSink sink = { -1, g_strdup (item + 5), TRUE, NULL };

          sink.fd = open (sink.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
          if (sink.fd < 0)
            {
              g_warning ("LAGWATCH_OUTPUT: cannot open \"%s\" for JSON Lines (%s); "
                         "writing reports to stderr instead", sink.path, g_strerror (errno));
              g_free (sink.path);
              lw_sinks_add_stderr (sinks);
              continue;
            }
          g_array_append_val (sinks->sinks, sink);
        }
    }
  return sinks;
}

/* Any thread. The whole record in one write() where the kernel takes it
 * (O_APPEND: records from several processes never interleave). */
gboolean
lw_write_all (int fd, const char *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = write (fd, data, len);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      data += n;
      len -= (gsize) n;
    }
  return TRUE;
}

void
lw_sinks_write (LwSinks *sinks, LagWatchReport *report, gboolean show_human, guint skipped,
                gboolean durable)
{
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;

  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      const LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

      /* A report the journal refuses goes to stderr, as the back-off allows. */
      if (sink->journal != NULL && (lw_journal_write (sink->journal, report)
                                    || lw_sinks_has_stderr (sinks)))
        continue;
      if (sink->json)
        {
          if (json == NULL)
            {
              g_autofree char *line = lagwatch_report_to_json (report);

              json = g_strconcat (line, "\n", NULL);
            }
          lw_write_all (sink->fd, json, strlen (json));
          if (durable)
            fsync (sink->fd);
        }
      else if (show_human)
        {
          if (text == NULL)
            text = lw_report_to_text_full (report, skipped);
          lw_write_all (sink->fd, text, strlen (text));
        }
    }
}

void
lw_sinks_write_raw (LwSinks *sinks, const char *json, const char *text)
{
  g_autofree char *line = g_strconcat (json, "\n", NULL);

  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      const LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

      if (sink->journal != NULL && (lw_journal_write_raw (sink->journal, json, text)
                                    || lw_sinks_has_stderr (sinks)))
        continue;
      if (sink->json)
        lw_write_all (sink->fd, line, strlen (line));
      else
        lw_write_all (sink->fd, text, strlen (text));
    }
}

void
lw_sinks_write_raw_stderr (const char *text)
{
  lw_write_all (STDERR_FILENO, text, strlen (text));
}

gboolean
lw_sinks_has_stderr (LwSinks *sinks)
{
  for (guint i = 0; i < sinks->sinks->len; i++)
    if (!g_array_index (sinks->sinks, LwSink, i).json
        && g_array_index (sinks->sinks, LwSink, i).journal == NULL)
      return TRUE;
  return FALSE;
}

void
lw_sinks_free (LwSinks *sinks)
{
  if (sinks == NULL)
    return;
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

      if (sink->path != NULL)
        {
          close (sink->fd);
          g_free (sink->path);
        }
      lw_journal_close (sink->journal);
    }
  g_array_unref (sinks->sinks);
  g_free (sinks);
}
