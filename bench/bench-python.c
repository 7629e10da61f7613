/* bench-python.c: the cost of one sample of a Python stack, beside a native one
 *
 * A module that bench-python.py loads into a CPython through ctypes (so it
 * runs beside a real interpreter: /usr/bin/python3 in the suite, any
 * version 3.11 to 3.14 by hand). It samples, in alternating
 * blocks, two threads stuck at the same depth: Python's main thread (the
 * loop thread of a PyGObject program) spinning in Python twenty calls
 * deep, and a C thread of its own spinning twenty calls deep. Only one of
 * them spins at a time: a stuck thread and a watcher, as in a program.
 * Before its turn each runs one iteration of the watched context, so the
 * watch adopts it as its loop thread (its stack bounds, its alternate
 * signal stack, its /proc file kept open), and each sample is taken as the
 * watcher takes one of a stuck loop thread: signal + stack copy
 * (lw_capture_take_thread()), unwind, then lw_python_merge() (the watcher
 * calls it at every sample; on the C thread it finds nothing), each timed
 * apart. Python releases the GIL around ctypes calls, so the spinning
 * Python thread holds it meanwhile, as a stuck loop thread does.
 *
 * Samples are 1 ms apart, the watcher's shortest sampling interval
 * (LAGWATCH_SAMPLE_MS=1): the watcher sleeps between two rounds. Taken
 * back to back, a sample can measure a cost the watcher never pays: once
 * the sampler runs on the CPU of the thread it samples (the handler's
 * sem_post wakes it there), it preempts the handler before its sigreturn,
 * so the next capture finds the signal still blocked and waits 200 µs for
 * it (lw_capture_may_signal()), then spins while the thread it waits for
 * cannot run; each wake-up by the handler keeps both threads on that CPU,
 * and whole runs measured about 350 µs per signal + copy.
 *
 * Where the watcher runs is the scheduler's choice, so each thread is
 * sampled from both places, each its own series, all threads pinned: from
 * another CPU, and from the sampled thread's own CPU, where a loaded
 * machine puts the watcher (beside compilers at nice 10, a sampler left
 * free woke there for 100 of 100 samples: the spinning thread's CPU is the
 * one the balancer keeps lightest).
 *
 * The signal's delivery is also measured alone: a bare real-time signal to
 * the C thread, from send to handler entry, is the floor under every
 * signalled sample on this machine. So are the checks' parts
 * (bench_check_parts()), after the same sleep as a sample.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench-stats.h"
#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-python.h"
#include "lw-threadinfo.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

#define BENCH_DEPTH   20
#define BENCH_GAP_US  1000
#define BENCH_WAIT_NS (1000 * LW_NSEC_PER_MSEC)
#define BENCH_HOT     10  /* merges again of each sample, after it */

/* Per thread sampled (BENCH_PYTHON, BENCH_NATIVE) and place of the
 * sampler (BENCH_OTHER_CPU, BENCH_SAME_CPU), the medians in µs, in this
 * order. */
enum
{
  BENCH_CHECKS,    /* from the call to the signal sent: lagwatch's /proc checks */
  BENCH_DELIVERY,  /* from the signal sent to the stack copied: kernel + handler */
  BENCH_COLLECT,   /* from the stack copied to the sampler back with it */
  BENCH_CAPTURE,   /* the three above: lw_capture_take_thread() */
  BENCH_UNWIND,
  BENCH_MERGE,     /* lw_python_merge() */
  BENCH_MERGE_CPU, /* the same, in the sampler's CPU time: what waiting for a CPU leaves out */
  BENCH_MERGE_HOT, /* apart: the merge again on the same sample, caches warm, CPU time each */
  BENCH_WHOLE,     /* one whole sample: capture + unwind + merge */
  BENCH_BY_PATH,   /* apart: the thread's status file read by path (as the checks did) */
  /* Apart, after the same sleep, the checks' parts one after the other,
   * on the descriptors the watch keeps open for the thread: */
  BENCH_PART_FSTAT,     /* one descriptor checked (fstat) */
  BENCH_PART_SYSCALL,   /* the syscall file read */
  BENCH_PART_SIGACTION, /* the disposition read */
  BENCH_PART_STATUS,    /* the status file read */
  BENCH_PART_PARSE,     /* its SigBlk, SigPnd and ShdPnd lines parsed */
  BENCH_N_TIMES
};

