/* bench-hang.c: from a hang's point to its record written, beside N threads
 *
 * A hang record (LAGWATCH_HANG_MS into a lag) carries every other thread's
 * stack. Here a main loop gets stuck while N threads of a pool sleep, as a
 * real program's do, in various system calls (futex, poll, read, epoll_wait,
 * nanosleep, select), a few calls deep, one in seven of them under
 * generated code (an anonymous executable mapping, as a JIT's frames are). The stuck callback itself watches
 * the JSON sink's file and times from the hang point (the lag's start plus
 * hang_ms, the lag's start being the callback's entry) to the moment the
 * hang record is in the file. The same program, with 0, 100 and 1000
 * threads, side by side. `--short` runs one hang per count (CI: reported,
 * never judged); the full run five and gives the median and the worst.
 *
 * Any thread: main() runs the loop; the pool's threads only sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lagwatch.h"
#include "bench-stats.h"

#define THRESHOLD_MS 50
#define HANG_MS      300

static gboolean short_mode;

/* The pool: every thread sleeps until the write end of @wake_fds is
 * closed; the futex and nanosleep sleepers, until @pool_stop is set). */
static int wake_fds[2] = { -1, -1 };
static GMutex pool_lock;
static GCond pool_cond;
static gboolean pool_stop;

/* Pool thread. One of six ways to sleep, a few calls deep. */
static __attribute__ ((noinline)) void
pool_sleep (guint kind)
{
  switch (kind % 6)
    {
    case 0:
      g_mutex_lock (&pool_lock);
      while (!pool_stop)
        g_cond_wait (&pool_cond, &pool_lock);
      g_mutex_unlock (&pool_lock);
      break;
    case 1:
      {
        struct pollfd fd = { wake_fds[0], POLLIN, 0 };

        while (poll (&fd, 1, -1) < 0 && errno == EINTR)
          ;
      }
      break;
    case 2:
      {
        char byte;

        while (read (wake_fds[0], &byte, 1) < 0 && errno == EINTR)
          ;
      }
      break;
    case 3:
      {
        int ep = epoll_create1 (EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN }, out;

        epoll_ctl (ep, EPOLL_CTL_ADD, wake_fds[0], &ev);
        while (epoll_wait (ep, &out, 1, -1) < 0 && errno == EINTR)
          ;
        close (ep);
      }
      break;
    case 4:
      while (!g_atomic_int_get (&pool_stop))
        g_usleep (50 * 1000);
      break;
    default:
      {
        fd_set set;

        do
          {
            FD_ZERO (&set);
            FD_SET (wake_fds[0], &set);
          }
        while (select (wake_fds[0] + 1, &set, NULL, NULL, NULL) < 0 && errno == EINTR);
      }
      break;
    }
}

/* Generated code that calls the function it is given: push %rbp;
 * mov %rsp,%rbp; call *%rdi; pop %rbp; ret. */
static void (*generated) (void (*func) (void));

/* Pool thread. Sleeps in a futex, called from generated code. */
static __attribute__ ((noinline)) void
pool_sleep_generated (void)
{
  pool_sleep (0);
  __asm__ volatile ("" ::: "memory");
}

/* Pool thread. */
static __attribute__ ((noinline)) void
pool_work (guint kind)
{
  if (kind % 7 == 6)
    generated (pool_sleep_generated);
  else
    pool_sleep (kind % 7);
  __asm__ volatile ("" ::: "memory");
}

/* Pool thread. */
static gpointer
pool_thread (gpointer data)
{
  pool_work (GPOINTER_TO_UINT (data));
  return NULL;
}

typedef struct
{
  char   *path;     /* the JSON sink's file */
  gint64  took_us;  /* hang point to record written; -1 not seen */
  int64_t cpu_ns;   /* CPU of lagwatch's threads from the lag's start to then */
} Stuck;

/* Any thread. CPU time (ns) used so far by this process's threads whose
 * name starts with "lagwatch" (the watcher, the reporting and the sink
 * thread), from their scheduler statistics: what a loaded machine does
 * not change, unlike the time to the record. */
