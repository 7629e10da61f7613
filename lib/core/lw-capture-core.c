/* lw-capture-core.c: the signal handler and the stack copy
 *
 * Built without GLib (lib/meson.build, lagwatch-core) and checked by
 * tests/check-core-symbols.sh: everything here is async-signal-safe. Plain
 * loads and stores, lock-free atomics, the gettid/getpid/tgkill/
 * process_vm_readv/pread64 system calls, sigaction and sem_post. Nothing
 * else, but the one language sampler a caller registered
 * (lw_core_set_sample_hook(): GJS's compiled frames, lw-gjs-jit.c), which
 * keeps to the same rules.
 */
#include "lw-capture-core.h"

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "lw-clock.h"

#define LW_PAGE_SIZE 4096
#define LW_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The request of each slot; set once, never cleared (slots are static). */
static LwCaptureRequest *_Atomic lw_core_requests[LW_MAX_SLOTS];
/* Where a signal that is not lagwatch's goes. Written only while the
 * handler is not installed (lw-capture.c), read by the handler. */
static struct sigaction lw_core_chained;
static _Atomic int      lw_core_in_flight;  /* explicit signals sent, handler not yet entered */
/* The threads in lagwatch's handler now, one entry each (0: free). There
 * the kernel has lagwatch's signal blocked for the handler's run, which
 * the watcher must not take for the program's mask. Bounded: with more
 * threads in the handler at once, the others go unlisted (the watcher
 * then judges them by the mask alone). A thread that leaves the handler
 * other than by returning (cancelled asynchronously, or by a longjmp() out
 * of a program's handler that interrupted it) leaves its entry behind:
 * then a mask that thread (or a later one given its id) sets itself is
 * called lagwatch's, so it gets no sample and no warning, never a false
 * one. */
#define LW_CORE_HANDLER_TIDS 64
static _Atomic pid_t lw_core_handler_tids[LW_CORE_HANDLER_TIDS];
/* A language's sampler and the thread it is for (lw_core_set_sample_hook). */
static _Atomic (LwCoreSampleHook) lw_core_hook;
static _Atomic pid_t              lw_core_hook_tid;

/* Any thread, normal context. */
void
lw_core_register_request (unsigned index, LwCaptureRequest *req)
{
  if (index < LW_MAX_SLOTS)
    atomic_store (&lw_core_requests[index], req);
}

/* Any thread, normal context. */
void
lw_core_set_sample_hook (pid_t tid, LwCoreSampleHook hook)
{
  atomic_store (&lw_core_hook, NULL);
  atomic_store (&lw_core_hook_tid, tid);
  atomic_store (&lw_core_hook, hook);
}

/* Any thread, normal context, handler not installed. */
void
lw_core_set_chained (const struct sigaction *action)
{
  lw_core_chained = *action;
}

/* Any thread. */
int
lw_core_signals_in_flight (void)
{
  return atomic_load (&lw_core_in_flight);
}

/* Async-signal-safe: the handler, on entry. Lists thread @tid as in the
 * handler; its entry's index, or -1 when the table is full. */
static int
lw_core_handler_enter (pid_t tid)
{
  for (int i = 0; i < LW_CORE_HANDLER_TIDS; i++)
    {
      pid_t free_entry = 0;

      if (atomic_compare_exchange_strong (&lw_core_handler_tids[i], &free_entry, tid))
        return i;
    }
  return -1;
}

/* Async-signal-safe: the handler, last before it returns. */
static void
lw_core_handler_leave (int index)
{
  if (index >= 0)
    atomic_store (&lw_core_handler_tids[index], 0);
}

/* Any thread. */
int
lw_core_handler_runs (pid_t tid)
{
  for (int i = 0; i < LW_CORE_HANDLER_TIDS; i++)
    if (atomic_load (&lw_core_handler_tids[i]) == tid)
      return 1;
  return 0;
}

/* Watcher thread. */
void
lw_core_count_signal (int delta)
{
  atomic_fetch_add (&lw_core_in_flight, delta);
}

/* How this process's memory is read through the kernel: -1 with
 * process_vm_readv(), a descriptor of /proc/self/mem, or
 * LW_CORE_MEMORY_NONE. */
static _Atomic int lw_core_memory_fd = -1;

/* Any thread, normal context. */
void
lw_core_set_memory_fd (int fd)
{
  atomic_store (&lw_core_memory_fd, fd);
}

