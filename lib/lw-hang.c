/* lw-hang.c: the state directory of hang records */
#include "lw-hang.h"

#include "lw-sink.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-sink.h"

#define LW_HANG_MAX_AGE_S   (7 * 24 * 3600)
#define LW_HANG_MAGIC       "lagwatch-hang 1\n"

struct _LwHangStore
{
  int   dirfd;
  char *exe;    /* this program, to recognize our own earlier runs */
};

static char *
lw_hang_exe_of (int pid)
{
  g_autofree char *link = g_strdup_printf ("/proc/%d/exe", pid);

  return g_file_read_link (link, NULL);
}

/* TRUE when @pid is alive and runs @exe (its /proc link is readable only
 * for our own processes). */
static gboolean
lw_hang_pid_runs (int pid, const char *exe)
{
  g_autofree char *other = lw_hang_exe_of (pid);

  return other != NULL && g_strcmp0 (other, exe) == 0;
}

LwHangStore *
lw_hang_store_open (const char *dir)
{
  g_autofree char *path = dir ? g_strdup (dir) : g_build_filename (g_get_user_state_dir (), "lagwatch", NULL);
  g_autofree char *parent = g_path_get_dirname (path);
  LwHangStore *store;
  struct stat st;
  int fd;

  if (g_mkdir_with_parents (parent, 0700) != 0 || (mkdir (path, 0700) != 0 && errno != EEXIST))
    {
      g_warning ("cannot create the state directory %s (%s); hangs will not survive a kill",
                 path, g_strerror (errno));
      return NULL;
    }
  fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat (fd, &st) != 0 || st.st_uid != geteuid () || (st.st_mode & 077) != 0)
    {
      g_warning ("the state directory %s is not safe to use (a symlink, not owned by this user, "
                 "or open to others); hangs will not survive a kill", path);
      if (fd >= 0)
        close (fd);
      return NULL;
    }
  store = g_new0 (LwHangStore, 1);
  store->dirfd = fd;
  store->exe = lw_hang_exe_of (getpid ());
  return store;
}

void
lw_hang_store_close (LwHangStore *store)
{
  if (store == NULL)
    return;
  close (store->dirfd);
  g_free (store->exe);
  g_free (store);
}

static char *
lw_hang_file_name (const char *id)
{
  return g_strdup_printf ("hang-%s.rec", id);
}

gboolean
lw_hang_store_save (LwHangStore *store, const char *id, const char *json, const char *text)
{
  g_autofree char *name = lw_hang_file_name (id);
  g_autofree char *contents = g_strdup_printf (LW_HANG_MAGIC "exe=%s\npid=%d\njson=%s\ntext:\n%s",
                                               store->exe ? store->exe : "", (int) getpid (),
                                               json, text);
  gboolean written;
  int fd;

  fd = openat (store->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return FALSE;
  written = lw_write_all (fd, contents, strlen (contents));
  fsync (fd);
  close (fd);
  fsync (store->dirfd);  /* the new name itself must survive */
  return written;
}

void
lw_hang_store_forget (LwHangStore *store, const char *id)
{
  g_autofree char *name = lw_hang_file_name (id);

  unlinkat (store->dirfd, name, 0);
}

void
lw_previous_hang_free (LwPreviousHang *hang)
{
  g_free (hang->json);
  g_free (hang->text);
  g_free (hang);
}

/* Reads one saved hang; NULL when it is not one of ours. */
static LwPreviousHang *
lw_hang_parse (const char *contents, const char *our_exe)
{
  g_autofree char *exe = NULL;
  LwPreviousHang *hang;
  const char *line = contents, *text;

  if (!g_str_has_prefix (line, LW_HANG_MAGIC))
    return NULL;
  line += strlen (LW_HANG_MAGIC);
  text = strstr (line, "\ntext:\n");
  if (!g_str_has_prefix (line, "exe=") || text == NULL)
    return NULL;
  exe = g_strndup (line + 4, strcspn (line + 4, "\n"));
  if (our_exe == NULL || !g_str_equal (exe, our_exe))
    return NULL;
  line = strstr (line, "\npid=");
  if (line == NULL)
    return NULL;
  hang = g_new0 (LwPreviousHang, 1);
  hang->pid = atoi (line + 5);
  line = strstr (line, "\njson=");
  hang->json = line ? g_strndup (line + 6, strcspn (line + 6, "\n")) : g_strdup ("{}");
  hang->text = g_strdup (text + strlen ("\ntext:\n"));
  return hang;
}

GPtrArray *
lw_hang_store_take_previous (LwHangStore *store)
{
  GPtrArray *found = g_ptr_array_new_with_free_func ((GDestroyNotify) lw_previous_hang_free);
  int fd = dup (store->dirfd);
  DIR *dir = fd >= 0 ? fdopendir (fd) : NULL;
  struct dirent *entry;
  time_t now = time (NULL);

  if (dir == NULL)
    {
      if (fd >= 0)
        close (fd);
      return found;
    }
  rewinddir (dir);
  while ((entry = readdir (dir)) != NULL)
    {
      g_autofree char *contents = NULL;
      LwPreviousHang *hang;
      struct stat st;
      int file;

      if (!g_str_has_prefix (entry->d_name, "hang-") || !g_str_has_suffix (entry->d_name, ".rec"))
        continue;
      file = openat (store->dirfd, entry->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (file < 0)
        continue;
      if (fstat (file, &st) == 0 && S_ISREG (st.st_mode) && st.st_size < 4 * 1024 * 1024)
        {
          if (now - st.st_mtime > LW_HANG_MAX_AGE_S)
            {
              close (file);
              unlinkat (store->dirfd, entry->d_name, 0);
              continue;
            }
          contents = g_malloc (st.st_size + 1);
          contents[read (file, contents, st.st_size) == st.st_size ? st.st_size : 0] = '\0';
        }
      close (file);
      if (contents == NULL || (hang = lw_hang_parse (contents, store->exe)) == NULL)
        continue;
      /* Still running (another instance, or this very process): not killed. */
      if (hang->pid == getpid () || lw_hang_pid_runs (hang->pid, store->exe))
        {
          lw_previous_hang_free (hang);
          continue;
        }
      unlinkat (store->dirfd, entry->d_name, 0);
      g_ptr_array_add (found, hang);
    }
  closedir (dir);
  return found;
}
