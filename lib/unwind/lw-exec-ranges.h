/* lw-exec-ranges.h: where this process's generated code may lie
 *
 * Code a runtime generates (a JIT: SpiderMonkey in GJS, CPython 3.12+ with
 * -X perf) lives in anonymous executable mappings, outside every module.
 * An address outside every module is therefore either generated code or
 * not code at all (a heap or stack pointer read as a return address). The
 * only list of a process's mappings with their permissions is the text of
 * /proc/self/maps; these functions read it.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Sorted, disjoint [lo, hi) ranges. */
typedef struct _LwExecRanges LwExecRanges;

/* Any thread, normal context. The anonymous executable mappings of this
 * process: no inode and no path, or "[anon:NAME]" (PR_SET_VMA_ANON_NAME).
 * NULL when the maps cannot be read (no /proc, no descriptor left, a
 * sandbox). */
LwExecRanges *lw_exec_ranges_read   (void);

/* Any thread, normal context. The same from @maps, the text of a maps
 * file. Never NULL. */
LwExecRanges *lw_exec_ranges_parse  (const char *maps);

/* Any thread. The start of the range of @ranges that holds @addr, or 0
 * when none does. */
uintptr_t     lw_exec_ranges_start  (const LwExecRanges *ranges,
                                     uintptr_t           addr);

/* Any thread. */
void          lw_exec_ranges_free   (LwExecRanges *ranges);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (LwExecRanges, lw_exec_ranges_free)

G_END_DECLS
