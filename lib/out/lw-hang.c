/* lw-hang.c: the state directory of hang records */
#include "lw-hang.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-json.h"
#include "lw-sink.h"
#include "lw-fd.h"
#include "lw-private.h"
#include "lw-say.h"

#define LW_HANG_MAX_AGE_S   (7 * 24 * 3600)
#define LW_HANG_MAGIC       "lagwatch-hang 1\n"
#define LW_HANG_MAX_EXE     4096
#define LW_HANG_MAX_PID     4194304   /* the kernel's PID_MAX_LIMIT */
/* Enough for a copy's head: the magic line, exe= and pid= lines. */
#define LW_HANG_HEAD_BYTES  LW_HANG_HEAD_MAX
G_STATIC_ASSERT (LW_HANG_HEAD_MAX >= sizeof LW_HANG_MAGIC + LW_HANG_MAX_EXE + sizeof "exe=\npid=4194304\njson=");

struct _LwHangStore
{
  int         dirfd;        /* lw_hang_lock; -1: lost, and could not be reopened */
  LwFdId      dir_id;       /* what dirfd was when opened (lw-fd.h) */
  guint       keep;         /* components of path that are never created */
  gboolean    dir_said;     /* lw_hang_lock: the program took dirfd over, said */
  char       *path;
  char       *exe;          /* this program, to recognize our own earlier runs */
  int         owner_pid;    /* the process that opened it (not a fork child) */
  GHashTable *running;      /* names of the copies of hangs still running; lw_hang_lock */
  gboolean    error_said;   /* lw_hang_lock */
};

/* Guards every store's running set and lw_hang_stores; a copy is saved and
 * removed under it, so the exit handler sees a consistent set. */
static GMutex   lw_hang_lock;
static GSList  *lw_hang_stores;
static gboolean lw_hang_exiting;
static int      lw_hang_opener_pid;  /* (atomic) the last process that opened a store */

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

/* At exit (exit(), return from main): the hangs still running were not
 * killed, so their copies go, and none is saved after this. A fork child
 * leaves its parent's copies alone and takes no lock its parent may have
 * held at fork time. */
static int lw_hang_store_dir (LwHangStore *store);

static void
lw_hang_at_exit (void)
{
  if (g_atomic_int_get (&lw_hang_opener_pid) != getpid ())
    return;
  g_mutex_lock (&lw_hang_lock);
  lw_hang_exiting = TRUE;
  for (GSList *l = lw_hang_stores; l != NULL; l = l->next)
    {
      LwHangStore *store = l->data;
      GHashTableIter iter;
      gpointer name;

      int dirfd;

      if (store->owner_pid != getpid ())
        continue;
      dirfd = lw_hang_store_dir (store);
      g_hash_table_iter_init (&iter, store->running);
      while (dirfd >= 0 && g_hash_table_iter_next (&iter, &name, NULL))
        unlinkat (dirfd, name, 0);
      g_hash_table_remove_all (store->running);
    }
  g_mutex_unlock (&lw_hang_lock);
}

/* Any thread. The number of components of the absolute, canonical @path. */
static guint
lw_hang_path_depth (const char *path)
{
  g_auto(GStrv) parts = g_strsplit (path, "/", -1);
  guint depth = 0;

  for (guint i = 0; parts[i] != NULL; i++)
    depth += parts[i][0] != '\0';
  return depth;
}

/* Any thread. Opens the absolute @path one component at a time: never
 * through a symlink (O_NOFOLLOW on each, so a link planted in /tmp cannot
 * send root's files elsewhere), creating missing ones 0700, but only below
 * the first @keep components (those must exist: *@missing is set when one
 * does not). Each component must be owned by root or this user; the last
 * one by this user, closed to others. -1 with @why on failure. */
