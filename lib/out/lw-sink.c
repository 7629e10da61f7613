/* lw-sink.c: the stderr and JSON Lines sinks */
#include "lw-sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lw-build-config.h"
#include "lw-private.h"
#include "lw-report.h"
#include "lw-fd.h"
#include "lw-say.h"
#include "lw-sink-journal.h"
/* Its types are used whatever the build; its functions exist only with
 * LW_HAVE_SYSPROF, and are called only then. */
#include "lw-sink-sysprof.h"

typedef struct
{
  char     *path;          /* NULL for stderr */
  gboolean  json;
  int       fd;            /* JSON: ours; stderr: -1 */
  LwFdId    fd_id;         /* what fd was when opened (lw-fd.h) */
  gboolean  fd_said;       /* the program took fd over: said once */
  guint     dropped;       /* records lost since the last one said */
  guint     dropped_total;
  int       drop_errno;    /* why the last one was lost; 0: the reader stalled */
  gboolean  stalled;       /* the last record waited in vain: do not wait again */
  gboolean  torn;          /* a record was cut short: start the next on a new line */
  gboolean  error_said;
  LwJournal *journal;     /* the journal sink; what it refuses goes to stderr, else NULL */
  LwSyscap  *syscap;      /* a Sysprof capture file (path set), else NULL */
} LwSink;

struct _LwSinks
{
  GMutex   lock;           /* the sinks' state, and one record at a time */
  GArray  *sinks;          /* of LwSink */
  gboolean sysprof_marks;  /* the program runs under Sysprof: every report is a mark */
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
      if (g_str_has_prefix (item, "syscap:"))
        {
#if LW_HAVE_SYSPROF
          if (item[7] == '\0')
            {
              g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "\"syscap:\" needs a file path");
              return FALSE;
            }
          continue;
#else
          g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT,
                       "\"syscap:\": this lagwatch was built without Sysprof's capture library");
          return FALSE;
#endif
        }
      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "unknown sink \"%s\"", item);
      return FALSE;
    }
  return TRUE;
}

static void
lw_sinks_add_stderr (LwSinks *sinks)
{
  LwSink sink = { .fd = -1 };

  for (guint i = 0; i < sinks->sinks->len; i++)
    if (g_array_index (sinks->sinks, LwSink, i).path == NULL
        && g_array_index (sinks->sinks, LwSink, i).journal == NULL
        && g_array_index (sinks->sinks, LwSink, i).syscap == NULL)
      return;
  g_array_append_val (sinks->sinks, sink);
}

/* Any thread. Opens @path for @what without blocking (a FIFO nobody
 * reads fails with ENXIO instead of waiting for a reader) and without
 * following a symlink planted in its place; -1 with @error set when it is
 * not a file this user may safely write to. JSON Lines are appended, to a
 * regular file or a FIFO; a new capture (@capture) needs a regular file,
 * truncated once it is known to be ours. */
static int
lw_sink_open_file (const char *path, const char *what, gboolean capture, GError **error)
{
  struct stat st;
  const char *why = NULL;
  int fd;

  fd = open (path, O_WRONLY | (capture ? 0 : O_APPEND) | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
                   | O_CLOEXEC, 0600);
  if (fd < 0)
    {
      int saved = errno;

      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "cannot open \"%s\" for %s (%s)", path, what,
                   saved == ELOOP ? "it is a symbolic link"
                   : saved == ENXIO ? "it is a FIFO no process is reading"
                   : g_strerror (saved));
      return -1;
    }
  if (fstat (fd, &st) != 0)
    why = g_strerror (errno);
  else if (!S_ISREG (st.st_mode) && (capture || !S_ISFIFO (st.st_mode)))
    why = capture ? "it is not a regular file" : "it is not a regular file or a FIFO";
  else if (st.st_uid != geteuid ())
    why = "it belongs to another user";
  else if (S_ISREG (st.st_mode) && st.st_nlink > 1)
    why = "it has other hard links";
  else if (capture && ftruncate (fd, 0) != 0)
    why = g_strerror (errno);
  if (why != NULL)
    {
      g_set_error (error, LW_ERROR, LW_ERROR_OUTPUT, "refusing \"%s\" for %s (%s)", path, what, why);
      close (fd);
      return -1;
    }
  return fd;
}

