/* lw-lines-dwarf.c: which modules' DWARF is open, within a memory budget
 *
 * One list of DWARF files, most recently used first, each keyed by the
 * module's path and build-id, open or closed (a closed entry keeps where
 * its DWARF was found, and what it answered). A module's DWARF is looked
 * for in its separate debug file, its own file, then (opted in)
 * debuginfod. A compressed debug file is read through an inflated image of
 * its line sections (lw-lines-image.c); a file whose DWARF sections are
 * not compressed is opened by libdw directly (it maps it, reading only the
 * pages it touches). The budget counts these bytes: the image's filled
 * bytes, or the DWARF sections' sizes. lw_lines_release() closes every
 * open DWARF once a report is named; a later report reopens a module's
 * only for an address not seen yet (lw-lines.c keeps the answers).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-lines.h"

#include "lw-build-config.h"
#include "lw-elf-file.h"
#include "lw-lines-private.h"

#ifdef LW_HAVE_LIBDW

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LW_LINES_DEFAULT_BUDGET (64 * 1024 * 1024)
/* Entries, open or not: bounds the memory of the modules remembered
 * without DWARF. */
#define LW_LINES_MAX_ENTRIES 64

/* libdebuginfod's client API (elfutils/debuginfod.h), loaded on opt-in. */
typedef struct debuginfod_client debuginfod_client;
typedef struct
{
  debuginfod_client *(*begin)          (void);
  int                (*find_debuginfo) (debuginfod_client   *client,
                                        const unsigned char *build_id,
                                        int                  build_id_len,
                                        char               **path);
  void               (*end)            (debuginfod_client   *client);
} LwDebuginfod;

GMutex              lw_lines_lock;
GQueue              lw_lines_lru = G_QUEUE_INIT;
gsize               lw_lines_bytes;
static gsize        lw_lines_budget = LW_LINES_DEFAULT_BUDGET;
static guint        lw_lines_n_open;
/* HOLDS: lw_lines_lock. Its functions are NULL unless the user opted in
 * and the library loaded. */
static LwDebuginfod lw_debuginfod;
static gboolean     lw_debuginfod_tried;

/* HOLDS: lw_lines_lock. Closes @entry's DWARF, keeping what it answered
 * and where to reopen it. */
static void
lw_dwarf_entry_close (LwDwarfEntry *entry)
{
  if (entry->dwarf == NULL)
    return;
  dwarf_end (entry->dwarf);
  entry->dwarf = NULL;
  g_clear_pointer (&entry->image_elf, elf_end);
  for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
    {
      g_clear_pointer (&entry->sparse[i].filled, g_array_unref);
      entry->sparse[i].present = FALSE;
    }
  g_clear_pointer (&entry->aranges, g_array_unref);
  if (entry->image != NULL)
    munmap (entry->image, entry->image_size);
  entry->image = NULL;
  entry->image_size = 0;
  if (entry->fd >= 0)
    lw_fd_close (entry->fd, &entry->fd_id);
  entry->fd = -1;
  lw_lines_bytes -= entry->cost;
  entry->cost = 0;
  lw_lines_n_open--;
}

/* HOLDS: lw_lines_lock. */
static void
lw_dwarf_entry_free (LwDwarfEntry *entry)
{
  g_clear_pointer (&entry->answers, g_hash_table_unref);
  lw_dwarf_entry_close (entry);
  g_free (entry->path);
  g_free (entry->key);
  g_free (entry);
}

/* HOLDS: lw_lines_lock. Closes the DWARF of the least recently used
 * entries until the open ones fit the budget, and drops entries past
 * their cap; the head (the entry in use) always stays. */
static void
lw_lines_evict_unlocked (void)
{
  while (lw_lines_lru.length > LW_LINES_MAX_ENTRIES)
    lw_dwarf_entry_free (g_queue_pop_tail (&lw_lines_lru));
  for (GList *link = lw_lines_lru.tail; link != NULL && link != lw_lines_lru.head &&
                                        lw_lines_bytes > lw_lines_budget; link = link->prev)
    lw_dwarf_entry_close (link->data);
}

