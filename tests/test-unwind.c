/* test-unwind: lagwatch's unwinder (lw-cfi rows, libunwind for the rest)
 * against libunwind walking every frame, the reference it replaced.
 *
 * Real stacks: threads caught running (signal, all registers) and asleep
 * (from /proc, pc and sp only), in libc, GLib, the vDSO and a signal
 * handler, each sampled many times and walked both ways: the same frames,
 * or the test fails and prints both. Synthetic stacks: a walk starting at
 * every 29th address of libc, GLib, the vDSO and this program, over a
 * stack of random words (code addresses, stack addresses, small numbers),
 * so that every kind of CFI row these modules hold is interpreted both ways
 * (compared up to the first frame outside every module: see walks_agree).
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-cfi.h"
#include "lw-clock.h"
#include "lw-modules.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

#define NOIPA __attribute__ ((noipa))
#define MAX_FRAMES 64

typedef struct _Target Target;
struct _Target
{
  const char   *name;
  void        (*body) (Target *target);
  guint         min_frames;  /* a walk of a correct stack gets at least this deep */
  gboolean      exact;       /* the two walks must agree word for word, no exception */
  volatile int  stop;
  volatile int  ready;
  pid_t         tid;
  GMainContext *context;
};

static volatile guint64 sink;

static NOIPA int
recurse_then_spin (Target *t, int depth)
{
  int below;

  if (depth == 0)
    {
      t->ready = 1;
      while (!t->stop)
        sink += (guint64) g_get_monotonic_time ();  /* now and then in the vDSO */
      return 0;
    }
  below = recurse_then_spin (t, depth - 1);
  __asm__ volatile ("" ::: "memory");
  return below + 1;
}

static void
body_recursion (Target *t)
{
  recurse_then_spin (t, 20);
}

static Target *qsort_target;

static int
slow_compare (const void *a, const void *b)
{
  for (int i = 0; i < 2000 && !qsort_target->stop; i++)
    sink++;
  qsort_target->ready = 1;
  return *(const int *) a - *(const int *) b;
}

static void
body_qsort (Target *t)
{
  int values[64];

  qsort_target = t;
  while (!t->stop)
    {
      for (guint i = 0; i < G_N_ELEMENTS (values); i++)
        values[i] = (int) ((i * 7919u) % 64u);
      qsort (values, G_N_ELEMENTS (values), sizeof values[0], slow_compare);
    }
}

/* Sampled from /proc, which gives only pc and sp: a walk from there must
 * not need rbp. A sanitizer build keeps frame pointers and ASan's fake
 * stack, which make this frame's CFA rbp-based; so this one frame is built
 * as in the plain build (a walk from a signal, with every register, got
 * past it anyway, and whether any sample came by signal was luck). */
static __attribute__ ((no_sanitize_address, optimize ("omit-frame-pointer"))) void
body_nanosleep (Target *t)
{
  struct timespec ms = { 0, 1000 * 1000 };

  t->ready = 1;
  while (!t->stop)
    nanosleep (&ms, NULL);
}

static void
body_cond_wait (Target *t)
{
  GMutex mutex;
  GCond cond;

  g_mutex_init (&mutex);
  g_cond_init (&cond);
  g_mutex_lock (&mutex);
  t->ready = 1;
  while (!t->stop)
    g_cond_wait_until (&cond, &mutex, g_get_monotonic_time () + 5000);
  g_mutex_unlock (&mutex);
  g_cond_clear (&cond);
  g_mutex_clear (&mutex);
}

static void
body_main_loop (Target *t)
{
  t->ready = 1;
  while (!t->stop)
    g_main_context_iteration (t->context, TRUE);
}

/* A frame-pointer function caught between its `leave` and its `ret`,
 * written out so that its thread stays there: epilogue_spin() spins on
 * @stop (sampled by signal), epilogue_sleep() sleeps in nanosleep() until
 * @stop is set (sampled from /proc). Their CFI is GCC's for every such
 * epilogue: after `leave` only `.cfi_def_cfa rsp, 8`, so the caller's rbp
 * is still "at CFA-16", the word `leave` popped it from, now in the red
 * zone below the stack pointer. A walk that reads no red zone loses rbp
 * there and stops at the caller, whose CFA is rbp-based. The instruction
 * between `leave` and `ret` is where a sample of any -O0 or frame-pointer
 * code lands now and then (AddressSanitizer's clock_gettime interceptor,
 * in the recursion target of a sanitizer build). */
void epilogue_spin (volatile int *stop) __attribute__ ((visibility ("hidden")));
void epilogue_sleep (volatile int *stop, const struct timespec *interval)
  __attribute__ ((visibility ("hidden")));

/* A function's head and its frame-pointer frame, made and at once left:
 * what follows runs between `leave` and `ret`, with GCC's rows. */