LwSinks *
lw_sinks_open (const char *spec)
{
  LwSinks *sinks = g_new0 (LwSinks, 1);
  g_auto(GStrv) items = g_strsplit (spec, ",", -1);

  g_mutex_init (&sinks->lock);
  sinks->sinks = g_array_new (FALSE, TRUE, sizeof (LwSink));
#if LW_HAVE_SYSPROF
  sinks->sysprof_marks = lw_sysprof_collector_active ();
#endif
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *item = g_strstrip (items[i]);

      if (g_str_equal (item, "stderr"))
        lw_sinks_add_stderr (sinks);
      else if (g_str_equal (item, "journal"))
        {
          LwSink sink = { .fd = -1, .journal = lw_journal_open () };

          if (sink.journal != NULL)
            g_array_append_val (sinks->sinks, sink);
          else
            lw_sinks_add_stderr (sinks);
        }
#if LW_HAVE_SYSPROF
      else if (g_str_has_prefix (item, "syscap:"))
        {
          g_autoptr(GError) error = NULL;
          LwSink sink = { .fd = -1 };
          int fd = lw_sink_open_file (item + 7, "a Sysprof capture", TRUE, &error);

          if (fd >= 0)
            sink.syscap = lw_syscap_open (fd, item + 7, &error);
          if (sink.syscap == NULL)
            {
              lw_say ("LAGWATCH_OUTPUT: %s; no Sysprof capture is written", error->message);
              continue;
            }
          sink.path = g_strdup (item + 7);
          g_array_append_val (sinks->sinks, sink);
        }
#endif
      else if (g_str_has_prefix (item, "json:"))
        {
          g_autoptr(GError) error = NULL;
          LwSink sink = { .json = TRUE };

          sink.fd = lw_sink_open_file (item + 5, "JSON Lines", FALSE, &error);
          if (sink.fd < 0)
            {
              lw_say ("LAGWATCH_OUTPUT: %s; writing reports to stderr instead", error->message);
              lw_sinks_add_stderr (sinks);
              continue;
            }
          sink.path = g_strdup (item + 5);
          lw_fd_id_take (sink.fd, &sink.fd_id);
          g_array_append_val (sinks->sinks, sink);
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

/* Any thread, @sink's lock held. Writes all of @data, waiting for a slow
 * reader at most LW_SINK_WAIT_MS, and not at all before the first byte
 * when the sink has stalled. 0 when all was written, else the errno (EAGAIN:
 * the reader did not take it in time). */
static int
lw_sink_put (LwSink *sink, int fd, gboolean use_send, const char *data, gsize len)
{
  gint64 deadline = g_get_monotonic_time () + LW_SINK_WAIT_MS * 1000;
  gsize done = 0;
  int error = 0;

  while (done < len)
    {
      ssize_t n = lw_stderr_write_once (fd, use_send, data + done, len - done);
      gint64 left_ms;
      struct pollfd pfd = { fd, POLLOUT, 0 };

      if (n > 0)
        {
          done += (gsize) n;
          continue;
        }
      if (n < 0 && errno == EINTR)
        continue;
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        {
          error = n == 0 ? EIO : errno;
          break;
        }
      left_ms = (deadline - g_get_monotonic_time ()) / 1000;
      if (left_ms <= 0 || (done == 0 && sink->stalled))
        {
          error = EAGAIN;
          break;
        }
      poll (&pfd, 1, (int) left_ms);
    }
  if (done > 0 && done < len)
    sink->torn = TRUE;
  else if (done == len)
    sink->torn = FALSE;
  return error;
}

/* Any thread. Why @sink lost its last records, in words. */
static char *
lw_sink_drop_reason (const LwSink *sink)
{
  if (sink->drop_errno == EAGAIN)
    return g_strdup ("sink stalled");
  return g_strdup_printf ("write failed (%s)", g_strerror (sink->drop_errno));
}

/* Any thread. The line that says how many records @sink lost: a JSON
 * record or a text line, as @sink takes them. */
static void
lw_sink_append_drop_notice (GString *out, const LwSink *sink)
{
  g_autofree char *reason = lw_sink_drop_reason (sink);

  if (sink->json)
    g_string_append_printf (out, "{\"event\":\"dropped\",\"count\":%u,\"reason\":\"%s\"}\n",
                            sink->dropped, reason);
  else
    g_string_append_printf (out, "lagwatch: %u report%s dropped: %s\n", sink->dropped,
                            sink->dropped == 1 ? "" : "s", reason);
}

/* Any thread, @sink's lock held. TRUE when the JSON sink @sink has its
 * file to write to. The program may have closed its descriptor (and
 * reused the number for a file of its own) or dup2()ed a file over it:
 * then the number is the program's, never written to nor closed again;
 * that is said once, and the file reopened by path with the same checks
 * as at start (lw_sink_open_file()). */
static gboolean
lw_sink_check_fd (LwSink *sink)
{
  g_autoptr(GError) error = NULL;
  int lost = sink->fd;

  if (sink->fd >= 0 && lw_fd_is (sink->fd, &sink->fd_id))
    return TRUE;
  sink->fd = lw_sink_open_file (sink->path, "JSON Lines", FALSE, &error);
  if (sink->fd >= 0)
    lw_fd_id_take (sink->fd, &sink->fd_id);
  if (!sink->fd_said && lost >= 0)
    {
      sink->fd_said = TRUE;
      if (sink->fd >= 0)
        lw_say ("the program closed or replaced descriptor %d, which held %s: reopened by path",
                lost, sink->path);
      else
        lw_say ("the program closed or replaced descriptor %d, which held %s, and it cannot be reopened "
                "(%s): its reports are dropped and counted", lost, sink->path, error->message);
    }
  return sink->fd >= 0;
}

/* Any thread, @sink's lock held. Writes one @record (newline included) to
 * @sink, after the count of what it dropped before; if the sink cannot
 * take it, counts it, and says a write error once. TRUE when written. */
static gboolean
lw_sink_emit (LwSink *sink, const char *record, gboolean durable)
{
  g_autoptr(GString) out = g_string_new (NULL);
  gboolean use_send = FALSE, private = FALSE;
  int fd;
  int error;

  if (sink->json && !lw_sink_check_fd (sink))
    {
      if (record != NULL)
        {
          sink->dropped++;
          sink->dropped_total++;
        }
      sink->drop_errno = EBADF;
      return FALSE;
    }
  fd = sink->json ? sink->fd : lw_stderr_open (&use_send, &private);
  if (fd < 0)
    return FALSE;  /* the program closed its stderr: nowhere to write, nothing to say */
  if (sink->torn)
    g_string_append_c (out, '\n');
  if (sink->dropped > 0)
    lw_sink_append_drop_notice (out, sink);
  if (record != NULL)
    g_string_append (out, record);
  error = lw_sink_put (sink, fd, use_send, out->str, out->len);
  if (private)
    close (fd);
  /* Only a regular file is made durable; fsync on a FIFO fails by design. */
  if (error == 0 && durable && sink->json && fsync (sink->fd) != 0 && errno != EINVAL)
    error = errno;
  if (error == 0)
    {
      sink->dropped = 0;
      sink->stalled = FALSE;
      return TRUE;
    }
  if (record != NULL)
    {
      sink->dropped++;
      sink->dropped_total++;
    }
  sink->drop_errno = error;
  sink->stalled = error == EAGAIN;
  if (error != EAGAIN && !sink->error_said && sink->json)
    {
      sink->error_said = TRUE;
      lw_say ("cannot write reports to %s: %s; its reports are dropped and counted",
              sink->path, g_strerror (error));
    }
  return FALSE;
}

/* Any thread. @text on stderr, bounded in time like a stderr sink. */
static void
lw_stderr_say (const char *text)
{
  LwSink sink = { .fd = -1 };

  lw_sink_emit (&sink, text, FALSE);
}

void
lw_sinks_write (LwSinks *sinks, LagWatchReport *report, gboolean show_human, guint skipped,
                gboolean durable)
{
  g_autofree char *text = NULL;
  g_autofree char *json = NULL;

  g_mutex_lock (&sinks->lock);
#if LW_HAVE_SYSPROF
  if (sinks->sysprof_marks)
    lw_sysprof_mark (report);
#endif
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

#if LW_HAVE_SYSPROF
      if (sink->syscap != NULL)
        {
          lw_syscap_write (sink->syscap, report);
          continue;
        }
#endif
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
          lw_sink_emit (sink, json, durable);
        }
      else if (show_human)
        {
          if (text == NULL)
            text = lw_report_to_text_full (report, skipped);
          lw_sink_emit (sink, text, FALSE);
        }
    }
  g_mutex_unlock (&sinks->lock);
}

