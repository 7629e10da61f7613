/* lw-capture.c: registers and stack of the stuck thread, by /proc or by signal
 *
 * The signal handler and the stack copy live in lw-capture-core.c, built
 * without GLib (lw-capture-core.h). This file decides, on the watcher
 * thread, how each stack is taken, and installs the handler; what /proc
 * shows of the thread (running or asleep, a sleeping stack, its mask) is
 * lw-capture-proc.c's, sampling by a CPU-time timer during a lag
 * lw-capture-periodic.c's.
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
 *
 * The thread's status file is what tells its mask, and it is read before
 * the send, never after: a signal sent to a thread that blocks it cannot
 * be taken back, and a signalfd or sigwaitinfo() of the program would take
 * it as its own. For the loop thread last seen running, that read comes
 * first and its State line stands for the syscall file's verdict.
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
/* When, in the spin, the watcher looks whether the thread runs at all: its
 * CPU time, read once the signal is sent, grows within any microsecond
 * while it is on a CPU (in the kernel too, delivering the signal); the
 * watcher on the thread's own CPU learns it is in the way after 1 µs. */
#define LW_CAPTURE_SPIN_LOOK_NS (1 * 1000)

/* A thread found blocking the signal is looked at again this often, this
 * many times (1 ms in all): see lw_capture_may_signal(). */
#define LW_CAPTURE_MASK_RETRY_NS (200 * 1000)
#define LW_CAPTURE_MASK_RETRIES  5

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
  /* @stack_bytes above the stack pointer, and the red zone below it. */
  size_t capacity = stack_bytes + LW_CORE_RED_ZONE_BYTES;
  LwSnapshot *snap = g_malloc0 (sizeof (LwSnapshot) + capacity);

  snap->stack_capacity = capacity;
  return snap;
}

void
lw_snapshot_free (LwSnapshot *snapshot)
{
  g_free (snapshot);
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
 * @tid now (lw_capture_may_signal()). With @only_running, PENDING when the
 * thread's status does not say it runs (or cannot say): then nothing is
 * decided, and the caller looks at it through /proc first. */
static LwCaptureResult
lw_capture_check_signal (LwSlot *slot, pid_t tid, gboolean only_running)
{
  gboolean blocked, pending;
  char state;

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

      if (!lw_capture_signal_state (slot, tid, lw_signo, &blocked, &pending, &state))
        return only_running ? LW_CAPTURE_PENDING
               : lw_threadinfo_exists (tid) ? LW_CAPTURE_FAILED : LW_CAPTURE_THREAD_GONE;
      /* Asleep in a call (or stopped): its stack is taken through /proc,
       * never by a signal that would cut the call short. */
      if (only_running && state != 'R')
        {
          slot->proc_seen_running = FALSE;
          return LW_CAPTURE_PENDING;
        }
      if (!blocked || retry == LW_CAPTURE_MASK_RETRIES
          || (tid != slot->capture.target_tid && tid != atomic_load (&slot->loop_tid)))
        break;
      nanosleep (&pause, NULL);
    }
  /* Blocked by lagwatch's own handler still running there (the timer's,
   * another watch's, or one preempted before its return on a busy
   * machine for longer than the looks above): not the program's mask, and
   * no second signal goes into it. */
  if (blocked && lw_core_handler_runs (tid))
    return LW_CAPTURE_IN_HANDLER;
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

/* Watcher thread of @slot. Whether lagwatch's signal may go to thread
 * @tid now: OK; SIGNAL_TAKEN (never again); BLOCKED (not this thread);
 * IN_FLIGHT (one of ours is still queued for it); IN_HANDLER (lagwatch's
 * handler runs there still); THREAD_GONE; FAILED. */
LwCaptureResult
lw_capture_may_signal (LwSlot *slot, pid_t tid)
{
  return lw_capture_check_signal (slot, tid, FALSE);
}

/* Watcher thread. Sends the signal of a new request for @tid, which
 * lw_capture_check_signal() allowed: PENDING once it is on its way. */
static LwCaptureResult
lw_capture_send_signal (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t lo, uintptr_t hi,
                        LwSnapshot *snap)
{
  LwCaptureRequest *req = &slot->capture;
  uintptr_t cookie;
  siginfo_t info;

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

/* Watcher thread of @slot. */
LwCaptureResult
lw_capture_start (LwSlot *slot, pid_t tid, uint64_t busy_seq, uintptr_t stack_lo,
                  uintptr_t stack_hi, LwSnapshot *snap)
{
  LwCaptureResult allowed;

  if (lw_capture_handler_busy (slot))
    return LW_CAPTURE_IN_HANDLER;
  snap->regs_valid = 0;
  snap->stack_len = 0;
  snap->lang_len = 0;
  snap->lang_ns = 0;
  snap->syscall_nr = -1;

  /* The loop thread, running at the last look: its status file first. Its
   * State line says whether it runs as the syscall file would (both show
   * the kernel's state of the task: "running" there is R here), beside
   * the masks read before any signal, so a thread that still runs costs
   * one file read, not two. A thread that sleeps now is looked at through
   * /proc as below. */
  if (slot->proc_seen_running && tid != 0 && tid == atomic_load (&slot->loop_tid))
    {
      if (busy_seq != 0 && atomic_load (&slot->seq) != busy_seq)
        return LW_CAPTURE_STALE;
      allowed = lw_capture_check_signal (slot, tid, TRUE);
      if (allowed == LW_CAPTURE_OK)
        return lw_capture_send_signal (slot, tid, busy_seq, stack_lo, stack_hi, snap);
      if (allowed != LW_CAPTURE_PENDING)
        return allowed;
    }

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
  allowed = lw_capture_check_signal (slot, tid, FALSE);
  if (allowed != LW_CAPTURE_OK)
    return allowed;
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