#define EPILOGUE_FUNCTION(name)        \
  ".globl " name "\n"                  \
  ".hidden " name "\n"                 \
  ".type " name ", @function\n"        \
  name ":\n"                           \
  "  .cfi_startproc\n"                 \
  "  movq %rdi, %r8\n" /* @stop; r8 and r9 outlive a system call */ \
  "  movq %rsi, %r9\n"                 \
  "  pushq %rbp\n"                     \
  "  .cfi_def_cfa_offset 16\n"         \
  "  .cfi_offset rbp, -16\n"           \
  "  movq %rsp, %rbp\n"                \
  "  .cfi_def_cfa_register rbp\n"      \
  "  leave\n"                          \
  "  .cfi_def_cfa rsp, 8\n"
#define EPILOGUE_END(name)             \
  "  cmpl $0, (%r8)\n"                 \
  "  je 1b\n"                          \
  "  ret\n"                            \
  "  .cfi_endproc\n"                   \
  "  .size " name ", . - " name "\n"

G_STATIC_ASSERT (SYS_nanosleep == 35);
__asm__ (".text\n"
         EPILOGUE_FUNCTION ("epilogue_spin")
         "1:\n"
         "  pause\n"
         EPILOGUE_END ("epilogue_spin")
         EPILOGUE_FUNCTION ("epilogue_sleep")
         "1:\n"
         "  movq %r9, %rdi\n"  /* @interval */
         "  xorl %esi, %esi\n"
         "  movl $35, %eax\n"  /* SYS_nanosleep */
         "  syscall\n"
         EPILOGUE_END ("epilogue_sleep"));

/* The callers keep frame pointers, in the plain build too: their CFA is
 * rbp-based, so their step needs the rbp the epilogue's row reads. */
static __attribute__ ((noipa, optimize ("no-omit-frame-pointer"))) void
call_epilogue_spin (Target *t)
{
  t->ready = 1;
  epilogue_spin (&t->stop);
  __asm__ volatile ("" ::: "memory");
}

static __attribute__ ((noipa, optimize ("no-omit-frame-pointer"))) void
call_epilogue_sleep (Target *t)
{
  static const struct timespec ms = { 0, 1000 * 1000 };

  t->ready = 1;
  epilogue_sleep (&t->stop, &ms);
  __asm__ volatile ("" ::: "memory");
}

static void
body_epilogue_running (Target *t)
{
  call_epilogue_spin (t);
}

static void
body_epilogue_sleeping (Target *t)
{
  call_epilogue_sleep (t);
}

static Target *signal_target;

static NOIPA int
handler_recurse (int depth)
{
  int below;

  if (depth == 0)
    {
      signal_target->ready = 1;
      while (!signal_target->stop)
        sink++;
      return 0;
    }
  below = handler_recurse (depth - 1);
  __asm__ volatile ("" ::: "memory");
  return below + 1;
}

static void
on_sigusr2 (int signo)
{
  handler_recurse (5);
}

static NOIPA void
body_in_signal_handler (Target *t)
{
  struct sigaction action = { 0 };

  signal_target = t;
  action.sa_handler = on_sigusr2;
  sigemptyset (&action.sa_mask);
  sigaction (SIGUSR2, &action, NULL);
  pthread_kill (pthread_self (), SIGUSR2);  /* runs until stopped */
  __asm__ volatile ("" ::: "memory");
}

static gpointer
target_thread (gpointer data)
{
  Target *t = data;

  t->tid = gettid ();
  t->body (t);
  return NULL;
}

static void
print_stack (const char *label, const uintptr_t *ips, guint n, gboolean truncated)
{
  GString *text = g_string_new (NULL);

  for (guint i = 0; i < n; i++)
    {
      LwModule *module = lw_modules_ref_module (ips[i]);

      g_string_append_printf (text, " %#" G_GINTPTR_MODIFIER "x", (guintptr) ips[i]);
      if (module != NULL)
        {
          g_string_append_printf (text, " (%s+%#" G_GINTPTR_MODIFIER "x)",
                                  lw_module_get_path (module),
                                  (guintptr) (ips[i] - lw_module_get_bias (module)));
          lw_module_unref (module);
        }
    }
  g_test_message ("%s (%u frames%s):%s", label, n, truncated ? ", truncated" : "", text->str);
  g_string_free (text, TRUE);
}

/* Walks @snap both ways; TRUE when they agree (else prints both). With
 * @up_to_foreign, only as far as the first frame outside every module, or
 * returning to an address no FDE covers (the padding between two
 * functions): a walk of random words reaches addresses such as 0xf0, or a
 * function's first byte, from which libunwind guesses the caller by
 * frame-pointer heuristics that depend on its cursor's history (lagwatch
 * hands it one frame at a time). */
