/* lw-altstack.c: the alternate signal stack of each watched loop thread */
#include "lw-altstack.h"
#include "lw-seccomp.h"

#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

/* The alternate signal stack of a loop thread: the handler's frame and
 * the kernel's signal frame (getauxval (AT_MINSIGSTKSZ): 3376 bytes with
 * AVX-512 state on the machines measured), with room to spare for a
 * program's own handler of the same signal, chained from ours. A guard
 * page below turns an overflow into a clean fault, not a corruption. */
#define LW_ALTSTACK_BYTES (64 * 1024)
#define LW_GUARD_BYTES    4096

static pthread_key_t lw_altstack_key;
static size_t        lw_altstack_size;

/* The thread that owned the alternate stack, at its exit: drops it. */
static void
lw_altstack_free (void *base)
{
  stack_t current;

  if (sigaltstack (NULL, &current) == 0
      && (char *) current.ss_sp == (char *) base + LW_GUARD_BYTES
      && !(current.ss_flags & SS_ONSTACK))
    {
      stack_t off = { .ss_flags = SS_DISABLE };

      sigaltstack (&off, NULL);
    }
  munmap (base, LW_GUARD_BYTES + lw_altstack_size);
}

/* Once per process, from the first lw_altstack_prepare() (loop thread). */
static void
lw_altstack_init (void)
{
  lw_altstack_size = MAX ((size_t) getauxval (AT_MINSIGSTKSZ), (size_t) MINSIGSTKSZ) + LW_ALTSTACK_BYTES;
  lw_altstack_size = (lw_altstack_size + 4095) & ~(size_t) 4095;
  pthread_key_create (&lw_altstack_key, lw_altstack_free);
}

/* Loop thread, normal context. */
void
lw_altstack_prepare (void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  stack_t current, ours;
  char *base;

  /* A seccomp filter that forbids sigaltstack() (and may kill this, the
   * program's thread, for it): the handler runs on the thread's stack. */
  if (lw_seccomp_verdict (LW_SYSCALL_SIGALTSTACK) != LW_SYSCALL_WORKS)
    return;
  pthread_once (&once, lw_altstack_init);
  /* A program's own alternate stack is used as it is. */
  if (sigaltstack (NULL, &current) != 0 || !(current.ss_flags & SS_DISABLE)
      || pthread_getspecific (lw_altstack_key) != NULL)
    return;
  base = mmap (NULL, LW_GUARD_BYTES + lw_altstack_size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED)
    {
      g_debug ("no alternate signal stack for thread %d: %s", (int) gettid (), g_strerror (errno));
      return;
    }
  mprotect (base, LW_GUARD_BYTES, PROT_NONE);
  ours.ss_sp = base + LW_GUARD_BYTES;
  ours.ss_size = lw_altstack_size;
  ours.ss_flags = 0;
  if (sigaltstack (&ours, NULL) != 0)
    {
      munmap (base, LW_GUARD_BYTES + lw_altstack_size);
      return;
    }
  pthread_setspecific (lw_altstack_key, base);
}
