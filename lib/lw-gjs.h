/* lw-gjs.h: JavaScript function names for GJS programs
 *
 * SpiderMonkey, GJS's engine, keeps a "profiling stack" for the Gecko
 * profiler when one is set on its context: an array of plain entries, one
 * per JavaScript function entered from native code or from the
 * interpreter, each carrying the function's name and where it is defined
 * as a C string ("jsSpinFor (app.js:8:19)"). It is built to be read by a
 * sampler while the thread runs: entries below the stack pointer are
 * complete, strings stay valid while their function is on the stack.
 *
 * When the process runs GJS, lagwatch gives the JavaScript context its own
 * profiling stack (js::SetContextProfilingStack, exported by libmozjs) and
 * turns it on, on the JavaScript thread, at attach. No signal, no timer, no
 * JavaScript runs: the engine keeps the stack up to date as it enters and
 * leaves functions, and drops its compiled code once to compile it again
 * with that bookkeeping (a cost measured in docs/jit.md).
 *
 * Right after a capture the watcher reads that stack through the kernel
 * (lw_modules_read_memory: an array the engine reallocated meanwhile fails
 * the read instead of faulting), checks that it did not change during the
 * read, and merges its JavaScript functions into the native stack as tags
 * of lw-lang-frames.h with language LW_LANG_JS. Where native code entered
 * the engine, the profiling stack has a marker holding the native stack
 * pointer there: the JavaScript frames after it go in front of the native
 * frame whose stack holds that address (the engine's entry, js::RunScript),
 * so a JavaScript callback run from C run from JavaScript reads in order.
 *
 * Limits, by the engine's design: a function the JIT compiler called from
 * another compiled function has no entry (its innermost caller entered
 * from native code or from the interpreter stands for it); the line is the
 * function's first line, not the line being run.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* The value of LwFrame.lang for a JavaScript frame. */
#define LW_LANG_JS "javascript"

/* The thread iterating @context (the attaching thread), normal context;
 * never the watcher (it calls dlsym(), which takes the loader's lock, and
 * SpiderMonkey, which is single-threaded). When @enable and the calling
 * thread is the one GJS runs JavaScript on (the process's main thread,
 * where GJS makes its context), finds GJS and SpiderMonkey 102 through
 * their exported symbols and sets and enables the profiling stack, once
 * per process. When GJS has not made its context yet, returns a source
 * attached to @context that tries again at each iteration until it is
 * there (at most 10000 iterations); else NULL. */
GSource *lw_gjs_start (GMainContext *context,
                       gboolean      enable);

/* Any thread. Removes the source of lw_gjs_start(), if any. The profiling
 * stack stays on: it belongs to the JavaScript thread, which alone could
 * turn it off. */
void     lw_gjs_stop  (GSource *source);

/* Watcher thread, right after a capture of thread @tid, while it is still
 * stuck. Adds the JavaScript functions @tid is running to @ips (@n_ips
 * native frames, room for @max_ips), each in front of the native frame
 * that entered the engine for it, found by its stack address in @sps (the
 * frames' stack pointers, lw_unwinder_stack_pointers()); in front of the
 * innermost engine frame where that is not known. Returns the new count;
 * sets *@truncated when outer frames had to be dropped for room. Leaves
 * @ips unchanged when @tid runs no JavaScript lagwatch can read, or the
 * stack changed during the read. */
guint    lw_gjs_merge (pid_t            tid,
                       uintptr_t       *ips,
                       const uintptr_t *sps,
                       guint            n_ips,
                       guint            max_ips,
                       gboolean        *truncated);

/* Any thread, normal context. TRUE when @ip is a JavaScript frame made by
 * lw_gjs_merge(). */
gboolean lw_gjs_is_frame (uintptr_t ip);

/* Watcher thread. Parses SpiderMonkey's description of a function,
 * "name (file:line:column)", "file:line:column" (an anonymous function:
 * @name "(anonymous)") or "file" (a script's top level: @name
 * "(top level)", @line 0), into new strings @name and @file, and @line.
 * FALSE when @text is none of these. */
gboolean lw_gjs_parse_label (const char *text,
                             char      **name,
                             char      **file,
                             guint      *line);

G_END_DECLS