static gboolean
walks_agree (LwUnwinder *ours, LwUnwinder *reference, const LwSnapshot *snap, guint max_frames,
             gboolean up_to_foreign, guint *depth)
{
  uintptr_t a[MAX_FRAMES], b[MAX_FRAMES];
  gboolean a_truncated, b_truncated;
  guint na = lw_unwinder_walk (ours, snap, a, max_frames, &a_truncated);
  guint nb = lw_unwinder_walk (reference, snap, b, max_frames, &b_truncated);

  guint same = 0;

  *depth = na;
  for (; same < MIN (na, nb) && a[same] == b[same]; same++)
    {
      LwCfiRow row;

      if (up_to_foreign && (!lw_modules_is_readable (a[same], 1)
                            || (same > 0 && lw_cfi_find_row (a[same] - 1, &row) == LW_CFI_NO_FDE)))
        return TRUE;
    }
  /* lagwatch ends a walk, cut, where the next return address is no code
   * (in no module, and at such small addresses in no mapping either). */
  if (up_to_foreign && same == na && nb > na && a_truncated && !lw_modules_is_readable (b[na] - 1, 1))
    return TRUE;
  if (na == nb && a_truncated == b_truncated && memcmp (a, b, na * sizeof a[0]) == 0)
    return TRUE;
  print_stack ("lagwatch's unwinder", a, na, a_truncated);
  print_stack ("libunwind alone", b, nb, b_truncated);
  return FALSE;
}

/* TRUE when a disagreement follows a frame whose CFI saves the caller's
 * stack pointer (glibc's setcontext: CFA = rdx, rsp at CFA + 160), and
 * only that: lagwatch restores rsp from where it was saved; libunwind
 * always takes the CFA as the caller's rsp (its x86-64 register reader
 * answers rsp with the CFA), so on the frames after it the two read
 * different words. */
static gboolean
libunwind_ignored_saved_sp (LwUnwinder *ours, LwUnwinder *reference, const LwSnapshot *snap)
{
  uintptr_t a[MAX_FRAMES], b[MAX_FRAMES];
  gboolean a_truncated, b_truncated;
  guint na = lw_unwinder_walk (ours, snap, a, 8, &a_truncated);
  guint nb = lw_unwinder_walk (reference, snap, b, 8, &b_truncated);

  for (guint i = 0; i < MIN (na, nb) && a[i] == b[i]; i++)
    {
      LwCfiRow row;

      if (lw_cfi_find_row (i == 0 ? a[i] : a[i] - 1, &row) == LW_CFI_FOUND
          && row.saved[LW_REG_RSP] != LW_CFI_SAME && row.saved[LW_REG_RSP] != LW_CFI_UNDEFINED)
        return i + 1 < MIN (na, nb) ? a[i + 1] == b[i + 1] : TRUE;
    }
  return FALSE;
}

/* TRUE when a disagreement is lagwatch recovering a frame pointer that
 * libunwind does not know, and only that: a walk from /proc's registers
 * (pc and sp), libunwind's walk a truncated prefix of ours that stops at a
 * frame whose CFA is rbp-based (lw_unwind_recover_fp finds rbp on the
 * stack, libunwind has none to step with). */
static gboolean
lagwatch_recovered_fp (LwUnwinder *ours, LwUnwinder *reference, const LwSnapshot *snap)
{
  uintptr_t a[MAX_FRAMES], b[MAX_FRAMES];
  gboolean a_truncated, b_truncated;
  guint na = lw_unwinder_walk (ours, snap, a, 8, &a_truncated);
  guint nb = lw_unwinder_walk (reference, snap, b, 8, &b_truncated);
  LwCfiRow row;

  if ((snap->regs_valid & (1u << LW_REG_RBP)) || !b_truncated || nb == 0 || nb >= na
      || memcmp (a, b, nb * sizeof a[0]) != 0)
    return FALSE;
  return lw_cfi_find_row (nb == 1 ? b[0] : b[nb - 1] - 1, &row) == LW_CFI_FOUND
         && row.cfa_reg == LW_REG_RBP;
}

