/* lw-capture.c: registers and stack of the stuck thread, by /proc or by signal
 *
 * Everything reached from lw_capture_on_signal() is async-signal-safe: plain
 * loads and stores, lock-free atomics, gettid/getpid/process_vm_readv
 * system calls and sem_post. Nothing else may be called from there.
 */
#include "lw-capture.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <ucontext.h>
#include <unistd.h>

#include "lw-clock.h"
#include "lw-hooks.h"
#include "lw-private.h"
#include "lw-threadinfo.h"

/* si_value of a lagwatch signal: magic (16 bits) | slot (8) | serial (40). */
#define LW_COOKIE_MAGIC  UINT64_C (0x1a97)
#define LW_COOKIE_SLOT(c)   ((unsigned) (((c) >> 40) & 0xff))
#define LW_PAGE_SIZE 4096

/* Signal state, process-wide. Written under the library lock in normal
 * context; read by the handler (lw_old_action only, never while changing:
 * it is set before the handler is installed). */
static int               lw_signo;
static unsigned          lw_signal_users;
static struct sigaction  lw_old_action;
static _Atomic int       lw_signals_in_flight;  /* sent, handler not yet entered */
static _Atomic uint64_t  lw_cookie_serial;
static gboolean          lw_capture_may_spin;   /* more than one CPU to run on */
static uid_t             lw_capture_uid;        /* si_uid of our signals: informative only */
static gboolean          lw_capture_timers_ok;  /* CPU-time timers never cut a call short here */
static gboolean          lw_capture_timers_decided;

#define LW_CAPTURE_SPIN_NS (50 * 1000)

/* /proc/self/task/TID/syscall, parsed. */
typedef struct
{
  char      text[256];
  gboolean  running;
  long      nr;
  uintptr_t sp;
  uintptr_t pc;
} LwProcSyscall;

int
lw_capture_get_signal (void)
{
  return lw_signal_users > 0 ? lw_signo : 0;
}

/* Async-signal-safe. Copies the words of [start, end) into the snapshot
 * without ASan's checks (the stack holds other frames' redzones) and without
 * letting the compiler turn the loop into a memcpy call (intercepted). */
__attribute__ ((no_sanitize_address, no_sanitize ("undefined")))
static size_t
lw_capture_copy_words (unsigned char *dst, uintptr_t start, size_t len)
{
  const volatile uint64_t *src = (const volatile uint64_t *) start;
  uint64_t *out = (uint64_t *) (void *) dst;
  size_t n = len / sizeof (uint64_t);

  for (size_t i = 0; i < n; i++)
    out[i] = src[i];
  return n * sizeof (uint64_t);
}

/* Async-signal-safe. Copies the stack from @sp up. Within the known stack
 * bounds a plain copy is safe; outside them (an alternate signal stack, a
 * coroutine) the kernel copies page by page and stops at the first unmapped
 * one instead of faulting. */
static void
lw_capture_copy_stack (LwSnapshot *snap, uintptr_t sp, uintptr_t lo, uintptr_t hi)
{
  uintptr_t start = sp & ~(uintptr_t) 7;

  snap->stack_base = start;
  snap->stack_len = 0;
  if (lo < hi && start >= lo && start < hi)
    {
      size_t len = MIN ((size_t) (hi - start), snap->stack_capacity);

      snap->stack_len = lw_capture_copy_words (snap->stack, start, len);
    }
  else
    {
      struct iovec local = { snap->stack, snap->stack_capacity };
      struct iovec remote[64];
      size_t n = 0;
      uintptr_t at = start;
      ssize_t got;

      while (n < G_N_ELEMENTS (remote) && at < start + snap->stack_capacity)
        {
          uintptr_t page_end = (at + LW_PAGE_SIZE) & ~(uintptr_t) (LW_PAGE_SIZE - 1);

          page_end = MIN (page_end, start + snap->stack_capacity);
          remote[n].iov_base = (void *) at;
          remote[n].iov_len = page_end - at;
          at = page_end;
          n++;
        }
      got = syscall (SYS_process_vm_readv, getpid (), &local, 1UL, remote, (unsigned long) n, 0UL);
      snap->stack_len = got > 0 ? (size_t) got & ~(size_t) 7 : 0;
    }
}

