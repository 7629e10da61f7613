/* lw-perfmap.h: frames in generated code (a JIT), marked and named
 *
 * Code a runtime generates at run time (SpiderMonkey in GJS, CPython 3.12+
 * with -X perf, Node, the JVM) lives in anonymous executable mappings: in
 * no module, with no symbol table. Such frames get the module LW_JIT_MODULE
 * and, when the runtime writes one, a name from its perf map: the file
 * /tmp/perf-PID.map, one "START SIZE name" line per piece of code (START
 * and SIZE in hex), later lines replacing earlier ones for reused addresses.
 */
#pragma once

#include <glib.h>

#include "lw-symbols.h"

G_BEGIN_DECLS

/* The `module` of a frame in generated code, in reports and JSON. */
#define LW_JIT_MODULE "[jit]"

/* The most of a perf map that is read: a bigger map is not read at all (a
 * message says so once), rather than read for a report for seconds. */
#define LW_PERFMAP_MAX_BYTES (64 * 1024 * 1024)

/* Reporting thread (normal context). For every frame of @frames that no
 * module holds and that lies in an anonymous executable mapping of this
 * process: module LW_JIT_MODULE, module_offset the offset in that mapping,
 * and its name from this process's perf map if the map is a regular file
 * of this user, not a link, at most LW_PERFMAP_MAX_BYTES. Frames after the
 * first are return addresses (looked up at ip - 1). */
void     lw_perfmap_name_frames (LwFrame *frames,
                                 guint    n_frames);

/* Reporting thread (normal context). lw_perfmap_name_frames() for the
 * @n_stacks stacks @stacks[i] of @n_frames[i] frames at once, as for the
 * stacks of one report (a hang's holds every thread's): /proc/self/maps
 * and the perf map are each read once, and the perf map is searched once
 * per distinct address. */
void     lw_perfmap_name_stacks (LwFrame     **stacks,
                                 const guint  *n_frames,
                                 guint         n_stacks);

/* Any thread, normal context. Reads the perf map text @data (@len bytes):
 * for each of @n addresses in @addrs, the name of the last line whose range
 * holds it, into @names[i] (newly allocated; NULL when none), and that
 * line's start into @starts[i]. Lines that do
 * not parse, and names over 512 bytes, are skipped; control characters in
 * names become '?'. TRUE when at least one address was named. */
gboolean lw_perfmap_parse      (const char      *data,
                                gsize            len,
                                const uintptr_t *addrs,
                                guint            n,
                                char           **names,
                                uintptr_t       *starts);

G_END_DECLS