static void
test_real_stacks (gconstpointer data)
{
  const Target *model = data;
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  GMainContext *target_context = g_main_context_new ();
  LwSnapshot *snap = lw_snapshot_new (256 * 1024);
  LwUnwinder *ours = lw_unwinder_new (), *reference = lw_unwinder_new_reference ();
  Target target = *model;
  guint taken = 0, deepest = 0, via_signal = 0;
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  GThread *thread;
  LagWatch *watch;

  g_assert_nonnull (ours);
  g_assert_nonnull (reference);
  lagwatch_config_set_output (config, "none", NULL);
  watch = lagwatch_attach_with_config (context, config);
  g_assert_nonnull (watch);
  lagwatch_pause (watch);  /* its capture slot is ours */

  target.context = target_context;
  thread = g_thread_new (target.name, target_thread, &target);
  while (!target.ready)
    g_usleep (100);

  /* 150 samples, however many tries a loaded machine needs (a capture
   * times out when the target thread does not run in time). */
  for (guint i = 0; taken < 150 && g_get_monotonic_time () < deadline; i++)
    {
      guint depth;

      if (lw_capture_take_thread (watch->slot, target.tid, 0, 0, 0, snap, 50 * LW_NSEC_PER_MSEC)
          != LW_CAPTURE_OK)
        continue;
      taken++;
      via_signal += snap->via_signal != 0;
      /* Code with frame pointers (an ASan build's) sleeping in libc:
       * lagwatch recovers rbp from the stack where libunwind stops. */
      if (!walks_agree (ours, reference, snap, MAX_FRAMES, FALSE, &depth)
          && (target.exact || !lagwatch_recovered_fp (ours, reference, snap)))
        g_error ("%s: sample %u: the walks differ", target.name, i);
      deepest = MAX (deepest, depth);
    }
  target.stop = 1;
  g_main_context_wakeup (target_context);
  g_thread_join (thread);

  g_test_message ("%s: %u samples (%u by signal), deepest walk %u frames", target.name, taken,
                  via_signal, deepest);
  g_assert_cmpuint (taken, >=, 150);
  g_assert_cmpuint (deepest, >=, target.min_frames);

  lagwatch_detach (watch);
  g_main_context_unref (context);
  g_main_context_unref (target_context);
  lw_unwinder_free (ours);
  lw_unwinder_free (reference);
  lw_snapshot_free (snap);
}

static const Target targets[] = {
  { "recursion", body_recursion, 22 },          /* 20 levels + thread start */
  { "qsort", body_qsort, 5 },                   /* comparator, msort, qsort_r, body, start */
  { "nanosleep", body_nanosleep, 4 },           /* /proc: pc and sp only */
  { "cond-wait", body_cond_wait, 4 },
  { "main-loop-poll", body_main_loop, 5 },
  { "signal-handler", body_in_signal_handler, 10 },  /* handler frames, __restore_rt, below */
  /* epilogue, its caller, body, thread start, GLib's and libc's: 6 */
  { "epilogue-running", body_epilogue_running, 6, TRUE },
  { "epilogue-sleeping", body_epilogue_sleeping, 6, TRUE },
};

/* Three functions with hand-written CFI. lw_test_switch_context's says what
 * glibc's context-switching code says: the CFA is rdx (a ucontext), and
 * the caller's rsp and return address are saved in it, at 160 and 168.
 * lw_test_plain_frame's is an ordinary frame: CFA = rsp + 8.
 * lw_test_push_frame's rules change after its first byte, a push: CFA =
 * rsp + 8 at its entry, rsp + 16 from there on. */
extern const char lw_test_switch_context[], lw_test_plain_frame[], lw_test_push_frame[];
__asm__ (".text\n"
         ".type lw_test_switch_context, @function\n"
         "lw_test_switch_context:\n"
         ".cfi_startproc\n"
         ".cfi_def_cfa %rdx, 0\n"
         ".cfi_offset %rsp, 160\n"
         ".cfi_offset %rip, 168\n"
         "nop\n"
         "nop\n"
         "ret\n"
         ".cfi_endproc\n"
         ".size lw_test_switch_context, .-lw_test_switch_context\n"
         ".type lw_test_plain_frame, @function\n"
         "lw_test_plain_frame:\n"
         ".cfi_startproc\n"
         "nop\n"
         "nop\n"
         "ret\n"
         ".cfi_endproc\n"
         ".size lw_test_plain_frame, .-lw_test_plain_frame\n"
         ".type lw_test_push_frame, @function\n"
         "lw_test_push_frame:\n"
         ".cfi_startproc\n"
         "push %rbx\n"
         ".cfi_adjust_cfa_offset 8\n"
         ".cfi_offset %rbx, -16\n"
         "nop\n"
         "pop %rbx\n"
         ".cfi_adjust_cfa_offset -8\n"
         "ret\n"
         ".cfi_endproc\n"
         ".size lw_test_push_frame, .-lw_test_push_frame\n");

/* A pc met first as the one a thread was interrupted at, then as a return
 * address: the reference walk reads the second frame's caller with the
 * rules at pc - 1, as a fresh reference and lagwatch do. libunwind's cache
 * of rows is keyed by the pc alone and would hand back the rules at the
 * pc, so the reference the walks above are checked against would depend
 * on the walks before it (Debian 13's executable: 2 walks of 26,884). */