/* Async-signal-safe. */
static void
lw_capture_copy_registers (LwSnapshot *snap, const ucontext_t *uc)
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
lw_capture_chain (int signo, siginfo_t *info, void *ucontext)
{
  if (lw_old_action.sa_flags & SA_SIGINFO)
    {
      if (lw_old_action.sa_sigaction != NULL)
        lw_old_action.sa_sigaction (signo, info, ucontext);
    }
  else if (lw_old_action.sa_handler == SIG_DFL)
    {
      /* The default action of a real-time signal terminates the process:
       * do what would have happened without lagwatch. */
      signal (signo, SIG_DFL);
      syscall (SYS_tgkill, getpid (), gettid (), signo);
    }
  else if (lw_old_action.sa_handler != SIG_IGN)
    lw_old_action.sa_handler (signo);
}

/* Async-signal-safe: the signal handler. Runs on the stuck thread. */
static void
lw_capture_on_signal (int signo, siginfo_t *info, void *ucontext)
{
  int saved_errno = errno;
  uintptr_t cookie = info != NULL ? (uintptr_t) info->si_value.sival_ptr : 0;
  LwSlot *slot;
  LwCaptureRequest *req;
  int armed = LW_CAPTURE_ARMED;
  int result = LW_CAPTURE_STALE;
  gboolean by_timer;

  if (info == NULL || (cookie >> 48) != LW_COOKIE_MAGIC
      || !((info->si_code == SI_QUEUE && info->si_pid == getpid ()) || info->si_code == SI_TIMER))
    {
      lw_capture_chain (signo, info, ucontext);
      errno = saved_errno;
      return;
    }

  by_timer = info->si_code == SI_TIMER;
  if (!by_timer)
    atomic_fetch_sub (&lw_signals_in_flight, 1);
  slot = lw_hooks_get_slot (LW_COOKIE_SLOT (cookie));
  if (slot == NULL)
    goto out;
  req = &slot->capture;
  if (atomic_load (&req->cookie) != cookie)
    goto out;  /* a late signal from a request (or timer) gone since */
  if (!by_timer)
    atomic_store (&req->in_flight, 0);
  if (!atomic_compare_exchange_strong (&req->state, &armed, LW_CAPTURE_WRITING))
    goto out;  /* the watcher gave up on this request, or has not re-armed it */

  if ((req->expect_seq == 0 || atomic_load (&slot->seq) == req->expect_seq)
      && gettid () == atomic_load (&req->target_tid))
    {
      const ucontext_t *uc = ucontext;
      LwSnapshot *snap = req->snapshot;

      lw_capture_copy_registers (snap, uc);
      lw_capture_copy_stack (snap, (uintptr_t) uc->uc_mcontext.gregs[REG_RSP],
                             req->stack_lo, req->stack_hi);
      snap->syscall_nr = -1;
      snap->via_signal = 1;
      snap->taken_ns = lw_clock_now_ns ();
      result = LW_CAPTURE_OK;
    }
  atomic_store (&req->result, result);
  atomic_store (&req->state, LW_CAPTURE_DONE);
  sem_post (by_timer ? &slot->wake : &req->done);

out:
  errno = saved_errno;
}

static char *
lw_capture_signal_name (int signo)
{
  if (signo - SIGRTMIN <= SIGRTMAX - signo)
    return g_strdup_printf ("SIGRTMIN+%d", signo - SIGRTMIN);
  return g_strdup_printf ("SIGRTMAX-%d", SIGRTMAX - signo);
}

static gboolean
lw_capture_disposition_is_free (const struct sigaction *action)
{
  return !(action->sa_flags & SA_SIGINFO)
         && (action->sa_handler == SIG_DFL || action->sa_handler == SIG_IGN);
}

/* Normal context. TRUE when the kernel defers CPU-time timers to task
 * work (CONFIG_POSIX_CPU_TIMERS_TASK_WORK, on by default on x86-64 since
 * Linux 5.10): the tick only notes the expiry, and the signal is queued on
 * the thread's way back to user space, after whatever system call it was
 * in has returned. Such a signal never finds the thread asleep, so it
 * never cuts a sleep short. Older kernels queue it from the tick, which
 * can land in a system call on its way to sleep. The kernel's build
 * configuration, where the distribution ships it, has the last word. */
