/* lw-say.h: lagwatch's own messages, and text safe to show on a terminal
 *
 * lagwatch runs inside someone else's program: what it has to say about
 * itself (a file it cannot open, a variable it does not understand, a
 * record it throws away) must never change what the program does. GLib's
 * log functions do not qualify: G_DEBUG=fatal-warnings, which g_test_init()
 * and many test harnesses set, turns every g_warning() into a SIGTRAP, and
 * a program's log handler or writer may abort, block or send the line
 * anywhere. So lagwatch has one writer of its own, lw_say(): one line on
 * stderr (fd 2), prefixed "lagwatch: ", with every byte that could drive a
 * terminal written as \xNN, cut at LW_SAY_MAX_BYTES, at most LW_SAY_BURST
 * lines at once and one more every LW_SAY_REFILL_S seconds (the lines held
 * back are counted and the count said with the next one), written without
 * ever blocking the program: a pipe, FIFO or terminal on fd 2 is written
 * through a private non-blocking description opened from /proc/self/fd/2
 * (fd 2 itself is never made non-blocking: that would change the program's
 * own writes), a socket with MSG_DONTWAIT, and a line that cannot go out
 * within LW_SAY_WAIT_MS is dropped. API misuse stays g_return_if_fail(), as
 * in GLib.
 *
 * The stderr and JSON Lines sinks (lw-sink-fd.c) write records through the
 * same writer, lw_output_write().
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

#define LW_SAY_MAX_BYTES 1024
#define LW_SAY_BURST     10
#define LW_SAY_REFILL_S  6
#define LW_SAY_WAIT_MS   100

/* Any thread, normal context (never a signal handler). Says one line of
 * lagwatch's own on stderr (see above). */
void     lw_say                (const char *format,
                                ...) G_GNUC_PRINTF (1, 2);

/* Any thread. Appends @text (NULL: nothing) to @out with every byte that a
 * terminal would act on written as \xNN: C0 controls (newline and tab
 * included), DEL, the C1 controls U+0080..U+009F and bytes that are not
 * UTF-8. Everything else is copied as it is. */
void     lw_text_escape_append (GString    *out,
                                const char *text);

/* Any thread. The same as a new string; NULL for NULL. */
char    *lw_text_escape        (const char *text);

/* Where one record or line is written, and how. */
typedef struct
{
  int       fd;
  gboolean  use_send;   /* a socket: send() with MSG_DONTWAIT */
  gboolean  may_block;  /* fd 2 as it is while it is a pipe, FIFO or terminal
                         * (no private description could be opened): a write
                         * there can wait for the reader */
  gboolean  private;    /* a description of lagwatch's own, closed after */
} LwOutput;

/* Any thread. stderr, for one record or line: a pipe, FIFO or terminal on
 * fd 2 gets a private non-blocking description (closed by
 * lw_stderr_close()), so that lagwatch never holds the program's pipe open
 * once the program has closed or replaced fd 2; a socket is written with
 * send(); a file or another device on fd 2 is written as it is. FALSE: fd 2
 * is closed. */
gboolean lw_stderr_open        (LwOutput   *out);

/* Any thread. Closes what lw_stderr_open() opened. */
void     lw_stderr_close       (LwOutput   *out);

/* Any thread. One write() (send() when @use_send) of @data to @fd, with
 * SIGPIPE blocked in this thread: a reader that went away gives EPIPE and
 * never kills the program. */
ssize_t  lw_stderr_write_once  (int         fd,
                                gboolean    use_send,
                                const char *data,
                                gsize       len);

/* Any thread. The one bounded writer of lagwatch's lines and records:
 * writes @data to @out, retrying on EINTR and partial writes, waiting for a
 * slow reader @wait_ms at most in all, and not at all before the first
 * byte when @stalled (the last write to this output waited in vain). Where
 * @out may block, it waits for room before each write and writes PIPE_BUF
 * bytes at most at once (what a pipe that shows room takes without
 * waiting). Returns the bytes written; *@error is 0 when all were, else the
 * errno (EAGAIN: the reader did not take them in time). */
gsize    lw_output_write       (const LwOutput *out,
                                const char     *data,
                                gsize           len,
                                guint           wait_ms,
                                gboolean        stalled,
                                int            *error);

G_END_DECLS