/* Async-signal-safe. */
ssize_t
lw_core_read_memory (const struct iovec *local, unsigned long n_local,
                     const struct iovec *remote, unsigned long n_remote)
{
  int fd = atomic_load (&lw_core_memory_fd);
  unsigned long l = 0, r = 0;
  size_t l_off = 0, r_off = 0;
  ssize_t total = 0;

  /* The calling thread's id, not the pid: the kernel refuses the pid
   * (ESRCH) once the process's first thread has exited (main() calling
   * pthread_exit() while other threads go on); the caller is alive and
   * shares the memory. */
  if (fd == -1)
    return syscall (SYS_process_vm_readv, gettid (), local, n_local, remote, n_remote, 0UL);
  if (fd == LW_CORE_MEMORY_NONE)
    {
      errno = ENOSYS;
      return -1;
    }
  /* As process_vm_readv(): the remote pieces in order into the local
   * ones, up to the first that cannot be read. The file offset is the
   * address. */
  while (l < n_local && r < n_remote)
    {
      size_t len = LW_MIN (local[l].iov_len - l_off, remote[r].iov_len - r_off);
      ssize_t got = len == 0 ? 0
                             : syscall (SYS_pread64, fd, (char *) local[l].iov_base + l_off, len,
                                        (long) ((uintptr_t) remote[r].iov_base + r_off));

      if (got < 0)
        return total > 0 ? total : -1;
      total += got;
      l_off += (size_t) got;
      r_off += (size_t) got;
      if ((size_t) got < len)
        return total;
      if (l_off == local[l].iov_len)
        l++, l_off = 0;
      if (r_off == remote[r].iov_len)
        r++, r_off = 0;
    }
  return total;
}

/* Async-signal-safe. Copies the words of [start, start + len) into @dst
 * without ASan's checks (the stack holds other frames' redzones), unseen
 * by ThreadSanitizer (the copy reads a live stack on purpose, whose
 * objects other threads write under their own locks: a copy taken while
 * the thread moved is thrown away, and its words are only ever data to
 * unwind), and without letting the compiler turn the loop into a memcpy
 * call (intercepted by the sanitizers). */
__attribute__ ((no_sanitize_address, no_sanitize_thread, no_sanitize ("undefined")))
static size_t
lw_core_copy_words (unsigned char *dst, uintptr_t start, size_t len)
{
  const volatile uint64_t *src = (const volatile uint64_t *) start;
  uint64_t *out = (uint64_t *) (void *) dst;
  size_t n = len / sizeof (uint64_t);

  for (size_t i = 0; i < n; i++)
    out[i] = src[i];
  return n * sizeof (uint64_t);
}

/* Async-signal-safe. Copies [start, start + capacity) of another stack
 * (or this one outside its known bounds) through the kernel, a page per
 * piece so that the copy ends at the first unmapped one: bytes copied,
 * whole words, or -1 when the first page is not readable. */
static ssize_t
lw_core_copy_remote (LwSnapshot *snap, uintptr_t start)
{
  struct iovec local = { snap->stack, snap->stack_capacity };
  struct iovec remote[64];
  size_t n = 0;
  uintptr_t at = start;
  ssize_t got;

  while (n < sizeof remote / sizeof remote[0] && at < start + snap->stack_capacity)
    {
      uintptr_t page_end = (at + LW_PAGE_SIZE) & ~(uintptr_t) (LW_PAGE_SIZE - 1);

      page_end = LW_MIN (page_end, start + snap->stack_capacity);
      remote[n].iov_base = (void *) at;
      remote[n].iov_len = page_end - at;
      at = page_end;
      n++;
    }
  got = lw_core_read_memory (&local, 1UL, remote, (unsigned long) n);
  return got > 0 ? (ssize_t) ((size_t) got & ~(size_t) 7) : -1;
}

/* Async-signal-safe. */
void
lw_core_copy_stack (LwSnapshot *snap, uintptr_t sp, uintptr_t lo, uintptr_t hi)
{
  uintptr_t top = sp & ~(uintptr_t) 7;
  ssize_t got;

  snap->stack_base = top;
  snap->stack_len = 0;
  if (lo < hi && top >= lo && top < hi)
    {
      size_t below = LW_MIN ((size_t) (top - lo), (size_t) LW_CORE_RED_ZONE_BYTES) & ~(size_t) 7;

      snap->stack_base = top - below;
      snap->stack_len = lw_core_copy_words (snap->stack, snap->stack_base,
                                            LW_MIN ((size_t) (hi - snap->stack_base), snap->stack_capacity));
      return;
    }
  /* The red zone may lie on the page below, unmapped (a stack that is
   * full): then the copy starts at the stack pointer. */
  if (top >= LW_CORE_RED_ZONE_BYTES)
    {
      got = lw_core_copy_remote (snap, top - LW_CORE_RED_ZONE_BYTES);
      if (got > LW_CORE_RED_ZONE_BYTES)
        {
          snap->stack_base = top - LW_CORE_RED_ZONE_BYTES;
          snap->stack_len = (size_t) got;
          return;
        }
    }
  got = lw_core_copy_remote (snap, top);
  snap->stack_len = got > 0 ? (size_t) got : 0;
}