static void
test_reference_history (void)
{
  LwSnapshot *snap = lw_snapshot_new (64 * sizeof (uint64_t));
  LwUnwinder *ours = lw_unwinder_new (), *reference = lw_unwinder_new_reference ();
  LwUnwinder *fresh = lw_unwinder_new_reference ();
  uint64_t *words = (uint64_t *) (void *) snap->stack;
  uintptr_t base = (uintptr_t) snap->stack, pc = (uintptr_t) lw_test_push_frame + 1, ips[8];
  uintptr_t caller = (uintptr_t) lw_test_plain_frame + 1;  /* read by the rules at pc - 1: CFA = rsp + 8 */
  uintptr_t misread = (uintptr_t) lw_test_plain_frame + 2; /* by the rules at pc: CFA = rsp + 16 */
  LwUnwinder *walkers[] = { reference, fresh, ours };
  gboolean truncated;
  guint n;

  snap->stack_base = base;
  snap->stack_len = snap->stack_capacity;
  memset (words, 0, snap->stack_capacity);
  snap->regs[LW_REG_RSP] = base;
  snap->regs_valid = (1u << LW_REG_RIP) | (1u << LW_REG_RSP);

  /* The first walk starts at pc (its caller a 0: the stack's end). */
  snap->regs[LW_REG_RIP] = pc;
  n = lw_unwinder_walk (reference, snap, ips, G_N_ELEMENTS (ips), &truncated);
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmphex (ips[0], ==, pc);

  /* The second starts at a function's first byte, which returns to pc. */
  words[0] = pc;
  words[1] = caller;
  words[2] = misread;
  snap->regs[LW_REG_RIP] = (uintptr_t) lw_test_plain_frame;
  for (guint i = 0; i < G_N_ELEMENTS (walkers); i++)
    {
      n = lw_unwinder_walk (walkers[i], snap, ips, G_N_ELEMENTS (ips), &truncated);
      g_assert_cmpuint (n, >=, 3);
      g_assert_cmphex (ips[1], ==, pc);
      g_assert_cmphex (ips[2], ==, caller);
    }

  lw_unwinder_free (ours);
  lw_unwinder_free (reference);
  lw_unwinder_free (fresh);
  lw_snapshot_free (snap);
}

/* A caller's stack pointer that the CFI saves is restored from where it
 * was saved, not taken for the CFA: the frame after a context switch is
 * read from the switched-to stack. And a return address that is no code
 * ends the walk. */
static void
test_saved_stack_pointer (void)
{
  LwSnapshot *snap = lw_snapshot_new (256 * sizeof (uint64_t));
  LwUnwinder *ours = lw_unwinder_new ();
  uint64_t *words = (uint64_t *) (void *) snap->stack;
  uintptr_t base = (uintptr_t) snap->stack, ips[4];
  gboolean truncated;
  guint n;

  snap->stack_base = base;
  snap->stack_len = snap->stack_capacity;
  memset (words, 0, snap->stack_capacity);
  words[0] = 0xbad0;                                         /* the caller's frame, if rsp were the CFA */
  words[160 / 8] = base + 100 * 8;                           /* the saved rsp */
  words[168 / 8] = (uintptr_t) lw_test_plain_frame + 1;      /* the saved return address */
  words[100] = (uintptr_t) lw_test_plain_frame + 2;          /* the caller's frame on the switched-to stack */
  for (guint r = 0; r < LW_N_REGS; r++)
    snap->regs[r] = base + 50 * 8;
  snap->regs[LW_REG_RDX] = base;
  snap->regs[LW_REG_RIP] = (uintptr_t) lw_test_switch_context + 1;
  snap->regs_valid = (1u << LW_N_REGS) - 1;

  n = lw_unwinder_walk (ours, snap, ips, G_N_ELEMENTS (ips), &truncated);
  g_assert_cmpuint (n, >=, 3);
  g_assert_cmphex (ips[1], ==, (uintptr_t) lw_test_plain_frame + 1);
  g_assert_cmphex (ips[2], ==, (uintptr_t) lw_test_plain_frame + 2);

  /* A return address that is no code (an address in no mapping) is a
   * word the step took for one: dropped, and the walk ends there, cut. */
  words[100] = 0x900d0;
  n = lw_unwinder_walk (ours, snap, ips, G_N_ELEMENTS (ips), &truncated);
  g_assert_cmpuint (n, ==, 2);
  g_assert_cmphex (ips[1], ==, (uintptr_t) lw_test_plain_frame + 1);
  g_assert_true (truncated);

  lw_unwinder_free (ours);
  lw_snapshot_free (snap);
}

/* Walks of one module at most: a sanitizer build's test executable holds
 * 3 MB of code (177,084 walks at every 29th address, 2 minutes of the
 * test's 3 under AddressSanitizer on a busy machine); the C library's is
 * 68,073. */
#define SYNTHETIC_MAX_WALKS 70000

/* Synthetic stacks over every 29th address of the module holding @anchor,
 * or a wider odd step where that would be more than SYNTHETIC_MAX_WALKS
 * (odd: the addresses still fall on every offset within 16 bytes). */