static gboolean
lw_capture_kernel_defers_cpu_timers (void)
{
#if defined(__x86_64__)
  g_autofree char *config_path = NULL;
  g_autofree char *config = NULL;
  struct utsname name;
  int major = 0, minor = 0;

  if (uname (&name) != 0 || sscanf (name.release, "%d.%d", &major, &minor) != 2
      || !(major > 5 || (major == 5 && minor >= 10)))
    return FALSE;
  config_path = g_strdup_printf ("/boot/config-%s", name.release);
  if (g_file_get_contents (config_path, &config, NULL, NULL)
      && strstr (config, "\nCONFIG_POSIX_CPU_TIMERS_TASK_WORK=y\n") == NULL)
    return FALSE;
  return TRUE;
#else
  return FALSE;
#endif
}

/* Normal context, library lock held. */
int
lw_capture_acquire_signal (int signo, gboolean explicit_choice, GError **error)
{
  struct sigaction current, ours;
  int chosen = 0;

  if (lw_signal_users > 0)
    {
      if (signo != lw_signo)
        g_debug ("lagwatch already uses signal %d for another watch; this watch shares it", lw_signo);
      lw_signal_users++;
      return lw_signo;
    }

  if (lw_signo != 0)
    {
      /* The handler stayed installed at the last detach because a signal
       * was still queued: take it up again as it is. */
      sigaction (lw_signo, NULL, &current);
      if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == lw_capture_on_signal)
        {
          lw_signal_users = 1;
          return lw_signo;
        }
    }

  if (sigaction (signo, NULL, &current) != 0)
    {
      g_set_error (error, LW_ERROR, LW_ERROR_SIGNAL, "signal %d is not valid: %s",
                   signo, g_strerror (errno));
      return 0;
    }

  if (lw_capture_disposition_is_free (&current) || explicit_choice)
    chosen = signo;
  else
    {
      /* The next free one after the preferred signal, wrapping around:
       * the low real-time signals are the ones other libraries pick. */
      int span = SIGRTMAX - SIGRTMIN + 1;

      for (int k = 1; k < span && chosen == 0; k++)
        {
          int s = SIGRTMIN + (signo - SIGRTMIN + k) % span;
          struct sigaction other;

          if (sigaction (s, NULL, &other) == 0 && !(other.sa_flags & SA_SIGINFO)
              && other.sa_handler == SIG_DFL)
            chosen = s;
        }
    }

  if (chosen == 0)
    {
      g_autofree char *name = lw_capture_signal_name (signo);

      g_set_error (error, LW_ERROR, LW_ERROR_SIGNAL,
                   "%s is handled by the program and no other real-time signal is free", name);
      return 0;
    }

  memset (&ours, 0, sizeof ours);
  ours.sa_sigaction = lw_capture_on_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset (&ours.sa_mask);
  if (sigaction (chosen, NULL, &lw_old_action) != 0 || sigaction (chosen, &ours, NULL) != 0)
    {
      g_set_error (error, LW_ERROR, LW_ERROR_SIGNAL, "cannot install a handler for signal %d: %s",
                   chosen, g_strerror (errno));
      return 0;
    }

  if (chosen != signo)
    {
      g_autofree char *wanted = lw_capture_signal_name (signo);
      g_autofree char *used = lw_capture_signal_name (chosen);

      g_message ("%s is already handled by the program; lagwatch uses %s instead "
                 "(set LAGWATCH_SIGNAL to choose one)", wanted, used);
    }
  else if (!lw_capture_disposition_is_free (&lw_old_action))
    {
      g_autofree char *used = lw_capture_signal_name (chosen);

      g_message ("%s is also handled by the program; lagwatch passes the program's "
                 "own %s signals on to its handler", used, used);
    }

  {
    cpu_set_t cpus;

    lw_capture_may_spin = sched_getaffinity (0, sizeof cpus, &cpus) == 0 && CPU_COUNT (&cpus) > 1;
  }
  lw_capture_uid = getuid ();
  if (!lw_capture_timers_decided)
    {
      /* The kernel and its configuration file do not change: looked at once. */
      lw_capture_timers_ok = lw_capture_kernel_defers_cpu_timers ();
      lw_capture_timers_decided = TRUE;
      if (!lw_capture_timers_ok)
        g_debug ("this kernel may queue a CPU-time timer's signal from the tick: "
                 "lags are sampled by explicit signals");
    }
  lw_signo = chosen;
  lw_signal_users = 1;
  return chosen;
}

