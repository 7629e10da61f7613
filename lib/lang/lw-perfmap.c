/* lw-perfmap.c: frames in generated code, marked and named from perf maps */
#include "lw-perfmap.h"
#include "lw-exec-ranges.h"
#include "lw-say.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LW_PERFMAP_MAX_NAME 512

/* Any thread. Parses one hex number (optional 0x) at *@p; moves past it. */
static gboolean
lw_perfmap_hex (const char **p, const char *end, uint64_t *out)
{
  const char *s = *p;
  uint64_t value = 0;
  guint digits = 0;

  if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    s += 2;
  for (; s < end && g_ascii_isxdigit (*s); s++, digits++)
    {
      if (value >> 60)
        return FALSE;  /* more than 64 bits */
      value = value << 4 | (uint64_t) g_ascii_xdigit_value (*s);
    }
  if (digits == 0)
    return FALSE;
  *p = s;
  *out = value;
  return TRUE;
}

/* Any thread, normal context. */
gboolean
lw_perfmap_parse (const char *data, gsize len, const uintptr_t *addrs, guint n, char **names,
                  uintptr_t *starts)
{
  const char *p = data, *end = data + len;
  gboolean any = FALSE;

  for (guint i = 0; i < n; i++)
    names[i] = NULL;
  while (p < end)
    {
      const char *eol = memchr (p, '\n', (size_t) (end - p));
      const char *line_end = eol != NULL ? eol : end;
      const char *q = p, *name;
      uint64_t start, size;
      gsize name_len;

      p = eol != NULL ? eol + 1 : end;
      if (!lw_perfmap_hex (&q, line_end, &start) || q >= line_end || *q != ' ')
        continue;
      q++;
      if (!lw_perfmap_hex (&q, line_end, &size) || q >= line_end || *q != ' ' || size == 0
          || start + size < start)
        continue;
      name = q + 1;
      name_len = (gsize) (line_end - name);
      if (name_len > 0 && name[name_len - 1] == '\r')
        name_len--;
      if (name_len == 0 || name_len > LW_PERFMAP_MAX_NAME)
        continue;
      for (guint i = 0; i < n; i++)
        if (addrs[i] >= start && addrs[i] - start < size)
          {
            char *copy = g_strndup (name, name_len);

            for (char *c = copy; *c != '\0'; c++)
              if ((guchar) *c < 0x20 || *c == 0x7f)
                *c = '?';
            g_free (names[i]);
            names[i] = copy;
            starts[i] = (uintptr_t) start;
            any = TRUE;
          }
    }
  return any;
}

/* Reporting thread. This process's perf map, validated; NULL if it has
 * none or it is not to be trusted (said once). */
static char *
lw_perfmap_read (gsize *len)
{
  static gboolean warned;
  g_autofree char *path = g_strdup_printf ("/tmp/perf-%d.map", (int) getpid ());
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  const char *problem = NULL;
  struct stat st;
  char *data = NULL;

  if (fd < 0)
    {
      if (errno == ELOOP && !warned)
        problem = "is a symbolic link";
      else
        return NULL;
    }
  else if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    problem = "is not a regular file";
  else if (st.st_uid != geteuid ())
    problem = "belongs to another user";
  else if (st.st_size > LW_PERFMAP_MAX_BYTES)
    problem = "is bigger than " G_STRINGIFY (LW_PERFMAP_MAX_BYTES) " bytes";
  else
    {
      gsize got = 0, want = (gsize) st.st_size;

      data = g_malloc (want + 1);
      while (got < want)
        {
          ssize_t r = read (fd, data + got, want - got);

          if (r < 0 && errno == EINTR)
            continue;
          if (r <= 0)
            break;
          got += (gsize) r;
        }
      /* A runtime appends as it compiles: a partial last line is skipped
       * by the parser. */
      data[got] = '\0';
      *len = got;
    }
  if (fd >= 0)
    close (fd);
  if (problem != NULL && !warned)
    {
      warned = TRUE;
      lw_say ("the perf map %s %s: JIT frames are not named from it", path, problem);
    }
  return data;
}

/* Any thread. Orders addresses. */
static int
lw_perfmap_addr_cmp (const void *a, const void *b)
{
  uintptr_t x = *(const uintptr_t *) a, y = *(const uintptr_t *) b;

  return (x > y) - (x < y);
}

/* Reporting thread. */
void
lw_perfmap_name_frames (LwFrame *frames, guint n_frames)
{
  lw_perfmap_name_stacks (&frames, &n_frames, 1);
}

/* Reporting thread. */
void
lw_perfmap_name_stacks (LwFrame **stacks, const guint *n_frames, guint n_stacks)
{
  g_autofree char *perfmap = NULL;
  g_autoptr(LwExecRanges) ranges = NULL;
  g_autoptr(GArray) addrs = g_array_new (FALSE, FALSE, sizeof (uintptr_t));
  g_autoptr(GArray) marked = g_array_new (FALSE, FALSE, sizeof (LwFrame *));
  g_autoptr(GArray) lookups = NULL;  /* of the marked frames */
  g_autofree char **names = NULL;
  g_autofree uintptr_t *starts = NULL;
  gsize perfmap_len = 0;
  gboolean any = FALSE;
  guint n = 0;

  for (guint s = 0; s < n_stacks && !any; s++)
    for (guint i = 0; i < n_frames[s] && !any; i++)
      any = stacks[s][i].module == NULL;
  if (!any || (ranges = lw_exec_ranges_read ()) == NULL)
    return;
  for (guint s = 0; s < n_stacks; s++)
    for (guint i = 0; i < n_frames[s]; i++)
      {
        LwFrame *frame = &stacks[s][i];
        uintptr_t lookup = i > 0 ? frame->ip - 1 : frame->ip;
        uintptr_t start;

        if (frame->module != NULL || (start = lw_exec_ranges_start (ranges, lookup)) == 0)
          continue;
        frame->module = LW_JIT_MODULE;
        frame->module_offset = frame->ip - start;
        g_array_append_val (addrs, lookup);
        g_array_append_val (marked, frame);
      }
  if (addrs->len == 0 || (perfmap = lw_perfmap_read (&perfmap_len)) == NULL)
    return;
  /* Each distinct address once: a hang's threads share their frames. */
  lookups = g_array_copy (addrs);
  g_array_sort (addrs, lw_perfmap_addr_cmp);
  for (guint k = 0; k < addrs->len; k++)
    if (n == 0 || g_array_index (addrs, uintptr_t, k) != g_array_index (addrs, uintptr_t, n - 1))
      g_array_index (addrs, uintptr_t, n++) = g_array_index (addrs, uintptr_t, k);
  names = g_new0 (char *, n);
  starts = g_new0 (uintptr_t, n);
  lw_perfmap_parse (perfmap, perfmap_len, (const uintptr_t *) addrs->data, n, names, starts);
  for (guint m = 0; m < marked->len; m++)
    {
      LwFrame *frame = g_array_index (marked, LwFrame *, m);
      uintptr_t *at;
      guint k;

      at = bsearch (&g_array_index (lookups, uintptr_t, m), addrs->data, n, sizeof (uintptr_t),
                    lw_perfmap_addr_cmp);
      if (at == NULL || names[k = (guint) (at - (uintptr_t *) addrs->data)] == NULL)
        continue;
      g_free (frame->symbol);
      frame->symbol = g_strdup (names[k]);
      frame->symbol_offset = frame->ip - starts[k];
    }
  for (guint k = 0; k < n; k++)
    g_free (names[k]);
}
