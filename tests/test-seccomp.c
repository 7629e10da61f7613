/* test-seccomp.c: lagwatch under seccomp filters that forbid what it uses
 *
 * Each case runs in a subprocess that installs a real filter (raw BPF
 * through prctl(), as systemd's SystemCallFilter=, bwrap and Flatpak do
 * with libseccomp) and then attaches: for each system call lagwatch can
 * work around, a filter that kills the calling thread and one that fails
 * it with EPERM; a filter that kills the process on what systemd's
 * @system-service set leaves out (mincore, process_vm_readv and the rest
 * of @debug, @mount, @module, @reboot, @swap, @clock, @raw-io); and one
 * that kills a call lagwatch cannot do without. The program must neither
 * die nor hang, every lag must be reported, and what is lost is said in
 * one line.
 */
#include <errno.h>
#include <glib.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lag-harness.h"

#define SUBPROCESS_TIMEOUT_US (90 * G_USEC_PER_SEC)
#define N_LAGS 3

typedef struct
{
  const char *path;
  long        calls[16];   /* 0-terminated */
  guint32     action;      /* SECCOMP_RET_* (with the errno for ERRNO) */
  gboolean    attaches;
  const char *said;        /* a pattern of what lagwatch says, or NULL */
} FilterCase;

#define ERRNO_EPERM (SECCOMP_RET_ERRNO | EPERM)

static const FilterCase cases[] = {
  { "/seccomp/kill-thread/mincore", { SYS_mincore }, SECCOMP_RET_KILL_THREAD, TRUE,
    "*seccomp filter kills mincore()*" },
  { "/seccomp/kill-thread/process_vm_readv", { SYS_process_vm_readv }, SECCOMP_RET_KILL_THREAD, TRUE, NULL },
  { "/seccomp/kill-thread/sigaltstack", { SYS_sigaltstack }, SECCOMP_RET_KILL_THREAD, TRUE,
    "*seccomp filter kills sigaltstack()*" },
  { "/seccomp/kill-thread/timer_create", { SYS_timer_create }, SECCOMP_RET_KILL_THREAD, TRUE,
    "*seccomp filter kills timer_create()*" },
  { "/seccomp/kill-thread/rt_tgsigqueueinfo", { SYS_rt_tgsigqueueinfo }, SECCOMP_RET_KILL_THREAD, TRUE,
    "*forbids rt_tgsigqueueinfo()*" },
  { "/seccomp/errno/mincore", { SYS_mincore }, ERRNO_EPERM, TRUE, NULL },
  { "/seccomp/errno/process_vm_readv", { SYS_process_vm_readv }, ERRNO_EPERM, TRUE, NULL },
  { "/seccomp/errno/sigaltstack", { SYS_sigaltstack }, ERRNO_EPERM, TRUE, NULL },
  { "/seccomp/errno/timer_create", { SYS_timer_create }, ERRNO_EPERM, TRUE, NULL },
  { "/seccomp/errno/rt_tgsigqueueinfo", { SYS_rt_tgsigqueueinfo }, ERRNO_EPERM, TRUE,
    "*forbids rt_tgsigqueueinfo()*" },
  { "/seccomp/system-service", { SYS_mincore, SYS_process_vm_readv, SYS_process_vm_writev, SYS_ptrace,
                                 SYS_perf_event_open, SYS_mount, SYS_umount2, SYS_reboot, SYS_swapon,
                                 SYS_init_module, SYS_iopl, SYS_ioperm, SYS_settimeofday,
                                 SYS_clock_settime },
    SECCOMP_RET_KILL_PROCESS, TRUE, "*seccomp filter kills mincore()*" },
  { "/seccomp/kill-process/needed-call", { SYS_sched_getaffinity }, SECCOMP_RET_KILL_PROCESS, FALSE,
    "lagwatch: this process's seccomp filter kills or blocks the system call sched_getaffinity, "
    "which lagwatch needs: not attaching*" },
};

/* Installs a filter that answers @action to every call of @c, lets the
 * rest through. x86-64 only (the architecture is checked: another one is
 * killed, as a filter would). */
static void
install_filter (const FilterCase *c)
{
  struct sock_filter code[48];
  struct sock_fprog prog;
  guint n = 0, n_calls = 0;

  while (c->calls[n_calls] != 0)
    n_calls++;
  code[n++] = (struct sock_filter) BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch));
  code[n++] = (struct sock_filter) BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  code[n++] = (struct sock_filter) BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  code[n++] = (struct sock_filter) BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr));
  for (guint i = 0; i < n_calls; i++)
    {
      /* Match: fall through to the next instruction (the action);
       * otherwise skip it. */
      code[n++] = (struct sock_filter) BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, (guint32) c->calls[i], 0, 1);
      code[n++] = (struct sock_filter) BPF_STMT (BPF_RET | BPF_K, c->action);
    }
  code[n++] = (struct sock_filter) BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  g_assert_cmpuint (n, <=, G_N_ELEMENTS (code));
  prog.len = (unsigned short) n;
  prog.filter = code;
  g_assert_cmpint (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), ==, 0);
  g_assert_cmpint (syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), ==, 0);
}

static LAGGY void
lag_spin (gpointer data)
{
  spin_ms (data);
}

static void
test_filter (gconstpointer data)
{
  const FilterCase *c = data;

#if defined(__SANITIZE_ADDRESS__)
  /* The filters refuse or kill system calls AddressSanitizer's own runtime
   * makes (LeakSanitizer's check at exit stops the process's threads
   * through ptrace from a clone()d tracer): the child would die of the
   * sanitizer, not of lagwatch. The plain build runs these. */
  g_test_skip ("seccomp filters kill AddressSanitizer's own system calls; run in the plain build");
  return;
#endif
  if (g_test_subprocess ())
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      GMainContext *context = g_main_context_new ();
      Harness h = { 0 };

      install_filter (c);
      if (!c->attaches)
        {
          LagWatch *watch = lagwatch_attach_with_config (context, config);

          g_assert_null (watch);
          g_main_context_unref (context);
          return;
        }
      g_main_context_unref (context);
      harness_init (&h, 100);
      for (guint i = 0; i < N_LAGS; i++)
        harness_run_lag (&h, lag_spin, GINT_TO_POINTER (300));
      harness_wait_reports (&h, N_LAGS);
      g_assert_cmpuint (harness_n_reports (&h), ==, N_LAGS);
      /* The loop thread runs (spins): its stack comes by signal, walked
       * through the whole chain of callers (libunwind or not, memory read
       * by process_vm_readv or /proc/self/mem), out to the dispatched callback. */
      if (c->calls[0] != SYS_rt_tgsigqueueinfo)
        for (guint i = 0; i < N_LAGS; i++)
          g_assert_true (harness_stack_has (harness_report (&h, i), "harness_run_lag_cb", NULL));
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  if (c->said != NULL)
    g_test_trap_assert_stderr (c->said);
}

static G_GNUC_UNUSED void
skip_architecture (void)
{
  g_test_skip ("the test's filters are written for x86-64");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  harness_subprocess_dumpable ();
#if defined(__x86_64__)
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    g_test_add_data_func (cases[i].path, &cases[i], test_filter);
#else
  g_test_add_func ("/seccomp/other-architecture", skip_architecture);
#endif
  return g_test_run ();
}