static int
lw_hang_open_dir (const char *path, guint keep, gboolean *missing, char **why)
{
  g_autofree char *clean = g_canonicalize_filename (path, "/");
  g_auto(GStrv) parts = g_strsplit (clean, "/", -1);
  struct stat st;
  int fd = open ("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  guint depth = 0;

  *missing = FALSE;
  for (guint i = 0; fd >= 0 && parts[i] != NULL; i++)
    {
      int next;

      if (parts[i][0] == '\0')
        continue;
      depth++;
      next = openat (fd, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0 && errno == ENOENT && depth <= keep)
        *missing = TRUE;
      else if (next < 0 && errno == ENOENT && (mkdirat (fd, parts[i], 0700) == 0 || errno == EEXIST))
        next = openat (fd, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0)
        {
          *why = g_strdup_printf ("\"%s\": %s", parts[i],
                                  errno == ELOOP || errno == ENOTDIR
                                  ? "a symbolic link or not a directory" : g_strerror (errno));
          close (fd);
          return -1;
        }
      close (fd);
      fd = next;
      if (fstat (fd, &st) != 0 || (st.st_uid != 0 && st.st_uid != geteuid ()))
        {
          *why = g_strdup_printf ("\"%s\" belongs to another user", parts[i]);
          close (fd);
          return -1;
        }
    }
  if (fd < 0)
    {
      *why = g_strdup (g_strerror (errno));
      return -1;
    }
  if (fstat (fd, &st) != 0 || st.st_uid != geteuid () || (st.st_mode & 077) != 0)
    {
      *why = g_strdup ("not owned by this user, or open to others");
      close (fd);
      return -1;
    }
  return fd;
}

LwHangStore *
lw_hang_store_open (const char *dir)
{
  static gsize at_exit_registered;
  static gint missing_said;
  g_autofree char *path = NULL;
  g_autofree char *anchor = NULL;
  g_autofree char *why = NULL;
  const char *xdg = g_getenv ("XDG_STATE_HOME");
  gboolean missing;
  LwHangStore *store;
  guint keep = 0;
  int fd;

  /* The default comes from the environment ($XDG_STATE_HOME, $HOME),
   * which a setuid or setgid process must not trust. */
  if (dir == NULL && lw_process_secure ())
    return NULL;
  /* The XDG base directory rules: $XDG_STATE_HOME (created if missing,
   * when absolute), else $HOME/.local/state. A $HOME that does not exist
   * (a system account's /nonexistent, a sandbox) is never created: only
   * what is below it. An explicit directory is created whole. */
  if (dir != NULL)
    path = g_strdup (dir);
  else if (xdg != NULL && g_path_is_absolute (xdg))
    {
      path = g_build_filename (xdg, "lagwatch", NULL);
      anchor = g_path_get_dirname (xdg);
    }
  else
    {
      anchor = g_strdup (g_getenv ("HOME") != NULL ? g_getenv ("HOME") : g_get_home_dir ());
      path = g_build_filename (anchor, ".local", "state", "lagwatch", NULL);
    }
  if (!g_path_is_absolute (path) || (anchor != NULL && !g_path_is_absolute (anchor)))
    {
      lw_say ("the state directory %s is not an absolute path; hangs will not survive a kill", path);
      return NULL;
    }
  if (anchor != NULL)
    {
      g_autofree char *clean = g_canonicalize_filename (anchor, "/");

      keep = lw_hang_path_depth (clean);
    }
  fd = lw_hang_open_dir (path, keep, &missing, &why);
  if (fd < 0 && missing)
    {
      if (g_atomic_int_compare_and_exchange (&missing_said, 0, 1))
        lw_say ("no state directory: %s does not exist, and lagwatch creates its directory only "
                "below it; hangs will not survive a kill", anchor);
      return NULL;
    }
  if (fd < 0)
    {
      lw_say ("the state directory %s is not safe to use (%s); hangs will not survive a kill",
              path, why);
      return NULL;
    }
  store = g_new0 (LwHangStore, 1);
  store->dirfd = fd;
  lw_fd_id_take (fd, &store->dir_id);
  store->keep = keep;
  store->path = g_steal_pointer (&path);
  store->exe = lw_hang_exe_of (getpid ());
  store->owner_pid = getpid ();
  store->running = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_mutex_lock (&lw_hang_lock);
  lw_hang_stores = g_slist_prepend (lw_hang_stores, store);
  g_mutex_unlock (&lw_hang_lock);
  g_atomic_int_set (&lw_hang_opener_pid, store->owner_pid);
  if (g_once_init_enter (&at_exit_registered))
    {
      atexit (lw_hang_at_exit);
      g_once_init_leave (&at_exit_registered, 1);
    }
  return store;
}

void
lw_hang_store_close (LwHangStore *store)
{
  GHashTableIter iter;
  gpointer name;
  int dirfd;

  if (store == NULL)
    return;
  g_mutex_lock (&lw_hang_lock);
  lw_hang_stores = g_slist_remove (lw_hang_stores, store);
  /* A fork child's copy of the store: the hangs are its parent's. */
  dirfd = lw_hang_store_dir (store);
  g_hash_table_iter_init (&iter, store->running);
  while (dirfd >= 0 && store->owner_pid == getpid () && g_hash_table_iter_next (&iter, &name, NULL))
    unlinkat (dirfd, name, 0);
  g_mutex_unlock (&lw_hang_lock);
  if (dirfd >= 0)
    close (dirfd);
  g_hash_table_unref (store->running);
  g_free (store->path);
  g_free (store->exe);
  g_free (store);
}

/* Any thread, lw_hang_lock held. The state directory's descriptor, still
 * the directory opened: if the program closed it (and reused the number)
 * or dup2()ed something over it, the number is the program's, never used
 * nor closed again; that is said once, and the directory reopened by path
 * with the same checks as at start. -1 when it cannot be. */
static int
lw_hang_store_dir (LwHangStore *store)
{
  g_autofree char *why = NULL;
  gboolean missing;
  int lost = store->dirfd;

  if (store->dirfd >= 0 && lw_fd_is (store->dirfd, &store->dir_id))
    return store->dirfd;
  store->dirfd = lw_hang_open_dir (store->path, store->keep, &missing, &why);
  if (store->dirfd >= 0)
    lw_fd_id_take (store->dirfd, &store->dir_id);
  if (!store->dir_said && lost >= 0)
    {
      store->dir_said = TRUE;
      if (store->dirfd >= 0)
        lw_say ("the program closed or replaced descriptor %d, which held the state directory %s: "
                "reopened by path", lost, store->path);
      else
        lw_say ("the program closed or replaced descriptor %d, which held the state directory %s, and "
                "it cannot be reopened (%s); hangs will not survive a kill", lost, store->path, why);
    }
  return store->dirfd;
}

static char *
lw_hang_file_name (const char *id)
{
  return g_strdup_printf ("hang-%s.rec", id);
}

/* Reporting thread, lw_hang_lock held. Writes the copy @name whole or not
 * at all: into a temporary name first, made durable, then renamed, so a
 * kill in the middle leaves no half record under a record's name. 0 or the
 * errno of what failed. */
static int
lw_hang_write_file (LwHangStore *store, const char *name, const char *contents)
{
  g_autofree char *partial = g_strdup_printf (".%s.tmp", name);
  int dirfd = lw_hang_store_dir (store);
  int fd, error = 0;

  if (dirfd < 0)
    return EBADF;
  fd = openat (dirfd, partial,
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0)
    return errno;
  if (!lw_write_all (fd, contents, strlen (contents)) || fsync (fd) != 0)
    error = errno;
  close (fd);
  if (error == 0 && renameat (dirfd, partial, dirfd, name) != 0)
    error = errno;
  if (error != 0)
    unlinkat (dirfd, partial, 0);
  else
    fsync (dirfd);  /* the new name itself must survive */
  return error;
}

/* Any thread. The copy of the hang @json, @text, as saved by this process. */
static char *
lw_hang_record_contents (LwHangStore *store, const char *json, const char *text)
{
  return g_strdup_printf (LW_HANG_MAGIC "exe=%s\npid=%d\njson=%s\ntext:\n%s",
                          store->exe ? store->exe : "", (int) getpid (), json, text);
}

gboolean
lw_hang_store_fits (LwHangStore *store, const char *json, const char *text)
{
  /* The copy's size without making it (megabytes for a hang of thousands
   * of threads): lw_hang_record_contents() with empty parts, plus theirs. */
  g_autofree char *frame = lw_hang_record_contents (store, "", "");

  return (guint64) strlen (frame) + strlen (json) + strlen (text) <= LW_HANG_MAX_RECORD;
}

gboolean
lw_hang_store_save (LwHangStore *store, const char *id, const char *json, const char *text)
{
  g_autofree char *name = lw_hang_file_name (id);
  g_autofree char *contents = lw_hang_record_contents (store, json, text);
  g_autofree char *message = NULL;
  int error;

  g_mutex_lock (&lw_hang_lock);
  if (lw_hang_exiting)
    {
      g_mutex_unlock (&lw_hang_lock);
      return FALSE;
    }
  /* The next run would take a bigger copy for someone else's file. */
  error = strlen (contents) > LW_HANG_MAX_RECORD ? EFBIG : lw_hang_write_file (store, name, contents);
  if (error == 0)
    g_hash_table_add (store->running, g_steal_pointer (&name));
  else if (!store->error_said)
    {
      store->error_said = TRUE;
      message = g_strdup_printf ("cannot save hang records in %s (%s); a hang the program "
                                 "is killed in will not be reported by its next run",
                                 store->path, g_strerror (error));
    }
  g_mutex_unlock (&lw_hang_lock);
  if (message != NULL)
    lw_say ("%s", message);
  return error == 0;
}

void
lw_hang_store_forget (LwHangStore *store, const char *id)
{
  g_autofree char *name = lw_hang_file_name (id);

  g_mutex_lock (&lw_hang_lock);
  if (lw_hang_store_dir (store) >= 0)
    unlinkat (store->dirfd, name, 0);
  g_hash_table_remove (store->running, name);
  g_mutex_unlock (&lw_hang_lock);
}

void
lw_previous_hang_free (LwPreviousHang *hang)
{
  g_free (hang->json);
  g_free (hang->text);
  g_free (hang);
}

/* Any thread. A member of a saved hang's top-level object: "event" must be
 * "hang" (and present: @data counts it), "pid" a positive integer. */
static gboolean
lw_hang_check_member (const char *key, const char *value, gpointer data)
{
  gboolean *has_event = data;

  if (g_str_equal (key, "\"event\""))
    {
      *has_event = TRUE;
      return g_str_equal (value, "\"hang\"");
    }
  if (g_str_equal (key, "\"pid\""))
    {
      guint64 pid;

      return g_ascii_string_to_unsigned (value, 10, 1, LW_HANG_MAX_PID, &pid, NULL);
    }
  return TRUE;
}

/* Any thread. The saved hang line @json (@len bytes) re-encoded, or NULL
 * when it is not one JSON object with "event":"hang". */
static char *
lw_hang_reencode_json (const char *json, gsize len)
{
  gboolean has_event = FALSE;
  char *out = lw_json_reencode_object (json, len, lw_hang_check_member, &has_event);

  if (out != NULL && !has_event)
    g_clear_pointer (&out, g_free);
  return out;
}

/* Any thread. @text (@len bytes) as valid UTF-8 for a terminal: every
 * control character but \n and \t (escape sequences, DEL, C1 controls)
 * becomes '?'. */
static char *
lw_hang_clean_text (const char *text, gsize len)
{
  g_autofree char *valid = g_utf8_make_valid (text, (gssize) len);
  GString *out = g_string_sized_new (len);

  for (const char *p = valid; *p != '\0'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c < 0xa0))
        g_string_append_c (out, '?');
      else
        g_string_append_unichar (out, c);
    }
  return g_string_free (out, FALSE);
}

