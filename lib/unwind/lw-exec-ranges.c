/* lw-exec-ranges.c: the anonymous executable mappings, from /proc/self/maps */
#include "lw-exec-ranges.h"
#include "lw-proc.h"

#include <stdio.h>
#include <string.h>

typedef struct
{
  uintptr_t lo, hi;
} LwExecRange;

struct _LwExecRanges
{
  GArray *ranges;  /* of LwExecRange, sorted by lo */
};

/* Any thread. Orders ranges by their start. */
static int
lw_exec_range_cmp (const void *a, const void *b)
{
  const LwExecRange *x = a, *y = b;

  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Any thread, normal context. */
LwExecRanges *
lw_exec_ranges_parse (const char *maps)
{
  LwExecRanges *ranges = g_new0 (LwExecRanges, 1);
  const char *line = maps;

  ranges->ranges = g_array_new (FALSE, FALSE, sizeof (LwExecRange));
  while (line != NULL && *line != '\0')
    {
      const char *next = strchr (line, '\n');
      unsigned long long lo, hi, inode;
      char perms[5];
      int path_at = 0;

      if (sscanf (line, "%llx-%llx %4s %*x %*x:%*x %llu%n", &lo, &hi, perms, &inode, &path_at) == 4
          && perms[2] == 'x' && inode == 0 && lo < hi)
        {
          const char *path = line + path_at;

          while (*path == ' ' || *path == '\t')
            path++;
          /* Bracketed names other than [anon:...] are the kernel's special
           * mappings ([vdso], [vsyscall]): not generated code. */
          if (*path == '\n' || *path == '\0' || g_str_has_prefix (path, "[anon:"))
            g_array_append_val (ranges->ranges, ((LwExecRange) { (uintptr_t) lo, (uintptr_t) hi }));
        }
      line = next != NULL ? next + 1 : NULL;
    }
  /* The kernel lists mappings in order already; a maps text from elsewhere
   * (a test's) may not. */
  g_array_sort (ranges->ranges, lw_exec_range_cmp);
  return ranges;
}

/* Any thread, normal context. */
LwExecRanges *
lw_exec_ranges_read (void)
{
  g_autofree char *path = g_strconcat (lw_proc_self (), "/maps", NULL);
  g_autofree char *maps = NULL;

  if (!g_file_get_contents (path, &maps, NULL, NULL))
    return NULL;
  return lw_exec_ranges_parse (maps);
}

/* Any thread. */
uintptr_t
lw_exec_ranges_start (const LwExecRanges *ranges, uintptr_t addr)
{
  guint lo = 0, hi = ranges->ranges->len;

  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      const LwExecRange *r = &g_array_index (ranges->ranges, LwExecRange, mid);

      if (addr < r->lo)
        hi = mid;
      else if (addr >= r->hi)
        lo = mid + 1;
      else
        return r->lo;
    }
  return 0;
}

/* Any thread. */
void
lw_exec_ranges_free (LwExecRanges *ranges)
{
  if (ranges == NULL)
    return;
  g_array_unref (ranges->ranges);
  g_free (ranges);
}
