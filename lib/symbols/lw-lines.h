/* lw-lines.h: source file and line of code addresses, from DWARF
 *
 * Read with libdw (meson feature "libdw"; without it lw_lines_resolve()
 * leaves every frame without a line). Only frames that appear in a report
 * are looked up, so the DWARF of a module is opened on its first such
 * frame, from the first of: the separate debug file its symbols came from
 * (build-id or .gnu_debuglink, see lw-symbols.h), the module's own file if
 * it carries .debug_info and the build-id in memory, and, only when the
 * user opted in with LAGWATCH_DEBUGINFOD=1, a debuginfod server (through
 * libdebuginfod.so.1, if installed). The files are opened with
 * dwarf_begin() on a descriptor, never through libdwfl, which would ask
 * debuginfod whenever DEBUGINFOD_URLS is set.
 *
 * Open DWARF handles are kept in a least-recently-used list bounded by a
 * memory budget, 64 MiB by default, in the bytes they may keep resident:
 * the inflated DWARF a lookup reads (compressed debug files are inflated
 * by lw-lines-image.c into one anonymous mapping, .debug_info and .debug_line
 * one compile unit at a time, those looked up), or the sizes of the
 * DWARF sections libdw maps or inflates itself. Past it, the least
 * recently used are closed, though the one in use is always kept; all are
 * closed by lw_lines_release() after each report, and each address's
 * answer is kept (4096 at most), so a module's DWARF is open only while a
 * report has addresses new to it. Modules found to have no DWARF are remembered too, so they are not
 * searched again (nor downloaded again) until lw_lines_init().
 *
 * Thread safety: any thread, normal context (the watcher thread in
 * practice). Internally locked; lookups are serialized.
 */
#pragma once

#include <glib.h>

#include "lw-symbols.h"

G_BEGIN_DECLS

/* Any thread, normal context, while no thread may hold the loader lock
 * (at attach: not on the watcher thread during a lag). Reads
 * LAGWATCH_DEBUGINFOD: when it is "1", loads libdebuginfod.so.1 (with
 * dlopen(), hence the loader lock; once per process) so that later
 * lookups may download debug info for modules with a build-id and no local
 * DWARF; otherwise none is downloaded. Forgets the modules found without
 * DWARF so far. */
void  lw_lines_init      (void);

/* Any thread, normal context. Fills @frame->file (the source path as the
 * DWARF states it) and @frame->line for a frame filled by
 * lw_symbols_resolve() with the same @is_return_address (a return address
 * is looked up at module offset - 1). Leaves them NULL and 0 when the
 * module is no longer loaded, has no DWARF, or the DWARF has no line for
 * the address (the module needs .debug_aranges, which GCC emits). May
 * block on the network only after the opt-in of lw_lines_init(). */
void  lw_lines_resolve   (LwFrame  *frame,
                          gboolean  is_return_address);

/* Any thread, normal context. Fills file and line of each frame of
 * *@frames (named by lw_symbols_resolve(), frame 0 at an exact pc, the
 * others at return addresses) and expands the calls inlined at each into
 * logical frames of their own, as addr2line -i does: before the frame
 * whose code they were inlined into, innermost first, with inlined set,
 * the same ip, module and offsets, the inlined function's name (symbol,
 * symbol_offset 0) and its own file:line; the physical frame then gets
 * the line of the outermost inlined call. At most 16 logical frames per
 * physical frame. Replaces *@frames (g_free()d) and *@n_frames. */
void  lw_lines_resolve_stack (LwFrame **frames,
                              guint    *n_frames);

/* Any thread, normal context. Closes every open DWARF file, giving its
 * memory back; what each address resolved to is kept, and a module's
 * DWARF is opened again only for an address not looked up before. The
 * reporting thread calls it once a report is named. */
void  lw_lines_release (void);

/* Any thread. Sets the budget of open DWARF files in bytes (0 restores
 * the default, 64 MiB), closing the least recently used beyond it. */
void  lw_lines_set_budget (gsize bytes);

/* What the DWARF cache holds. */
typedef struct
{
  guint n_open;     /* DWARF handles open */
  gsize open_bytes; /* the resident bytes they may take: what the budget bounds */
} LwLinesStats;

/* Any thread. A snapshot of the counters above. */
void  lw_lines_get_stats (LwLinesStats *stats);

G_END_DECLS