/* Any thread. The line at *@p (up to a newline within @end) after @prefix;
 * NULL when the line is not there. Moves *@p past the line. */
static const char *
lw_hang_take_line (const char **p, const char *end, const char *prefix, gsize *len)
{
  gsize n = strlen (prefix);
  const char *value, *newline;

  if ((gsize) (end - *p) < n || memcmp (*p, prefix, n) != 0)
    return NULL;
  value = *p + n;
  newline = memchr (value, '\n', end - value);
  if (newline == NULL)
    return NULL;
  *len = newline - value;
  *p = newline + 1;
  return value;
}

/* Any thread. The head of a saved copy (@len bytes at @data, the whole
 * copy or its first LW_HANG_HEAD_BYTES): its magic line, the program that
 * saved it and that program's process id (*@pid), which tell a copy of a
 * hang still running whatever its size. *@body: what follows the head. */
static LwHangRecordStatus
lw_hang_parse_head (const char *data, gsize len, const char *our_exe, int *pid,
                    const char **body, const char **why)
{
  const char *p = data, *end = data + len;
  const char *exe, *pid_text;
  gsize exe_len, pid_len;
  g_autofree char *pid_copy = NULL;
  guint64 value;

  *why = NULL;
  if (len < strlen (LW_HANG_MAGIC) || memcmp (data, LW_HANG_MAGIC, strlen (LW_HANG_MAGIC)) != 0)
    {
      *why = "not a lagwatch hang record";
      return LW_HANG_RECORD_INVALID;
    }
  p += strlen (LW_HANG_MAGIC);
  exe = lw_hang_take_line (&p, end, "exe=", &exe_len);
  if (exe == NULL || exe_len == 0 || exe_len > LW_HANG_MAX_EXE || memchr (exe, '\0', exe_len) != NULL)
    {
      *why = "no valid program path";
      return LW_HANG_RECORD_INVALID;
    }
  if (our_exe == NULL || strlen (our_exe) != exe_len || memcmp (exe, our_exe, exe_len) != 0)
    return LW_HANG_RECORD_OTHER_PROGRAM;
  pid_text = lw_hang_take_line (&p, end, "pid=", &pid_len);
  if (pid_text != NULL)
    pid_copy = g_strndup (pid_text, pid_len);
  if (pid_copy == NULL || strlen (pid_copy) != pid_len
      || !g_ascii_string_to_unsigned (pid_copy, 10, 1, LW_HANG_MAX_PID, &value, NULL))
    {
      *why = "no valid process id";
      return LW_HANG_RECORD_INVALID;
    }
  *pid = (int) value;
  *body = p;
  return LW_HANG_RECORD_OK;
}