/* HOLDS: lw_lines_lock. TRUE when @dwarf's file carries @module's build-id,
 * when the module has none to compare, or, if @must_have_build_id is
 * FALSE, when the file has none (a .gnu_debuglink file, whose CRC
 * lw-symbols.c checked). */
static gboolean
lw_dwarf_matches_module (Dwarf    *dwarf,
                         LwModule *module,
                         gboolean  must_have_build_id)
{
  gsize module_len;
  const guint8 *module_id = lw_module_get_build_id (module, &module_len);
  const void *id = NULL;
  ssize_t len;

  if (module_id == NULL)
    return TRUE;
  len = dwelf_elf_gnu_build_id (dwarf_getelf (dwarf), &id);
  if (len == 0)
    return !must_have_build_id;
  return len > 0 && (gsize) len == module_len && memcmp (id, module_id, len) == 0;
}

/* HOLDS: lw_lines_lock. Opens the DWARF of @fd (taken: kept open if libdw
 * reads it, else closed) into @entry when it has some and belongs to
 * @module (see lw_dwarf_matches_module()). */
static gboolean
lw_dwarf_entry_open_fd (LwDwarfEntry *entry,
                        LwModule     *module,
                        int           fd,
                        const char   *path,
                        gboolean      must_have_build_id)
{
  void *image = NULL;
  gsize image_size = 0, dwarf_bytes = 0;
  LwLinesSparse sparse[LW_LINES_N_SPARSE] = { { 0 } };
  Elf *image_elf = lw_lines_image_load (fd, path, &image, &image_size, &dwarf_bytes, sparse);
  Dwarf *dwarf;

  if (image_elf != NULL)
    {
      memcpy (entry->sparse, sparse, sizeof sparse);
      entry->image = image;
      entry->image_size = image_size;
      if (entry->sparse[LW_LINES_SPARSE_INFO].present)
        {
          if (lw_lines_read_aranges (entry, image_elf))
            lw_lines_write_placeholder (entry, 0, entry->sparse[LW_LINES_SPARSE_INFO].section.size);
          else
            {
              /* Without .debug_aranges to find units by: filled whole. */
              for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
                {
                  LwLinesSparse *each = &entry->sparse[i];

                  if (!lw_lines_inflate (fd, &each->section, sizeof (ElfW(Chdr)),
                                         (guint8 *) image + each->section.offset))
                    g_debug ("DWARF of %s: a section is truncated or corrupt", path);
                  g_clear_pointer (&each->filled, g_array_unref);
                  each->present = FALSE;
                }
            }
        }
      if (!entry->sparse[LW_LINES_SPARSE_INFO].present)
        {
          close (fd);
          fd = -1;
        }
      dwarf = dwarf_begin_elf (image_elf, DWARF_C_READ, NULL);
    }
  else
    dwarf = dwarf_begin (fd, DWARF_C_READ);
  if (dwarf == NULL || !lw_dwarf_matches_module (dwarf, module, must_have_build_id))
    {
      if (dwarf == NULL)
        g_debug ("No DWARF in %s: %s", path, dwarf_errmsg (-1));
      else
        g_debug ("DWARF of %s not used: build-id differs from the loaded module's %s",
                 path, lw_module_get_build_id_hex (module));
      if (dwarf != NULL)
        dwarf_end (dwarf);
      if (image_elf != NULL)
        {
          elf_end (image_elf);
          munmap (image, image_size);
          entry->image = NULL;
          entry->image_size = 0;
          for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
            {
              g_clear_pointer (&entry->sparse[i].filled, g_array_unref);
              entry->sparse[i].present = FALSE;
            }
          g_clear_pointer (&entry->aranges, g_array_unref);
        }
      if (fd >= 0)
        close (fd);
      return FALSE;
    }
  entry->fd = fd;
  if (fd >= 0)
    lw_fd_id_take (fd, &entry->fd_id);
  entry->dwarf = dwarf;
  entry->image_elf = image_elf;
  entry->cost = image_elf != NULL ? image_size : dwarf_bytes;
  for (guint i = 0; i < LW_LINES_N_SPARSE; i++)
    if (entry->sparse[i].present)
      entry->cost -= entry->sparse[i].section.size;
  if (entry->path != path)
    {
      g_free (entry->path);
      entry->path = g_strdup (path);
    }
  entry->must_have_build_id = must_have_build_id;
  lw_lines_bytes += entry->cost;
  lw_lines_n_open++;
  return TRUE;
}