/* Normal context, library lock held. */
void
lw_capture_release_signal (void)
{
  struct sigaction current;

  g_return_if_fail (lw_signal_users > 0);
  if (--lw_signal_users > 0)
    return;
  /* A sampling timer's last signal stays queued after timer_delete() if
   * its thread blocks the signal: seen only in the threads' pending sets. */
  if (atomic_load (&lw_signals_in_flight) > 0 || lw_threadinfo_signal_pending_anywhere (lw_signo))
    {
      g_debug ("a lagwatch signal is still queued: its handler stays installed");
      return;
    }
  if (sigaction (lw_signo, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO)
      && current.sa_sigaction == lw_capture_on_signal)
    sigaction (lw_signo, &lw_old_action, NULL);
  lw_signo = 0;
}

LwSnapshot *
lw_snapshot_new (size_t stack_bytes)
{
  LwSnapshot *snap = g_malloc0 (sizeof (LwSnapshot) + stack_bytes);

  snap->stack_capacity = stack_bytes;
  return snap;
}

void
lw_snapshot_free (LwSnapshot *snapshot)
{
  g_free (snapshot);
}

/* Watcher thread. Parses the text of /proc/self/task/TID/syscall. */
static void
lw_capture_parse_syscall (LwProcSyscall *out)
{
  if (g_str_has_prefix (out->text, "running"))
    out->running = TRUE;
  else
    {
      /* "NR ARG1 .. ARG6 SP PC", or "-1 SP PC" when blocked outside a call. */
      char *fields[9] = { 0 };
      int count = 0;
      char *save = NULL;
      char copy[sizeof out->text];

      memcpy (copy, out->text, sizeof copy);
      for (char *tok = strtok_r (copy, " \n", &save); tok != NULL && count < 9;
           tok = strtok_r (NULL, " \n", &save))
        fields[count++] = tok;
      if (count != 9 && count != 3)
        {
          out->running = TRUE;  /* unknown format: take it by signal */
          return;
        }
      out->nr = strtol (fields[0], NULL, 10);
      out->sp = (uintptr_t) strtoull (fields[count - 2], NULL, 16);
      out->pc = (uintptr_t) strtoull (fields[count - 1], NULL, 16);
    }
}

/* Watcher thread. Reads the syscall file of @tid: through the slot's open
 * file for the loop thread (one pread), opening it otherwise. FALSE when
 * the thread is gone. */
