/* lw-gjs.c: GJS's JavaScript frames from SpiderMonkey's profiling stack
 * (lw-gjs.h says what and why) */
#include "lw-gjs.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lw-config.h"
#include "lw-lang-frames.h"
#include "lw-modules.h"
#include "lw-say.h"

/* SpiderMonkey 102's js::ProfilingStackFrame (js/ProfilingStack.h): six
 * atomics, 40 bytes. Another version is another layout: the symbols are
 * looked up under the version node "mozjs_102" so that no other engine is
 * read with this one. */
typedef struct
{
  uintptr_t label;
  uintptr_t dynamic_string;
  uintptr_t sp_or_script;
  uint64_t  realm_id;
  int32_t   pc_offset;
  uint32_t  flags_and_category;
} LwJsFrame;

G_STATIC_ASSERT (sizeof (LwJsFrame) == 40);

/* ProfilingStackFrame::Flags::IS_JS_FRAME: a JavaScript function (the
 * others are the engine's labels and stack-pointer markers). */
#define LW_JS_FRAME_IS_JS (1u << 2)
/* ...::IS_SP_MARKER_FRAME: where native code entered the engine; its
 * stack address is the native stack pointer there. */
#define LW_JS_FRAME_IS_SP_MARKER (1u << 1)

/* SpiderMonkey 102's ProfilingStack: {uint32_t capacity; Atomic<Frame *>
 * frames; Atomic<uint32_t> stackPointer}. The engine grows the array with
 * ensureCapacitySlow() (a new array, the old one freed), hence the reads
 * through the kernel. Never freed: the context keeps a pointer to it. */
typedef struct
{
  uint32_t           capacity;
  _Atomic uintptr_t  frames;
  _Atomic uint32_t   stack_pointer;
} LwJsStack;

/* Bounds: the innermost frames read per sample, and a label's length. */
#define LW_GJS_MAX_FRAMES 64
#define LW_GJS_MAX_LABEL  512

typedef void *(*LwGjsGetCurrent) (void);
typedef void *(*LwGjsGetNative) (void *gjs_context);
typedef void *(*LwGjsGetProfiler) (void *gjs_context);
typedef void (*LwJsSetStack) (void *cx, void *stack);
typedef void (*LwJsEnableStack) (void *cx, bool enabled);  /* C++ bool */

typedef enum
{
  LW_GJS_NOTHING,  /* no GJS, or nothing to be done in it: not tried again */
  LW_GJS_LATER,    /* GJS is here, its context not yet made: try again */
  LW_GJS_ON,
} LwGjsState;

/* A retry is a call and a load per loop iteration: bounded, for a program
 * that links GJS and never makes a context. */
#define LW_GJS_MAX_RETRIES 10000

static GMutex lw_gjs_lock;
static LwGjsState lw_gjs_state = LW_GJS_LATER; /* HOLDS: lw_gjs_lock */
static gboolean lw_gjs_looked;                 /* HOLDS: lw_gjs_lock; the symbols below were */
static LwGjsGetCurrent lw_gjs_get_current;     /* HOLDS: lw_gjs_lock */
static LwGjsGetNative lw_gjs_get_native;
static LwGjsGetProfiler lw_gjs_get_profiler;
static LwJsSetStack lw_gjs_set_stack;
static LwJsEnableStack lw_gjs_enable_stack;
static LwJsStack *lw_gjs_stack;    /* set once before lw_gjs_ready */
static pid_t lw_gjs_tid;           /* the JavaScript thread; set once before lw_gjs_ready */
static uintptr_t lw_gjs_engine_lo; /* libmozjs's mapped range; set once before lw_gjs_ready */
static uintptr_t lw_gjs_engine_hi;
static atomic_int lw_gjs_ready;

/* Any thread but the watcher, normal context, lw_gjs_lock held: dlsym()
 * takes the loader's lock. Finds GJS and SpiderMonkey 102, once. */
