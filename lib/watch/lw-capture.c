/* lw-capture.c: registers and stack of the stuck thread, by /proc or by signal
 *
 * The signal handler and the stack copy live in lw-capture-core.c, built
 * without GLib (lw-capture-core.h). This file decides, on the watcher
 * thread, how each stack is taken, and installs the handler; sampling by a
 * CPU-time timer during a lag is lw-capture-periodic.c's.
 *
 * Before every signal (an explicit one, or arming a CPU-time timer) the
 * watcher checks that the signal is still lagwatch's and may be sent: its
 * handler is still installed (a program may reset every signal to SIG_DFL,
 * whose default action would kill it; install its own handler or SIG_IGN;
 * or block it on the loop thread and read it through a signalfd, which
 * would hand lagwatch's signal to the program as its own), the thread does
 * not block it (a running thread that blocks it keeps it pending forever:
 * GLib's worker threads block every signal), and none of ours is still
 * queued for it. A program that took the signal over is never sent
 * another (said once); stacks are then taken from /proc only, which shows
 * the stacks of threads asleep in a system call.
 */
#include "lw-seccomp.h"
#include "lw-capture.h"
#include "lw-capture-private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lw-clock.h"
#include "lw-private.h"
#include "lw-threadinfo.h"
#include "lw-say.h"
#include "lw-fd.h"

/* Signal state, process-wide. Written under the library lock in normal
 * context, read by watcher threads. */
static int               lw_signo;
static unsigned          lw_signal_users;
static struct sigaction  lw_old_action;
static _Atomic int       lw_signal_taken;       /* the program took the signal over: send no more */
static _Atomic uint64_t  lw_cookie_serial;
static gboolean          lw_capture_may_spin;   /* more than one CPU to run on */
static uid_t             lw_capture_uid;        /* si_uid of our signals: informative only */
static gboolean          lw_capture_timers_ok;  /* CPU-time timers never cut a call short here */
static gboolean          lw_capture_timers_decided;

#define LW_CAPTURE_SPIN_NS (50 * 1000)
/* When, in the spin, the watcher looks whether the thread runs at all. */
#define LW_CAPTURE_SPIN_LOOK_NS (5 * 1000)

/* A thread found blocking the signal is looked at again this often, this
 * many times (1 ms in all): see lw_capture_may_signal(). */
#define LW_CAPTURE_MASK_RETRY_NS (200 * 1000)
#define LW_CAPTURE_MASK_RETRIES  5

/* What reading /proc/self/task/TID/syscall gave. */
typedef enum
{
  LW_SYSCALL_READ,
  LW_SYSCALL_GONE,    /* the thread no longer exists */
  LW_SYSCALL_CLOSED,  /* it exists, but the file is closed to us (not dumpable) */
} LwSyscallRead;

int
lw_capture_get_signal (void)
{
  return lw_signal_users > 0 ? lw_signo : 0;
}

static char *
lw_capture_signal_name (int signo)
{
  if (signo - SIGRTMIN <= SIGRTMAX - signo)
    return g_strdup_printf ("SIGRTMIN+%d", signo - SIGRTMIN);
  return g_strdup_printf ("SIGRTMAX-%d", SIGRTMAX - signo);
}

/* Watcher thread. */
int
lw_capture_signal_number (void)
{
  return lw_signo;
}

/* Watcher thread. */
gboolean
lw_capture_timers_usable (void)
{
  return lw_capture_timers_ok;
}

/* Any thread. */
gboolean
lw_capture_signal_is_taken (void)
{
  return atomic_load (&lw_signal_taken);
}