/* Per thread sampled and place, the counts, in this order. */
enum
{
  BENCH_SAMPLES,        /* samples taken */
  BENCH_NATIVE_FRAMES,  /* of the last sample: native frames unwound */
  BENCH_MERGED_FRAMES,  /* after the merge */
  BENCH_PYTHON_FRAMES,  /* Python frames among them */
  BENCH_N_COUNTS
};

enum { BENCH_PYTHON, BENCH_NATIVE, BENCH_N_THREADS };
enum { BENCH_OTHER_CPU, BENCH_SAME_CPU, BENCH_N_PLACES };

typedef struct
{
  GArray *times[BENCH_N_TIMES];
  int     counts[BENCH_N_COUNTS];
} BenchResults;

/* The C thread: parked until told to run, then adopted by the watch and
 * spinning BENCH_DEPTH calls deep until told to stop. */
typedef struct
{
  GMutex      lock;
  GCond       cond;
  gboolean    run;       /* under @lock: spin once more */
  gboolean    quit;      /* under @lock: return */
  _Atomic int stop;      /* leave the spin */
  _Atomic int spinning;  /* at the bottom of the spin */
  _Atomic int tid;
} BenchSpinner;

/* The bench's state, from lw_bench_python_start() to _finish(). */
static struct
{
  GMainContext *context;
  LagWatch     *watch;
  LwSnapshot   *snap;
  LwUnwinder   *unwinder;
  LwPython     *python;
  BenchSpinner  spinner;
  GThread      *thread;
  int           cpus[BENCH_N_PLACES];  /* the sampled threads' CPU, then another */
  int           n_cpus;                /* 1: no other CPU to run on */
  BenchResults  results[BENCH_N_THREADS][BENCH_N_PLACES];
} bench;

static _Atomic int64_t bench_signal_entry_ns;

static void
append_us (GArray *values, int64_t ns)
{
  double us = (double) ns / 1000.0;

  g_array_append_val (values, us);
}

/* Any thread. Moves the calling thread onto @cpu alone. */
static void
bench_pin (int cpu)
{
  cpu_set_t set;

  CPU_ZERO (&set);
  CPU_SET (cpu, &set);
  if (sched_setaffinity (0, sizeof set, &set) != 0)
    g_warning ("cannot run on CPU %d alone: %s", cpu, g_strerror (errno));
}

/* The thread about to be sampled, Python's main thread (through ctypes) or
 * the C thread. Moves onto the sampled threads' CPU and runs the watched
 * context once, so the watch adopts this thread as its loop thread, as it
 * adopts a program's; the dispatch probe that adoption schedules runs
 * too. */
__attribute__ ((visibility ("default"))) void lw_bench_python_adopt (void);

void
lw_bench_python_adopt (void)
{
  bench_pin (bench.cpus[BENCH_SAME_CPU]);
  while (g_main_context_iteration (bench.context, FALSE))
    ;
}

/* The C thread. */
static __attribute__ ((noipa)) int
bench_spin (BenchSpinner *spinner, int depth)
{
  int below;

  if (depth <= 1)
    {
      atomic_store (&spinner->spinning, 1);
      while (!atomic_load_explicit (&spinner->stop, memory_order_relaxed))
        ;
      atomic_store (&spinner->spinning, 0);
      return 1;
    }
  below = bench_spin (spinner, depth - 1);
  __asm__ volatile ("" ::: "memory");
  return below + 1;
}

/* The C thread. */
static gpointer
bench_spinner_main (gpointer data)
{
  BenchSpinner *spinner = data;

  atomic_store (&spinner->tid, (int) gettid ());
  g_mutex_lock (&spinner->lock);
  while (!spinner->quit)
    {
      if (!spinner->run)
        {
          g_cond_wait (&spinner->cond, &spinner->lock);
          continue;
        }
      spinner->run = FALSE;
      g_mutex_unlock (&spinner->lock);
      lw_bench_python_adopt ();
      bench_spin (spinner, BENCH_DEPTH);
      g_mutex_lock (&spinner->lock);
    }
  g_mutex_unlock (&spinner->lock);
  return NULL;
}

/* Any thread but the C one. Sets the C thread spinning and waits until it
 * is at the bottom. */
static void
bench_spinner_run (BenchSpinner *spinner)
{
  atomic_store (&spinner->stop, 0);
  g_mutex_lock (&spinner->lock);
  spinner->run = TRUE;
  g_cond_broadcast (&spinner->cond);
  g_mutex_unlock (&spinner->lock);
  while (!atomic_load (&spinner->spinning))
    g_usleep (100);
}

