/* lw-hang.h: hangs that survive a kill
 *
 * When a lag reaches LAGWATCH_HANG_MS, its record is written at once and
 * made durable (fsync), and a copy is kept in the state directory
 * (LAGWATCH_STATE_DIR, default $XDG_STATE_HOME/lagwatch), written whole or
 * not at all (a temporary name, fsync, rename). If the lag ends,
 * or the program exits cleanly (exit(), return from main) or detaches, the
 * copy is removed. If the process dies first (SIGKILL, OOM, a watchdog, a
 * crash), the next run of the same program finds the copy and reports "the
 * previous run was killed during a hang" with that hang's stack. Copies
 * older than 7 days are pruned.
 *
 * The directory is opened one component at a time without following a
 * symlink (missing ones made 0700); every component must be owned by root
 * or this user, the last by this user alone with no access for others. The
 * copies are read and written relative to it. A copy read back is parsed and
 * checked field by field; its JSON is re-encoded and its text cleaned of
 * control characters, never passed on as it was found. One that is not
 * valid is named in one warning and removed.
 *
 * Any thread, normal context.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The largest copy read back; a bigger file is not one of ours. */
#define LW_HANG_MAX_RECORD (4 * 1024 * 1024)
/* The most a copy adds to its JSON line and text block (magic, exe=, pid=). */
#define LW_HANG_HEAD_MAX   (64 + 4096)

typedef struct _LwHangStore LwHangStore;

/* Opens (creating) @dir, or the default when NULL (none in a setuid or
 * setgid process: the default comes from the environment). NULL with one
 * warning when it is unsafe (see above) or cannot be made. */
LwHangStore *lw_hang_store_open     (const char  *dir);

/* Any thread. Removes the copies of hangs still running (the process is
 * not being killed; a fork child leaves its parent's alone) and closes
 * @store. */
void         lw_hang_store_close    (LwHangStore *store);

/* Reporting thread. Saves the hang @id: its JSON line and its text block,
 * durably. A failure (a copy over LW_HANG_MAX_RECORD among them) is said
 * once per store, on stderr. */
gboolean     lw_hang_store_save     (LwHangStore *store,
                                     const char  *id,
                                     const char  *json,
                                     const char  *text);

/* Any thread. TRUE when the copy of the hang @json, @text is within
 * LW_HANG_MAX_RECORD, which lw_hang_store_save() refuses to exceed (the
 * caller leaves out what it can and tries again). */
gboolean     lw_hang_store_fits     (LwHangStore *store,
                                     const char  *json,
                                     const char  *text);

/* Reporting thread. The hang @id ended: forget it. */
void         lw_hang_store_forget   (LwHangStore *store,
                                     const char  *id);

typedef struct
{
  int   pid;    /* > 0 */
  char *json;   /* the saved record, re-encoded: one line of valid JSON, an object */
  char *text;   /* the saved text block, valid UTF-8 without control characters but \n and \t */
} LwPreviousHang;

/* Attaching thread. Takes (and removes) the hangs saved by earlier runs of
 * this same program that are no longer running, and prunes copies older
 * than 7 days. */
GPtrArray   *lw_hang_store_take_previous (LwHangStore *store);

void         lw_previous_hang_free  (LwPreviousHang *hang);

typedef enum
{
  LW_HANG_RECORD_OK,
  LW_HANG_RECORD_OTHER_PROGRAM,  /* valid so far, but saved by another program */
  LW_HANG_RECORD_INVALID,
} LwHangRecordStatus;

/* Any thread. Parses the @len bytes of a saved copy (any bytes) into
 * *@hang when it is a valid one saved by @our_exe; otherwise @why says
 * what is wrong with it (for LW_HANG_RECORD_INVALID). */
LwHangRecordStatus lw_hang_record_parse (const char      *data,
                                         gsize            len,
                                         const char      *our_exe,
                                         LwPreviousHang **hang,
                                         const char     **why);

G_END_DECLS