LwHangRecordStatus
lw_hang_record_parse (const char *data, gsize len, const char *our_exe, LwPreviousHang **hang,
                      const char **why)
{
  const char *p, *end = data + len;
  const char *json;
  gsize json_len;
  g_autofree char *reencoded = NULL;
  LwHangRecordStatus status;
  int pid = 0;

  *hang = NULL;
  *why = NULL;
  if (len > LW_HANG_MAX_RECORD)
    {
      *why = "too big";
      return LW_HANG_RECORD_INVALID;
    }
  status = lw_hang_parse_head (data, len, our_exe, &pid, &p, why);
  if (status != LW_HANG_RECORD_OK)
    return status;
  json = lw_hang_take_line (&p, end, "json=", &json_len);
  if (json == NULL || (reencoded = lw_hang_reencode_json (json, json_len)) == NULL)
    {
      *why = "its JSON line is not a valid hang record";
      return LW_HANG_RECORD_INVALID;
    }
  if ((gsize) (end - p) < strlen ("text:\n") || memcmp (p, "text:\n", strlen ("text:\n")) != 0)
    {
      *why = "no text block";
      return LW_HANG_RECORD_INVALID;
    }
  p += strlen ("text:\n");
  *hang = g_new0 (LwPreviousHang, 1);
  (*hang)->pid = pid;
  (*hang)->json = g_steal_pointer (&reencoded);
  (*hang)->text = lw_hang_clean_text (p, end - p);
  return LW_HANG_RECORD_OK;
}

