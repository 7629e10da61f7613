/* lw-gjs-jit.c: JavaScript functions running as compiled code, named in
 * the signal handler with SpiderMonkey's sampler interface (lw-gjs-jit.h
 * says what and why) */
#include "lw-gjs-jit.h"

#include <dlfcn.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>

#include "lw-capture-core.h"
#include "lw-load.h"

/* JS::ProfilingFrameIterator's exported functions (the same mangled names
 * in 102, 128 and 140): the constructor (JSContext *, const RegisterState
 * &, const mozilla::Maybe<uint64_t> &), the destructor, operator++ and
 * extractStack (Frame *, uint32_t offset, uint32_t end); and
 * JS::IsProfilingEnabledForContext, without which the constructor
 * crashes on purpose (MOZ_CRASH). */
#define LW_JS_ITER_NEW     "_ZN2JS22ProfilingFrameIteratorC1EP9JSContextRKNS0_13RegisterStateERKN7mozilla5MaybeImEE"
#define LW_JS_ITER_FREE    "_ZN2JS22ProfilingFrameIteratorD1Ev"
#define LW_JS_ITER_NEXT    "_ZN2JS22ProfilingFrameIteratorppEv"
#define LW_JS_ITER_EXTRACT "_ZNK2JS22ProfilingFrameIterator12extractStackEPNS0_5FrameEjj"
#define LW_JS_PROFILING_ON "_ZN2JS28IsProfilingEnabledForContextEP9JSContext"

/* The layout read, the same in 102 (disassembled: the constructor stores
 * cx at 0, the Maybe at 8 and activation_ at 24; extractStack() copies
 * 64-byte frames and stores a label at 40) and in 128 and 140 (headers,
 * and the same stores): the iterator is {JSContext *cx_; Maybe<uint64_t>
 * (16 bytes: the value, then the flag); Activation *activation_ (NULL:
 * done()); void *endStackAddress_; Kind; storage of 8 or 9 pointers},
 * at most 120 bytes; a Frame is {FrameKind kind (4 bytes); void
 * *stackAddress; void *returnAddress; void *activation; void
 * *endStackAddress; const char *label; JSScript *; uint64_t realmID}. */
#define LW_JS_ITER_CX         0
#define LW_JS_ITER_ACTIVATION 24
#define LW_JS_ITER_SIZE       120
#define LW_JS_FRAME_SIZE      64
#define LW_JS_FRAME_KIND      0
#define LW_JS_FRAME_STACK     8
#define LW_JS_FRAME_LABEL     40
/* FrameKind: the JIT's three, then wasm's three. */
#define LW_JS_FRAME_KINDS     6

/* Room given to the iterator: its size and more, the rest checked
 * untouched by the probe. */
#define LW_JS_ITER_ROOM 512
/* Frames per sample, and iterator steps (activations) per sample. */
#define LW_JS_JIT_MAX_FRAMES 64
#define LW_JS_JIT_MAX_STEPS  256
/* A record: stack address (8 bytes), kind (1), label length (2), label. */
#define LW_JS_JIT_HEADER    11
#define LW_JS_JIT_MAX_LABEL 1023

/* RegisterState on x86-64: pc, sp, fp, then two unused words. */
typedef struct
{
  void *pc, *sp, *fp, *unused1, *unused2;
} LwJsRegisterState;

/* mozilla::Maybe<uint64_t>: the value, then whether there is one. */
typedef struct
{
  uint64_t value;
  uint8_t  is_some;
} LwJsMaybeU64;

typedef void (*LwJsIterNew) (void *iter, void *cx, const LwJsRegisterState *state, const LwJsMaybeU64 *position);
typedef void (*LwJsIterFree) (void *iter);
typedef void (*LwJsIterNext) (void *iter);
typedef uint32_t (*LwJsIterExtract) (const void *iter, void *frames, uint32_t offset, uint32_t end);
typedef bool (*LwJsProfilingOn) (void *cx);
typedef void (*LwWeakNotify) (gpointer data, void *where_the_object_was);
typedef void (*LwWeakRef) (void *object, LwWeakNotify notify, gpointer data);

static LwWeakRef lw_weak_ref;  /* the JavaScript thread only */

/* Set once on the JavaScript thread before the hook is installed (the
 * hook's atomic store publishes them); read by the handler on that
 * thread only. */
static struct
{
  LwJsIterNew     iter_new;
  LwJsIterFree    iter_free;
  LwJsIterNext    iter_next;
  LwJsIterExtract extract;
  LwJsProfilingOn profiling_on;
  void           *cx;
} lw_jit;

