/* lw-lang-frames.h: frames of interpreted languages inside native stacks
 *
 * An interpreter's frame (a Python function, a JavaScript function) has no
 * address of its own. The watcher reads it from the interpreter's memory
 * while the thread is stuck and puts it in the stack's array of addresses
 * as a tag: an address no user-space code can have (the top 24 bits set),
 * whose low bits index a process-wide, bounded table of {language,
 * function, file, line}. Tags are stable for the life of the process, so
 * the profile, the fingerprints and the summary treat an interpreted frame
 * like any other address; the reporting thread turns the tag back into a
 * frame with its language set.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-symbols.h"

G_BEGIN_DECLS

/* The most distinct {language, function, file, line} entries a process
 * keeps. A frame first seen once the table is full is not shown. */
#define LW_LANG_FRAMES_MAX 8192

/* Watcher thread (any thread, normal context). The tag of {@lang,
 * @function, @file, @line}, entered in the table if new; 0 when the table
 * is full (said once per process). @lang must be a static string. */
uintptr_t lw_lang_frame_intern  (const char *lang,
                                 const char *function,
                                 const char *file,
                                 guint       line);

/* Why a sample that ran interpreted code holds none of its interpreted
 * frames. The watcher reads them after the native stack was copied, while
 * the thread runs on: what it reads must fit the copy, else the sample
 * keeps its native frames and says why. */
typedef enum
{
  LW_LANG_MISSING_NONE,        /* it has them, or it ran no interpreted code */
  LW_LANG_MISSING_MOVED,       /* the frames read did not fit the stack copied: the
                                * thread returned or called in between */
  LW_LANG_MISSING_UNREADABLE,  /* the interpreter's frames or code objects changed or
                                * were freed while being read */
} LwLangMissing;

/* Any thread. "moved", "unreadable", or NULL for LW_LANG_MISSING_NONE. */
const char *lw_lang_missing_name (LwLangMissing why);

/* Any thread, async-signal-safe. TRUE when @ip is a tag, whatever its
 * language. */
gboolean  lw_lang_frame_is      (uintptr_t ip);

/* Any thread, normal context. The language of the tag @ip, or NULL when @ip
 * is not a tag of this table. */
const char *lw_lang_frame_language (uintptr_t ip);

/* Any thread, normal context. When @ip is a tag, fills @frame (symbol: the
 * function, file and module: the source file, line, lang) and returns
 * TRUE; otherwise FALSE, @frame untouched. */
gboolean  lw_lang_frame_resolve (uintptr_t ip,
                                 LwFrame  *frame);

G_END_DECLS