static LwGjsState
lw_gjs_look (void)
{
  lw_gjs_looked = TRUE;
  lw_gjs_get_current = (LwGjsGetCurrent) dlsym (RTLD_DEFAULT, "gjs_context_get_current");
  lw_gjs_get_native = (LwGjsGetNative) dlsym (RTLD_DEFAULT, "gjs_context_get_native_context");
  lw_gjs_get_profiler = (LwGjsGetProfiler) dlsym (RTLD_DEFAULT, "gjs_context_get_profiler");
  if (lw_gjs_get_current == NULL || lw_gjs_get_native == NULL)
    return LW_GJS_NOTHING;  /* not a GJS program */
  lw_gjs_set_stack = (LwJsSetStack) dlvsym (RTLD_DEFAULT, "_ZN2js24SetContextProfilingStackEP9JSContextP14ProfilingStack",
                                            "mozjs_102");
  lw_gjs_enable_stack = (LwJsEnableStack) dlvsym (RTLD_DEFAULT, "_ZN2js27EnableContextProfilingStackEP9JSContextb",
                                                  "mozjs_102");
  if (lw_gjs_set_stack == NULL || lw_gjs_enable_stack == NULL)
    {
      lw_say ("this GJS runs on a SpiderMonkey other than 102: its JavaScript functions are not "
              "named in reports");
      return LW_GJS_NOTHING;
    }
  return LW_GJS_LATER;
}

/* The thread that runs JavaScript, normal context, lw_gjs_lock held. */
static LwGjsState
lw_gjs_try (void)
{
  LwUnwindTable engine;
  void *gjs_context, *cx;

  if (!lw_gjs_looked && lw_gjs_look () == LW_GJS_NOTHING)
    return LW_GJS_NOTHING;
  gjs_context = lw_gjs_get_current ();
  if (gjs_context == NULL || (cx = lw_gjs_get_native (gjs_context)) == NULL)
    return LW_GJS_LATER;
  /* GJS's own profiler (GJS_ENABLE_PROFILER, --profile) owns the
   * context's profiling stack when it exists. */
  if (lw_gjs_get_profiler != NULL && lw_gjs_get_profiler (gjs_context) != NULL)
    {
      lw_say ("GJS's profiler owns the JavaScript profiling stack: JavaScript functions are not "
              "named in reports");
      return LW_GJS_NOTHING;
    }
  if (!lw_modules_find_unwind_table ((uintptr_t) lw_gjs_set_stack, &engine))
    return LW_GJS_NOTHING;
  lw_gjs_stack = g_new0 (LwJsStack, 1);
  lw_gjs_tid = getpid ();
  lw_gjs_engine_lo = engine.start;
  lw_gjs_engine_hi = engine.end;
  lw_gjs_set_stack (cx, lw_gjs_stack);
  lw_gjs_enable_stack (cx, true);
  atomic_store (&lw_gjs_ready, 1);
  return LW_GJS_ON;
}

/* The thread iterating the watched context. */
static LwGjsState
lw_gjs_step (void)
{
  LwGjsState state;

  /* GJS makes its context on the thread that runs JavaScript: the main
   * thread for gjs and GNOME Shell. Another thread's loop is not GJS's. */
  if (syscall (SYS_gettid) != getpid ())
    return LW_GJS_NOTHING;
  g_mutex_lock (&lw_gjs_lock);
  if (lw_gjs_state == LW_GJS_LATER)
    lw_gjs_state = lw_gjs_try ();
  state = lw_gjs_state;
  g_mutex_unlock (&lw_gjs_lock);
  return state;
}

typedef struct
{
  GSource source;
  guint   tries;
} LwGjsRetry;

/* The thread iterating the watched context. Never wakes the loop: ready
 * only to remove itself. */
static gboolean
lw_gjs_retry_prepare (GSource *source, gint *timeout)
{
  LwGjsRetry *retry = (LwGjsRetry *) source;

  *timeout = -1;
  return lw_gjs_step () != LW_GJS_LATER || ++retry->tries >= LW_GJS_MAX_RETRIES;
}

/* The thread iterating the watched context. */
static gboolean
lw_gjs_retry_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  return G_SOURCE_REMOVE;
}

static GSourceFuncs lw_gjs_retry_funcs = {
  .prepare = lw_gjs_retry_prepare,
  .dispatch = lw_gjs_retry_dispatch,
};

