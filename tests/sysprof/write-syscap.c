/* write-syscap FILE: one made-up lag written by lagwatch's capture sink
 * (lw-sink-sysprof.c), for run-sysprof-test.sh to name with Sysprof's
 * resolution. Its samples, oldest first (frames innermost first):
 *
 *   1. on a CPU: write_syscap_native_leaf (this program's code), a Python
 *      frame "handler" (/app/app.py:12), generated code named "jit_leaf"
 *      by a perf map, a Python frame "main" (/app/app.py:40);
 *   2. the same stack, taken while the thread slept;
 *   3. on a CPU again: generated code "jit_leaf" at another address of it.
 *
 * Printed on stdout: "tid TID" and each sample's time, "time N NS".
 */
#include <stdio.h>
#include <unistd.h>

#include "lw-lang-frames.h"
#include "lw-perfmap.h"
#include "lw-report.h"
#include "lw-sink-private.h"
#include "lw-sink-sysprof.h"

/* Some code of this program: Sysprof names it from the maps. */
void write_syscap_native_leaf (void);

__attribute__ ((noinline)) void
write_syscap_native_leaf (void)
{
  __asm__ volatile ("" ::: "memory");
}

/* A frame as the reporting thread leaves it. */
static LwFrame
frame_at (uintptr_t ip, const char *symbol, const char *module, const char *file, guint line, const char *lang)
{
  return (LwFrame) { .ip = ip, .symbol = g_strdup (symbol), .module = module, .file = g_strdup (file),
                     .line = line, .lang = lang };
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  LagWatchReport *report;
  LwSinkReport sink_report = { 0 };
  LwSink *sink;
  uintptr_t handler = lw_lang_frame_intern ("python", "handler", "/app/app.py", 12);
  uintptr_t main_frame = lw_lang_frame_intern ("python", "main", "/app/app.py", 40);
  /* An address no module holds, as generated code's are. */
  uintptr_t jit = 0x7f0000001000;

  if (argc != 2)
    {
      fprintf (stderr, "usage: write-syscap FILE\n");
      return 2;
    }
  sink = lw_sink_syscap_open (argv[1], &error);
  if (sink == NULL)
    {
      fprintf (stderr, "write-syscap: %s\n", error->message);
      return 1;
    }
  report = lw_report_new ();
  report->event = "lag";
  report->id = g_strdup ("write-syscap");
  report->duration_ms = 30;
  report->pid = getpid ();
  report->thread_id = gettid ();
  report->start_ns = g_get_monotonic_time () * 1000;
  report->n_sampled = 2;
  report->sampled = g_new0 (LwReportStack, 2);
  report->sampled[0].n_frames = 4;
  report->sampled[0].frames = g_new0 (LwFrame, 4);
  report->sampled[0].frames[0] = frame_at ((uintptr_t) write_syscap_native_leaf, "write_syscap_native_leaf",
                                           NULL, NULL, 0, NULL);
  report->sampled[0].frames[1] = frame_at (handler, "handler", "/app/app.py", "/app/app.py", 12, "python");
  report->sampled[0].frames[2] = frame_at (jit + 0x10, "jit_leaf", LW_JIT_MODULE, NULL, 0, NULL);
  report->sampled[0].frames[3] = frame_at (main_frame, "main", "/app/app.py", "/app/app.py", 40, "python");
  report->sampled[1].n_frames = 1;
  report->sampled[1].frames = g_new0 (LwFrame, 1);
  report->sampled[1].frames[0] = frame_at (jit + 0x20, "jit_leaf", LW_JIT_MODULE, NULL, 0, NULL);
  report->n_timeline = 3;
  report->timeline = g_new0 (LwReportSample, 3);
  report->timeline[0] = (LwReportSample) { .offset_ns = 10000000, .stack = 0 };
  report->timeline[1] = (LwReportSample) { .offset_ns = 20000000, .stack = 0, .asleep = TRUE };
  report->timeline[2] = (LwReportSample) { .offset_ns = 25000000, .stack = 1 };

  sink_report.report = report;
  sink->klass->write_report (sink, &sink_report);
  sink->klass->flush (sink);
  sink->klass->close (sink);

  printf ("tid %d\n", report->thread_id);
  for (guint i = 0; i < report->n_timeline; i++)
    printf ("time %u %" G_GINT64_FORMAT "\n", i + 1, report->start_ns + report->timeline[i].offset_ns);
  lagwatch_report_unref (report);
  return 0;
}
