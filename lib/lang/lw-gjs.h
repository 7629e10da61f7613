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
 * turns it on, on the JavaScript thread, at attach. The layout of that
 * stack is SpiderMonkey's own and may change with each release: lagwatch
 * reads only releases it knows, found by the version node of the engine's
 * symbols (mozjs_102, mozjs_115, mozjs_128, mozjs_140), and only after a
 * probe has checked that layout against the library itself (two frames
 * pushed and popped with the engine's exported pushLabelFrame() and pop()
 * on a stack of lagwatch's own, then found where the layout says). No signal, no timer, no
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
 * Limits, by the engine's design: a function running as compiled code
 * (the baseline interpreter, Baseline, Ion) has no entry; the signal
 * handler names those frames (lw-gjs-jit.h) and lw_gjs_merge() puts them
 * in. The line is the function's first line, not the line being run.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* The value of LwFrame.lang for a JavaScript frame. */
#define LW_LANG_JS "javascript"

/* The thread iterating @context (the attaching thread), normal context;
 * never the watcher (it calls dlsym(), which takes the loader's lock, and
 * SpiderMonkey, which is single-threaded). When @enable and the calling
 * thread is the one GJS runs JavaScript on (the process's main thread,
 * where GJS makes its context), finds GJS and a SpiderMonkey release of
 * lw_gjs_find_engine() through their exported symbols and sets and
 * enables the profiling stack, once
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
 * native frames, room for @max_ips): those the handler took running as
 * compiled code (@jit, @jit_len bytes: the snapshot's lang[],
 * lw-gjs-jit.h), each in front of the generated code running it, and
 * those of the profiling stack, each in front of the native frame that
 * entered the engine for it, found by its stack address in @sps (the
 * frames' stack pointers, lw_unwinder_stack_pointers()); in front of the
 * innermost engine frame where that is not known. Returns the new count;
 * sets *@truncated when outer frames had to be dropped for room. Leaves
 * @ips unchanged when @tid runs no JavaScript lagwatch can read; the
 * profiling stack's frames are left out when it changed during the read. */
guint    lw_gjs_merge (pid_t            tid,
                       const guint8    *jit,
                       gsize            jit_len,
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

/* Where lagwatch reads SpiderMonkey's js::ProfilingStack and
 * js::ProfilingStackFrame (js/ProfilingStack.h), in bytes. */
typedef struct
{
  guint frame_size;      /* sizeof (js::ProfilingStackFrame) */
  guint label;           /* a frame's label_ (checked by the probe only) */
  guint dynamic_string;  /* a frame's dynamicString_: the description */
  guint sp_or_script;    /* spOrScript: a marker's native stack pointer */
  guint flags;           /* flagsAndCategoryPair_: flags in the low 16 bits */
  guint capacity;        /* the stack's capacity (uint32_t) */
  guint frames;          /* the stack's frames (a pointer) */
  guint stack_pointer;   /* the stack's stackPointer (uint32_t) */
} LwJsLayout;

/* The largest frame and stack a layout may describe. */
#define LW_JS_MAX_FRAME_SIZE 64
#define LW_JS_STACK_SIZE     64

/* Any thread. The layout lagwatch knows for SpiderMonkey's symbol version
 * node @node ("mozjs_128"), or NULL. */
const LwJsLayout *lw_gjs_layout_for (const char *node);

/* SpiderMonkey's exported ProfilingStack::pushLabelFrame(), pop() and
 * destructor, called as C with the stack first (the x86-64 C++ ABI). */
typedef void (*LwJsPushLabel) (void *stack, const char *label, const char *dynamic_string,
                               void *sp, uint32_t category_pair, uint32_t flags);
typedef void (*LwJsPop) (void *stack);
typedef void (*LwJsDestroy) (void *stack);

/* Any thread but the watcher, normal context. Checks @layout against the
 * engine's own code: on a zeroed stack of lagwatch's, two label frames
 * pushed with @push must be found where @layout says (each field, the
 * frame size through the first capacity, which SpiderMonkey sets to 4096
 * bytes' worth of frames, and the stack pointer), and gone after two
 * @pop; @destroy then frees the frames. FALSE, with a new *@why saying
 * what differed, when anything does (the probe's memory is then left as
 * it is: an engine laid out otherwise is not called again). */
gboolean lw_gjs_check_layout (const LwJsLayout *layout,
                              LwJsPushLabel     push,
                              LwJsPop           pop,
                              LwJsDestroy       destroy,
                              char            **why);

typedef void (*LwJsSetStack) (void *cx, void *stack);
typedef void (*LwJsEnableStack) (void *cx, bool enabled);  /* C++ bool */

/* A SpiderMonkey lagwatch can read. */
typedef struct
{
  const char       *node;  /* the symbols' version node, "mozjs_128" */
  const LwJsLayout *layout;
  LwJsSetStack      set_stack;
  LwJsEnableStack   enable_stack;
} LwJsEngine;

/* Any thread but the watcher, normal context (dlvsym() takes the loader's
 * lock). Finds the SpiderMonkey loaded in the process under each version
 * node lagwatch knows, and checks its layout (lw_gjs_check_layout()).
 * FALSE, with a new *@why for the user, when there is none, when it is a
 * release lagwatch does not know, or when its layout is not the one
 * expected. */
gboolean lw_gjs_find_engine (LwJsEngine *engine,
                             char      **why);

/* What a profiling stack frame is, to lagwatch. */
typedef enum
{
  LW_JS_ENTRY_LABEL,     /* the engine's or GJS's label: not read */
  LW_JS_ENTRY_MARKER,    /* where native code entered the engine: .value is the native stack pointer there */
  LW_JS_ENTRY_FUNCTION,  /* a JavaScript function: .value is its description's address, 0 for the engine's own */
} LwJsEntryKind;

typedef struct
{
  LwJsEntryKind kind;
  uintptr_t     value;
  gboolean      osr;    /* a function that went on in compiled code (its flag JS_OSR) */
} LwJsEntry;

/* Any thread, async-signal-safe. Decodes @n frames copied from a profiling
 * stack laid out as @layout, @raw (@raw_len bytes), into @entries. FALSE
 * when @raw is shorter than @n frames or a frame is not exactly one of a
 * label, a marker or a JavaScript function (SpiderMonkey's kinds are
 * mutually exclusive): such a stack is not read. */
gboolean lw_gjs_decode_frames (const LwJsLayout *layout,
                               const guint8     *raw,
                               gsize             raw_len,
                               guint             n,
                               LwJsEntry        *entries);

/* What a native frame is to the engine. */
typedef enum
{
  LW_JS_NATIVE_OTHER,   /* C outside the engine (GJS, GLib, libffi...) */
  LW_JS_NATIVE_ENGINE,  /* libmozjs */
  LW_JS_NATIVE_JIT,     /* code the engine generated: JavaScript running */
} LwJsNativeKind;

/* Watcher thread (any thread: no memory but the arguments is read). The
 * profiling stack is read after the native stack was captured, while the
 * thread runs on. FALSE when the read cannot be the captured stack's: its
 * innermost entry into the engine (the native frame @entry_frame of
 * @n_ips, -1 when not on the walked stack, whose marker holds
 * @innermost_entry_sp) lies deeper than the captured stack (@sps[0]), or
 * the captured stack runs generated code again past a call out of the
 * engine inward of it (@kinds, an LwJsNativeKind per frame, innermost
 * first): an entry made after it, gone from the read (the function
 * returned meanwhile). */
gboolean lw_gjs_read_fits (const guint8    *kinds,
                           const uintptr_t *sps,
                           guint            n_ips,
                           int              entry_frame,
                           uintptr_t        innermost_entry_sp);

G_END_DECLS