GSource *
lw_gjs_start (GMainContext *context, gboolean enable)
{
  GSource *source;

  if (!enable || lw_gjs_step () != LW_GJS_LATER)
    return NULL;
  /* GJS iterates the default context once before it makes its JavaScript
   * context, and the launcher attaches at that first iteration: a source
   * of the context tries again at each iteration until the context is
   * there. */
  source = g_source_new (&lw_gjs_retry_funcs, sizeof (LwGjsRetry));
  g_source_set_name (source, "lagwatch: JavaScript frames");
  g_source_set_priority (source, G_PRIORITY_HIGH);
  g_source_attach (source, context);
  return source;
}

void
lw_gjs_stop (GSource *source)
{
  if (source == NULL)
    return;
  g_source_destroy (source);
  g_source_unref (source);
}

/* Splits "file:line:column" into @file and @line; FALSE when @where has
 * no such ending. */
static gboolean
lw_gjs_parse_where (const char *where, char **file, guint *line)
{
  g_autofree char *copy = g_strdup (where);
  char *colon = strrchr (copy, ':'), *end;
  guint64 number;

  if (colon == NULL)
    return FALSE;
  *colon = '\0';
  colon = strrchr (copy, ':');
  if (colon == NULL || colon == copy)
    return FALSE;
  number = g_ascii_strtoull (colon + 1, &end, 10);
  if (end == colon + 1 || *end != '\0' || number > G_MAXUINT)
    return FALSE;
  *colon = '\0';
  *line = (guint) number;
  *file = g_strdup (copy);
  return TRUE;
}

gboolean
lw_gjs_parse_label (const char *text, char **name, char **file, guint *line)
{
  const char *open = strrchr (text, '(');
  gsize len = strlen (text);
  gboolean named = open != NULL && open > text + 1 && open[-1] == ' ' && text[len - 1] == ')';

  if (named)
    {
      g_autofree char *where = g_strndup (open + 1, text + len - 1 - (open + 1));

      if (!lw_gjs_parse_where (where, file, line))
        return FALSE;
      *name = g_strndup (text, open - 1 - text);
    }
  else if (lw_gjs_parse_where (text, file, line))
    *name = g_strdup ("(anonymous)");
  else if (len > 0)
    {
      /* A script's top level is described by its file alone. */
      *name = g_strdup ("(top level)");
      *file = g_strdup (text);
      *line = 0;
    }
  else
    return FALSE;
  return TRUE;
}

/* Watcher thread. TRUE when @ip is SpiderMonkey's: in libmozjs, or JIT
 * code (in no module). */
static gboolean
lw_gjs_is_engine (uintptr_t ip)
{
  LwUnwindTable table;

  if (ip >= lw_gjs_engine_lo && ip < lw_gjs_engine_hi)
    return TRUE;
  return !lw_lang_frame_is (ip) && !lw_modules_find_unwind_table (ip, &table);
}

/* One frame read from the profiling stack: a JavaScript function's tag,
 * or (tag 0) the native stack address where native code entered the
 * engine, which starts the frames entered from there. */
typedef struct
{
  uintptr_t tag;
  uintptr_t entry_sp;
} LwJsRead;

/* Watcher thread. The profiling stack's entries that matter, outermost
 * first, into @reads; their count, 0 when there is none or they changed
 * during the read. */