/* The handler's working memory: it runs on the JavaScript thread only,
 * and its signal is blocked while it runs, so one at a time. Static, not
 * on the (alternate) signal stack. */
static alignas (16) guint8 lw_jit_iter[LW_JS_ITER_ROOM];
static alignas (16) guint8 lw_jit_frames[LW_JS_JIT_MAX_FRAMES * LW_JS_FRAME_SIZE];

gboolean
lw_gjs_jit_put (guint8 *lang, gsize room, gsize *at, uintptr_t stack_address, guint kind,
                const char *label, gsize label_len)
{
  uint16_t len = (uint16_t) label_len;
  uint64_t address = stack_address;

  if (label_len > LW_JS_JIT_MAX_LABEL || kind > 255 || *at > room || room - *at < LW_JS_JIT_HEADER + label_len)
    return FALSE;
  memcpy (lang + *at, &address, 8);
  lang[*at + 8] = (guint8) kind;
  memcpy (lang + *at + 9, &len, 2);
  memcpy (lang + *at + LW_JS_JIT_HEADER, label, label_len);
  *at += LW_JS_JIT_HEADER + label_len;
  return TRUE;
}

guint
lw_gjs_jit_decode (const guint8 *lang, gsize len, LwJsJitFrame *frames, guint max)
{
  gsize at = 0;
  guint n = 0;

  while (n < max && len - at >= LW_JS_JIT_HEADER)
    {
      uint16_t label_len;

      memcpy (&label_len, lang + at + 9, 2);
      if (label_len == 0 || label_len > LW_JS_JIT_MAX_LABEL || lang[at + 8] >= LW_JS_JIT_KINDS
          || len - at - LW_JS_JIT_HEADER < label_len)
        break;
      frames[n].stack_address = (uintptr_t) lw_load_u64 (lang, at);
      frames[n].kind = lang[at + 8];
      frames[n].label = (const char *) lang + at + LW_JS_JIT_HEADER;
      frames[n].label_len = label_len;
      n++;
      at += LW_JS_JIT_HEADER + label_len;
    }
  return n;
}

/* Async-signal-safe. Copies the C string at @addr, through the kernel (an
 * address that is not mapped fails instead of faulting), into @out (room
 * for @room bytes); its length, or -1 when it cannot be read whole. */
static gssize
lw_jit_read_label (uintptr_t addr, char *out, gsize room)
{
  gsize got = 0;

  /* A page at a time: the kernel stops at the first unmapped page. */
  while (got < room)
    {
      gsize page_left = 4096 - ((addr + got) & 4095);
      gsize want = MIN (room - got, page_left);
      struct iovec local = { out + got, want };
      struct iovec remote = { (void *) (addr + got), want };
      ssize_t read = lw_core_read_memory (&local, 1, &remote, 1);
      const char *nul;

      if (read <= 0)
        return -1;
      nul = memchr (out + got, '\0', (gsize) read);
      if (nul != NULL)
        return nul - out;
      got += (gsize) read;
      if ((gsize) read < want)
        return -1;
    }
  return -1;
}

/* Async-signal-safe, bounded (LW_JS_JIT_MAX_STEPS steps of the engine's
 * iterator, LW_JS_JIT_MAX_FRAMES frames). Walks the compiled frames of
 * the stopped thread whose registers are @state into lw_jit_frames; their
 * count. */
static guint
lw_jit_walk (const LwJsRegisterState *state)
{
  LwJsMaybeU64 nothing = { 0, 0 };
  guint n = 0;

  /* Without the profiler on, the constructor crashes on purpose. */
  if (!lw_jit.profiling_on (lw_jit.cx))
    return 0;
  lw_jit.iter_new (lw_jit_iter, lw_jit.cx, state, &nothing);
  for (guint step = 0; step < LW_JS_JIT_MAX_STEPS && n < LW_JS_JIT_MAX_FRAMES
                       && lw_load_uptr (lw_jit_iter, LW_JS_ITER_ACTIVATION) != 0;
       step++)
    {
      uint32_t got = lw_jit.extract (lw_jit_iter, lw_jit_frames, n, LW_JS_JIT_MAX_FRAMES);

      n += MIN (got, LW_JS_JIT_MAX_FRAMES - n);
      lw_jit.iter_next (lw_jit_iter);
    }
  lw_jit.iter_free (lw_jit_iter);
  return n;
}

/* The handler's copies of the descriptions (static, as above), and the
 * pieces of one read through the kernel for all of them. */
static char lw_jit_text[LW_JS_JIT_MAX_FRAMES][LW_JS_JIT_MAX_LABEL + 1];
static struct iovec lw_jit_local[LW_JS_JIT_MAX_FRAMES], lw_jit_remote[LW_JS_JIT_MAX_FRAMES];

