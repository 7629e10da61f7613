/* lw-debug-file.h: finding a module's separate debug file
 *
 * Where debuggers look, best first: ".build-id/xx/rest.debug" under each
 * debug root (the module's build-id, as Debian's -dbg and -dbgsym packages
 * install them); then the file the module's .gnu_debuglink names, in the
 * module's directory, its .debug/ subdirectory and that directory under
 * each debug root, the directory both as loaded and with symbolic links
 * resolved. A candidate is used only if it is a regular file (a FIFO or a
 * device at that path is skipped, never waited on), an ELF file with a
 * .symtab, and the module's own: the same build-id, and for a
 * .gnu_debuglink file the CRC-32 the link states.
 *
 * Thread safety: any thread, normal context. Internally locked.
 */
#pragma once

#include <glib.h>

#include "lw-elf-file.h"
#include "lw-modules.h"
#include "lw-symbols-private.h"

G_BEGIN_DECLS

/* Any thread, normal context. Replaces the debug roots (absolute
 * directories; one that does not exist is skipped). NULL restores the
 * default, "/usr/lib/debug". */
void           lw_debug_file_set_roots         (const char * const *roots);

/* Any thread, normal context. The .symtab of @module's build-id debug file
 * under the debug roots, with its path recorded in the table, or NULL. */
LwSymbolTable *lw_debug_file_read_by_build_id  (LwModule        *module);

/* Any thread, normal context. The .symtab of the debug file
 * @module_file's .gnu_debuglink names (@module_file is @module's own file,
 * open), with its path recorded in the table, or NULL when the module has
 * no link or no candidate is usable. */
LwSymbolTable *lw_debug_file_read_by_debuglink (LwModule        *module,
                                                const LwElfFile *module_file);

G_END_DECLS
