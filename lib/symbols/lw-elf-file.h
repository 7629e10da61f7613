/* lw-elf-file.h: reading one ELF file, whatever is at its path
 *
 * The symbolizer opens files named by the loader, by a build-id, by a
 * .gnu_debuglink and by the user's debug roots: any of them may be a FIFO,
 * a device, a directory, or a corrupt or truncated ELF file. A path is
 * opened without blocking (O_NONBLOCK, so that opening a FIFO with no
 * writer returns at once) and used only if it is a regular file. Symbol
 * tables are read with libelf's bounds-checked accessors, the build-id
 * note and .gnu_debuglink with libdw's dwelf readers, a debug file's
 * CRC-32 with zlib.
 *
 * Thread safety: any thread, normal context (never a signal handler).
 */
#pragma once

#include <gelf.h>
#include <glib.h>
#include <libelf.h>

#include "lw-fd.h"
#include "lw-symbols-private.h"

G_BEGIN_DECLS

/* An ELF file open for reading. */
typedef struct
{
  int     fd;
  Elf    *elf;
  LwFdId  fd_id;  /* what fd was when opened: closed only if it still is */
} LwElfFile;

/* Any thread. Sets libelf's version; call before any other function here
 * (once is enough, more are harmless). */
void           lw_elf_init                  (void);

/* Any thread, normal context. Opens @path for reading if it is a regular
 * file: a descriptor (close-on-exec), or -1 with the reason in @why (left
 * NULL when @path does not exist and @missing_ok: an absent debug file is
 * the common case, not a problem). Never blocks: a FIFO, socket, device or
 * directory is refused after a non-blocking open. */
int            lw_open_regular_file         (const char *path,
                                             gboolean    missing_ok,
                                             char      **why);

/* Any thread, normal context. Opens @path (see lw_open_regular_file()) as
 * an ELF file with section headers; FALSE with the reason in @why (NULL
 * when it is missing and @missing_ok). */
gboolean       lw_elf_file_open             (LwElfFile  *file,
                                             const char *path,
                                             gboolean    missing_ok,
                                             char      **why);

/* Any thread. */
void           lw_elf_file_close            (LwElfFile  *file);

/* Any thread. A table from @elf's .symtab, or from its .dynsym when it has
 * no .symtab functions and @symtab_only is FALSE; NULL when neither has
 * any. */
LwSymbolTable *lw_symbol_table_new_from_elf (Elf        *elf,
                                             gboolean    symtab_only);

/* Any thread. The NT_GNU_BUILD_ID note of @elf: its bytes (valid while
 * @elf is open) and their count in @len; NULL and 0 when it has none or a
 * malformed one. */
const guint8  *lw_elf_get_build_id          (Elf        *elf,
                                             gsize      *len);

/* Any thread. TRUE when @elf has a build-id equal to the @len bytes of
 * @build_id (FALSE when @build_id is NULL). */
gboolean       lw_elf_has_build_id          (Elf          *elf,
                                             const guint8 *build_id,
                                             gsize         len);

/* Any thread. The .gnu_debuglink of @elf: the debug file's name (a file
 * name without directory, copied) and the CRC-32 of its contents; FALSE
 * when @elf has none, a malformed one, or a name with a '/' (which would
 * lead the search out of its directories). */
gboolean       lw_elf_get_debuglink         (Elf        *elf,
                                             char      **name,
                                             guint32    *crc);

/* Any thread, normal context. The CRC-32 (zlib's, which .gnu_debuglink
 * uses) of the whole file open as @fd, read with pread(); FALSE on a read
 * error (errno set). */
gboolean       lw_file_crc32                (int         fd,
                                             guint32    *crc);

G_END_DECLS