/* Attaching thread. The contents of the copy @name, or NULL with @why.
 * Opened without blocking (a FIFO planted under that name opens at once)
 * and read only when it is a regular file; of one bigger than a record
 * can be, only the head is read (*@too_big), to tell whose it is. */
static char *
lw_hang_read_file (LwHangStore *store, const char *name, gsize *len, time_t *mtime,
                   gboolean *too_big, const char **why)
{
  g_autofree char *contents = NULL;
  struct stat st;
  gsize done = 0, size;
  int fd;

  fd = openat (store->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    {
      *why = errno == ELOOP ? "a symbolic link" : "cannot be opened";
      return NULL;
    }
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      *why = "not a regular file";
      close (fd);
      return NULL;
    }
  *too_big = st.st_size > LW_HANG_MAX_RECORD;
  size = *too_big ? LW_HANG_HEAD_BYTES : (gsize) st.st_size;
  contents = g_malloc (size + 1);
  while (done < size)
    {
      ssize_t n = read (fd, contents + done, size - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += n;
    }
  close (fd);
  contents[done] = '\0';
  *len = done;
  *mtime = st.st_mtime;
  return g_steal_pointer (&contents);
}

/* Attaching thread. A record a kill cut short while it was being written
 * (never under a record's name): removed once as old as a stale record. */
static void
lw_hang_prune_partial (LwHangStore *store, const char *name, time_t now)
{
  struct stat st;

  if (fstatat (store->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && now - st.st_mtime > LW_HANG_MAX_AGE_S)
    unlinkat (store->dirfd, name, 0);
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
      LwPreviousHang *hang = NULL;
      const char *why = NULL, *body;
      time_t mtime = 0;
      gsize len = 0;
      gboolean too_big = FALSE;
      int pid = 0;
      LwHangRecordStatus status;

      if (g_str_has_prefix (entry->d_name, ".hang-") && g_str_has_suffix (entry->d_name, ".tmp"))
        {
          lw_hang_prune_partial (store, entry->d_name, now);
          continue;
        }
      if (!g_str_has_prefix (entry->d_name, "hang-") || !g_str_has_suffix (entry->d_name, ".rec"))
        continue;
      contents = lw_hang_read_file (store, entry->d_name, &len, &mtime, &too_big, &why);
      if (contents != NULL && now - mtime > LW_HANG_MAX_AGE_S)
        {
          unlinkat (store->dirfd, entry->d_name, 0);
          continue;
        }
      status = contents != NULL ? lw_hang_parse_head (contents, len, store->exe, &pid, &body, &why)
                                : LW_HANG_RECORD_INVALID;
      if (status == LW_HANG_RECORD_OTHER_PROGRAM)
        continue;
      /* Still running (another instance, or this very process): not
       * killed, and not ours to judge, whatever its size. */
      if (status == LW_HANG_RECORD_OK && (pid == getpid () || lw_hang_pid_runs (pid, store->exe)))
        continue;
      if (status == LW_HANG_RECORD_OK && too_big)
        {
          why = "too big";
          status = LW_HANG_RECORD_INVALID;
        }
      else if (status == LW_HANG_RECORD_OK)
        status = lw_hang_record_parse (contents, len, store->exe, &hang, &why);
      if (status == LW_HANG_RECORD_INVALID)
        {
          g_autofree char *shown = g_strescape (entry->d_name, NULL);

          lw_say ("the state directory %s holds an invalid hang record \"%s\" (%s); removed",
                  store->path, shown, why);
          unlinkat (store->dirfd, entry->d_name, 0);
          continue;
        }
      unlinkat (store->dirfd, entry->d_name, 0);
      g_ptr_array_add (found, hang);
    }
  closedir (dir);
  return found;
}