/* HOLDS: lw_lines_lock. Opens the DWARF of the file @path into @entry.
 * The module's file may have been replaced since it was loaded, by a FIFO
 * too: it is opened without blocking, and only if it is a regular file. */
static gboolean
lw_dwarf_entry_open_path (LwDwarfEntry *entry,
                          LwModule     *module,
                          const char   *path,
                          gboolean      must_have_build_id)
{
  char *why = NULL;
  int fd = lw_open_regular_file (path, FALSE, &why);

  if (fd < 0)
    {
      g_debug ("No DWARF in %s", why);
      g_free (why);
      return FALSE;
    }
  return lw_dwarf_entry_open_fd (entry, module, fd, path, must_have_build_id);
}

/* HOLDS: lw_lines_lock. Asks debuginfod for @module's debug file, if the
 * user opted in. */
static gboolean
lw_dwarf_entry_open_debuginfod (LwDwarfEntry *entry,
                                LwModule     *module)
{
  gsize build_id_len;
  const guint8 *build_id = lw_module_get_build_id (module, &build_id_len);
  debuginfod_client *client;
  char *path = NULL;
  gboolean opened;
  int fd;

  if (lw_debuginfod.begin == NULL || build_id == NULL || build_id_len > G_MAXINT ||
      (client = lw_debuginfod.begin ()) == NULL)
    return FALSE;
  fd = lw_debuginfod.find_debuginfo (client, build_id, (int) build_id_len, &path);
  lw_debuginfod.end (client);
  if (fd < 0)
    {
      g_debug ("debuginfod has no debug info for %s (%s): %s", lw_module_get_path (module),
               lw_module_get_build_id_hex (module), g_strerror (-fd));
      return FALSE;
    }
  opened = lw_dwarf_entry_open_fd (entry, module, fd, path != NULL ? path : "(debuginfod)", TRUE);
  free (path);
  return opened;
}

/* HOLDS: lw_lines_lock. @module's entry, moved to the head of the list (or
 * made there, its DWARF looked for); its path is NULL when the module has
 * no DWARF. Its DWARF may be closed: see lw_dwarf_entry_reopen(). */
LwDwarfEntry *
lw_lines_entry_for (LwModule *module)
{
  const char *build_id = lw_module_get_build_id_hex (module);
  char *key = g_strdup_printf ("%s\n%s", lw_module_get_path (module),
                               build_id != NULL ? build_id : "");
  const char *debug_file;
  LwDwarfEntry *entry;

  for (GList *link = lw_lines_lru.head; link != NULL; link = link->next)
    {
      entry = link->data;
      if (strcmp (entry->key, key) == 0)
        {
          g_queue_unlink (&lw_lines_lru, link);
          g_queue_push_head_link (&lw_lines_lru, link);
          g_free (key);
          return entry;
        }
    }

  entry = g_new0 (LwDwarfEntry, 1);
  entry->key = key;
  entry->fd = -1;
  debug_file = lw_symbols_get_debug_file (module);
  if (!(debug_file != NULL && lw_dwarf_entry_open_path (entry, module, debug_file, FALSE)) &&
      !lw_dwarf_entry_open_path (entry, module, lw_module_get_path (module), TRUE))
    lw_dwarf_entry_open_debuginfod (entry, module);
  g_queue_push_head (&lw_lines_lru, entry);
  lw_lines_evict_unlocked ();
  return entry;
}

/* HOLDS: lw_lines_lock. Opens again the DWARF of @entry (at the head of
 * the list) closed since its module's first lookup; FALSE when it cannot
 * be (the file changed: the path is then forgotten). */