static int64_t
lagwatch_cpu_ns (void)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *entry;
  int64_t total = 0;

  while (dir != NULL && (entry = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *comm_path = g_strdup_printf ("/proc/self/task/%s/comm", entry);
      g_autofree char *stat_path = g_strdup_printf ("/proc/self/task/%s/schedstat", entry);
      g_autofree char *comm = NULL;
      g_autofree char *stat = NULL;

      if (g_file_get_contents (comm_path, &comm, NULL, NULL) && g_str_has_prefix (comm, "lagwatch")
          && g_file_get_contents (stat_path, &stat, NULL, NULL))
        total += g_ascii_strtoll (stat, NULL, 10);
    }
  return total;
}

/* Loop thread (the stuck callback). TRUE once the file at @path holds a
 * whole hang record. */
static gboolean
hang_written (const char *path)
{
  g_autofree char *text = NULL;
  const char *at;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return FALSE;
  at = strstr (text, "\"event\":\"hang\"");
  return at != NULL && strchr (at, '\n') != NULL;
}

/* Loop thread. Stuck until the hang record is written (a minute at most). */
static gboolean
stuck_callback (gpointer data)
{
  Stuck *stuck = data;
  gint64 start = g_get_monotonic_time ();
  gint64 hang_point = start + HANG_MS * 1000;
  gint64 give_up = start + 60 * G_USEC_PER_SEC;
  off_t size = 0;
  int64_t cpu_before = lagwatch_cpu_ns ();

  stuck->took_us = -1;
  while (g_get_monotonic_time () < give_up)
    {
      struct stat st;

      if (g_stat (stuck->path, &st) == 0 && st.st_size != size)
        {
          size = st.st_size;
          if (hang_written (stuck->path))
            {
              stuck->took_us = g_get_monotonic_time () - hang_point;
              stuck->cpu_ns = lagwatch_cpu_ns () - cpu_before;
              break;
            }
        }
    }
  return G_SOURCE_REMOVE;
}

static void
count_report (LagWatchReport *report, gpointer data)
{
  g_atomic_int_inc ((gint *) data);
}

/* Main thread. One hang beside @n_threads sleeping threads: milliseconds
 * from the hang point to the record in the file (negative: never), and in
 * *@cpu_ms the CPU lagwatch's threads used from the lag's start to then. */