void
lw_sinks_write_raw (LwSinks *sinks, const char *json, const char *text)
{
  g_autofree char *line = g_strconcat (json, "\n", NULL);

  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

      if (sink->syscap != NULL)
        continue;  /* a capture holds this run's lags only, not notes or earlier runs' */
      if (sink->journal != NULL && (lw_journal_write_raw (sink->journal, json, text)
                                    || lw_sinks_has_stderr (sinks)))
        continue;
      lw_sink_emit (sink, sink->json ? line : text, FALSE);
    }
  g_mutex_unlock (&sinks->lock);
}

void
lw_sinks_write_stats (LwSinks *sinks, const char *json)
{
  g_autofree char *line = g_strconcat (json, "\n", NULL);

  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

      if (sink->json)
        lw_sink_emit (sink, line, FALSE);
    }
  g_mutex_unlock (&sinks->lock);
}

guint
lw_sinks_dropped (LwSinks *sinks)
{
  guint total = 0;

  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    total += g_array_index (sinks->sinks, LwSink, i).dropped_total;
  g_mutex_unlock (&sinks->lock);
  return total;
}

void
lw_sinks_write_raw_stderr (const char *text)
{
  lw_stderr_say (text);
}

void
lw_sinks_write_stderr_text (LwSinks *sinks, const char *text)
{
  g_mutex_lock (&sinks->lock);
  for (guint i = 0; i < sinks->sinks->len; i++)
    {
      LwSink *sink = &g_array_index (sinks->sinks, LwSink, i);

      if (!sink->json && sink->journal == NULL && sink->syscap == NULL)
        {
          lw_sink_emit (sink, text, FALSE);
          g_mutex_unlock (&sinks->lock);
          return;
        }
    }
  g_mutex_unlock (&sinks->lock);
  lw_stderr_say (text);
}

gboolean
lw_sinks_has_stderr (LwSinks *sinks)
{
  for (guint i = 0; i < sinks->sinks->len; i++)
    if (!g_array_index (sinks->sinks, LwSink, i).json
        && g_array_index (sinks->sinks, LwSink, i).journal == NULL
        && g_array_index (sinks->sinks, LwSink, i).syscap == NULL)
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

      /* The count not yet said: on the sink itself if it takes it now,
       * else on stderr. */
      if (sink->dropped > 0 && !lw_sink_emit (sink, NULL, FALSE) && sink->json)
        {
          g_autofree char *reason = lw_sink_drop_reason (sink);

          lw_say ("%u report%s to %s dropped: %s", sink->dropped, sink->dropped == 1 ? "" : "s",
                  sink->path, reason);
        }
      lw_journal_close (sink->journal);
#if LW_HAVE_SYSPROF
      lw_syscap_close (sink->syscap);
#endif
      if (sink->fd >= 0)
        lw_fd_close (sink->fd, &sink->fd_id);
      g_free (sink->path);
    }
  g_array_unref (sinks->sinks);
  g_mutex_clear (&sinks->lock);
  g_free (sinks);
}
