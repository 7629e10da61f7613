/* lw-gjs.c: GJS's JavaScript frames from SpiderMonkey's profiling stack
 * (lw-gjs.h says what and why) */
#include "lw-gjs.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lw-gjs-jit.h"
#include "lw-lang-frames.h"
#include "lw-load.h"
#include "lw-unwind.h"
#include "lw-modules.h"
#include "lw-say.h"

/* js::ProfilingStackFrame and js::ProfilingStack, as SpiderMonkey 102,
 * 115, 128 and 140 lay them out (js/ProfilingStack.h, the same in each):
 * a frame is six atomics, 40 bytes {label_, dynamicString_, spOrScript,
 * realmID_, pcOffsetIfJS_, flagsAndCategoryPair_}; the stack is {uint32_t
 * capacity; Atomic<Frame *> frames; Atomic<uint32_t> stackPointer}. The
 * engine grows the array with ensureCapacitySlow() (a new array, the old
 * one freed), hence the reads through the kernel. */
static const LwJsLayout lw_js_layout_40 = {
  .frame_size = 40,
  .label = 0,
  .dynamic_string = 8,
  .sp_or_script = 16,
  .flags = 36,
  .capacity = 0,
  .frames = 8,
  .stack_pointer = 16,
};

/* The releases lagwatch reads, by the version node of their symbols
 * (SpiderMonkey's build names it after the library, mozjs-NNN). A release
 * not listed is another layout, or may be: it is not read. */
static const struct
{
  const char       *node;
  const LwJsLayout *layout;
} lw_js_releases[] = {
  { "mozjs_102", &lw_js_layout_40 },
  { "mozjs_115", &lw_js_layout_40 },
  { "mozjs_128", &lw_js_layout_40 },
  { "mozjs_140", &lw_js_layout_40 },
};

/* ProfilingStackFrame::Flags: the kind of a frame, one bit of the three
 * (label, stack-pointer marker, JavaScript function); the rest are
 * attributes lagwatch does not need. */
#define LW_JS_FRAME_IS_LABEL     (1u << 0)
#define LW_JS_FRAME_IS_SP_MARKER (1u << 1)
#define LW_JS_FRAME_IS_JS        (1u << 2)
#define LW_JS_FRAME_KIND_MASK    (LW_JS_FRAME_IS_LABEL | LW_JS_FRAME_IS_SP_MARKER | LW_JS_FRAME_IS_JS)
/* A JavaScript function the interpreter ran that went on in compiled code
 * (on-stack replacement): a compiled frame stands for it. */
#define LW_JS_FRAME_JS_OSR       (1u << 3)
/* The category pair sits above the 16 bits of flags. */
#define LW_JS_CATEGORY_SHIFT 16

/* Bounds: the innermost frames read per sample, and a label's length. */
#define LW_GJS_MAX_FRAMES 64
#define LW_GJS_MAX_LABEL  512

typedef void *(*LwGjsGetCurrent) (void);
typedef void *(*LwGjsGetNative) (void *gjs_context);
typedef void *(*LwGjsGetProfiler) (void *gjs_context);

/* js::SetContextProfilingStack(JSContext *, ProfilingStack *),
 * js::EnableContextProfilingStack(JSContext *, bool),
 * ProfilingStack::pushLabelFrame(const char *, const char *, void *,
 * JS::ProfilingCategoryPair, uint32_t), ProfilingStack::pop() and
 * ProfilingStack::~ProfilingStack(): exported by every release read. */
