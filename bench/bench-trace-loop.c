/* bench-trace-loop.c: the program bench-trace measures, built three ways
 * (bench/meson.build): without -finstrument-functions; with it and glibc's
 * empty hooks; with it and liblagwatch-trace (BENCH_TRACER).
 *
 *   bench-trace-loop-VARIANT N [recording]
 *
 * Calls a small function N times inside bench_calls(), the only function
 * callgrind counts (--toggle-collect). "recording" (tracer only): as during
 * a lag, the thread records every call into a buffer big enough for all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef BENCH_TRACER
# include "trace/lw-trace-abi.h"
#endif

static volatile long bench_sink;

/* The call measured: never inlined, so it is a real call in every build. */
__attribute__ ((noipa)) static void
bench_leaf (long i)
{
  bench_sink += i;
}

__attribute__ ((noipa)) static void
bench_calls (long n)
{
  for (long i = 0; i < n; i++)
    bench_leaf (i);
}

int
main (int argc, char **argv)
{
  long n = argc > 1 ? atol (argv[1]) : 0;

  if (n <= 0)
    {
      fprintf (stderr, "usage: %s N [recording]\n", argv[0]);
      return 2;
    }
  if (argc > 2)
    {
#ifdef BENCH_TRACER
      LwTraceBuffer *buffer = calloc (1, sizeof (LwTraceBuffer) + (size_t) (2 * n + 16) * sizeof (LwTraceEvent));

      buffer->capacity = (uint64_t) (2 * n + 16);
      if (lagwatch_trace_start_v1 ((pid_t) syscall (SYS_gettid), buffer) != 0)
        {
          fprintf (stderr, "the tracer does not know this thread\n");
          return 1;
        }
#else
      fprintf (stderr, "recording needs the tracer\n");
      return 2;
#endif
    }
  bench_calls (n);
  return 0;
}
