/* lw-python.h: CPython frames, read from memory and merged into native stacks
 *
 * When the process runs CPython, each native frame of the interpreter's
 * evaluation loop (_PyEval_EvalFrameDefault) stands for the Python frames
 * it was executing. Right after a capture, the watcher reads the stuck
 * thread's Python frame chain from memory, without the GIL and without
 * calling into Python: every read goes through the kernel
 * (lw_modules_read_memory), so memory freed meanwhile fails the read
 * instead of faulting; every object is checked against the interpreter's
 * own type objects before its fields are believed; strings are taken only
 * from compact ASCII or cached UTF-8 objects, validated. A chain that
 * cannot be read whole, or that does not match the native stack, leaves
 * the native frames as they are: a stack may lack its Python frames, it
 * never shows a wrong name as right.
 *
 * A Python frame travels through the profile as a tag of lw-lang-frames.h,
 * language LW_LANG_PYTHON; the reporting thread turns it back into a frame
 * with lw_lang_frame_resolve().
 *
 * Interpreter layouts (lw-python-layout.h): a table per version for 3.11
 * and 3.12, chosen from the interpreter's Py_Version; from 3.13 on, the
 * interpreter's own _Py_DebugOffsets, validated before use.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

#include "lw-lang-frames.h"
#include "lw-symbols.h"

G_BEGIN_DECLS

/* The value of LwFrame.lang for a Python frame. */
#define LW_LANG_PYTHON "python"

/* Any thread but the watcher's, normal context (it calls dlsym(), which
 * takes the loader's lock: a watcher must never wait on a stuck thread
 * inside dlopen). Looks for the process's CPython through its exported
 * symbols, once found for good; called at each attach, so an interpreter
 * loaded later is found by the next attach (looked for again only when
 * libraries were loaded since the last look). */
void      lw_python_init (void);

/* Per-watcher state: a cache of code objects already read. */
typedef struct _LwPython LwPython;

/* Watcher thread. Never NULL; costs nothing in a process without CPython. */
LwPython *lw_python_new  (void);
void      lw_python_free (LwPython *python);

/* Watcher thread, right after a capture of thread @tid, while it is still
 * stuck. Replaces, in @ips (@n_ips native frames, room for @max_ips), each
 * native frame of the evaluation loop by the Python frames it was running,
 * innermost first. @sps (nullable): the stack pointer of each of @ips
 * (lw_unwinder_stack_pointers()), which places each loop's Python frames
 * by where its shim frame lies on the stack (3.12+); without it, or on
 * 3.11, loop frames are known by the symbol _PyEval_EvalFrameDefault.
 * Returns the new count; sets *@truncated when frames had to be dropped
 * for room. Leaves @ips unchanged when the process runs no CPython this
 * file knows, or the frames cannot be read consistently. */
guint     lw_python_merge (LwPython        *python,
                           pid_t            tid,
                           const uintptr_t *sps,
                           uintptr_t       *ips,
                           guint            n_ips,
                           guint            max_ips,
                           gboolean        *truncated);

/* Watcher thread. Why the last lw_python_merge() of @python left a stack
 * that ran Python without its Python frames: LW_LANG_MISSING_NONE when it
 * merged them, or when the thread ran no Python frame (no thread state,
 * an empty frame chain: a C thread, the interpreter finalizing). */
LwLangMissing lw_python_last_missing (LwPython *python);

/* Any thread, normal context. TRUE when @ip is a Python frame made by
 * lw_python_merge(). */
gboolean  lw_python_is_frame (uintptr_t ip);

/* Watcher thread. When @data is the user data of a callback PyGObject made
 * for a Python callable (a PyGICClosure), copies the callable's qualified
 * name into @name (NUL-terminated, at most @size bytes) and returns TRUE.
 * The caller makes sure the source holding @data was alive meanwhile. */
gboolean  lw_python_callable_name (uintptr_t  data,
                                   char      *name,
                                   gsize      size);

G_END_DECLS