#define LW_JS_SET_STACK   "_ZN2js24SetContextProfilingStackEP9JSContextP14ProfilingStack"
#define LW_JS_ENABLE      "_ZN2js27EnableContextProfilingStackEP9JSContextb"
#define LW_JS_PUSH_LABEL  "_ZN14ProfilingStack14pushLabelFrameEPKcS1_PvN2JS21ProfilingCategoryPairEj"
#define LW_JS_POP         "_ZN14ProfilingStack3popEv"
#define LW_JS_DESTROY     "_ZN14ProfilingStackD1Ev"

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
static LwJsEngine lw_gjs_engine;
static guint8 *lw_gjs_stack;       /* LW_JS_STACK_SIZE bytes; never freed: the context keeps a pointer to it; set once before lw_gjs_ready */
static const LwJsLayout *lw_gjs_layout; /* set once before lw_gjs_ready */
static pid_t lw_gjs_tid;           /* the JavaScript thread; set once before lw_gjs_ready */
static uintptr_t lw_gjs_engine_lo; /* libmozjs's mapped range; set once before lw_gjs_ready */
static uintptr_t lw_gjs_engine_hi;
static atomic_int lw_gjs_ready;

const LwJsLayout *
lw_gjs_layout_for (const char *node)
{
  for (guint i = 0; i < G_N_ELEMENTS (lw_js_releases); i++)
    if (g_strcmp0 (lw_js_releases[i].node, node) == 0)
      return lw_js_releases[i].layout;
  return NULL;
}

/* Any thread. TRUE when every field of @layout fits its frame or stack. */
static gboolean
lw_js_layout_fits (const LwJsLayout *layout)
{
  guint size = layout->frame_size;

  return size >= 8 && size <= LW_JS_MAX_FRAME_SIZE && size % 8 == 0
         && layout->label + 8 <= size && layout->dynamic_string + 8 <= size
         && layout->sp_or_script + 8 <= size && layout->flags + 4 <= size
         && layout->capacity + 4 <= LW_JS_STACK_SIZE && layout->frames + 8 <= LW_JS_STACK_SIZE
         && layout->stack_pointer + 4 <= LW_JS_STACK_SIZE
         && layout->frames % 8 == 0 && layout->capacity % 4 == 0 && layout->stack_pointer % 4 == 0;
}

/* Any thread but the watcher, normal context. Checks that the frame at
 * @frame holds what pushLabelFrame (@label, @dynamic_string, @sp,
 * @category, no flags) wrote, where @layout says; else says what not. */
static gboolean
lw_js_probe_frame (const LwJsLayout *layout, const guint8 *frame, const char *label,
                   const char *dynamic_string, uintptr_t sp, uint32_t category, GString *why)
{
  uint32_t flags = (category << LW_JS_CATEGORY_SHIFT) | LW_JS_FRAME_IS_LABEL;

  if (lw_load_uptr (frame, layout->label) != (uintptr_t) label)
    g_string_append_printf (why, "the label is not at %u", layout->label);
  else if (lw_load_uptr (frame, layout->dynamic_string) != (uintptr_t) dynamic_string)
    g_string_append_printf (why, "the description is not at %u", layout->dynamic_string);
  else if (lw_load_uptr (frame, layout->sp_or_script) != sp)
    g_string_append_printf (why, "the stack address is not at %u", layout->sp_or_script);
  else if (lw_load_u32 (frame, layout->flags) != flags)
    g_string_append_printf (why, "the flags at %u are 0x%x, not 0x%x", layout->flags,
                            lw_load_u32 (frame, layout->flags), flags);
  else
    return TRUE;
  return FALSE;
}

