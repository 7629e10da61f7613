/* lagwatch-trace.h: lagwatch's call tracer (liblagwatch-trace)
 *
 * Link liblagwatch-trace into a program built with -finstrument-functions
 * (pkg-config lagwatch-trace) and every lag that lagwatch catches on a
 * thread running that code comes with its exact call tree: every call and
 * return from the moment the lag was caught to its end, to the microsecond.
 * With no lag in progress each instrumented call costs one load and one
 * branch. Nothing needs to be called: the hooks are the library.
 */
#pragma once

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * lagwatch_trace_recording:
 *
 * Any thread, async-signal-safe.
 *
 * Returns: whether the calling thread's calls are being recorded now (a lag
 * on it was caught and has not ended yet).
 */
__attribute__ ((visibility ("default"), no_instrument_function))
bool lagwatch_trace_recording (void);

#ifdef __cplusplus
}
#endif
