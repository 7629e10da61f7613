/* lw-capture-proc.c: the stuck thread seen through /proc, no signal
 *
 * The watcher's side of a capture that reads /proc/self/task/TID: whether
 * the thread runs or sleeps in a system call (its syscall file), the
 * stack of a sleeping thread copied from here, and its signal mask and
 * pending set (its status file), read before any signal (lw-capture.c
 * decides). The loop thread's two files stay open in its slot, each
 * checked before it is read.
 */
#include "lw-capture.h"
#include "lw-capture-private.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lw-capture-core.h"
#include "lw-clock.h"
#include "lw-fd.h"
#include "lw-say.h"
#include "lw-threadinfo.h"

/* What reading /proc/self/task/TID/syscall gave. */
typedef enum
{
  LW_SYSCALL_READ,
  LW_SYSCALL_GONE,    /* the thread no longer exists */
  LW_SYSCALL_CLOSED,  /* it exists, but the file is closed to us (not dumpable) */
} LwSyscallRead;

/* Watcher thread of the slot that keeps *@fd. TRUE when *@fd, one of the
 * /proc files kept open for the loop thread (opened as @id), is still the
 * file opened: checked right before each read of it, one fstat (each file
 * before its own read, so one check per read). If the program closed it
 * (and reused the number) or dup2()ed something over it, the number is the
 * program's, never read nor closed again (said once): *@fd becomes -1 and
 * the file is opened again by path. FALSE then, and when none is open. */
static gboolean
lw_capture_kept_is_ours (int *fd, const LwFdId *id)
{
  static gint said;
  int lost = *fd;

  if (lost < 0 || lw_fd_is (lost, id))
    return lost >= 0;
  *fd = -1;
  if (g_atomic_int_compare_and_exchange (&said, 0, 1))
    lw_say ("the program closed or replaced descriptor %d, which held a /proc file of the loop thread: "
            "reopened by path", lost);
  return FALSE;
}

/* Watcher thread of @slot. Reads the syscall file of @tid: through the
 * slot's open file for the loop thread (its descriptor checked, one
 * pread), opening it otherwise. A file that cannot be read is not proof
 * that the thread is gone: in a process that is not dumpable (setuid or
 * setgid programs, prctl (PR_SET_DUMPABLE, 0)) it belongs to root and
 * stays closed to the process itself. Another thread's file is read
 * through *@other_fd when it is open, else opened into it for the caller
 * to close (NULL: opened and closed here): one look at a sleeping thread
 * reads the file twice (before and after the copy of its stack), and a
 * hang's snapshot looks at every thread; one open instead of two saves a
 * path walk through /proc each. */
static LwSyscallRead
lw_capture_read_syscall (LwSlot *slot, pid_t tid, LwProcSyscall *out, int *other_fd)
{
  gboolean cached = tid == atomic_load (&slot->loop_tid);
  char text[256];
  int fd = -1;
  ssize_t n;

  if (cached && slot->proc_syscall_tid == tid
      && lw_capture_kept_is_ours (&slot->proc_syscall_fd, &slot->proc_syscall_id))
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
  slot->proc_seen_running = FALSE;
}

/* Watcher thread of @slot. Signal @signo as thread @tid sees it
 * (lw_threadinfo_signal_state()), and in *@state the letter of its State
 * line ('\0' when not known). For the loop thread, whose syscall file is
 * open already, through its status file kept open beside it: one pread
 * instead of a path walk and an open, before every signal. */
gboolean
lw_capture_signal_state (LwSlot *slot, pid_t tid, int signo, gboolean *blocked, gboolean *pending,
                         char *state)
{
  char text[4096];
  ssize_t n = -1;

  *state = '\0';
  if (tid != slot->proc_syscall_tid || slot->proc_syscall_fd < 0)
    return lw_threadinfo_signal_state (tid, signo, blocked, pending);
  if (!lw_capture_kept_is_ours (&slot->proc_status_fd, &slot->proc_status_id))
    {
      char path[64];

      snprintf (path, sizeof path, "/proc/self/task/%d/status", (int) tid);
      slot->proc_status_fd = open (path, O_RDONLY | O_CLOEXEC);
      lw_fd_id_take (slot->proc_status_fd, &slot->proc_status_id);
    }
  if (slot->proc_status_fd >= 0)
    n = pread (slot->proc_status_fd, text, sizeof text, 0);
  if (n > 0 && lw_threadinfo_parse_signal_state (text, (gsize) n, signo, blocked, pending))
    {
      *state = lw_threadinfo_parse_status_state (text, (gsize) n);
      return TRUE;
    }
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
  if (tid == atomic_load (&slot->loop_tid))
    slot->proc_seen_running = now.running;
  ok = !now.running && lw_capture_from_proc (slot, tid, &other_fd, &now, busy_seq, stack_lo, stack_hi, snap);
  if (other_fd >= 0)
    close (other_fd);
  return ok ? LW_CAPTURE_OK : LW_CAPTURE_PENDING;
}

