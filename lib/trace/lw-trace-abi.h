/* lw-trace-abi.h: what liblagwatch and liblagwatch-trace share
 *
 * liblagwatch-trace (lagwatch-trace.c) is linked only into programs built
 * with -finstrument-functions; liblagwatch never depends on it. liblagwatch
 * refers to the two entry points below weakly: they are NULL unless the
 * tracer is in the process. The names carry the layout's version, so a
 * liblagwatch and a tracer that disagree on it simply do not see each other.
 * Plain C11 and libc: no GLib, since the hooks run inside every call of the
 * program, signal handlers included.
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* One call or return: the function's entry address, and
 * CLOCK_MONOTONIC ns * 2 + 1 for a return, + 0 for a call. */
typedef struct
{
  uintptr_t fn;
  int64_t   stamp;
} LwTraceEvent;

#define LW_TRACE_STAMP_RETURN 1

/* The events of one thread during one lag. Allocated, handed over and freed
 * by liblagwatch; the traced thread only claims and fills events. */
typedef struct
{
  _Atomic uint64_t claimed;   /* events claimed; beyond capacity they were dropped */
  uint64_t         capacity;
  LwTraceEvent     events[];
} LwTraceBuffer;

/* Any thread but @tid (liblagwatch's watcher). Has thread @tid record its
 * calls and returns into @buffer (claimed must be 0) from now on. 0 when it
 * does; -1 when @tid never ran instrumented code, has exited, or is already
 * recording. */
int  lagwatch_trace_start_v1 (pid_t tid, LwTraceBuffer *buffer);

/* Any thread but @tid (liblagwatch's watcher). Stops the recording that
 * lagwatch_trace_start_v1() began, and returns once @tid writes nothing more
 * into @buffer: it may then be read and freed. */
void lagwatch_trace_stop_v1  (pid_t tid, LwTraceBuffer *buffer);