/* Async-signal-safe: lagwatch's signal handler on the JavaScript thread,
 * stopped (lw_core_set_sample_hook()). Writes the compiled frames' records
 * into @snap->lang, innermost first, up to the first one that cannot be
 * read or does not fit. */
static void
lw_jit_sample (const void *ucontext, LwSnapshot *snap)
{
  const ucontext_t *uc = ucontext;
  LwJsRegisterState state = {
    .pc = (void *) uc->uc_mcontext.gregs[REG_RIP],
    .sp = (void *) uc->uc_mcontext.gregs[REG_RSP],
    .fp = (void *) uc->uc_mcontext.gregs[REG_RBP],
  };
  guint n = lw_jit_walk (&state), m = 0;
  guint index[LW_JS_JIT_MAX_FRAMES];  /* per piece: its frame */
  gsize at = 0, offset = 0;
  ssize_t got;

  /* The JIT's frames (wasm's left out) up to the first without a
   * description; each description's piece runs to its page's end at most
   * (the kernel stops at the first unmapped page: the pieces after it are
   * not read). */
  for (guint i = 0; i < n; i++)
    {
      const guint8 *frame = lw_jit_frames + (gsize) i * LW_JS_FRAME_SIZE;
      uintptr_t text = lw_load_uptr (frame, LW_JS_FRAME_LABEL);

      if (lw_load_u32 (frame, LW_JS_FRAME_KIND) >= LW_JS_JIT_KINDS)
        continue;
      if (text == 0)
        break;
      lw_jit_remote[m].iov_base = (void *) text;
      lw_jit_remote[m].iov_len = MIN (LW_JS_JIT_MAX_LABEL, 4096 - (text & 4095));
      lw_jit_local[m].iov_base = lw_jit_text[m];
      lw_jit_local[m].iov_len = lw_jit_remote[m].iov_len;
      index[m++] = i;
    }
  got = m > 0 ? lw_core_read_memory (lw_jit_local, m, lw_jit_remote, m) : 0;
  for (guint j = 0; j < m && got > 0; j++)
    {
      const guint8 *frame = lw_jit_frames + (gsize) index[j] * LW_JS_FRAME_SIZE;
      gsize have = (gsize) got > offset ? MIN ((gsize) got - offset, lw_jit_local[j].iov_len) : 0;
      const char *nul = memchr (lw_jit_text[j], '\0', have);
      gssize len;

      /* One that runs on past its page is read again whole. */
      if (nul != NULL)
        len = nul - lw_jit_text[j];
      else if (have == lw_jit_local[j].iov_len && have < LW_JS_JIT_MAX_LABEL)
        len = lw_jit_read_label ((uintptr_t) lw_jit_remote[j].iov_base, lw_jit_text[j], sizeof lw_jit_text[j]);
      else
        len = -1;
      if (len <= 0 || !lw_gjs_jit_put (snap->lang, sizeof snap->lang, &at, lw_load_uptr (frame, LW_JS_FRAME_STACK),
                                       lw_load_u32 (frame, LW_JS_FRAME_KIND), lw_jit_text[j], (gsize) len))
        break;
      offset += lw_jit_local[j].iov_len;
    }
  snap->lang_len = at;
}

/* The JavaScript thread, normal context. Runs the iterator once, here, on
 * room filled with a pattern: the constructor must store @cx where the
 * layout says, the whole walk stay within the iterator's size, and every
 * frame be of a known kind with a label that is none or a C string of at
 * most 1023 bytes (parsed on the watcher, lw_gjs_merge()). FALSE with
 * *@why otherwise. */
