/* lw-say.c: lagwatch's own messages, and text safe to show on a terminal */
#include "lw-say.h"
#include "lw-proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void
lw_text_escape_append (GString *out, const char *text)
{
  const guchar *p = (const guchar *) text;

  if (text == NULL)
    return;
  while (*p != '\0')
    {
      gunichar c;
      gsize n;

      if (*p < 0x80)
        {
          if (*p < 0x20 || *p == 0x7f)
            g_string_append_printf (out, "\\x%02x", *p);
          else
            g_string_append_c (out, (char) *p);
          p++;
          continue;
        }
      c = g_utf8_get_char_validated ((const char *) p, -1);
      if (c == (gunichar) -1 || c == (gunichar) -2)
        {
          g_string_append_printf (out, "\\x%02x", *p);
          p++;
          continue;
        }
      {
        const char *at = (const char *) p;

        n = (gsize) (g_utf8_next_char (at) - at);
      }
      if (c >= 0x80 && c <= 0x9f)
        for (gsize i = 0; i < n; i++)
          g_string_append_printf (out, "\\x%02x", p[i]);
      else
        g_string_append_len (out, (const char *) p, (gssize) n);
      p += n;
    }
}

char *
lw_text_escape (const char *text)
{
  GString *out;

  if (text == NULL)
    return NULL;
  out = g_string_sized_new (strlen (text));
  lw_text_escape_append (out, text);
  return g_string_free (out, FALSE);
}

gboolean
lw_stderr_open (LwOutput *out)
{
  struct stat st;

  *out = (LwOutput) { .fd = STDERR_FILENO };
  if (fstat (STDERR_FILENO, &st) != 0)
    return FALSE;
  if (S_ISSOCK (st.st_mode))
    out->use_send = TRUE;
  else if (S_ISFIFO (st.st_mode) || (S_ISCHR (st.st_mode) && isatty (STDERR_FILENO)))
    {
      g_autofree char *path = g_strconcat (lw_proc_self (), "/fd/2", NULL);
      int fd = open (path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

      if (fd >= 0)
        {
          out->fd = fd;
          out->private = TRUE;
        }
      else
        out->may_block = TRUE;  /* out of descriptors, or no /proc */
    }
  /* A file or /dev/null: fd 2 as it is. */
  return TRUE;
}

void
lw_stderr_close (LwOutput *out)
{
  if (out->private)
    close (out->fd);
  out->private = FALSE;
}

ssize_t
lw_stderr_write_once (int fd, gboolean use_send, const char *data, gsize len)
{
  static const struct timespec zero = { 0, 0 };
  sigset_t pipe_set, old, pending;
  gboolean was_pending;
  ssize_t n;
  int saved;

  if (use_send)
    return send (fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  sigemptyset (&pipe_set);
  sigaddset (&pipe_set, SIGPIPE);
  pthread_sigmask (SIG_BLOCK, &pipe_set, &old);
  sigpending (&pending);
  was_pending = sigismember (&pending, SIGPIPE);
  n = write (fd, data, len);
  saved = errno;
  /* The SIGPIPE this write raised is taken back, unless one was pending. */
  if (n < 0 && saved == EPIPE && !was_pending)
    sigtimedwait (&pipe_set, NULL, &zero);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  errno = saved;
  return n;
}

gsize
lw_output_write (const LwOutput *out, const char *data, gsize len, guint wait_ms, gboolean stalled,
                 int *error)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) wait_ms * 1000;
  gsize done = 0;

  *error = 0;
  while (done < len)
    {
      struct pollfd pfd = { out->fd, POLLOUT, 0 };
      gint64 left_ms;
      ssize_t n;

      if (out->may_block)
        {
          left_ms = MAX ((deadline - g_get_monotonic_time ()) / 1000, 0);
          if ((done == 0 && stalled) || poll (&pfd, 1, (int) left_ms) != 1 || !(pfd.revents & POLLOUT))
            {
              *error = EAGAIN;
              break;
            }
        }
      n = lw_stderr_write_once (out->fd, out->use_send, data + done,
                                out->may_block ? MIN (len - done, (gsize) PIPE_BUF) : len - done);
      if (n > 0)
        {
          done += (gsize) n;
          continue;
        }
      if (n < 0 && errno == EINTR)
        continue;
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        {
          *error = n == 0 ? EIO : errno;
          break;
        }
      left_ms = (deadline - g_get_monotonic_time ()) / 1000;
      if (left_ms <= 0 || (done == 0 && stalled))
        {
          *error = EAGAIN;
          break;
        }
      poll (&pfd, 1, (int) left_ms);
    }
  return done;
}

/* Any thread, lw_say_lock held. Writes @line to stderr, waiting at most
 * LW_SAY_WAIT_MS for a slow reader, and not at all before the first byte
 * once a line has waited in vain (*@stalled), until one gets through. */
static void
lw_say_write (const char *line, gsize len, gboolean *stalled)
{
  LwOutput out;
  int error;

  if (!lw_stderr_open (&out))
    return;
  *stalled = lw_output_write (&out, line, len, LW_SAY_WAIT_MS, *stalled, &error) < len;
  lw_stderr_close (&out);
}

static GMutex lw_say_lock;

void
lw_say (const char *format, ...)
{
  /* HOLDS: lw_say_lock */
  static double tokens = LW_SAY_BURST;
  static gint64 refilled_us;
  static guint held_back;
  static gboolean stalled;
  g_autoptr(GString) line = g_string_new (NULL);
  g_autofree char *text = NULL;
  gint64 now = g_get_monotonic_time ();
  va_list args;
  int saved_errno = errno;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);

  g_mutex_lock (&lw_say_lock);
  if (refilled_us != 0)
    tokens = MIN (tokens + (double) (now - refilled_us) / (LW_SAY_REFILL_S * G_USEC_PER_SEC),
                  (double) LW_SAY_BURST);
  refilled_us = now;
  if (tokens < 1)
    {
      held_back++;
      g_mutex_unlock (&lw_say_lock);
      errno = saved_errno;
      return;
    }
  tokens -= 1;
  if (held_back > 0)
    g_string_append_printf (line, "lagwatch: %u message%s not shown before this one (too many)\n",
                            held_back, held_back == 1 ? "" : "s");
  held_back = 0;
  g_string_append (line, "lagwatch: ");
  {
    gsize start = line->len;

    lw_text_escape_append (line, text);
    if (line->len - start > LW_SAY_MAX_BYTES)
      {
        /* The escaped text is valid UTF-8: cut on a character boundary. */
        const char *cut = g_utf8_find_prev_char (line->str + start,
                                                 line->str + start + LW_SAY_MAX_BYTES + 1);

        g_string_truncate (line, (gsize) (cut - line->str));
        g_string_append (line, "...");
      }
  }
  g_string_append_c (line, '\n');
  lw_say_write (line->str, line->len, &stalled);
  g_mutex_unlock (&lw_say_lock);
  errno = saved_errno;
}