gboolean
lw_dwarf_entry_reopen (LwDwarfEntry *entry,
                       LwModule     *module)
{
  char *path = entry->path;

  if (entry->dwarf != NULL)
    return TRUE;
  if (path == NULL)
    return FALSE;
  if (!lw_dwarf_entry_open_path (entry, module, path, entry->must_have_build_id))
    {
      g_clear_pointer (&entry->path, g_free);
      return FALSE;
    }
  lw_lines_evict_unlocked ();
  return TRUE;
}

/* Any thread, normal context, loader lock free. */
void
lw_lines_init (void)
{
  gboolean opted_in = g_strcmp0 (secure_getenv ("LAGWATCH_DEBUGINFOD"), "1") == 0;

  g_mutex_lock (&lw_lines_lock);
  /* Entries without DWARF may have some once debuginfod is in use; the
   * open ones are kept. */
  for (GList *link = lw_lines_lru.head; link != NULL;)
    {
      GList *next = link->next;
      LwDwarfEntry *entry = link->data;

      if (entry->path == NULL)
        {
          g_queue_delete_link (&lw_lines_lru, link);
          lw_dwarf_entry_free (entry);
        }
      link = next;
    }

  if (opted_in && !lw_debuginfod_tried)
    {
      void *handle = dlopen ("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

      lw_debuginfod_tried = TRUE;
      if (handle != NULL)
        {
          *(void **) &lw_debuginfod.begin = dlsym (handle, "debuginfod_begin");
          *(void **) &lw_debuginfod.find_debuginfo = dlsym (handle, "debuginfod_find_debuginfo");
          *(void **) &lw_debuginfod.end = dlsym (handle, "debuginfod_end");
          if (lw_debuginfod.begin == NULL || lw_debuginfod.find_debuginfo == NULL ||
              lw_debuginfod.end == NULL)
            lw_debuginfod = (LwDebuginfod) { NULL, NULL, NULL };
        }
      if (lw_debuginfod.begin == NULL)
        g_debug ("LAGWATCH_DEBUGINFOD=1 but libdebuginfod.so.1 is not usable (%s): "
                 "no debug info is downloaded", handle != NULL ? "symbols missing" : dlerror ());
    }
  g_mutex_unlock (&lw_lines_lock);
}

/* Any thread, normal context. */
void
lw_lines_release (void)
{
  gboolean released;

  g_mutex_lock (&lw_lines_lock);
  released = lw_lines_n_open > 0;
  for (GList *link = lw_lines_lru.head; link != NULL; link = link->next)
    lw_dwarf_entry_close (link->data);
  g_mutex_unlock (&lw_lines_lock);
#ifdef __GLIBC__
  /* libdw's own tables (compile units, abbreviations, line tables: about
   * 3 MiB for libc's) were freed with free(), whose memory glibc's
   * malloc keeps unless asked: measured +2.9 MiB anonymous kept after a
   * release without this, +0.3 MiB with it. */
  if (released)
    malloc_trim (0);
#endif
}

/* Any thread. */
void
lw_lines_set_budget (gsize bytes)
{
  g_mutex_lock (&lw_lines_lock);
  lw_lines_budget = bytes != 0 ? bytes : LW_LINES_DEFAULT_BUDGET;
  lw_lines_evict_unlocked ();
  g_mutex_unlock (&lw_lines_lock);
}

/* Any thread. */
void
lw_lines_get_stats (LwLinesStats *stats)
{
  g_return_if_fail (stats != NULL);

  g_mutex_lock (&lw_lines_lock);
  stats->n_open = lw_lines_n_open;
  stats->open_bytes = lw_lines_bytes;
  g_mutex_unlock (&lw_lines_lock);
}

#else /* !LW_HAVE_LIBDW: built without line info. */

void
lw_lines_init (void)
{
}

void
lw_lines_release (void)
{
}

void
lw_lines_set_budget (gsize bytes)
{
}

void
lw_lines_get_stats (LwLinesStats *stats)
{
  g_return_if_fail (stats != NULL);

  *stats = (LwLinesStats) { 0, 0 };
}

#endif