static double
one_hang (guint n_threads, double *cpu_ms)
{
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-bench-hang-XXXXXX", NULL);
  g_autofree char *output = NULL;
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  GPtrArray *threads = g_ptr_array_new ();
  gint reports = 0;
  Stuck stuck = { 0 };
  pthread_attr_t attr;
  LagWatch *watch;
  gint64 deadline;

  g_assert_nonnull (dir);
  stuck.path = g_build_filename (dir, "lags.jsonl", NULL);
  output = g_strconcat ("json:", stuck.path, NULL);
  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_hang_ms (config, HANG_MS));
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  g_assert_true (lagwatch_config_set_state_dir (config, dir));

  g_assert_cmpint (pipe2 (wake_fds, O_CLOEXEC), ==, 0);
  pool_stop = FALSE;
  pthread_attr_init (&attr);
  pthread_attr_setstacksize (&attr, 128 * 1024);
  for (guint i = 0; i < n_threads; i++)
    {
      pthread_t *thread = g_new (pthread_t, 1);
      int error = pthread_create (thread, &attr, pool_thread, GUINT_TO_POINTER (i));

      if (error != 0)
        {
          /* A limit on tasks (a container's pids.max): measured with fewer. */
          printf ("  (only %u of %u threads: %s)\n", i, n_threads, g_strerror (error));
          g_free (thread);
          break;
        }
      g_ptr_array_add (threads, thread);
    }
  pthread_attr_destroy (&attr);

  g_main_context_push_thread_default (context);
  watch = lagwatch_attach_with_config (context, config);
  g_assert_nonnull (watch);
  lagwatch_set_report_func (watch, count_report, &reports, NULL);
  g_main_context_iteration (context, FALSE);
  g_main_context_iteration (context, FALSE);
  /* Let the pool reach its sleeps (a thread not yet asleep is captured by
   * signal, not the case measured). */
  g_usleep (200 * 1000);

  {
    GSource *source = g_idle_source_new ();

    g_source_set_callback (source, stuck_callback, &stuck, NULL);
    g_source_attach (source, context);
    g_source_unref (source);
  }
  g_main_context_iteration (context, FALSE);
  /* The lag's own record, after the hang's. */
  deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (g_atomic_int_get (&reports) == 0 && g_get_monotonic_time () < deadline)
    {
      g_main_context_iteration (context, FALSE);
      g_usleep (1000);
    }
  lagwatch_detach (watch);
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);

  g_mutex_lock (&pool_lock);
  pool_stop = TRUE;
  g_cond_broadcast (&pool_cond);
  g_mutex_unlock (&pool_lock);
  close (wake_fds[1]);  /* every reader of the pipe sees its end */
  for (guint i = 0; i < threads->len; i++)
    {
      pthread_join (*(pthread_t *) threads->pdata[i], NULL);
      g_free (threads->pdata[i]);
    }
  g_ptr_array_free (threads, TRUE);
  close (wake_fds[0]);

  {
    g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
    const char *name;

    while (d != NULL && (name = g_dir_read_name (d)) != NULL)
      {
        g_autofree char *file = g_build_filename (dir, name, NULL);

        g_unlink (file);
      }
  }
  g_rmdir (dir);
  g_free (stuck.path);
  *cpu_ms = stuck.cpu_ns / 1e6;
  return stuck.took_us < 0 ? -1.0 : stuck.took_us / 1000.0;
}

int
main (int argc, char **argv)
{
  guint counts[8] = { 0, 100, 1000 }, n_counts = 0;
  guint runs;
  double cpu;

  /* Thread counts may be given (for a profiler): the default is 0 100 1000. */
  for (int i = 1; i < argc; i++)
    if (g_str_equal (argv[i], "--short"))
      short_mode = TRUE;
    else if (n_counts < G_N_ELEMENTS (counts))
      counts[n_counts++] = (guint) g_ascii_strtoull (argv[i], NULL, 10);
  if (n_counts == 0)
    n_counts = 3;
  runs = short_mode ? 1 : 5;
  {
    static const guint8 code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };
    void *page = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    g_assert_true (page != MAP_FAILED);
    memcpy (page, code, sizeof code);
    g_assert_cmpint (mprotect (page, 4096, PROT_READ | PROT_EXEC), ==, 0);
    generated = page;
  }

  printf ("Hang point (%d ms into the lag) to the hang record in its file, beside N sleeping\n"
          "threads (%u run%s each); the CPU lagwatch's threads used from the lag's start to then\n"
          "(median)\n", HANG_MS, runs, runs > 1 ? "s" : "");
  /* A first hang pays one-time costs (symbol tables): not the count's. */
  one_hang (0, &cpu);
  for (guint c = 0; c < n_counts; c++)
    {
      g_autoptr(GArray) times = g_array_new (FALSE, FALSE, sizeof (double));
      g_autoptr(GArray) cpus = g_array_new (FALSE, FALSE, sizeof (double));
      guint missed = 0;

      for (guint r = 0; r < runs; r++)
        {
          double ms = one_hang (counts[c], &cpu);

          if (ms < 0)
            missed++;
          else
            {
              g_array_append_val (times, ms);
              g_array_append_val (cpus, cpu);
            }
        }
      if (times->len == 0)
        printf ("  %5u threads: no hang record within a minute\n", counts[c]);
      else
        printf ("  %5u threads: median %7.1f ms, worst %7.1f ms; lagwatch's CPU %7.1f ms%s\n",
                counts[c], bench_median (times), bench_percentile (times, 1.0), bench_median (cpus),
                missed > 0 ? " (some runs never wrote one)" : "");
    }
  return 0;
}