static void
test_synthetic (gconstpointer anchor)
{
  LwModule *module = lw_modules_ref_module ((uintptr_t) anchor);
  uintptr_t code[] = {
    (uintptr_t) qsort, (uintptr_t) malloc, (uintptr_t) nanosleep, (uintptr_t) g_main_context_iteration,
    (uintptr_t) g_hash_table_insert, (uintptr_t) g_strdup_printf, (uintptr_t) recurse_then_spin,
    (uintptr_t) test_synthetic, (uintptr_t) anchor,
  };
  LwSnapshot *snap = lw_snapshot_new (4096 * sizeof (uint64_t));
  LwUnwinder *ours = lw_unwinder_new (), *reference = lw_unwinder_new_reference ();
  GRand *rand = g_rand_new_with_seed (20261121);
  uint64_t *words = (uint64_t *) (void *) snap->stack;
  uintptr_t base = (uintptr_t) snap->stack, start, end, step;
  guint walks = 0, deep = 0, mismatches = 0, recovered_fp = 0, saved_sp = 0;

  g_assert_nonnull (module);
  start = lw_module_get_start (module);
  end = lw_module_get_end (module);
  step = 29;
  while ((end - start) / step > SYNTHETIC_MAX_WALKS)
    step += 30;

  snap->stack_base = base;
  snap->stack_len = snap->stack_capacity;
  for (guint i = 0; i < 4096; i++)
    {
      guint kind = g_rand_int_range (rand, 0, 10);

      /* Mostly return addresses and stack addresses, some small numbers
       * (a walk reaching one of those ends there, cut). */
      if (kind < 6)
        words[i] = code[g_rand_int_range (rand, 0, G_N_ELEMENTS (code))] + g_rand_int_range (rand, 1, 300);
      else if (kind < 9)
        words[i] = base + 8 * (guint64) g_rand_int_range (rand, (gint32) i, 4096);
      else
        words[i] = (uint64_t) g_rand_int_range (rand, 0, 4096);
    }

  for (uintptr_t pc = start; pc < end; pc += step)
    {
      guint depth;

      for (guint r = 0; r < LW_N_REGS; r++)
        snap->regs[r] = g_rand_boolean (rand) ? base + 8 * (guint64) g_rand_int_range (rand, 0, 4096)
                                              : (uint64_t) g_rand_int_range (rand, 0, 4096);
      snap->regs[LW_REG_RSP] = base + 8 * (guint64) g_rand_int_range (rand, 0, 1024);
      snap->regs[LW_REG_RIP] = pc;
      /* Alternately caught by signal (all registers) and from /proc. */
      snap->regs_valid = (walks & 1) ? (1u << LW_REG_RIP) | (1u << LW_REG_RSP)
                                     : (1u << LW_N_REGS) - 1;
      if (!walks_agree (ours, reference, snap, 8, TRUE, &depth))
        {
          if (libunwind_ignored_saved_sp (ours, reference, snap))
            {
              g_test_message ("  from %#" G_GINTPTR_MODIFIER "x the CFI saves the caller's rsp, which "
                              "libunwind does not restore", (guintptr) pc);
              saved_sp++;
              walks++;
              continue;
            }
          if (lagwatch_recovered_fp (ours, reference, snap))
            {
              g_test_message ("  from %#" G_GINTPTR_MODIFIER "x lagwatch recovered a frame pointer libunwind "
                              "does not know (rbp-based CFA, no rbp from /proc)", (guintptr) pc);
              recovered_fp++;
              walks++;
              continue;
            }
          g_test_message ("walks from %#" G_GINTPTR_MODIFIER "x (module %s + %#" G_GINTPTR_MODIFIER "x) differ",
                          (guintptr) pc, lw_module_get_path (module), (guintptr) (pc - start));
          mismatches++;
        }
      walks++;
      deep += depth >= 3;
    }
  g_test_message ("%s: %u walks, %u of them 3 frames or more, %u differ, "
                  "%u by a frame pointer recovered, %u by a saved rsp",
                  lw_module_get_path (module), walks, deep, mismatches, recovered_fp, saved_sp);
  g_assert_cmpuint (mismatches, ==, 0);
  g_assert_cmpuint (walks, >, 100);
  /* Enough walks of 3 frames or more to compare (random words end most
   * walks, more so in an AddressSanitizer build: 4.6% there). */
  g_assert_cmpuint (deep, >, walks / 40);

  g_rand_free (rand);
  lw_unwinder_free (ours);
  lw_unwinder_free (reference);
  lw_snapshot_free (snap);
  lw_module_unref (module);
}

/* The C library's synthetic stacks. Its module is found by a function
 * no sanitizer's runtime interposes: qsort, say, is libasan's own in an
 * AddressSanitizer build, whose module (3.5 times the C library's walks)
 * the test then covered instead. */