static gboolean
lw_jit_probe (void *cx, char **why)
{
  LwJsRegisterState state = {
    .pc = (void *) (uintptr_t) lw_jit_probe,
    .sp = __builtin_frame_address (0),
    .fp = __builtin_frame_address (0),
  };
  guint n;

  memset (lw_jit_iter, 0xa5, sizeof lw_jit_iter);
  memset (lw_jit_frames, 0xa5, sizeof lw_jit_frames);
  n = lw_jit_walk (&state);
  if (lw_load_uptr (lw_jit_iter, LW_JS_ITER_CX) != (uintptr_t) cx)
    {
      *why = g_strdup_printf ("the iterator holds no context at %u", LW_JS_ITER_CX);
      return FALSE;
    }
  for (gsize i = LW_JS_ITER_SIZE; i < sizeof lw_jit_iter; i++)
    if (lw_jit_iter[i] != 0xa5)
      {
        *why = g_strdup_printf ("the iterator is larger than %u bytes", LW_JS_ITER_SIZE);
        return FALSE;
      }
  for (gsize i = (gsize) n * LW_JS_FRAME_SIZE; i < sizeof lw_jit_frames; i++)
    if (lw_jit_frames[i] != 0xa5)
      {
        *why = g_strdup_printf ("its %u frames are not %u bytes each", n, LW_JS_FRAME_SIZE);
        return FALSE;
      }
  for (guint i = 0; i < n; i++)
    {
      const guint8 *frame = lw_jit_frames + (gsize) i * LW_JS_FRAME_SIZE;
      uintptr_t label = lw_load_uptr (frame, LW_JS_FRAME_LABEL);
      char text[LW_JS_JIT_MAX_LABEL + 1];

      if (lw_load_u32 (frame, LW_JS_FRAME_KIND) >= LW_JS_FRAME_KINDS
          || (label != 0 && lw_load_u32 (frame, LW_JS_FRAME_KIND) < LW_JS_JIT_KINDS
              && lw_jit_read_label (label, text, sizeof text) <= 0))
        {
          *why = g_strdup_printf ("its frame %u is of kind %u, labelled %s", i, lw_load_u32 (frame, LW_JS_FRAME_KIND),
                                  label != 0 ? "by no string" : "none");
          return FALSE;
        }
    }
  return TRUE;
}

/* The JavaScript thread, normal context: GJS's context is being disposed
 * (its JSContext is destroyed when it is finalized, later). The handler
 * runs on this thread, so none is running now, and none calls the engine
 * from here on. */
static void
lw_jit_context_gone (gpointer data, void *where_the_object_was)
{
  lw_core_set_sample_hook (0, NULL);
}

gboolean
lw_gjs_jit_start (const char *node, void *gjs_context, void *cx, pid_t tid, char **why)
{
  static const char *const known[] = { "mozjs_102", "mozjs_128", "mozjs_140" };
  g_autofree char *problem = NULL;
  gboolean listed = FALSE;

  /* GObject's, which GJS links (liblagwatch does not). */
  lw_weak_ref = (LwWeakRef) dlsym (RTLD_DEFAULT, "g_object_weak_ref");
  *why = NULL;
  if (lw_weak_ref == NULL)
    {
      *why = g_strdup ("this GJS has no GObject (g_object_weak_ref): JavaScript functions running as "
                       "compiled code are not named in reports");
      return FALSE;
    }
  for (guint i = 0; i < G_N_ELEMENTS (known); i++)
    listed |= g_strcmp0 (node, known[i]) == 0;
  if (!listed)
    {
      *why = g_strdup_printf ("lagwatch does not know the sampler interface of this GJS's SpiderMonkey "
                              "(%s; it reads 102, 128 and 140): JavaScript functions running as compiled "
                              "code are not named in reports", node);
      return FALSE;
    }
  lw_jit.iter_new = (LwJsIterNew) dlvsym (RTLD_DEFAULT, LW_JS_ITER_NEW, node);
  lw_jit.iter_free = (LwJsIterFree) dlvsym (RTLD_DEFAULT, LW_JS_ITER_FREE, node);
  lw_jit.iter_next = (LwJsIterNext) dlvsym (RTLD_DEFAULT, LW_JS_ITER_NEXT, node);
  lw_jit.extract = (LwJsIterExtract) dlvsym (RTLD_DEFAULT, LW_JS_ITER_EXTRACT, node);
  lw_jit.profiling_on = (LwJsProfilingOn) dlvsym (RTLD_DEFAULT, LW_JS_PROFILING_ON, node);
  lw_jit.cx = cx;
  if (lw_jit.iter_new == NULL || lw_jit.iter_free == NULL || lw_jit.iter_next == NULL || lw_jit.extract == NULL
      || lw_jit.profiling_on == NULL)
    {
      *why = g_strdup_printf ("this GJS's SpiderMonkey (%s) does not export JS::ProfilingFrameIterator: "
                              "JavaScript functions running as compiled code are not named in reports", node);
      return FALSE;
    }
  if (!lw_jit_probe (cx, &problem))
    {
      *why = g_strdup_printf ("this GJS's SpiderMonkey (%s) does not lay out JS::ProfilingFrameIterator as "
                              "lagwatch reads it (%s): JavaScript functions running as compiled code are "
                              "not named in reports", node, problem);
      return FALSE;
    }
  lw_weak_ref (gjs_context, lw_jit_context_gone, NULL);
  lw_core_set_sample_hook (tid, lw_jit_sample);
  return TRUE;
}
