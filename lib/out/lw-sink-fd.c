/* lw-sink-fd.c: the stderr and JSON Lines sinks */
#include "lw-sink-fd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-fd.h"
#include "lw-private.h"
#include "lw-say.h"
#include "lw-sink-private.h"
#include "lw-sink-record.h"

typedef struct
{
  LwSink    parent;
  char     *path;          /* JSON: its file; stderr: NULL */
  int       fd;            /* JSON: ours; stderr: -1 */
  LwFdId    fd_id;         /* what fd was when opened (lw-fd.h) */
  gboolean  fd_said;       /* the program took fd over: said once */
  guint     dropped;       /* records lost since the last one said */
  int       drop_errno;    /* why the last one was lost; 0: the reader stalled */
  gboolean  stalled;       /* the last record waited in vain: do not wait again */
  gboolean  torn;          /* a record was cut short (here, or by a run killed while it wrote): start the next on a new line */
  gboolean  error_said;
} LwFdSink;

static const LwSinkClass lw_sink_stderr_class;
static const LwSinkClass lw_sink_json_class;

int
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

/* Any thread. TRUE when the JSON Lines file open on @fd (write-only) is a
 * regular file whose last line has no newline: a run killed while it
 * wrote a record leaves it so (a SIGKILL cuts a write short at a page
 * boundary). The next record must then start on a line of its own, or it
 * is lost with the torn one. The last byte is read through a read-only
 * open of @path, taken only if it is the same file. */
static gboolean
lw_fd_sink_last_line_torn (int fd, const char *path)
{
  struct stat st, read_st;
  gboolean torn = FALSE;
  char last;
  int rfd;

  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode) || st.st_size == 0)
    return FALSE;
  rfd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (rfd < 0)
    return FALSE;
  if (fstat (rfd, &read_st) == 0 && read_st.st_dev == st.st_dev && read_st.st_ino == st.st_ino
      && pread (rfd, &last, 1, read_st.st_size - 1) == 1)
    torn = last != '\n';
  close (rfd);
  return torn;
}

/* Any thread. Makes @fd, just opened on @sink's path, the JSON sink's
 * file: its identity kept (lw-fd.h), and whether its last line was left
 * torn. At the first open and at each reopen alike. */
static void
lw_fd_sink_take_file (LwFdSink *sink, int fd)
{
  sink->fd = fd;
  lw_fd_id_take (fd, &sink->fd_id);
  sink->torn = lw_fd_sink_last_line_torn (fd, sink->path);
}

/* Any thread. Why @sink lost its last records, in words. */
static char *
lw_fd_sink_drop_reason (const LwFdSink *sink)
{
  if (sink->drop_errno == EAGAIN)
    return g_strdup ("sink stalled");
  return g_strdup_printf ("write failed (%s)", g_strerror (sink->drop_errno));
}

/* Any thread. The record that says how many records @sink lost, as @sink
 * takes records: JSON or text. */
static void
lw_fd_sink_append_drop_notice (GString *out, const LwFdSink *sink)
{
  g_autofree char *reason = lw_fd_sink_drop_reason (sink);
  g_autofree char *json = NULL;
  g_autofree char *text = NULL;

  lw_sink_dropped_record (sink->dropped, reason, NULL, &json, &text);
  if (sink->path != NULL)
    {
      g_string_append (out, json);
      g_string_append_c (out, '\n');
    }
  else
    g_string_append (out, text);
}

/* Sinks' thread. TRUE when the JSON sink @sink has its file to write to.
 * The program may have closed its descriptor (and reused the number for a
 * file of its own) or dup2()ed a file over it: then the number is the
 * program's, never written to nor closed again; that is said once, and the
 * file reopened by path with the same checks as at start
 * (lw_sink_open_file()). */