static void
test_synthetic_libc (void)
{
  LwModule *module = lw_modules_ref_module ((uintptr_t) gnu_get_libc_version);
  g_autofree char *name = NULL;

  g_assert_nonnull (module);
  name = g_path_get_basename (lw_module_get_path (module));
  g_assert_true (g_str_has_prefix (name, "libc.so"));
  lw_module_unref (module);
  test_synthetic (gnu_get_libc_version);
}

/* Called at its first instruction, where every function's row is the
 * same (CFA = rsp + 8, return address at CFA - 8): a walk from there reads
 * the return address from the stack copy. */
static NOIPA void
entry_point (void)
{
  __asm__ volatile ("" ::: "memory");
}

/* A walk over the copy of [words] with rip = @pc: how many frames. */
static guint
walk_over (LwUnwinder *unwinder, uintptr_t pc, const uint64_t *words, guint n_words,
           uintptr_t *ips, guint max_frames)
{
  LwSnapshot *snap = lw_snapshot_new (n_words * sizeof (uint64_t));
  gboolean truncated;
  guint n;

  memcpy (snap->stack, words, n_words * sizeof (uint64_t));
  snap->stack_base = (uintptr_t) snap->stack;
  snap->stack_len = n_words * sizeof (uint64_t);
  snap->regs[LW_REG_RIP] = pc;
  snap->regs[LW_REG_RSP] = snap->stack_base;
  snap->regs_valid = (1u << LW_REG_RIP) | (1u << LW_REG_RSP);
  n = lw_unwinder_walk (unwinder, snap, ips, max_frames, &truncated);
  lw_snapshot_free (snap);
  return n;
}

/* Unmaps the pages that hold [@lo, @hi). */
static void
unmap_pages (uintptr_t lo, uintptr_t hi)
{
  uintptr_t page = (uintptr_t) sysconf (_SC_PAGESIZE);
  uintptr_t start = lo & ~(page - 1), end = (hi + page - 1) & ~(page - 1);

  g_assert_cmpint (munmap ((void *) start, end - start), ==, 0);
}

/* A library's code and CFI unmapped while the module table still lists it:
 * what a walk sees when another thread dlclose()s the library after the
 * table was read, or when a garbage return address points into a range
 * that is no longer mapped. Each walk must stop there, not fault. In a
 * subprocess: the library's mappings are gone for good. */
static void
test_unmapped_module (void)
{
  if (g_test_subprocess ())
    {
      const char *path = g_getenv ("LW_UNWIND_VICTIM_LIB");
      LwUnwinder *ours = lw_unwinder_new ();
      LwUnwindTable table;
      uintptr_t victim, lo, hi, ips[MAX_FRAMES];
      uint64_t words[8];
      void *handle;
      guint n;

      g_assert_nonnull (path);
      handle = dlopen (path, RTLD_NOW | RTLD_LOCAL);
      g_assert_nonnull (handle);
      victim = (uintptr_t) dlsym (handle, "unwind_victim_function");
      g_assert_cmpuint (victim, !=, 0);
      g_assert_true (lw_modules_find_unwind_table (victim, &table));
      g_assert_cmpuint (table.eh_frame_hdr, !=, 0);

      /* The code segment, then the one holding the CFI (headers and
       * program headers stay: the loader reads them). */
      g_assert_true (lw_modules_readable_range (victim, &lo, &hi));
      unmap_pages (lo, hi);
      if (lw_modules_readable_range (table.eh_frame_hdr, &lo, &hi))
        unmap_pages (lo, hi);

      for (guint i = 0; i < G_N_ELEMENTS (words); i++)
        words[i] = victim + 8 + i;

      /* Stopped inside the unmapped library. */
      n = walk_over (ours, victim + 4, words, G_N_ELEMENTS (words), ips, MAX_FRAMES);
      g_test_message ("from the unmapped library: %u frames", n);
      g_assert_cmpuint (n, ==, 1);
      g_assert_cmpuint (ips[0], ==, victim + 4);

      /* Stopped in this program, returning into the unmapped library. */
      n = walk_over (ours, (uintptr_t) entry_point, words, G_N_ELEMENTS (words), ips, MAX_FRAMES);
      g_test_message ("into the unmapped library: %u frames", n);
      g_assert_cmpuint (n, ==, 2);
      g_assert_cmpuint (ips[1], ==, victim + 8);

      lw_unwinder_free (ours);
      _exit (0);  /* the library's destructors are unmapped too: no exit handlers */
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDOUT);
  g_test_trap_assert_passed ();
}

/* A sandbox that refuses process_vm_readv() (as container runtimes did
 * before Linux 4.8): the unwinder cannot read unwind tables, says so once,
 * and a walk holds the innermost frame, without a fault. */