/* Async-signal-safe. */
static void
lw_core_copy_registers (LwSnapshot *snap, const ucontext_t *uc)
{
  static const int from_greg[LW_N_REGS] = {
    [LW_REG_RAX] = REG_RAX, [LW_REG_RDX] = REG_RDX, [LW_REG_RCX] = REG_RCX,
    [LW_REG_RBX] = REG_RBX, [LW_REG_RSI] = REG_RSI, [LW_REG_RDI] = REG_RDI,
    [LW_REG_RBP] = REG_RBP, [LW_REG_RSP] = REG_RSP, [LW_REG_R8] = REG_R8,
    [LW_REG_R9] = REG_R9,   [LW_REG_R10] = REG_R10, [LW_REG_R11] = REG_R11,
    [LW_REG_R12] = REG_R12, [LW_REG_R13] = REG_R13, [LW_REG_R14] = REG_R14,
    [LW_REG_R15] = REG_R15, [LW_REG_RIP] = REG_RIP,
  };

  for (int r = 0; r < LW_N_REGS; r++)
    snap->regs[r] = (uint64_t) uc->uc_mcontext.gregs[from_greg[r]];
  snap->regs_valid = (1u << LW_N_REGS) - 1;
}

/* Async-signal-safe. Hands a signal that is not lagwatch's to whatever the
 * program had installed, as the kernel would have. */
static void
lw_core_chain (int signo, siginfo_t *info, void *ucontext)
{
  if (lw_core_chained.sa_flags & SA_SIGINFO)
    {
      if (lw_core_chained.sa_sigaction != NULL)
        lw_core_chained.sa_sigaction (signo, info, ucontext);
    }
  else if (lw_core_chained.sa_handler == SIG_DFL)
    {
      /* The default action of a real-time signal terminates the process:
       * do what would have happened without lagwatch. */
      struct sigaction dfl = { .sa_handler = SIG_DFL };

      sigaction (signo, &dfl, NULL);
      syscall (SYS_tgkill, getpid (), gettid (), signo);
    }
  else if (lw_core_chained.sa_handler != SIG_IGN)
    lw_core_chained.sa_handler (signo);
}

/* Async-signal-safe: the signal handler. Runs on the signalled thread. */
void
lw_core_on_signal (int signo, siginfo_t *info, void *ucontext)
{
  int saved_errno = errno;
  uintptr_t cookie = info != NULL ? (uintptr_t) info->si_value.sival_ptr : 0;
  LwCaptureRequest *req;
  uint64_t serial = LW_COOKIE_SERIAL (cookie);
  uint64_t armed = LW_REQUEST_WORD (serial, LW_CAPTURE_ARMED);
  int result = LW_CAPTURE_STALE;
  int by_timer, listed;
  pid_t self;
  sem_t *wake;
  LwCoreSampleHook hook;

  if (info == NULL || (cookie >> 48) != LW_COOKIE_MAGIC
      || !((info->si_code == SI_QUEUE && info->si_pid == getpid ()) || info->si_code == SI_TIMER))
    {
      lw_core_chain (signo, info, ucontext);
      errno = saved_errno;
      return;
    }

  self = gettid ();
  listed = lw_core_handler_enter (self);
  by_timer = info->si_code == SI_TIMER;
  if (!by_timer)
    atomic_fetch_sub (&lw_core_in_flight, 1);
  req = LW_COOKIE_SLOT (cookie) < LW_MAX_SLOTS ? atomic_load (&lw_core_requests[LW_COOKIE_SLOT (cookie)])
                                                 : NULL;
  /* The one claim: fails for a request given up, not re-armed, or newer
   * than this signal. */
  if (req == NULL
      || !atomic_compare_exchange_strong (&req->word, &armed,
                                          LW_REQUEST_WORD (serial, LW_CAPTURE_WRITING)))
    {
      lw_core_handler_leave (listed);
      errno = saved_errno;
      return;
    }

  if ((req->expect_seq == 0 || atomic_load (req->seq) == req->expect_seq) && self == req->target_tid)
    {
      const ucontext_t *uc = ucontext;
      LwSnapshot *snap = req->snapshot;

      lw_core_copy_registers (snap, uc);
      lw_core_copy_stack (snap, (uintptr_t) uc->uc_mcontext.gregs[REG_RSP], req->stack_lo, req->stack_hi);
      snap->syscall_nr = -1;
      snap->via_signal = 1;
      snap->taken_ns = lw_clock_now_ns ();
      snap->lang_len = 0;
      snap->lang_ns = 0;
      hook = atomic_load (&lw_core_hook);
      if (hook != NULL && atomic_load (&lw_core_hook_tid) == req->target_tid)
        {
          hook (uc, snap);
          snap->lang_ns = lw_clock_now_ns () - snap->taken_ns;
        }
      result = LW_CAPTURE_OK;
    }
  /* The semaphore is read before DONE: from then on the watcher may fill
   * the request in again. */
  wake = by_timer ? req->wake : &req->done;
  atomic_store (&req->result, result);
  atomic_store (&req->word, LW_REQUEST_WORD (serial, LW_CAPTURE_DONE));
  sem_post (wake);
  lw_core_handler_leave (listed);
  errno = saved_errno;
}
