/* lw-hang.h: hangs that survive a kill
 *
 * When a lag reaches LAGWATCH_HANG_MS, its record is written at once and
 * made durable (fsync), and a copy is kept in the state directory
 * (LAGWATCH_STATE_DIR, default $XDG_STATE_HOME/lagwatch; created 0700,
 * files 0600, opened without following symlinks). If the lag ends, the copy
 * is removed. If the process dies first (SIGKILL, OOM, a watchdog), the next
 * run of the same program finds the copy and reports "the previous run was
 * killed during a hang" with that hang's stack. Copies older than 7 days are
 * pruned.
 *
 * Any thread, normal context.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _LwHangStore LwHangStore;

/* Opens (creating) @dir, or the default when NULL. NULL with one warning
 * when it is unsafe (a symlink, not ours, open to others) or cannot be made. */
LwHangStore *lw_hang_store_open     (const char  *dir);
void         lw_hang_store_close    (LwHangStore *store);

/* Saves the hang @id: its JSON line and its text block, durably. */
gboolean     lw_hang_store_save     (LwHangStore *store,
                                     const char  *id,
                                     const char  *json,
                                     const char  *text);

/* The hang @id ended: forget it. */
void         lw_hang_store_forget   (LwHangStore *store,
                                     const char  *id);

typedef struct
{
  int   pid;
  char *json;   /* the saved record, one line */
  char *text;   /* the saved text block */
} LwPreviousHang;

/* Takes (and removes) the hangs saved by earlier runs of this same program
 * that are no longer running, and prunes copies older than 7 days. */
GPtrArray   *lw_hang_store_take_previous (LwHangStore *store);

void         lw_previous_hang_free  (LwPreviousHang *hang);

G_END_DECLS