/* Any thread but the C one. Stops its spin and waits until it left. */
static void
bench_spinner_park (BenchSpinner *spinner)
{
  atomic_store (&spinner->stop, 1);
  while (atomic_load (&spinner->spinning))
    g_usleep (100);
}

/* Async-signal-safe: the bare signal's handler. */
static void
bench_on_bare_signal (int signo, siginfo_t *info, void *ucontext)
{
  (void) signo;
  (void) info;
  (void) ucontext;
  atomic_store (&bench_signal_entry_ns, lw_clock_now_ns ());
}

/* Any thread. Its CPU time, in ns. */
static int64_t
bench_cpu_ns (void)
{
  struct timespec now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
  return (int64_t) now.tv_sec * 1000000000 + now.tv_nsec;
}

/* The sampler. What each of lagwatch's checks before a signal costs, as
 * cold as they are (after the same sleep), in the order they run, on the
 * /proc files the watch keeps open for its loop thread. */
static void
bench_check_parts (BenchResults *results, LwSlot *slot)
{
  char text[4096];
  struct sigaction action;
  struct stat st;
  gboolean blocked, pending;
  ssize_t n;
  int64_t t[6];

  if (slot->proc_syscall_fd < 0 || slot->proc_status_fd < 0)
    return;
  g_usleep (BENCH_GAP_US);
  t[0] = lw_clock_now_ns ();
  fstat (slot->proc_syscall_fd, &st);
  t[1] = lw_clock_now_ns ();
  pread (slot->proc_syscall_fd, text, 256, 0);
  t[2] = lw_clock_now_ns ();
  sigaction (lw_capture_get_signal (), NULL, &action);
  t[3] = lw_clock_now_ns ();
  n = pread (slot->proc_status_fd, text, sizeof text, 0);
  t[4] = lw_clock_now_ns ();
  if (n <= 0)
    return;
  lw_threadinfo_parse_signal_state (text, (gsize) n, lw_capture_get_signal (), &blocked, &pending);
  t[5] = lw_clock_now_ns ();
  append_us (results->times[BENCH_PART_FSTAT], t[1] - t[0]);
  append_us (results->times[BENCH_PART_SYSCALL], t[2] - t[1]);
  append_us (results->times[BENCH_PART_SIGACTION], t[3] - t[2]);
  append_us (results->times[BENCH_PART_STATUS], t[4] - t[3]);
  append_us (results->times[BENCH_PART_PARSE], t[5] - t[4]);
}

/* The sampler. One sample of the watch's loop thread, as the watcher takes
 * one during a lag. */
static void
bench_take (BenchResults *results)
{
  LwSlot *slot = bench.watch->slot;
  pid_t tid = atomic_load (&slot->loop_tid);
  uintptr_t ips[128], unwound[128];
  gboolean truncated, blocked, pending, unwound_truncated;
  int64_t t0, t1, t2, t3, cpu0, cpu3;
  guint native, merged;
  int python_frames = 0;

  t0 = lw_clock_now_ns ();
  if (lw_capture_take_thread (slot, tid, atomic_load (&slot->seq), slot->loop_stack_lo,
                              slot->loop_stack_hi, bench.snap, 50 * LW_NSEC_PER_MSEC) != LW_CAPTURE_OK)
    return;
  t1 = lw_clock_now_ns ();
  native = lw_unwinder_walk (bench.unwinder, bench.snap, ips, G_N_ELEMENTS (ips), &truncated);
  memcpy (unwound, ips, native * sizeof *ips);
  unwound_truncated = truncated;
  cpu0 = bench_cpu_ns ();
  t2 = lw_clock_now_ns ();
  merged = lw_python_merge (bench.python, tid, lw_unwinder_stack_pointers (bench.unwinder), ips, native,
                            G_N_ELEMENTS (ips), &truncated);
  t3 = lw_clock_now_ns ();
  cpu3 = bench_cpu_ns ();

  append_us (results->times[BENCH_CHECKS], slot->capture.sent_ns - t0);
  append_us (results->times[BENCH_DELIVERY], bench.snap->taken_ns - slot->capture.sent_ns);
  append_us (results->times[BENCH_COLLECT], t1 - bench.snap->taken_ns);
  append_us (results->times[BENCH_CAPTURE], t1 - t0);
  append_us (results->times[BENCH_UNWIND], t2 - t1);
  append_us (results->times[BENCH_MERGE], t3 - t2);
  append_us (results->times[BENCH_MERGE_CPU], cpu3 - cpu0);
  append_us (results->times[BENCH_WHOLE], t3 - t0);
  for (guint j = 0; j < merged; j++)
    python_frames += lw_python_is_frame (ips[j]);

  /* The merge's own cost, without what a cold sample adds (caches and
   * TLB refilled after the sampler slept, waiting for a CPU): the same
   * stack merged again BENCH_HOT times, the thread still stuck. */
  cpu0 = bench_cpu_ns ();
  for (int k = 0; k < BENCH_HOT; k++)
    {
      gboolean again_truncated = unwound_truncated;

      memcpy (ips, unwound, native * sizeof *ips);
      lw_python_merge (bench.python, tid, lw_unwinder_stack_pointers (bench.unwinder), ips, native,
                       G_N_ELEMENTS (ips), &again_truncated);
    }
  append_us (results->times[BENCH_MERGE_HOT], (bench_cpu_ns () - cpu0) / BENCH_HOT);

  /* A reference for the checks, as cold as they are: after the same sleep,
   * the status file read the way lagwatch reads it for any thread. */
  g_usleep (BENCH_GAP_US);
  t0 = lw_clock_now_ns ();
  if (lw_threadinfo_signal_state (tid, lw_capture_get_signal (), &blocked, &pending))
    append_us (results->times[BENCH_BY_PATH], lw_clock_now_ns () - t0);
  bench_check_parts (results, slot);
  results->counts[BENCH_SAMPLES]++;
  results->counts[BENCH_NATIVE_FRAMES] = (int) native;
  results->counts[BENCH_MERGED_FRAMES] = (int) merged;
  results->counts[BENCH_PYTHON_FRAMES] = python_frames;
}

