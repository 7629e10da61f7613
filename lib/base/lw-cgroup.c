/* lw-cgroup.c: the process's cgroup, and the time its CPU quota held it back */
#include "lw-cgroup.h"

#include <string.h>

struct _LwCgroup
{
  char *v2_mount;       /* where cgroup2 is mounted, NULL if not */
  char *v2_root;        /* the cgroup path that mount shows as its root */
  char *v1_cpu_mount;   /* the same for a v1 hierarchy with the cpu controller */
  char *v1_cpu_root;
};

/* Watcher thread. Field @n (0-based) of a mountinfo line split by spaces. */
static const char *
lw_cgroup_field (char **fields, guint n_fields, guint n)
{
  return n < n_fields ? fields[n] : NULL;
}

/* TRUE when the comma-separated @list holds @item. */
static gboolean
lw_cgroup_list_has (const char *list, const char *item)
{
  g_auto(GStrv) items = g_strsplit (list, ",", -1);

  return g_strv_contains ((const char *const *) items, item);
}

/* Watcher thread. Reads the mount points of cgroup2 and of the v1 cpu
 * controller. mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS". */
LwCgroup *
lw_cgroup_new (void)
{
  LwCgroup *cgroup = g_new0 (LwCgroup, 1);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/self/mountinfo", &text, NULL, NULL))
    return cgroup;
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) fields = g_strsplit (lines[i], " ", -1);
      guint n = g_strv_length (fields), dash = 0;
      const char *fstype, *superopts;

      for (guint f = 6; f < n && dash == 0; f++)
        if (g_str_equal (fields[f], "-"))
          dash = f;
      if (dash == 0 || (fstype = lw_cgroup_field (fields, n, dash + 1)) == NULL)
        continue;
      superopts = lw_cgroup_field (fields, n, dash + 3);
      if (g_str_equal (fstype, "cgroup2") && cgroup->v2_mount == NULL)
        {
          cgroup->v2_mount = g_strdup (fields[4]);
          cgroup->v2_root = g_strdup (fields[3]);
        }
      else if (g_str_equal (fstype, "cgroup") && superopts != NULL && cgroup->v1_cpu_mount == NULL
               && lw_cgroup_list_has (superopts, "cpu"))
        {
          cgroup->v1_cpu_mount = g_strdup (fields[4]);
          cgroup->v1_cpu_root = g_strdup (fields[3]);
        }
    }
  return cgroup;
}

void
lw_cgroup_free (LwCgroup *cgroup)
{
  if (cgroup == NULL)
    return;
  g_free (cgroup->v2_mount);
  g_free (cgroup->v2_root);
  g_free (cgroup->v1_cpu_mount);
  g_free (cgroup->v1_cpu_root);
  g_free (cgroup);
}

int64_t
lw_cgroup_parse_throttled (const char *text)
{
  static const struct { const char *key; int64_t scale; } keys[] = {
    { "throttled_usec ", 1000 }, { "throttled_time ", 1 },
  };

  for (const char *line = text; line != NULL && *line != '\0'; line = strchr (line, '\n'), line = line ? line + 1 : NULL)
    for (guint k = 0; k < G_N_ELEMENTS (keys); k++)
      if (g_str_has_prefix (line, keys[k].key))
        {
          const char *digits = line + strlen (keys[k].key);
          char *end;
          guint64 value = g_ascii_strtoull (digits, &end, 10);

          if (end == digits || value > G_MAXINT64 / (guint64) keys[k].scale)
            return -1;
          return (int64_t) value * keys[k].scale;
        }
  return -1;
}

/* Watcher thread. The throttled time summed over the levels from
 * @mount/@path (the cgroup's path below the mount's @root) up to the
 * mount; -1 when no level has a count. */
static int64_t
lw_cgroup_sum_levels (const char *mount, const char *root, const char *path)
{
  g_autofree char *rel = NULL;
  int64_t sum = -1;

  /* A mount of a subtree (a container's) shows paths below its root. */
  if (!g_str_equal (root, "/") && g_str_has_prefix (path, root))
    path += strlen (root);
  rel = g_strdup (path);
  for (;;)
    {
      g_autofree char *file = g_build_filename (mount, rel, "cpu.stat", NULL);
      g_autofree char *text = NULL;
      char *slash;

      if (g_file_get_contents (file, &text, NULL, NULL))
        {
          int64_t throttled = lw_cgroup_parse_throttled (text);

          if (throttled >= 0)
            sum = MAX (sum, 0) + throttled;
        }
      slash = strrchr (rel, '/');
      if (slash == NULL || rel[0] == '\0' || g_str_equal (rel, "/"))
        break;
      if (slash == rel)
        slash[1] = '\0';  /* "/a" -> "/": the mount's own level, last */
      else
        *slash = '\0';
    }
  return sum;
}

int64_t
lw_cgroup_throttled_ns (LwCgroup *cgroup)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  int64_t v2 = -1, v1 = -1;

  if ((cgroup->v2_mount == NULL && cgroup->v1_cpu_mount == NULL)
      || !g_file_get_contents ("/proc/self/cgroup", &text, NULL, NULL))
    return -1;
  /* "0::PATH" (v2), "N:CONTROLLERS:PATH" (v1). */
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto(GStrv) fields = g_strsplit (lines[i], ":", 3);

      if (g_strv_length (fields) != 3 || fields[2][0] != '/')
        continue;
      if (g_str_equal (fields[0], "0") && fields[1][0] == '\0' && cgroup->v2_mount != NULL)
        v2 = lw_cgroup_sum_levels (cgroup->v2_mount, cgroup->v2_root, fields[2]);
      else if (cgroup->v1_cpu_mount != NULL && lw_cgroup_list_has (fields[1], "cpu"))
        v1 = lw_cgroup_sum_levels (cgroup->v1_cpu_mount, cgroup->v1_cpu_root, fields[2]);
    }
  /* A hybrid system (cgroup2 beside v1 controllers) has the cpu
   * controller on one side only: the other has no count. */
  if (v2 < 0)
    return v1;
  return v1 < 0 ? v2 : v2 + v1;
}