/* Any thread. TRUE when @action is lagwatch's handler. */
static gboolean
lw_capture_is_ours (const struct sigaction *action)
{
  return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == lw_core_on_signal;
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
      if (lw_capture_is_ours (&current))
        {
          lw_signal_users = 1;
          atomic_store (&lw_signal_taken, 0);
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
  ours.sa_sigaction = lw_core_on_signal;
  /* SA_ONSTACK: on the loop thread, the kernel's signal frame (about
   * 3.4 KiB with AVX-512 state) goes to the alternate stack of
   * lw_altstack_prepare(), so a lag deep in the stack survives. */
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset (&ours.sa_mask);
  if (sigaction (chosen, NULL, &lw_old_action) != 0)
    {
      g_set_error (error, LW_ERROR, LW_ERROR_SIGNAL, "cannot install a handler for signal %d: %s",
                   chosen, g_strerror (errno));
      return 0;
    }
  lw_core_set_chained (&lw_old_action);
  if (sigaction (chosen, &ours, NULL) != 0)
    {
      g_set_error (error, LW_ERROR, LW_ERROR_SIGNAL, "cannot install a handler for signal %d: %s",
                   chosen, g_strerror (errno));
      return 0;
    }

  if (chosen != signo)
    {
      g_autofree char *wanted = lw_capture_signal_name (signo);
      g_autofree char *used = lw_capture_signal_name (chosen);

      lw_say ("%s is already handled by the program; lagwatch uses %s instead "
              "(set LAGWATCH_SIGNAL to choose one)", wanted, used);
    }
  else if (!lw_capture_disposition_is_free (&lw_old_action))
    {
      g_autofree char *used = lw_capture_signal_name (chosen);

      lw_say ("%s is also handled by the program; lagwatch passes the program's "
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
  atomic_store (&lw_signal_taken, 0);
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
  if (lw_core_signals_in_flight () > 0 || lw_threadinfo_signal_pending_anywhere (lw_signo))
    {
      g_debug ("a lagwatch signal is still queued: its handler stays installed");
      return;
    }
  if (sigaction (lw_signo, NULL, &current) == 0 && lw_capture_is_ours (&current))
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


/* Watcher thread. Reads the syscall file of @tid: through the slot's open
 * file for the loop thread (one pread), opening it otherwise. A file that
 * cannot be read is not proof that the thread is gone: in a process that
 * is not dumpable (setuid or setgid programs, prctl (PR_SET_DUMPABLE, 0))
 * it belongs to root and stays closed to the process itself. */
/* Watcher thread of @slot. The /proc files kept open for the loop thread
 * are still the files opened: if the program closed them (and reused the
 * numbers) or dup2()ed something over them, the numbers are the
 * program's, never read nor closed again (said once); they are reopened
 * at the next read. */
static void
lw_capture_check_kept (LwSlot *slot)
{
  static gint said;
  int lost = -1;

  if (slot->proc_syscall_fd >= 0 && !lw_fd_is (slot->proc_syscall_fd, &slot->proc_syscall_id))
    {
      lost = slot->proc_syscall_fd;
      slot->proc_syscall_fd = -1;
      slot->proc_syscall_tid = 0;
    }
  if (slot->proc_status_fd >= 0 && !lw_fd_is (slot->proc_status_fd, &slot->proc_status_id))
    {
      lost = slot->proc_status_fd;
      slot->proc_status_fd = -1;
    }
  if (lost >= 0 && g_atomic_int_compare_and_exchange (&said, 0, 1))
    lw_say ("the program closed or replaced descriptor %d, which held a /proc file of the loop thread: "
            "reopened by path", lost);
}

/* Watcher thread of @slot (lw_capture_read_syscall(), described above).
 * Another thread's file is read through *@other_fd when it is open, else
 * opened into it for the caller to close (NULL: opened and closed here):
 * one look at a sleeping thread reads the file twice (before and after the
 * copy of its stack), and a hang's snapshot looks at every thread; one
 * open instead of two saves a path walk through /proc each. */
static LwSyscallRead
lw_capture_read_syscall (LwSlot *slot, pid_t tid, LwProcSyscall *out, int *other_fd)
{
  gboolean cached = tid == atomic_load (&slot->loop_tid);
  char text[256];
  int fd = -1;
  ssize_t n;

  if (cached)
    lw_capture_check_kept (slot);
  if (cached && slot->proc_syscall_fd >= 0 && slot->proc_syscall_tid == tid)
    fd = slot->proc_syscall_fd;
  else if (!cached && other_fd != NULL && *other_fd >= 0)
    fd = *other_fd;
  else
    {
      char path[64];

      snprintf (path, sizeof path, "/proc/self/task/%d/syscall", (int) tid);
      fd = open (path, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        return lw_threadinfo_exists (tid) ? LW_SYSCALL_CLOSED : LW_SYSCALL_GONE;
      if (cached)
        {
          lw_capture_forget_thread (slot);
          slot->proc_syscall_fd = fd;
          lw_fd_id_take (fd, &slot->proc_syscall_id);
          slot->proc_syscall_tid = tid;
        }
    }
  n = pread (fd, text, sizeof text, 0);
  if (!cached && other_fd != NULL && n > 0)
    *other_fd = fd;
  else if (!cached)
    {
      close (fd);
      if (other_fd != NULL)
        *other_fd = -1;
    }
  if (n <= 0)
    {
      if (cached)
        lw_capture_forget_thread (slot);
      return lw_threadinfo_exists (tid) ? LW_SYSCALL_CLOSED : LW_SYSCALL_GONE;
    }
  lw_threadinfo_parse_syscall (text, (gsize) n, out);
  return LW_SYSCALL_READ;
}

/* Watcher thread of @slot. */
void
lw_capture_forget_thread (LwSlot *slot)
{
  if (slot->proc_syscall_fd >= 0)
    lw_fd_close (slot->proc_syscall_fd, &slot->proc_syscall_id);
  slot->proc_syscall_fd = -1;
  slot->proc_syscall_tid = 0;
  if (slot->proc_status_fd >= 0)
    lw_fd_close (slot->proc_status_fd, &slot->proc_status_id);
  slot->proc_status_fd = -1;
}

/* Watcher thread of @slot. Signal @signo as thread @tid sees it
 * (lw_threadinfo_signal_state()). For the loop thread, whose syscall file
 * is open already, through its status file kept open beside it: one pread
 * (measured 3 µs) instead of a path walk, an allocation and two reads
 * (8-11 µs), before every signal. */
static gboolean
lw_capture_signal_state (LwSlot *slot, pid_t tid, int signo, gboolean *blocked, gboolean *pending)
{
  char text[4096];
  ssize_t n = -1;

  lw_capture_check_kept (slot);
  if (tid != slot->proc_syscall_tid || slot->proc_syscall_fd < 0)
    return lw_threadinfo_signal_state (tid, signo, blocked, pending);
  if (slot->proc_status_fd < 0)
    {
      char path[64];

      snprintf (path, sizeof path, "/proc/self/task/%d/status", (int) tid);
      slot->proc_status_fd = open (path, O_RDONLY | O_CLOEXEC);
      lw_fd_id_take (slot->proc_status_fd, &slot->proc_status_id);
    }
  if (slot->proc_status_fd >= 0)
    n = pread (slot->proc_status_fd, text, sizeof text, 0);
  if (n > 0 && lw_threadinfo_parse_signal_state (text, (gsize) n, signo, blocked, pending))
    return TRUE;
  /* Gone, closed to us, or cut short: the file is read the long way. */
  return lw_threadinfo_signal_state (tid, signo, blocked, pending);
}

/* Watcher thread. The thread sleeps in the kernel: copy its stack from
 * here. TRUE when the copy is consistent (the thread did not move while we
 * copied: same /proc line before and after, same busy period). */
static gboolean
lw_capture_from_proc (LwSlot *slot, pid_t tid, int *other_fd, const LwProcSyscall *before,
                      uint64_t busy_seq, uintptr_t lo, uintptr_t hi, LwSnapshot *snap)
{
  LwProcSyscall after;

  memset (snap->regs, 0, sizeof snap->regs);
  snap->regs[LW_REG_RIP] = before->pc;
  snap->regs[LW_REG_RSP] = before->sp;
  snap->regs_valid = (1u << LW_REG_RIP) | (1u << LW_REG_RSP);
  snap->syscall_nr = before->nr;
  snap->via_signal = 0;
  snap->lang_len = 0;
  snap->lang_ns = 0;
  lw_core_copy_stack (snap, before->sp, lo, hi);
  snap->taken_ns = lw_clock_now_ns ();

  return lw_capture_read_syscall (slot, tid, &after, other_fd) == LW_SYSCALL_READ
         && !after.running && after.nr == before->nr && after.sp == before->sp
         && after.pc == before->pc && memcmp (after.args, before->args, sizeof after.args) == 0
         && (busy_seq == 0 || atomic_load (&slot->seq) == busy_seq);
}

/* Watcher thread. Waits a little for the handler by spinning: it has
 * usually copied the stack some 10 µs after the signal was sent, and a
 * watcher asleep on the semaphore costs a futex wake on the stuck thread
 * and the wake-up of an idle CPU here, measured at about as long again.
 * Only when the process may run on two CPUs, only while the thread it
 * waits for runs (else the spin only delays it), and bounded. TRUE when
 * the handler is done. */
static gboolean
lw_capture_spin_until_done (LwCaptureRequest *req, uint64_t done)
{
  int64_t start, cpu_ns;
  gboolean looked = FALSE;

  if (!lw_capture_may_spin)
    return FALSE;
  cpu_ns = lw_threadinfo_cpu_ns (req->target_tid);
  start = lw_clock_now_ns ();
  do
    {
      for (int i = 0; i < 64; i++)
        {
          if (atomic_load (&req->word) == done)
            return TRUE;
          __builtin_ia32_pause ();
        }
      /* A thread whose CPU time stands still is not on a CPU: it waits
       * for one, often this very one, which a loaded machine gives the
       * watcher (the CPU of a spinning thread is the one the balancer
       * keeps lightest). Spinning on would keep it from the handler. */
      if (!looked && cpu_ns >= 0 && lw_clock_now_ns () - start >= LW_CAPTURE_SPIN_LOOK_NS)
        {
          looked = TRUE;
          if (lw_threadinfo_cpu_ns (req->target_tid) == cpu_ns)
            return FALSE;
        }
    }
  while (lw_clock_now_ns () - start < LW_CAPTURE_SPIN_NS);
  return FALSE;
}

/* Watcher thread. Sleeps on @req's semaphore until its word is @done or
 * @wait_ns passed. A post can be left over from an earlier request: only
 * the word says this one is done. */
static void
lw_capture_wait_done (LwCaptureRequest *req, uint64_t done, int64_t wait_ns)
{
  struct timespec deadline = lw_clock_timespec (lw_clock_now_ns () + wait_ns);

  while (atomic_load (&req->word) != done
         && (sem_clockwait (&req->done, CLOCK_MONOTONIC, &deadline) == 0 || errno == EINTR))
    ;
}

/* Watcher thread of @slot. TRUE while a handler is still copying into the
 * snapshot for an earlier request (the watcher gave it up): nothing may
 * write the snapshot until it has finished. */
gboolean
lw_capture_handler_busy (LwSlot *slot)
{
  return LW_REQUEST_STATE (atomic_load (&slot->capture.word)) == LW_CAPTURE_WRITING;
}

/* Watcher thread of @slot, no handler busy (lw_capture_handler_busy()).
 * Fills in a new request for @tid, not armed yet, and returns its cookie,
 * unique to it. */
uintptr_t
lw_capture_prepare (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t lo, uintptr_t hi,
                    LwSnapshot *snap)
{
  LwCaptureRequest *req = &slot->capture;
  uint64_t serial = (atomic_fetch_add (&lw_cookie_serial, 1) + 1) & LW_COOKIE_SERIAL_MASK;

  req->snapshot = snap;
  req->expect_seq = busy_seq;
  req->seq = &slot->seq;
  req->wake = &slot->wake;
  req->stack_lo = lo;
  req->stack_hi = hi;
  req->target_tid = tid;
  req->serial = serial;
  atomic_store (&req->result, LW_CAPTURE_FAILED);
  /* Not armed: a signal of this serial finds nothing to claim yet. */
  atomic_store (&req->word, LW_REQUEST_WORD (serial, LW_CAPTURE_IDLE));
  lw_core_register_request (slot->index, req);
  return LW_COOKIE (slot->index, serial);
}

/* Watcher thread. Says once that the program took the signal over, and
 * stops sending it. @how: what the program did. */
static void
lw_capture_signal_taken (const char *how)
{
  g_autofree char *name = NULL;

  if (atomic_exchange (&lw_signal_taken, 1))
    return;
  name = lw_capture_signal_name (lw_signo);
  lw_say ("the program took over %s after lagwatch_attach() (%s); lagwatch sends it no more: "
          "stacks are taken only while a thread sleeps in a system call", name, how);
}

/* Watcher thread. TRUE while lagwatch's handler is still the signal's
 * disposition; else the program took the signal over: said once, and
 * FALSE from then on. One system call. */
gboolean
lw_capture_signal_still_ours (void)
{
  struct sigaction current;

  if (atomic_load (&lw_signal_taken))
    return FALSE;
  if (sigaction (lw_signo, NULL, &current) == 0 && lw_capture_is_ours (&current))
    return TRUE;
  lw_capture_signal_taken (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL
                             ? "reset to SIG_DFL, which would terminate it"
                           : !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN
                             ? "set to SIG_IGN"
                             : "a handler of its own");
  return FALSE;
}

/* Watcher thread of @slot. Whether lagwatch's signal may go to thread
 * @tid now: OK; SIGNAL_TAKEN (never again); BLOCKED (not this thread);
 * IN_FLIGHT (one of ours is still queued for it); THREAD_GONE; FAILED. */
LwCaptureResult
lw_capture_may_signal (LwSlot *slot, pid_t tid)
{
  gboolean blocked, pending;

  if (lw_signo == 0)
    return LW_CAPTURE_FAILED;
  if (!lw_capture_signal_still_ours ())
    return LW_CAPTURE_SIGNAL_TAKEN;
  /* A thread still returning from our previous handler has the signal
   * blocked until its sigreturn: often just then, as the handler's post
   * woke this watcher onto its CPU, or because another watch's handler
   * runs on the same loop thread. Let the last request's thread and the
   * loop thread finish (bounded) before calling the mask their own; any
   * other thread's mask is taken as it is (a hang's snapshot meets many
   * threads that block every signal). */
  for (int retry = 0; ; retry++)
    {
      struct timespec pause = { 0, LW_CAPTURE_MASK_RETRY_NS };

      if (!lw_capture_signal_state (slot, tid, lw_signo, &blocked, &pending))
        return lw_threadinfo_exists (tid) ? LW_CAPTURE_FAILED : LW_CAPTURE_THREAD_GONE;
      if (!blocked || retry == LW_CAPTURE_MASK_RETRIES
          || (tid != slot->capture.target_tid && tid != atomic_load (&slot->loop_tid)))
        break;
      nanosleep (&pause, NULL);
    }
  if (blocked && tid == atomic_load (&slot->loop_tid) && lw_threadinfo_signalfd_reads (lw_signo))
    {
      lw_capture_signal_taken ("read through a signalfd");
      return LW_CAPTURE_SIGNAL_TAKEN;
    }
  if (blocked)
    return LW_CAPTURE_BLOCKED;
  if (pending)
    return LW_CAPTURE_IN_FLIGHT;
  return LW_CAPTURE_OK;
}

/* Watcher thread. Sends the signal of a new request for @tid: PENDING
 * once it is on its way. */
static LwCaptureResult
lw_capture_send_signal (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t lo, uintptr_t hi,
                        LwSnapshot *snap)
{
  LwCaptureRequest *req = &slot->capture;
  LwCaptureResult allowed = lw_capture_may_signal (slot, tid);
  uintptr_t cookie;
  siginfo_t info;

  if (allowed != LW_CAPTURE_OK)
    return allowed;
  while (sem_trywait (&req->done) == 0)
    ;
  cookie = lw_capture_prepare (slot, tid, busy_seq, lo, hi, snap);
  lw_core_count_signal (1);
  atomic_store (&req->word, LW_REQUEST_WORD (req->serial, LW_CAPTURE_ARMED));

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

      atomic_store (&req->word, LW_REQUEST_WORD (req->serial, LW_CAPTURE_IDLE));
      lw_core_count_signal (-1);
      return err == ESRCH ? LW_CAPTURE_THREAD_GONE : LW_CAPTURE_FAILED;
    }
  return LW_CAPTURE_PENDING;
}

/* Watcher thread. TRUE when the thread of @req's request (still armed,
 * so its signal is still queued for it: a queued real-time signal is
 * never lost) is runnable and does not block the signal: it has not
 * answered only because it has not had a CPU yet (a loaded machine), and
 * answers the moment it gets one. Not a thread that ignores the signal,
 * and not one to send another to (IN_FLIGHT). */
static gboolean
lw_capture_waits_for_cpu (const LwCaptureRequest *req)
{
  return lw_threadinfo_state (req->target_tid) == LW_THREAD_RUNNING
         && !lw_threadinfo_blocks_signal (req->target_tid, lw_signo);
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_finish (LwSlot *slot, int64_t wait_ns, int64_t give_up_ns)
{
  LwCaptureRequest *req = &slot->capture;
  uint64_t armed = LW_REQUEST_WORD (req->serial, LW_CAPTURE_ARMED);
  uint64_t done = LW_REQUEST_WORD (req->serial, LW_CAPTURE_DONE);
  uint64_t word = atomic_load (&req->word);

  if (LW_REQUEST_SERIAL (word) != req->serial || LW_REQUEST_STATE (word) == LW_CAPTURE_IDLE)
    return LW_CAPTURE_FAILED;  /* nothing pending: a caller's mistake */
  if (word != done && wait_ns > 0 && !lw_capture_spin_until_done (req, done))
    lw_capture_wait_done (req, done, wait_ns);
  if (atomic_load (&req->word) != done)
    {
      /* Given up, the request would leave its signal queued, and the
       * next one would find it there (IN_FLIGHT) for as long as the
       * thread waits for a CPU: the lag would get no stack at all. */
      if (lw_clock_now_ns () - req->sent_ns < give_up_ns
          || (give_up_ns > 0 && lw_capture_waits_for_cpu (req)))
        return LW_CAPTURE_PENDING;
      if (atomic_compare_exchange_strong (&req->word, &armed,
                                          LW_REQUEST_WORD (req->serial, LW_CAPTURE_ABANDONED)))
        return LW_CAPTURE_TIMEOUT;
      /* The handler is copying: that takes microseconds, unless its
       * thread was preempted or stopped right there. Bounded: past the
       * wait it is left to finish alone (lw_capture_handler_busy()). */
      lw_capture_wait_done (req, done, LW_CAPTURE_WRITING_WAIT_NS);
      if (atomic_load (&req->word) != done)
        return LW_CAPTURE_TIMEOUT;
    }
  atomic_store (&req->word, LW_REQUEST_WORD (req->serial, LW_CAPTURE_IDLE));
  return (LwCaptureResult) atomic_load (&req->result);
}

/* Watcher thread of @slot. One look at thread @tid through /proc, no
 * signal: OK when it sleeps in the kernel and its stack was copied; STALE,
 * THREAD_GONE, PROC_CLOSED (it sleeps, and /proc hides where); else
 * PENDING, with *@running TRUE when it runs, FALSE when it moved during
 * the copy. */
LwCaptureResult
lw_capture_look (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                 uintptr_t stack_hi, LwSnapshot *snap, gboolean *running)
{
  LwProcSyscall now;
  int other_fd = -1;
  gboolean ok;

  *running = FALSE;
  if (busy_seq != 0 && atomic_load (&slot->seq) != busy_seq)
    return LW_CAPTURE_STALE;
  if (tid == 0)
    return LW_CAPTURE_THREAD_GONE;
  switch (lw_capture_read_syscall (slot, tid, &now, &other_fd))
    {
    case LW_SYSCALL_GONE:
      return LW_CAPTURE_THREAD_GONE;
    case LW_SYSCALL_CLOSED:
      /* The stat file stays readable: a running thread is taken by signal. */
      switch (lw_threadinfo_state (tid))
        {
        case LW_THREAD_GONE:
          return LW_CAPTURE_THREAD_GONE;
        case LW_THREAD_RUNNING:
          *running = TRUE;
          return LW_CAPTURE_PENDING;
        default:
          return LW_CAPTURE_PROC_CLOSED;
        }
    case LW_SYSCALL_READ:
      break;
    }
  *running = now.running;
  ok = !now.running && lw_capture_from_proc (slot, tid, &other_fd, &now, busy_seq, stack_lo, stack_hi, snap);
  if (other_fd >= 0)
    close (other_fd);
  return ok ? LW_CAPTURE_OK : LW_CAPTURE_PENDING;
}

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_start (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                  uintptr_t stack_hi, LwSnapshot *snap)
{
  if (lw_capture_handler_busy (slot))
    return LW_CAPTURE_IN_FLIGHT;
  snap->regs_valid = 0;
  snap->stack_len = 0;
  snap->lang_len = 0;
  snap->lang_ns = 0;
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
  /* A thread still waiting for a CPU: the wait is bounded here. */
  if (result == LW_CAPTURE_PENDING)
    result = lw_capture_finish (slot, 0, 0);
  return result;
}
