/* lagwatch-trace.c: the -finstrument-functions hooks (liblagwatch-trace)
 *
 * Each thread's state is one thread-local pointer, read by the hooks with a
 * single %fs-relative load (initial-exec TLS: the library is linked into
 * the program, so its block is static):
 *   NULL           the thread never ran instrumented code: register it
 *   LW_TRACE_IDLE  registered, no lag in progress: return at once
 *   LW_TRACE_GONE  exited, or no room to register it: never record
 *   otherwise      the buffer liblagwatch's watcher handed over: record
 * Registration puts the thread in a fixed table by kernel TID, where the
 * watcher (which knows the TID of the thread it caught lagging) finds it.
 *
 * Everything here may run inside a signal handler or with a lock held (it
 * is called from every instrumented function): no malloc, no locks, no
 * stdio; atomics, clock_gettime (vDSO) and gettid only. Nothing here is
 * itself instrumented (the build compiles it without the flag; the hooks
 * are marked too, for builds that add it globally).
 */
#include "lw-trace-abi.h"
#include "lagwatch-trace.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LW_TRACE_API __attribute__ ((visibility ("default"), no_instrument_function))
#define LW_TRACE_NI  __attribute__ ((no_instrument_function))

#define LW_TRACE_IDLE ((LwTraceBuffer *) 1)
#define LW_TRACE_GONE ((LwTraceBuffer *) 2)

/* Threads that ran instrumented code and are alive; a thread past this
 * many is never traced. */
#define LW_TRACE_MAX_THREADS 4096

typedef struct
{
  _Atomic (LwTraceBuffer *) buffer;
  _Atomic unsigned          writers;  /* hooks between their check and their write */
} LwTraceThread;

typedef struct
{
  _Atomic pid_t                 tid;
  _Atomic (LwTraceThread *)     thread;
} LwTraceEntry;

static __thread LwTraceThread lw_trace_self __attribute__ ((tls_model ("initial-exec")));
static LwTraceEntry lw_trace_threads[LW_TRACE_MAX_THREADS];
static pthread_key_t lw_trace_exit_key;
static _Atomic int lw_trace_key_ok;

/* Any thread, at its exit (pthread key destructor): off the table before
 * its thread block is freed or reused. */
LW_TRACE_NI static void
lw_trace_thread_exit (void *data)
{
  LwTraceEntry *entry = data;

  atomic_store (&lw_trace_self.buffer, LW_TRACE_GONE);
  atomic_store (&entry->tid, 0);
  atomic_store (&entry->thread, NULL);
}

/* Process start, normal context. */
LW_TRACE_NI __attribute__ ((constructor)) static void
lw_trace_init (void)
{
  if (pthread_key_create (&lw_trace_exit_key, lw_trace_thread_exit) == 0)
    atomic_store (&lw_trace_key_ok, 1);
}

/* The calling thread, async-signal-safe (glibc's pthread_setspecific
 * allocates nothing for the process's first 32 keys, where ours is). Its
 * first instrumented call: a place in the table, or GONE. */
LW_TRACE_NI static void
lw_trace_register (void)
{
  pid_t tid = (pid_t) syscall (SYS_gettid);

  if (!atomic_load (&lw_trace_key_ok))
    {
      atomic_store (&lw_trace_self.buffer, LW_TRACE_GONE);
      return;
    }
  for (size_t i = 0; i < LW_TRACE_MAX_THREADS; i++)
    {
      LwTraceThread *expected = NULL;

      if (atomic_compare_exchange_strong (&lw_trace_threads[i].thread, &expected, &lw_trace_self))
        {
          atomic_store (&lw_trace_threads[i].tid, tid);
          atomic_store (&lw_trace_self.buffer, LW_TRACE_IDLE);
          pthread_setspecific (lw_trace_exit_key, &lw_trace_threads[i]);
          return;
        }
    }
  atomic_store (&lw_trace_self.buffer, LW_TRACE_GONE);
}

/* The calling thread, async-signal-safe: anything but IDLE. The writers
 * count and the second load pair with lagwatch_trace_stop_v1(): either this
 * sees the buffer withdrawn, or the stop waits for this write to finish. */