static void
test_memory_read_refused (void)
{
  if (g_test_subprocess ())
    {
      struct sock_filter filter[] = {
        BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch)),
        BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
        BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
        BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      };
      struct sock_fprog program = { G_N_ELEMENTS (filter), filter };
      LwUnwinder *ours = lw_unwinder_new ();
      uint64_t words[4] = { (uintptr_t) test_memory_read_refused + 8, 0, 0, 0 };
      uintptr_t ips[MAX_FRAMES];
      guint n;

      g_assert_cmpint (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), ==, 0);
      g_assert_cmpint (prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program), ==, 0);
      n = walk_over (ours, (uintptr_t) entry_point, words, G_N_ELEMENTS (words), ips, MAX_FRAMES);
      g_assert_cmpuint (n, ==, 1);
      lw_unwinder_free (ours);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*reads of this process's memory through the kernel fail (Operation not permitted)*");
}

/* The innermost frame of a thread stuck in one function is at a new pc in
 * each sample (an interpreter's loop): once a walk has been through that
 * function, a walk from another pc in it reads no CFI (its FDE is kept
 * whole). Checked by refusing process_vm_readv() between the two walks,
 * in a subprocess: the second walk must still step the frame to its
 * caller, whose row the first walk left in the cache. */
static void
test_fde_kept (void)
{
  if (g_test_subprocess ())
    {
      struct sock_filter filter[] = {
        BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch)),
        BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
        BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
        BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      };
      struct sock_fprog program = { G_N_ELEMENTS (filter), filter };
      /* A large function of this program, and a return address into another. */
      uintptr_t function = (uintptr_t) test_synthetic, ret = (uintptr_t) test_memory_read_refused + 8;
      uint64_t words[512] = { 0 };
      LwUnwinder *ours = lw_unwinder_new ();
      uintptr_t ips[MAX_FRAMES], inside = 0;
      LwCfiRow row;
      guint n, slot = 0;

      /* An address past the prologue whose CFA is rsp-based: its return
       * address lies in a slot of the copy. */
      for (uintptr_t pc = function + 1; pc < function + 4096 && inside == 0; pc++)
        if (lw_cfi_find_row (pc, &row) == LW_CFI_FOUND && row.cfa_reg == LW_REG_RSP && row.cfa_offset > 8
            && row.cfa_offset + row.saved[LW_REG_RIP] < (int32_t) sizeof words)
          {
            inside = pc;
            slot = (guint) (row.cfa_offset + row.saved[LW_REG_RIP]) / 8;
          }
      g_assert_cmphex (inside, !=, 0);
      g_test_message ("first walk from %#" G_GINTPTR_MODIFIER "x, second from +%#" G_GINTPTR_MODIFIER "x",
                      (guintptr) function, (guintptr) (inside - function));
      words[0] = ret;
      words[slot] = ret;
      n = walk_over (ours, function, words, G_N_ELEMENTS (words), ips, MAX_FRAMES);
      g_assert_cmpuint (n, >=, 2);
      g_assert_cmphex (ips[1], ==, ret);

      g_assert_cmpint (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), ==, 0);
      g_assert_cmpint (prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program), ==, 0);
      n = walk_over (ours, inside, words, G_N_ELEMENTS (words), ips, MAX_FRAMES);
      g_assert_cmpuint (n, >=, 2);
      g_assert_cmphex (ips[0], ==, inside);
      g_assert_cmphex (ips[1], ==, ret);
      lw_unwinder_free (ours);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDOUT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_setenv ("LAGWATCH_OUTPUT", "none", TRUE);
  lw_modules_init ();

  for (guint i = 0; i < G_N_ELEMENTS (targets); i++)
    {
      g_autofree char *path = g_strdup_printf ("/unwind/real/%s", targets[i].name);

      g_test_add_data_func (path, &targets[i], test_real_stacks);
    }
  g_test_add_func ("/unwind/synthetic/libc", test_synthetic_libc);
  g_test_add_data_func ("/unwind/synthetic/libglib", (gconstpointer) g_main_context_iteration, test_synthetic);
  g_test_add_data_func ("/unwind/synthetic/vdso", (gconstpointer) getauxval (AT_SYSINFO_EHDR), test_synthetic);
  g_test_add_data_func ("/unwind/synthetic/executable", (gconstpointer) test_synthetic, test_synthetic);
  g_test_add_func ("/unwind/reference-history", test_reference_history);
  g_test_add_func ("/unwind/saved-stack-pointer", test_saved_stack_pointer);
  g_test_add_func ("/unwind/unmapped-module", test_unmapped_module);
  g_test_add_func ("/unwind/memory-read-refused", test_memory_read_refused);
  g_test_add_func ("/unwind/fde-kept", test_fde_kept);
  return g_test_run ();
}