static gboolean
lw_fd_sink_check_fd (LwFdSink *sink)
{
  g_autoptr(GError) error = NULL;
  int lost = sink->fd;

  if (sink->fd >= 0 && lw_fd_is (sink->fd, &sink->fd_id))
    return TRUE;
  sink->fd = lw_sink_open_file (sink->path, "JSON Lines", FALSE, &error);
  if (sink->fd >= 0)
    lw_fd_sink_take_file (sink, sink->fd);
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

/* Sinks' thread. Counts @record (NULL: none) as lost, for @error. */
static void
lw_fd_sink_drop (LwFdSink *sink, const char *record, int error)
{
  if (record != NULL)
    {
      sink->dropped++;
      sink->parent.dropped_total++;
    }
  sink->drop_errno = error;
}

/* Sinks' thread. Writes one @record (newline included; NULL: none) to
 * @sink, after the count of what it dropped before; if the sink cannot
 * take it within LW_SINK_WAIT_MS, counts it, and says a write error once.
 * TRUE when written. */
static gboolean
lw_fd_sink_emit (LwFdSink *sink, const char *record, gboolean durable)
{
  g_autoptr(GString) out = g_string_new (NULL);
  gboolean json = sink->path != NULL;
  LwOutput output = { .fd = -1 };
  gsize done;
  int error;

  if (json && !lw_fd_sink_check_fd (sink))
    {
      lw_fd_sink_drop (sink, record, EBADF);
      return FALSE;
    }
  if (json)
    output.fd = sink->fd;
  else if (!lw_stderr_open (&output))
    return FALSE;  /* the program closed its stderr: nowhere to write, nothing to say */
  if (sink->torn)
    g_string_append_c (out, '\n');
  if (sink->dropped > 0)
    lw_fd_sink_append_drop_notice (out, sink);
  if (record != NULL)
    g_string_append (out, record);
  done = lw_output_write (&output, out->str, out->len, LW_SINK_WAIT_MS, sink->stalled, &error);
  lw_stderr_close (&output);
  if (done > 0 && done < out->len)
    sink->torn = TRUE;
  else if (done == out->len)
    sink->torn = FALSE;
  /* Only a regular file is made durable; fsync on a FIFO fails by design. */
  if (error == 0 && durable && json && fsync (sink->fd) != 0 && errno != EINVAL)
    error = errno;
  if (error == 0)
    {
      sink->dropped = 0;
      sink->stalled = FALSE;
      return TRUE;
    }
  lw_fd_sink_drop (sink, record, error);
  sink->stalled = error == EAGAIN;
  if (error != EAGAIN && !sink->error_said && json)
    {
      sink->error_said = TRUE;
      lw_say ("cannot write reports to %s: %s; its reports are dropped and counted",
              sink->path, g_strerror (error));
    }
  return FALSE;
}

/* Sinks' thread. */
static gboolean
lw_sink_stderr_write_report (LwSink *sink, LwSinkReport *report)
{
  if (report->show_human)
    lw_fd_sink_emit ((LwFdSink *) sink, lw_sink_report_text (report), FALSE);
  return TRUE;
}

/* Sinks' thread. */
static gboolean
lw_sink_stderr_write_raw (LwSink *sink, const char *json, const char *text)
{
  if (text != NULL)
    lw_fd_sink_emit ((LwFdSink *) sink, text, FALSE);
  return TRUE;
}

/* Sinks' thread. The count not yet said, if stderr takes it now. */
static void
lw_sink_stderr_flush (LwSink *sink)
{
  LwFdSink *self = (LwFdSink *) sink;

  if (self->dropped > 0)
    lw_fd_sink_emit (self, NULL, FALSE);
}

/* Sinks' thread. */
static gboolean
lw_sink_json_write_report (LwSink *sink, LwSinkReport *report)
{
  lw_fd_sink_emit ((LwFdSink *) sink, lw_sink_report_json (report), report->durable);
  return TRUE;
}

/* Sinks' thread. */
static gboolean
lw_sink_json_write_raw (LwSink *sink, const char *json, const char *text)
{
  g_autofree char *line = NULL;

  if (json == NULL)
    return TRUE;
  line = g_strconcat (json, "\n", NULL);
  lw_fd_sink_emit ((LwFdSink *) sink, line, FALSE);
  return TRUE;
}

/* Sinks' thread. The count not yet said: on the file if it takes it now,
 * else on stderr. */
static void
lw_sink_json_flush (LwSink *sink)
{
  LwFdSink *self = (LwFdSink *) sink;

  if (self->dropped > 0 && !lw_fd_sink_emit (self, NULL, FALSE))
    {
      g_autofree char *reason = lw_fd_sink_drop_reason (self);

      lw_say ("%u report%s to %s dropped: %s", self->dropped, self->dropped == 1 ? "" : "s",
              self->path, reason);
    }
}

/* Sinks' thread. */
static void
lw_fd_sink_close (LwSink *sink)
{
  LwFdSink *self = (LwFdSink *) sink;

  if (self->fd >= 0)
    lw_fd_close (self->fd, &self->fd_id);
  g_free (self->path);
  g_free (self);
}

static const LwSinkClass lw_sink_stderr_class = {
  lw_sink_stderr_write_report, lw_sink_stderr_write_raw, lw_sink_stderr_flush, lw_fd_sink_close,
};

static const LwSinkClass lw_sink_json_class = {
  lw_sink_json_write_report, lw_sink_json_write_raw, lw_sink_json_flush, lw_fd_sink_close,
};

LwSink *
lw_sink_stderr_new (void)
{
  LwFdSink *sink = g_new0 (LwFdSink, 1);

  sink->parent.klass = &lw_sink_stderr_class;
  sink->fd = -1;
  return &sink->parent;
}

LwSink *
lw_sink_json_open (const char *path, GError **error)
{
  int fd = lw_sink_open_file (path, "JSON Lines", FALSE, error);
  LwFdSink *sink;

  if (fd < 0)
    return NULL;
  sink = g_new0 (LwFdSink, 1);
  sink->parent.klass = &lw_sink_json_class;
  sink->path = g_strdup (path);
  lw_fd_sink_take_file (sink, fd);
  return &sink->parent;
}

gboolean
lw_sink_is_stderr (const LwSink *sink)
{
  return sink->klass == &lw_sink_stderr_class;
}

void
lw_stderr_say (const char *text)
{
  LwSink *sink = lw_sink_stderr_new ();

  lw_fd_sink_emit ((LwFdSink *) sink, text, FALSE);
  lw_fd_sink_close (sink);
}