LW_TRACE_NI __attribute__ ((noinline)) static void
lw_trace_record (LwTraceBuffer *buffer, void *fn, int64_t kind)
{
  struct timespec ts;
  uint64_t n;

  if (buffer == NULL)
    {
      lw_trace_register ();
      return;
    }
  if (buffer == LW_TRACE_GONE)
    return;
  atomic_fetch_add (&lw_trace_self.writers, 1);
  buffer = atomic_load (&lw_trace_self.buffer);
  if (buffer != LW_TRACE_IDLE && buffer != LW_TRACE_GONE)
    {
      clock_gettime (CLOCK_MONOTONIC, &ts);
      /* A claim, not a plain increment: a signal handler's instrumented
       * calls may interrupt this one. */
      n = atomic_fetch_add_explicit (&buffer->claimed, 1, memory_order_relaxed);
      if (n < buffer->capacity)
        {
          buffer->events[n].fn = (uintptr_t) fn;
          buffer->events[n].stamp = ((int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec) * 2 + kind;
        }
    }
  atomic_fetch_sub_explicit (&lw_trace_self.writers, 1, memory_order_release);
}

/* The hooks the compiler calls (-finstrument-functions); gcc declares
 * them itself, clang does not. */
LW_TRACE_API void __cyg_profile_func_enter (void *fn, void *call_site);
LW_TRACE_API void __cyg_profile_func_exit (void *fn, void *call_site);

/* Any thread, async-signal-safe: every instrumented function's entry. With
 * no lag in progress: one load, one branch. */
LW_TRACE_API void
__cyg_profile_func_enter (void *fn, void *call_site)
{
  LwTraceBuffer *buffer = atomic_load_explicit (&lw_trace_self.buffer, memory_order_relaxed);

  if (__builtin_expect (buffer == LW_TRACE_IDLE, 1))
    return;
  lw_trace_record (buffer, fn, 0);
}

/* Any thread, async-signal-safe: every instrumented function's return. */
LW_TRACE_API void
__cyg_profile_func_exit (void *fn, void *call_site)
{
  LwTraceBuffer *buffer = atomic_load_explicit (&lw_trace_self.buffer, memory_order_relaxed);

  if (__builtin_expect (buffer == LW_TRACE_IDLE, 1))
    return;
  lw_trace_record (buffer, fn, LW_TRACE_STAMP_RETURN);
}

/* Any thread. The live thread @tid's state, or NULL. */
LW_TRACE_NI static LwTraceThread *
lw_trace_find (pid_t tid)
{
  for (size_t i = 0; i < LW_TRACE_MAX_THREADS; i++)
    if (atomic_load (&lw_trace_threads[i].tid) == tid)
      return atomic_load (&lw_trace_threads[i].thread);
  return NULL;
}

LW_TRACE_API int
lagwatch_trace_start_v1 (pid_t tid, LwTraceBuffer *buffer)
{
  LwTraceThread *thread;
  LwTraceBuffer *expected = LW_TRACE_IDLE;

  if (tid <= 0 || buffer == NULL || (thread = lw_trace_find (tid)) == NULL)
    return -1;
  return atomic_compare_exchange_strong (&thread->buffer, &expected, buffer) ? 0 : -1;
}

LW_TRACE_API void
lagwatch_trace_stop_v1 (pid_t tid, LwTraceBuffer *buffer)
{
  LwTraceThread *thread = lw_trace_find (tid);
  LwTraceBuffer *expected = buffer;

  /* A thread that exited (not found) writes nothing more. */
  if (thread == NULL || !atomic_compare_exchange_strong (&thread->buffer, &expected, LW_TRACE_IDLE))
    return;
  /* A hook between its check and its write finishes within a few dozen
   * instructions, unless its thread was preempted there. */
  while (atomic_load_explicit (&thread->writers, memory_order_acquire) != 0)
    sched_yield ();
}

LW_TRACE_API bool
lagwatch_trace_recording (void)
{
  LwTraceBuffer *buffer = atomic_load (&lw_trace_self.buffer);

  return buffer != NULL && buffer != LW_TRACE_IDLE && buffer != LW_TRACE_GONE;
}