gboolean
lw_gjs_check_layout (const LwJsLayout *layout, LwJsPushLabel push, LwJsPop pop, LwJsDestroy destroy,
                     char **why)
{
  static const char label[] = "lagwatch", first[] = "lagwatch: probe 1", second[] = "lagwatch: probe 2";
  /* Leaked when the check fails: memory the engine may have written into
   * in its own way is not handed back to it. */
  guint8 *stack = g_malloc0 (LW_JS_STACK_SIZE);
  uintptr_t frames;
  GString *problem = g_string_new (NULL);

  *why = NULL;
  if (!lw_js_layout_fits (layout))
    g_string_append (problem, "its fields do not fit their frame");
  else
    {
      push (stack, label, first, (void *) stack, 3, 0);
      push (stack, label, second, (void *) (stack + 8), 5, 0);
      frames = lw_load_uptr (stack, layout->frames);
      /* The first push grows the empty stack to 4096 bytes' worth of
       * frames (ensureCapacitySlow()): the frame size, checked. */
      if (lw_load_u32 (stack, layout->stack_pointer) != 2)
        g_string_append_printf (problem, "the stack pointer at %u is %u after two pushes, not 2",
                                layout->stack_pointer, lw_load_u32 (stack, layout->stack_pointer));
      else if (lw_load_u32 (stack, layout->capacity) != 4096 / layout->frame_size)
        g_string_append_printf (problem, "the capacity at %u is %u, not %u frames of %u bytes",
                                layout->capacity, lw_load_u32 (stack, layout->capacity),
                                4096 / layout->frame_size, layout->frame_size);
      else if (frames == 0 || frames % 8 != 0)
        g_string_append_printf (problem, "no frames at %u", layout->frames);
      else if (lw_js_probe_frame (layout, (const guint8 *) frames, label, first, (uintptr_t) stack, 3,
                                  problem)
               && lw_js_probe_frame (layout, (const guint8 *) frames + layout->frame_size, label, second,
                                     (uintptr_t) (stack + 8), 5, problem))
        {
          pop (stack);
          pop (stack);
          if (lw_load_u32 (stack, layout->stack_pointer) != 0)
            g_string_append (problem, "two pops leave frames on the stack");
        }
    }
  if (problem->len > 0)
    {
      *why = g_string_free (problem, FALSE);
      return FALSE;
    }
  g_string_free (problem, TRUE);
  destroy (stack);
  g_free (stack);
  return TRUE;
}

/* Any thread but the watcher, normal context. The file name of the
 * library holding @addr, for messages. */
static char *
lw_gjs_library_name (void *addr)
{
  LwModule *module = lw_modules_ref_module ((uintptr_t) addr);
  char *name = module != NULL ? g_path_get_basename (lw_module_get_path (module)) : g_strdup ("libmozjs");

  if (module != NULL)
    lw_module_unref (module);
  return name;
}

gboolean
lw_gjs_find_engine (LwJsEngine *engine, char **why)
{
  void *any;

  *why = NULL;
  for (guint i = 0; i < G_N_ELEMENTS (lw_js_releases); i++)
    {
      const char *node = lw_js_releases[i].node;
      LwJsSetStack set_stack = (LwJsSetStack) dlvsym (RTLD_DEFAULT, LW_JS_SET_STACK, node);
      LwJsEnableStack enable_stack = (LwJsEnableStack) dlvsym (RTLD_DEFAULT, LW_JS_ENABLE, node);
      LwJsPushLabel push = (LwJsPushLabel) dlvsym (RTLD_DEFAULT, LW_JS_PUSH_LABEL, node);
      LwJsPop pop = (LwJsPop) dlvsym (RTLD_DEFAULT, LW_JS_POP, node);
      LwJsDestroy destroy = (LwJsDestroy) dlvsym (RTLD_DEFAULT, LW_JS_DESTROY, node);
      g_autofree char *problem = NULL;

      if (set_stack == NULL)
        continue;
      if (enable_stack == NULL || push == NULL || pop == NULL || destroy == NULL)
        {
          *why = g_strdup_printf ("this GJS's SpiderMonkey (%s) does not export the profiling stack's "
                                  "functions lagwatch needs: its JavaScript functions are not named in "
                                  "reports", node);
          return FALSE;
        }
      if (!lw_gjs_check_layout (lw_js_releases[i].layout, push, pop, destroy, &problem))
        {
          *why = g_strdup_printf ("this GJS's SpiderMonkey (%s) does not lay out its profiling stack as "
                                  "lagwatch reads it (%s): its JavaScript functions are not named in "
                                  "reports", node, problem);
          return FALSE;
        }
      *engine = (LwJsEngine) { node, lw_js_releases[i].layout, set_stack, enable_stack };
      return TRUE;
    }
  any = dlsym (RTLD_DEFAULT, LW_JS_SET_STACK);
  if (any == NULL)
    *why = g_strdup ("this GJS's SpiderMonkey does not export js::SetContextProfilingStack: its "
                     "JavaScript functions are not named in reports");
  else
    {
      g_autofree char *library = lw_gjs_library_name (any);

      GString *known = g_string_new (NULL);

      for (guint i = 0; i < G_N_ELEMENTS (lw_js_releases); i++)
        g_string_append_printf (known, "%s%s", i == 0 ? "" : i + 1 < G_N_ELEMENTS (lw_js_releases) ? ", " : " and ",
                                lw_js_releases[i].node + strlen ("mozjs_"));
      *why = g_strdup_printf ("this GJS runs on a SpiderMonkey (%s) whose profiling stack lagwatch "
                              "does not know (it reads SpiderMonkey %s): its JavaScript functions are "
                              "not named in reports", library, known->str);
      g_string_free (known, TRUE);
    }
  return FALSE;
}

