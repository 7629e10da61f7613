/* lw-perfmap.c: frames in generated code, marked and named from perf maps */
#include "lw-perfmap.h"
#include "lw-say.h"
#include "lw-proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
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

/* Reporting thread. The start of the anonymous executable mapping of this
 * process that holds @addr, from the text of /proc/self/maps; 0 if none.
 * Anonymous: no inode and no path, or a path the kernel brackets that is
 * no special mapping ("[anon:NAME]" from PR_SET_VMA_ANON_NAME). */
static uintptr_t
lw_perfmap_anon_exec_start (const char *maps, uintptr_t addr)
{
  const char *line = maps;

  while (line != NULL && *line != '\0')
    {
      const char *next = strchr (line, '\n');
      unsigned long long lo, hi, inode;
      char perms[5];
      int path_at = 0;

      if (sscanf (line, "%llx-%llx %4s %*x %*x:%*x %llu%n", &lo, &hi, perms, &inode, &path_at) == 4
          && addr >= lo && addr < hi)
        {
          const char *path = line + path_at;
          gboolean no_path;

          while (*path == ' ' || *path == '\t')
            path++;
          no_path = *path == '\n' || *path == '\0';

          if (perms[2] == 'x' && inode == 0 && (no_path || g_str_has_prefix (path, "[anon:")))
            return (uintptr_t) lo;
          return 0;
        }
      line = next != NULL ? next + 1 : NULL;
    }
  return 0;
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

/* Reporting thread. */
void
lw_perfmap_name_frames (LwFrame *frames, guint n_frames)
{
  g_autofree char *maps = NULL;
  g_autofree char *maps_path = g_strconcat (lw_proc_self (), "/maps", NULL);
  g_autofree char *perfmap = NULL;
  g_autofree uintptr_t *addrs = NULL;
  g_autofree guint *which = NULL;
  g_autofree char **names = NULL;
  g_autofree uintptr_t *starts = NULL;
  gsize perfmap_len = 0;
  guint n = 0;

  for (guint i = 0; i < n_frames; i++)
    if (frames[i].module == NULL)
      n++;
  if (n == 0 || !g_file_get_contents (maps_path, &maps, NULL, NULL))
    return;
  addrs = g_new (uintptr_t, n);
  which = g_new (guint, n);
  n = 0;
  for (guint i = 0; i < n_frames; i++)
    {
      uintptr_t lookup = i > 0 ? frames[i].ip - 1 : frames[i].ip;
      uintptr_t start;

      if (frames[i].module != NULL || (start = lw_perfmap_anon_exec_start (maps, lookup)) == 0)
        continue;
      frames[i].module = LW_JIT_MODULE;
      frames[i].module_offset = frames[i].ip - start;
      addrs[n] = lookup;
      which[n++] = i;
    }
  if (n == 0 || (perfmap = lw_perfmap_read (&perfmap_len)) == NULL)
    return;
  names = g_new0 (char *, n);
  starts = g_new0 (uintptr_t, n);
  lw_perfmap_parse (perfmap, perfmap_len, addrs, n, names, starts);
  for (guint k = 0; k < n; k++)
    if (names[k] != NULL)
      {
        g_free (frames[which[k]].symbol);
        frames[which[k]].symbol = names[k];
        frames[which[k]].symbol_offset = frames[which[k]].ip - starts[k];
      }
}
