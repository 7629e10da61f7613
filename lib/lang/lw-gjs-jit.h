/* lw-gjs-jit.h: names of the JavaScript functions SpiderMonkey runs as
 * compiled code (its baseline interpreter, Baseline and Ion)
 *
 * The profiling stack (lw-gjs.h) has an entry for each function the
 * engine's C++ interpreter runs, none for code its JIT compiled: a
 * function called a few times runs as compiled code, and a stack stuck in
 * it names only its callers entered from C or from the interpreter. The
 * Gecko profiler names those frames with the engine's sampler interface,
 * JS::ProfilingFrameIterator (js/ProfilingFrameIterator.h, JS_PUBLIC_API,
 * exported by libmozjs): given the registers of the thread while it is
 * stopped, it walks the JIT's frames (kept findable by the profiler's
 * instrumentation of compiled code, on since lagwatch turns the profiling
 * stack on) and gives each one's description, "name (file:line:col)",
 * from the engine's table of compiled code (the JitcodeGlobalTable).
 *
 * That table and the frames change while the thread runs (code compiled,
 * discarded by a collection): they are read only while the thread is
 * stopped, in lagwatch's signal handler on the JavaScript thread itself
 * (lw_core_set_sample_hook()), right after the stack copy. The engine
 * marks its own changes to the table by suppressing sampling, and the
 * iterator then yields nothing. The descriptions are copied there, through
 * the kernel, into the snapshot; the watcher parses them and merges them
 * into the stack by their stack addresses (lw_gjs_merge()).
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

#include "lw-snapshot.h"

G_BEGIN_DECLS

/* What JS::ProfilingFrameIterator::FrameKind says a frame is: the
 * baseline interpreter's, Baseline's or Ion's (wasm frames are not kept). */
#define LW_JS_JIT_KINDS 3

/* One compiled frame taken by the handler. */
typedef struct
{
  uintptr_t   stack_address;  /* the frame's address on the native stack */
  guint       kind;           /* FrameKind, < LW_JS_JIT_KINDS */
  const char *label;          /* "name (file:line:col)", in the snapshot */
  gsize       label_len;
} LwJsJitFrame;

/* Any thread, normal context. Decodes the frames the handler wrote into
 * @lang (@len bytes of LwSnapshot.lang), innermost first, into @frames
 * (room for @max); their count. Stops at the first record that does not
 * fit @lang. */
guint    lw_gjs_jit_decode (const guint8 *lang,
                            gsize         len,
                            LwJsJitFrame *frames,
                            guint         max);

/* Any thread, async-signal-safe. Writes one frame's record into @lang
 * (@room bytes) at *@at and advances it; FALSE, writing nothing, when it
 * does not fit (labels longer than 1023 bytes never do). */
gboolean lw_gjs_jit_put    (guint8       *lang,
                            gsize         room,
                            gsize        *at,
                            uintptr_t     stack_address,
                            guint         kind,
                            const char   *label,
                            gsize         label_len);

/* The JavaScript thread (GJS's context's), normal context, with the
 * profiling stack just turned on for @cx, the JSContext of GJS's context
 * @gjs_context (a GObject), which turns the Gecko profiler on:
 * finds JS::ProfilingFrameIterator in the SpiderMonkey of version node
 * @node (one of those read: 102, 128, 140), runs it once here as a probe
 * of its layout, and then has the signal handler run it on the calling
 * thread (@tid), until @gjs_context is disposed (its JSContext goes with
 * it). FALSE, with a new *@why for the user, when the release is
 * not one whose iterator lagwatch knows or the probe finds another layout:
 * compiled frames are then not named (the profiling stack's still are). */
gboolean lw_gjs_jit_start  (const char   *node,
                            void         *gjs_context,
                            void         *cx,
                            pid_t         tid,
                            char        **why);

G_END_DECLS