/* Any thread but the watcher, normal context, lw_gjs_lock held: dlsym()
 * takes the loader's lock. Finds GJS and a SpiderMonkey it can read, once. */
static LwGjsState
lw_gjs_look (void)
{
  g_autofree char *why = NULL;

  lw_gjs_looked = TRUE;
  lw_gjs_get_current = (LwGjsGetCurrent) dlsym (RTLD_DEFAULT, "gjs_context_get_current");
  lw_gjs_get_native = (LwGjsGetNative) dlsym (RTLD_DEFAULT, "gjs_context_get_native_context");
  lw_gjs_get_profiler = (LwGjsGetProfiler) dlsym (RTLD_DEFAULT, "gjs_context_get_profiler");
  if (lw_gjs_get_current == NULL || lw_gjs_get_native == NULL)
    return LW_GJS_NOTHING;  /* not a GJS program */
  if (!lw_gjs_find_engine (&lw_gjs_engine, &why))
    {
      lw_say ("%s", why);
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
  g_autofree char *why = NULL;

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
  if (!lw_modules_find_unwind_table ((uintptr_t) lw_gjs_engine.set_stack, &engine))
    return LW_GJS_NOTHING;
  lw_gjs_stack = g_malloc0 (LW_JS_STACK_SIZE);
  lw_gjs_layout = lw_gjs_engine.layout;
  lw_gjs_tid = getpid ();
  lw_gjs_engine_lo = engine.start;
  lw_gjs_engine_hi = engine.end;
  lw_gjs_engine.set_stack (cx, lw_gjs_stack);
  lw_gjs_engine.enable_stack (cx, true);
  atomic_store (&lw_gjs_ready, 1);
  /* With the Gecko profiler on (above), compiled frames are named by the
   * engine's sampler interface, in the signal handler. */
  if (!lw_gjs_jit_start (lw_gjs_engine.node, gjs_context, cx, lw_gjs_tid, &why))
    lw_say ("%s", why);
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

/* Watcher thread. What the native frame at @ip is to the engine. */
static LwJsNativeKind
lw_gjs_native_kind (uintptr_t ip)
{
  LwUnwindTable table;

  if (ip >= lw_gjs_engine_lo && ip < lw_gjs_engine_hi)
    return LW_JS_NATIVE_ENGINE;
  if (!lw_lang_frame_is (ip) && !lw_modules_find_unwind_table (ip, &table))
    return LW_JS_NATIVE_JIT;
  return LW_JS_NATIVE_OTHER;
}

gboolean
lw_gjs_read_fits (const guint8 *kinds, const uintptr_t *sps, guint n_ips, int entry_frame,
                  uintptr_t innermost_entry_sp)
{
  gboolean left_engine = FALSE;

  /* An entry deeper than the innermost captured frame was made after the
   * capture. */
  if (sps != NULL && sps[0] != 0 && innermost_entry_sp != 0 && innermost_entry_sp < sps[0])
    return FALSE;
  if (entry_frame < 0 || (guint) entry_frame >= n_ips)
    return TRUE;
  /* Inward of the innermost entry read: the engine running it, maybe a
   * call out of it into C; JavaScript run again past that C was entered
   * anew, and that entry is gone from the stack read. */
  for (int k = entry_frame - 1; k >= 0; k--)
    {
      if (kinds[k] == LW_JS_NATIVE_OTHER)
        left_engine = TRUE;
      else if (kinds[k] == LW_JS_NATIVE_JIT && left_engine)
        return FALSE;
    }
  return TRUE;
}

/* One frame read from the profiling stack: a JavaScript function's tag,
 * or (tag 0) the native stack address where native code entered the
 * engine, which starts the frames entered from there. */
typedef struct
{
  uintptr_t tag;
  uintptr_t entry_sp;
} LwJsRead;

gboolean
lw_gjs_decode_frames (const LwJsLayout *layout, const guint8 *raw, gsize raw_len, guint n,
                      LwJsEntry *entries)
{
  if (n > raw_len / layout->frame_size)
    return FALSE;
  for (guint i = 0; i < n; i++)
    {
      const guint8 *frame = raw + (gsize) i * layout->frame_size;

      switch (lw_load_u32 (frame, layout->flags) & LW_JS_FRAME_KIND_MASK)
        {
        case LW_JS_FRAME_IS_LABEL:
          entries[i] = (LwJsEntry) { LW_JS_ENTRY_LABEL, 0 };
          break;
        case LW_JS_FRAME_IS_SP_MARKER:
          entries[i] = (LwJsEntry) { LW_JS_ENTRY_MARKER, lw_load_uptr (frame, layout->sp_or_script) };
          break;
        case LW_JS_FRAME_IS_JS:
          entries[i] = (LwJsEntry) { LW_JS_ENTRY_FUNCTION, lw_load_uptr (frame, layout->dynamic_string),
                                     (lw_load_u32 (frame, layout->flags) & LW_JS_FRAME_JS_OSR) != 0 };
          break;
        default:
          return FALSE;
        }
    }
  return TRUE;
}

/* Watcher thread. The uint32_t field at @offset of the profiling stack. */
static uint32_t
lw_gjs_stack_u32 (guint offset)
{
  return __atomic_load_n ((uint32_t *) (lw_gjs_stack + offset), __ATOMIC_ACQUIRE);
}

/* Watcher thread. The pointer field at @offset of the profiling stack. */
static uintptr_t
lw_gjs_stack_pointer_field (guint offset)
{
  return __atomic_load_n ((uintptr_t *) (lw_gjs_stack + offset), __ATOMIC_ACQUIRE);
}

/* Watcher thread. The profiling stack's entries that matter, outermost
 * first, into @reads; their count, 0 when there is none or they changed
 * during the read. With @skip_osr, functions that went on in compiled
 * code are left out (the sample's compiled frames name them). */
static guint
lw_gjs_read_frames (LwJsRead *reads, gboolean skip_osr)
{
  const LwJsLayout *layout = lw_gjs_layout;
  guint8 raw[LW_GJS_MAX_FRAMES * LW_JS_MAX_FRAME_SIZE], again[LW_GJS_MAX_FRAMES * LW_JS_MAX_FRAME_SIZE];
  LwJsEntry entries[LW_GJS_MAX_FRAMES];
  char label[LW_GJS_MAX_LABEL];
  uintptr_t array = lw_gjs_stack_pointer_field (layout->frames), start;
  uint32_t depth = lw_gjs_stack_u32 (layout->stack_pointer);
  uint32_t capacity = lw_gjs_stack_u32 (layout->capacity);
  guint n = MIN (depth, LW_GJS_MAX_FRAMES), out = 0, used = 0;
  gsize size = layout->frame_size;

  /* The engine keeps the stack pointer within the array it allocated. */
  if (n == 0 || array == 0 || depth > capacity)
    return 0;
  start = array + (depth - n) * size;
  if (!lw_modules_read_memory (start, raw, n * size) || !lw_gjs_decode_frames (layout, raw, sizeof raw, n, entries))
    return 0;
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *name = NULL, *file = NULL;
      gboolean whole;
      guint line;

      if (entries[i].kind == LW_JS_ENTRY_MARKER)
        {
          reads[out++] = (LwJsRead) { 0, entries[i].value };
          used = i + 1;
          continue;
        }
      /* A JavaScript entry without a description is the engine's own
       * (js::RunScript): nothing to name. */
      if (entries[i].kind != LW_JS_ENTRY_FUNCTION || entries[i].value == 0)
        continue;
      if (skip_osr && entries[i].osr)
        {
          used = i + 1;
          continue;
        }
      /* A frame that cannot be named ends the read: a stack may lack its
       * JavaScript frames, it never shows a wrong one. */
      if (!lw_modules_read_string (entries[i].value, label, sizeof label, &whole) || !whole
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
  if (used == 0 || lw_gjs_stack_pointer_field (layout->frames) != array
      || lw_gjs_stack_u32 (layout->stack_pointer) < depth - n + used
      || !lw_modules_read_memory (start, again, used * size)
      || memcmp (raw, again, used * size) != 0)
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

/* Watcher thread. The native frame whose stack holds @addr; with
 * @beyond (the walk was cut, its last frame's stack pointer), @n_ips for
 * an address past the walked stack; else -1. */
static int
lw_gjs_place (const uintptr_t *sps, guint n_ips, uintptr_t beyond, uintptr_t addr)
{
  int k = sps != NULL ? lw_gjs_frame_of (sps, n_ips, addr) : -1;

  return k < 0 && beyond != 0 && addr >= beyond ? (int) n_ips : k;
}

/* Watcher thread. The compiled frames the handler took (@jit, @jit_len
 * bytes of the snapshot), innermost first: their tags into @tags, their
 * stack addresses into @addrs and the native frame each goes in front of
 * into @at (lw_gjs_place(): the generated code running it); their count.
 * A frame off the walked stack, or whose description does not parse, ends
 * them: outer ones are left out, never misplaced. */
static guint
lw_gjs_jit_frames (const guint8 *jit, gsize jit_len, const uintptr_t *sps, guint n_ips, uintptr_t beyond,
                   uintptr_t *tags, uintptr_t *addrs, int *at)
{
  LwJsJitFrame frames[LW_GJS_MAX_FRAMES];
  guint n = sps != NULL ? lw_gjs_jit_decode (jit, jit_len, frames, G_N_ELEMENTS (frames)) : 0;

  for (guint j = 0; j < n; j++)
    {
      g_autofree char *label = g_strndup (frames[j].label, frames[j].label_len);
      g_autofree char *name = NULL, *file = NULL;
      guint line;

      at[j] = lw_gjs_place (sps, n_ips, beyond, frames[j].stack_address);
      addrs[j] = frames[j].stack_address;
      /* Outward only: a frame placed inward of the one before it is not
       * where the walk put its code. */
      if (at[j] < 0 || (j > 0 && (at[j] < at[j - 1] || addrs[j] < addrs[j - 1]))
          || strlen (label) != frames[j].label_len || !lw_gjs_parse_label (label, &name, &file, &line)
          || (tags[j] = lw_lang_frame_intern (LW_LANG_JS, name, file, line)) == 0)
        return j;
    }
  return n;
}

guint
lw_gjs_merge (pid_t tid, const guint8 *jit, gsize jit_len, uintptr_t *ips, const uintptr_t *sps, guint n_ips,
              guint max_ips, gboolean *truncated)
{
  LwJsRead reads[LW_GJS_MAX_FRAMES];
  uintptr_t out[2 * LW_GJS_MAX_FRAMES + LW_MAX_FRAMES_LIMIT], jit_tags[LW_GJS_MAX_FRAMES];
  uintptr_t jit_addrs[LW_GJS_MAX_FRAMES], keys[LW_GJS_MAX_FRAMES];
  guint8 kinds[LW_MAX_FRAMES_LIMIT];
  int at[LW_GJS_MAX_FRAMES];  /* per read: the native frame it goes in front of */
  int jit_at[LW_GJS_MAX_FRAMES];
  guint n_reads = 0, n_jit, n_out = 0, innermost = n_ips;
  uintptr_t entry_sp = 0, beyond;
  int entry = -1;

  if (!atomic_load (&lw_gjs_ready) || tid != lw_gjs_tid || n_ips == 0 || n_ips > LW_MAX_FRAMES_LIMIT)
    return n_ips;
  /* A walk cut short (generated code it could not step): what lies past
   * its last frame's stack pointer is outward of every frame walked. */
  beyond = *truncated && sps != NULL ? sps[n_ips - 1] : 0;
  /* Taken in the handler, while the thread was stopped: they are the
   * captured stack's. */
  n_jit = lw_gjs_jit_frames (jit, jit_len, sps, n_ips, beyond, jit_tags, jit_addrs, jit_at);
  /* The innermost engine frame: where frames of no known entry go. */
  for (guint k = 0; k < n_ips; k++)
    {
      kinds[k] = lw_gjs_native_kind (ips[k]);
      if (kinds[k] != LW_JS_NATIVE_OTHER && innermost == n_ips)
        innermost = k;
    }
  if (innermost < n_ips)
    n_reads = lw_gjs_read_frames (reads, n_jit > 0);
  /* Each JavaScript frame goes in front of the native frame that entered
   * the engine for it (the frame whose stack holds the entry's marker):
   * inside the native code that called it, outside the engine running it.
   * Its key, the marker's address, orders it among compiled frames there. */
  for (guint r = 0; r < n_reads; r++)
    {
      if (reads[r].tag == 0)
        {
          entry_sp = reads[r].entry_sp;
          entry = lw_gjs_place (sps, n_ips, beyond, entry_sp);
        }
      at[r] = entry >= 0 ? entry : (int) innermost;
      keys[r] = entry >= 0 ? entry_sp : UINTPTR_MAX;
    }
  /* The stack is read after the capture, while the thread runs on: a
   * function that returned (or was entered) meanwhile makes a read of
   * another stack than the one captured, which is not merged. */
  if (n_reads > 0 && !lw_gjs_read_fits (kinds, sps, n_ips, entry < (int) n_ips ? entry : -1, entry_sp))
    n_reads = 0;
  if (n_reads == 0 && n_jit == 0)
    return n_ips;

  /* Native frames innermost first; before frame k (or after the last one,
   * k == n_ips), the JavaScript frames that go there, innermost first: by
   * stack address, a compiled frame inward of an entry's marker goes
   * before the functions entered there (the interpreter's, running in the
   * engine's frame at the marker, which calls the compiled code). */
  for (guint k = 0; k <= n_ips; k++)
    {
      guint j = 0;
      int i = (int) n_reads - 1;

      for (;;)
        {
          while (j < n_jit && jit_at[j] != (int) k)
            j++;
          while (i >= 0 && (reads[i].tag == 0 || at[i] != (int) k))
            i--;
          if (j < n_jit && (i < 0 || jit_addrs[j] < keys[i]))
            out[n_out++] = jit_tags[j++];
          else if (i >= 0)
            out[n_out++] = reads[i--].tag;
          else
            break;
        }
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