static guint
lw_gjs_read_frames (LwJsRead *reads)
{
  LwJsFrame frames[LW_GJS_MAX_FRAMES], again[LW_GJS_MAX_FRAMES];
  char label[LW_GJS_MAX_LABEL];
  uintptr_t array = atomic_load (&lw_gjs_stack->frames), start;
  uint32_t depth = atomic_load (&lw_gjs_stack->stack_pointer);
  guint n = MIN (depth, LW_GJS_MAX_FRAMES), out = 0, used = 0;

  start = array + (depth - n) * sizeof (LwJsFrame);
  if (n == 0 || array == 0 || !lw_modules_read_memory (start, frames, n * sizeof (LwJsFrame)))
    return 0;
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *name = NULL, *file = NULL;
      uintptr_t text = frames[i].dynamic_string;
      gboolean whole;
      guint line;

      if (frames[i].flags_and_category & LW_JS_FRAME_IS_SP_MARKER)
        {
          reads[out++] = (LwJsRead) { 0, frames[i].sp_or_script };
          used = i + 1;
          continue;
        }
      /* A JavaScript entry without a description is the engine's own
       * (js::RunScript): nothing to name. */
      if (!(frames[i].flags_and_category & LW_JS_FRAME_IS_JS) || text == 0)
        continue;
      /* A frame that cannot be named ends the read: a stack may lack its
       * JavaScript frames, it never shows a wrong one. */
      if (!lw_modules_read_string (text, label, sizeof label, &whole) || !whole
          || !lw_gjs_parse_label (label, &name, &file, &line))
        return 0;
      reads[out].tag = lw_lang_frame_intern (LW_LANG_JS, name, file, line);
      reads[out].entry_sp = 0;
      if (reads[out].tag == 0)
        return 0;
      out++;
      used = i + 1;
    }
  /* The running thread pushes and pops entries above these (GJS labels
   * each call into a C function) while they are read: the entries used,
   * the same in the same array after their strings were read, were the
   * stack's all along. */
  if (used == 0 || atomic_load (&lw_gjs_stack->frames) != array
      || atomic_load (&lw_gjs_stack->stack_pointer) < depth - n + used
      || !lw_modules_read_memory (start, again, used * sizeof (LwJsFrame))
      || memcmp (frames, again, used * sizeof (LwJsFrame)) != 0)
    return 0;
  return out;
}

/* Watcher thread. The index of the native frame whose stack holds @addr
 * (frame k owns [sps[k], sps[k + 1])), or -1. */
static int
lw_gjs_frame_of (const uintptr_t *sps, guint n_ips, uintptr_t addr)
{
  for (guint k = 0; k + 1 < n_ips; k++)
    if (sps[k] != 0 && sps[k + 1] != 0 && sps[k] <= addr && addr < sps[k + 1])
      return (int) k;
  return -1;
}

guint
lw_gjs_merge (pid_t tid, uintptr_t *ips, const uintptr_t *sps, guint n_ips, guint max_ips,
              gboolean *truncated)
{
  LwJsRead reads[LW_GJS_MAX_FRAMES];
  uintptr_t out[LW_GJS_MAX_FRAMES + LW_MAX_FRAMES_LIMIT];
  int at[LW_GJS_MAX_FRAMES];  /* per read: the native frame it goes in front of */
  guint n_reads, n_out = 0, innermost = 0;
  int entry = -1;

  if (!atomic_load (&lw_gjs_ready) || tid != lw_gjs_tid || n_ips == 0 || n_ips > LW_MAX_FRAMES_LIMIT)
    return n_ips;
  /* The innermost engine frame: where frames of no known entry go. */
  while (innermost < n_ips && !lw_gjs_is_engine (ips[innermost]))
    innermost++;
  if (innermost == n_ips || (n_reads = lw_gjs_read_frames (reads)) == 0)
    return n_ips;
  /* Each JavaScript frame goes in front of the native frame that entered
   * the engine for it (the frame whose stack holds the entry's marker):
   * inside the native code that called it, outside the engine running it. */
  for (guint i = 0; i < n_reads; i++)
    {
      if (reads[i].tag == 0)
        entry = sps != NULL ? lw_gjs_frame_of (sps, n_ips, reads[i].entry_sp) : -1;
      at[i] = entry >= 0 ? entry : (int) innermost;
    }

  /* Native frames innermost first; before frame k, the JavaScript frames
   * that go there, innermost (last read) first. */
  for (guint k = 0; k <= n_ips; k++)
    {
      for (guint i = n_reads; i-- > 0;)
        if (reads[i].tag != 0 && at[i] == (int) k && n_out < G_N_ELEMENTS (out))
          out[n_out++] = reads[i].tag;
      if (k < n_ips)
        out[n_out++] = ips[k];
    }
  if (n_out > max_ips)
    *truncated = TRUE;
  n_out = MIN (n_out, max_ips);
  memcpy (ips, out, n_out * sizeof *ips);
  return n_out;
}

gboolean
lw_gjs_is_frame (uintptr_t ip)
{
  return g_strcmp0 (lw_lang_frame_language (ip), LW_LANG_JS) == 0;
}