/* The sampler. The median, in µs, from sending a bare real-time signal to
 * @tid to its handler's entry (@samples of them, 1 ms apart); 0 when no
 * signal was free or none arrived. *@send_us: the median time the sending
 * system call took to return. */
static double
bench_bare_signal (pid_t tid, int samples, double *send_us)
{
  g_autoptr(GArray) delays = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr(GArray) sends = g_array_new (FALSE, FALSE, sizeof (double));
  struct sigaction bare = { 0 }, old;
  int signo = 0;

  for (int s = SIGRTMAX - 1; s > SIGRTMIN && signo == 0; s--)
    if (sigaction (s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
      signo = s;
  if (signo == 0)
    return 0.0;
  bare.sa_sigaction = bench_on_bare_signal;
  bare.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset (&bare.sa_mask);
  sigaction (signo, &bare, &old);
  for (int i = 0; i < samples; i++)
    {
      siginfo_t info;
      int64_t sent, deadline;

      g_usleep (BENCH_GAP_US);
      memset (&info, 0, sizeof info);
      info.si_signo = signo;
      info.si_code = SI_QUEUE;
      info.si_pid = getpid ();
      info.si_uid = getuid ();
      atomic_store (&bench_signal_entry_ns, 0);
      sent = lw_clock_now_ns ();
      if (syscall (SYS_rt_tgsigqueueinfo, info.si_pid, tid, signo, &info) != 0)
        break;
      append_us (sends, lw_clock_now_ns () - sent);
      /* Yielding, so the thread runs even if it shares this CPU. */
      deadline = sent + BENCH_WAIT_NS;
      while (atomic_load (&bench_signal_entry_ns) == 0 && lw_clock_now_ns () < deadline)
        sched_yield ();
      if (atomic_load (&bench_signal_entry_ns) == 0)
        break;
      append_us (delays, atomic_load (&bench_signal_entry_ns) - sent);
    }
  /* Left installed if a signal may still be queued. */
  if (atomic_load (&bench_signal_entry_ns) != 0 || delays->len == 0)
    sigaction (signo, &old, NULL);
  *send_us = bench_median (sends);
  return bench_median (delays);
}

/* Python's main thread, through ctypes. Attaches a watch (its watcher
 * paused, so the watch's slot takes our captures) and starts the C thread,
 * parked until its turn. */
__attribute__ ((visibility ("default"))) void lw_bench_python_start (void);

void
lw_bench_python_start (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  cpu_set_t set;

  for (int k = 0; k < BENCH_N_THREADS; k++)
    for (int p = 0; p < BENCH_N_PLACES; p++)
      for (int j = 0; j < BENCH_N_TIMES; j++)
        bench.results[k][p].times[j] = g_array_new (FALSE, FALSE, sizeof (double));
  /* The CPUs of the process as a program starts (lagwatch decides then
   * whether waiting by spinning can help). */
  sched_getaffinity (0, sizeof set, &set);
  for (int cpu = 0; cpu < CPU_SETSIZE && bench.n_cpus < BENCH_N_PLACES; cpu++)
    if (CPU_ISSET (cpu, &set))
      bench.cpus[bench.n_cpus++] = cpu;
  if (bench.n_cpus < BENCH_N_PLACES)
    bench.cpus[BENCH_SAME_CPU] = bench.cpus[BENCH_OTHER_CPU];
  bench.snap = lw_snapshot_new (128 * 1024);
  bench.unwinder = lw_unwinder_new ();
  bench.python = lw_python_new ();
  bench.context = g_main_context_new ();
  lagwatch_config_set_output (config, "none", NULL);
  bench.watch = lagwatch_attach_with_config (bench.context, config);
  lagwatch_pause (bench.watch);
  g_mutex_init (&bench.spinner.lock);
  g_cond_init (&bench.spinner.cond);
  bench.thread = g_thread_new ("bench-spinner", bench_spinner_main, &bench.spinner);
}

/* Any thread but the one sampled. Takes @samples samples, 1 ms apart,
 * from the sampled threads' CPU (@same_cpu TRUE) or another (none on one
 * CPU): of the Python thread (@python TRUE), which spins at the bottom
 * after its lw_bench_python_adopt(); else of the C thread, which spins
 * meanwhile only. */
__attribute__ ((visibility ("default"))) void lw_bench_python_take (int python,
                                                                    int same_cpu,
                                                                    int samples);

void
lw_bench_python_take (int python, int same_cpu, int samples)
{
  int place = same_cpu ? BENCH_SAME_CPU : BENCH_OTHER_CPU;

  if (place == BENCH_OTHER_CPU && bench.n_cpus < BENCH_N_PLACES)
    return;
  bench_pin (bench.cpus[place]);
  if (!python)
    bench_spinner_run (&bench.spinner);
  for (int i = 0; i < samples; i++)
    {
      g_usleep (BENCH_GAP_US);
      bench_take (&bench.results[python ? BENCH_PYTHON : BENCH_NATIVE][place]);
    }
  if (!python)
    bench_spinner_park (&bench.spinner);
}

/* Any thread, after the last lw_bench_python_take(). Fills @medians_us
 * (BENCH_N_TIMES per thread sampled and place, then the median delivery
 * of @samples bare signals to the C thread from another CPU, then the
 * median time their sending system call took) and @counts
 * (BENCH_N_COUNTS per thread sampled and place), and frees everything. */
__attribute__ ((visibility ("default"))) void lw_bench_python_finish (int     samples,
                                                                      double *medians_us,
                                                                      int    *counts);

void
lw_bench_python_finish (int samples, double *medians_us, int *counts)
{
  lagwatch_detach (bench.watch);
  bench_pin (bench.cpus[BENCH_OTHER_CPU]);
  bench_spinner_run (&bench.spinner);
  medians_us[BENCH_N_THREADS * BENCH_N_PLACES * BENCH_N_TIMES]
    = bench_bare_signal (atomic_load (&bench.spinner.tid), samples,
                         &medians_us[BENCH_N_THREADS * BENCH_N_PLACES * BENCH_N_TIMES + 1]);
  bench_spinner_park (&bench.spinner);
  g_mutex_lock (&bench.spinner.lock);
  bench.spinner.quit = TRUE;
  g_cond_broadcast (&bench.spinner.cond);
  g_mutex_unlock (&bench.spinner.lock);
  g_thread_join (bench.thread);
  g_mutex_clear (&bench.spinner.lock);
  g_cond_clear (&bench.spinner.cond);

  for (int k = 0; k < BENCH_N_THREADS; k++)
    for (int p = 0; p < BENCH_N_PLACES; p++)
      {
        BenchResults *results = &bench.results[k][p];
        int series = k * BENCH_N_PLACES + p;

        for (int j = 0; j < BENCH_N_TIMES; j++)
          {
            medians_us[series * BENCH_N_TIMES + j] = bench_median (results->times[j]);
            g_array_unref (results->times[j]);
          }
        memcpy (counts + series * BENCH_N_COUNTS, results->counts, sizeof results->counts);
      }
  g_main_context_unref (bench.context);
  lw_python_free (bench.python);
  lw_unwinder_free (bench.unwinder);
  lw_snapshot_free (bench.snap);
}