static gboolean
lw_capture_read_syscall (LwSlot *slot, pid_t tid, LwProcSyscall *out)
{
  gboolean cached = tid == atomic_load (&slot->loop_tid);
  int fd = -1;
  ssize_t n;

  memset (out, 0, sizeof *out);
  if (cached && slot->proc_syscall_fd >= 0 && slot->proc_syscall_tid == tid)
    fd = slot->proc_syscall_fd;
  else
    {
      char path[64];

      snprintf (path, sizeof path, "/proc/self/task/%d/syscall", (int) tid);
      fd = open (path, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        return FALSE;
      if (cached)
        {
          lw_capture_forget_thread (slot);
          slot->proc_syscall_fd = fd;
          slot->proc_syscall_tid = tid;
        }
    }
  n = pread (fd, out->text, sizeof out->text - 1, 0);
  if (!cached)
    close (fd);
  if (n <= 0)
    {
      if (cached)
        lw_capture_forget_thread (slot);  /* the thread is gone (ESRCH) */
      return FALSE;
    }
  out->text[n] = '\0';
  lw_capture_parse_syscall (out);
  return TRUE;
}

void
lw_capture_forget_thread (LwSlot *slot)
{
  if (slot->proc_syscall_fd >= 0)
    close (slot->proc_syscall_fd);
  slot->proc_syscall_fd = -1;
  slot->proc_syscall_tid = 0;
}

/* Watcher thread. The thread sleeps in the kernel: copy its stack from
 * here. TRUE when the copy is consistent (the thread did not move while we
 * copied: same /proc line before and after, same busy period). */
static gboolean
lw_capture_from_proc (LwSlot *slot, pid_t tid, const LwProcSyscall *before,
                      uint64_t busy_seq, uintptr_t lo, uintptr_t hi, LwSnapshot *snap)
{
  LwProcSyscall after;

  memset (snap->regs, 0, sizeof snap->regs);
  snap->regs[LW_REG_RIP] = before->pc;
  snap->regs[LW_REG_RSP] = before->sp;
  snap->regs_valid = (1u << LW_REG_RIP) | (1u << LW_REG_RSP);
  snap->syscall_nr = before->nr;
  snap->via_signal = 0;
  lw_capture_copy_stack (snap, before->sp, lo, hi);
  snap->taken_ns = lw_clock_now_ns ();

  return lw_capture_read_syscall (slot, tid, &after)
         && strcmp (after.text, before->text) == 0
         && (busy_seq == 0 || atomic_load (&slot->seq) == busy_seq);
}

/* Watcher thread. Waits a little for the handler by spinning: it has
 * usually copied the stack some 10 µs after the signal was sent, and a
 * watcher asleep on the semaphore costs a futex wake on the stuck thread
 * and the wake-up of an idle CPU here, measured at about as long again.
 * Only when the process may run on two CPUs (else the spin only delays the
 * thread it waits for), and bounded. TRUE when the handler is done. */
static gboolean
lw_capture_spin_until_done (LwCaptureRequest *req)
{
  int64_t until;

  if (!lw_capture_may_spin)
    return FALSE;
  until = lw_clock_now_ns () + LW_CAPTURE_SPIN_NS;
  do
    {
      for (int i = 0; i < 64; i++)
        {
          if (atomic_load (&req->state) == LW_CAPTURE_DONE)
            return TRUE;
          __builtin_ia32_pause ();
        }
    }
  while (lw_clock_now_ns () < until);
  return FALSE;
}

/* Watcher thread of @slot. Fills in a new request for @tid (not armed
 * yet) and returns its cookie, unique to it. */
static uintptr_t
lw_capture_prepare (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t lo, uintptr_t hi,
                    LwSnapshot *snap)
{
  LwCaptureRequest *req = &slot->capture;
  uintptr_t cookie = (uintptr_t) (LW_COOKIE_MAGIC << 48) | ((uintptr_t) slot->index << 40)
                     | (uintptr_t) (atomic_fetch_add (&lw_cookie_serial, 1) & UINT64_C (0xffffffffff));

  req->snapshot = snap;
  req->expect_seq = busy_seq;
  req->stack_lo = lo;
  req->stack_hi = hi;
  atomic_store (&req->target_tid, tid);
  atomic_store (&req->result, LW_CAPTURE_FAILED);
  atomic_store (&req->cookie, cookie);
  return cookie;
}

/* Watcher thread. Sends the signal of a new request for @tid: PENDING
 * once it is on its way. */
static LwCaptureResult
lw_capture_send_signal (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t lo, uintptr_t hi,
                        LwSnapshot *snap)
{
  LwCaptureRequest *req = &slot->capture;
  uintptr_t cookie;
  siginfo_t info;

  if (atomic_load (&req->in_flight))
    return LW_CAPTURE_IN_FLIGHT;

  while (sem_trywait (&req->done) == 0)
    ;
  cookie = lw_capture_prepare (slot, tid, busy_seq, lo, hi, snap);
  atomic_store (&req->in_flight, 1);
  atomic_fetch_add (&lw_signals_in_flight, 1);
  atomic_store (&req->state, LW_CAPTURE_ARMED);

  memset (&info, 0, sizeof info);
  info.si_signo = lw_signo;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid ();
  info.si_uid = lw_capture_uid;
  info.si_value.sival_ptr = (void *) cookie;
  req->sent_ns = lw_clock_now_ns ();
  if (syscall (SYS_rt_tgsigqueueinfo, info.si_pid, tid, lw_signo, &info) != 0)
    {
      int err = errno;

      atomic_store (&req->state, LW_CAPTURE_IDLE);
      atomic_store (&req->in_flight, 0);
      atomic_fetch_sub (&lw_signals_in_flight, 1);
      return err == ESRCH ? LW_CAPTURE_THREAD_GONE : LW_CAPTURE_FAILED;
    }
  return LW_CAPTURE_PENDING;
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_finish (LwSlot *slot, int64_t wait_ns, int64_t give_up_ns)
{
  LwCaptureRequest *req = &slot->capture;
  int armed = LW_CAPTURE_ARMED;
  int state = atomic_load (&req->state);

  if (state == LW_CAPTURE_IDLE)
    return LW_CAPTURE_FAILED;  /* nothing pending: a caller's mistake */
  if (state != LW_CAPTURE_DONE && wait_ns > 0 && !lw_capture_spin_until_done (req))
    {
      struct timespec deadline = lw_clock_timespec (lw_clock_now_ns () + wait_ns);

      /* A post can be left over from a request the spin saw done: only
       * the state says this one is. */
      while (atomic_load (&req->state) != LW_CAPTURE_DONE
             && (sem_clockwait (&req->done, CLOCK_MONOTONIC, &deadline) == 0 || errno == EINTR))
        ;
    }
  if (atomic_load (&req->state) != LW_CAPTURE_DONE)
    {
      if (lw_clock_now_ns () - req->sent_ns < give_up_ns)
        return LW_CAPTURE_PENDING;
      if (atomic_compare_exchange_strong (&req->state, &armed, LW_CAPTURE_ABANDONED))
        return LW_CAPTURE_TIMEOUT;
      /* The handler is copying right now: its time is bounded, wait. */
      while (atomic_load (&req->state) != LW_CAPTURE_DONE)
        sem_wait (&req->done);
    }
  atomic_store (&req->state, LW_CAPTURE_IDLE);
  return (LwCaptureResult) atomic_load (&req->result);
}

/* Watcher thread of @slot. One look at thread @tid through /proc, no
 * signal: OK when it sleeps in the kernel and its stack was copied; STALE,
 * THREAD_GONE; else PENDING, with *@running TRUE when it runs, FALSE when
 * it moved during the copy. */
static LwCaptureResult
lw_capture_look (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                 uintptr_t stack_hi, LwSnapshot *snap, gboolean *running)
{
  LwProcSyscall now;

  *running = FALSE;
  if (busy_seq != 0 && atomic_load (&slot->seq) != busy_seq)
    return LW_CAPTURE_STALE;
  if (tid == 0 || !lw_capture_read_syscall (slot, tid, &now))
    return LW_CAPTURE_THREAD_GONE;
  *running = now.running;
  if (!now.running && lw_capture_from_proc (slot, tid, &now, busy_seq, stack_lo, stack_hi, snap))
    return LW_CAPTURE_OK;
  return LW_CAPTURE_PENDING;
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_start (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                  uintptr_t stack_hi, LwSnapshot *snap)
{
  snap->regs_valid = 0;
  snap->stack_len = 0;
  snap->syscall_nr = -1;

  for (int attempt = 0; attempt < 3; attempt++)
    {
      gboolean running;
      LwCaptureResult result = lw_capture_look (slot, tid, busy_seq, stack_lo, stack_hi, snap,
                                                &running);

      if (result != LW_CAPTURE_PENDING)
        return result;
      if (running)
        break;
    }

  if (lw_signo == 0)
    return LW_CAPTURE_FAILED;
  return lw_capture_send_signal (slot, tid, busy_seq, stack_lo, stack_hi, snap);
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_take_thread (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                        uintptr_t stack_hi, LwSnapshot *snap, int64_t timeout_ns)
{
  LwCaptureResult result = lw_capture_start (slot, tid, busy_seq, stack_lo, stack_hi, snap);

  if (result == LW_CAPTURE_PENDING)
    result = lw_capture_finish (slot, timeout_ns, timeout_ns);
  return result;
}

/* Watcher thread of @slot. */
gboolean
lw_capture_periodic_start (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                           uintptr_t stack_hi, LwSnapshot *snap, int64_t interval_ns)
{
  LwCaptureRequest *req = &slot->capture;
  struct sigevent event;
  uintptr_t cookie;

  g_return_val_if_fail (!req->periodic, FALSE);
  /* A signal still queued for an earlier request must find that request's
   * cookie to be recognised (and to clear in_flight). */
  if (!lw_capture_timers_ok || lw_signo == 0 || atomic_load (&req->in_flight))
    return FALSE;

  cookie = lw_capture_prepare (slot, tid, busy_seq, stack_lo, stack_hi, snap);
  memset (&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = lw_signo;
  event.sigev_value.sival_ptr = (void *) cookie;
  event._sigev_un._tid = tid;  /* sigev_notify_thread_id: glibc 2.36 lacks the name */
  if (timer_create (lw_threadinfo_cpu_clock (tid), &event, &req->timer) != 0)
    {
      g_debug ("no CPU-time timer for thread %d (%s): sampling by explicit signals",
               (int) tid, g_strerror (errno));
      atomic_store (&req->cookie, 0);
      return FALSE;
    }
  req->periodic = TRUE;
  atomic_store (&req->state, LW_CAPTURE_ARMED);
  lw_capture_periodic_set_interval (slot, interval_ns);
  return TRUE;
}

gboolean
lw_capture_periodic_supported (void)
{
  return lw_capture_timers_ok;
}

/* Watcher thread of @slot, between start and stop. */
void
lw_capture_periodic_set_interval (LwSlot *slot, int64_t interval_ns)
{
  struct itimerspec spec;

  spec.it_value = lw_clock_timespec (interval_ns);
  spec.it_interval = spec.it_value;
  timer_settime (slot->capture.timer, 0, &spec, NULL);
}

/* Watcher thread of @slot, between start and stop. */
LwCaptureResult
lw_capture_periodic_take (LwSlot *slot, gboolean look)
{
  LwCaptureRequest *req = &slot->capture;
  int armed = LW_CAPTURE_ARMED;
  gboolean running;

  if (atomic_load (&req->state) == LW_CAPTURE_DONE)
    {
      atomic_store (&req->state, LW_CAPTURE_IDLE);
      return (LwCaptureResult) atomic_load (&req->result);
    }
  /* Held from here (IDLE): no expiry can write the snapshot until re-armed.
   * If the handler holds it instead, its stack is taken next time. */
  if (!look || !atomic_compare_exchange_strong (&req->state, &armed, LW_CAPTURE_IDLE))
    return LW_CAPTURE_PENDING;
  /* PENDING when it runs (or just woke): the timer takes it. */
  return lw_capture_look (slot, atomic_load (&req->target_tid), req->expect_seq, req->stack_lo,
                          req->stack_hi, req->snapshot, &running);
}

/* Watcher thread of @slot, between start and stop. */
void
lw_capture_periodic_rearm (LwSlot *slot)
{
  int idle = LW_CAPTURE_IDLE;

  atomic_compare_exchange_strong (&slot->capture.state, &idle, LW_CAPTURE_ARMED);
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_periodic_stop (LwSlot *slot)
{
  LwCaptureRequest *req = &slot->capture;
  int armed = LW_CAPTURE_ARMED;

  if (!req->periodic)
    return LW_CAPTURE_STALE;
  timer_delete (req->timer);
  req->periodic = FALSE;
  /* An expiry's signal still queued (the thread blocks it) is ignored. */
  atomic_store (&req->cookie, 0);
  if (atomic_compare_exchange_strong (&req->state, &armed, LW_CAPTURE_IDLE))
    return LW_CAPTURE_STALE;
  /* The handler is copying: its time is bounded; let it run. */
  while (atomic_load (&req->state) == LW_CAPTURE_WRITING)
    sched_yield ();
  if (atomic_load (&req->state) != LW_CAPTURE_DONE)
    return LW_CAPTURE_STALE;  /* held by the watcher already */
  atomic_store (&req->state, LW_CAPTURE_IDLE);
  return (LwCaptureResult) atomic_load (&req->result);
}
