/* test-reporter.c: the reporting thread (lw-reporter.c) and the sink thread
 * (lw-sink-queue.c)
 *
 * A sink that stops taking data must cost the program nothing: its
 * callback still gets every report, memory stays bounded, and detach
 * returns. And the watcher never enters the symbolizer: this program is
 * linked with --wrap for the symbolizer's entry points, and the wrappers
 * count the calls made on the watcher thread (named "lagwatch"). A hang's
 * record names each distinct address once, whichever threads share it, and
 * reads /proc/self/maps once for all of them: the wrappers count the
 * reporting thread's lookups per address, and its reads of the maps (its
 * GLib file reads are wrapped too). And the record is made into JSON once,
 * for the hang's copy and the JSON sink: the JSON writer's strings are
 * counted too.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lag-harness.h"
#include "lw-json.h"
#include "lw-lines.h"
#include "lw-report.h"
#include "lw-reporter.h"
#include "lw-sink-queue.h"
#include "lw-symbols.h"

#define THRESHOLD_MS 20
#define N_LAGS       60

/* Symbolizer calls on the watcher thread, and on any thread. */
static gint watcher_symbolizer_calls;
static gint symbolizer_calls;

/* Any thread. Counts one entry into the symbolizer. */
static void
count_symbolizer_entry (void)
{
  char name[16] = "";

  g_atomic_int_inc (&symbolizer_calls);
  pthread_getname_np (pthread_self (), name, sizeof name);
  if (strcmp (name, "lagwatch") == 0)
    g_atomic_int_inc (&watcher_symbolizer_calls);
}

/* The reporting thread's symbol lookups by address (key: ip << 1 | is a
 * return address) and its reads of /proc/self/maps, while counting. */
static GMutex reporting_lock;
static GHashTable *reporting_lookups;
static guint reporting_maps_reads;

/* Any thread. TRUE on the reporting thread while counting; then with
 * reporting_lock held. */
static gboolean
reporting_count_begin (void)
{
  char name[16] = "";

  pthread_getname_np (pthread_self (), name, sizeof name);
  if (strcmp (name, "lagwatch-report") != 0)
    return FALSE;
  g_mutex_lock (&reporting_lock);
  if (reporting_lookups != NULL)
    return TRUE;
  g_mutex_unlock (&reporting_lock);
  return FALSE;
}

/* Thread names written into JSON, while counting (any thread). */
#define POOL_NAME "pool"
static gint pool_names_written;

void __real_lw_json_append_string (GString *out, const char *text);
void __wrap_lw_json_append_string (GString *out, const char *text);

void
__wrap_lw_json_append_string (GString *out, const char *text)
{
  if (g_strcmp0 (text, POOL_NAME) == 0)
    g_atomic_int_inc (&pool_names_written);
  __real_lw_json_append_string (out, text);
}

gboolean __real_g_file_get_contents (const gchar *filename, gchar **contents, gsize *length, GError **error);
gboolean __wrap_g_file_get_contents (const gchar *filename, gchar **contents, gsize *length, GError **error);

gboolean
__wrap_g_file_get_contents (const gchar *filename, gchar **contents, gsize *length, GError **error)
{
  if (filename != NULL && g_str_has_suffix (filename, "/maps") && reporting_count_begin ())
    {
      reporting_maps_reads++;
      g_mutex_unlock (&reporting_lock);
    }
  return __real_g_file_get_contents (filename, contents, length, error);
}

void     __real_lw_symbols_resolve        (uintptr_t ip, gboolean is_return_address, LwFrame *frame);
gboolean __real_lw_symbols_function_start (uintptr_t ip, gboolean is_return_address, uintptr_t *start);
void     __real_lw_lines_resolve          (LwFrame *frame, gboolean is_return_address);
void     __wrap_lw_symbols_resolve        (uintptr_t ip, gboolean is_return_address, LwFrame *frame);
gboolean __wrap_lw_symbols_function_start (uintptr_t ip, gboolean is_return_address, uintptr_t *start);
void     __wrap_lw_lines_resolve          (LwFrame *frame, gboolean is_return_address);

void
__wrap_lw_symbols_resolve (uintptr_t ip, gboolean is_return_address, LwFrame *frame)
{
  count_symbolizer_entry ();
  if (reporting_count_begin ())
    {
      gpointer key = GSIZE_TO_POINTER ((gsize) ip << 1 | (is_return_address ? 1 : 0));

      g_hash_table_insert (reporting_lookups, key,
                           GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (reporting_lookups, key)) + 1));
      g_mutex_unlock (&reporting_lock);
    }
  __real_lw_symbols_resolve (ip, is_return_address, frame);
}

gboolean
__wrap_lw_symbols_function_start (uintptr_t ip, gboolean is_return_address, uintptr_t *start)
{
  count_symbolizer_entry ();
  return __real_lw_symbols_function_start (ip, is_return_address, start);
}

void
__wrap_lw_lines_resolve (LwFrame *frame, gboolean is_return_address)
{
  count_symbolizer_entry ();
  __real_lw_lines_resolve (frame, is_return_address);
}

/* A lag whose samples land on many addresses of one function: the watcher
 * hands them over exact; grouping them by function (symbols) is the
 * reporting thread's job. */
static void
test_watcher_never_symbolizes (void)
{
  Harness h;
  LagWatchReport *report;

  harness_init (&h, THRESHOLD_MS);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (300));
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_true (harness_stack_has (report, "spin_ms", NULL));
  /* The wrappers see the symbolizer: this test can fail. */
  g_assert_cmpint (g_atomic_int_get (&symbolizer_calls), >, 0);
  g_assert_cmpint (g_atomic_int_get (&watcher_symbolizer_calls), ==, 0);
  harness_clear (&h);
}

/* Fills the pipe of @fd without blocking, then makes it blocking again:
 * the next write() to it waits for a reader that never comes. */
static void
fill_pipe (int fd)
{
  char block[4096];
  int flags = fcntl (fd, F_GETFL);

  memset (block, 'x', sizeof block);
  g_assert_cmpint (fcntl (fd, F_SETFL, flags | O_NONBLOCK), ==, 0);
  while (write (fd, block, sizeof block) > 0)
    ;
  g_assert_cmpint (errno, ==, EAGAIN);
  g_assert_cmpint (fcntl (fd, F_SETFL, flags), ==, 0);
}

/* Reads what @fd holds now, into @out, until @needle is in it or the
 * deadline passes. */
static void
drain_until (int fd, GString *out, const char *needle)
{
  gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  char buffer[65536];

  g_unix_set_fd_nonblocking (fd, TRUE, NULL);
  while (strstr (out->str, needle) == NULL && g_get_monotonic_time () < deadline)
    {
      GPollFD poll_fd = { fd, G_IO_IN, 0 };
      ssize_t n;

      if (g_poll (&poll_fd, 1, 100) <= 0)
        continue;
      n = read (fd, buffer, sizeof buffer);
      if (n > 0)
        g_string_append_len (out, buffer, n);
    }
}

typedef struct
{
  int      fd;
  GString *out;
} Drain;

/* The reader that comes back: drains the pipe until the summary is in. */
static gpointer
drain_thread (gpointer data)
{
  Drain *drain = data;

  drain_until (drain->fd, drain->out, "summary of this run");
  return NULL;
}

static gboolean
tick (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

/* How long the stalled phase waits at most for one lag's report. A lag
 * that the watcher did not report (it drops one it saw only after waking
 * far too late, as a process stopped by SIGSTOP would make it) is not
 * waited for past it: another lag is run instead. Generous: a report
 * takes milliseconds, a few hundred on a loaded machine. */
#define LAG_REPORT_WAIT_US (5 * G_USEC_PER_SEC)

/* Iterates @h's context until its callback has @n reports or
 * LAG_REPORT_WAIT_US pass. Asserts nothing (stderr may be stalled): TRUE
 * when the reports came. */
static gboolean
wait_reports_quietly (Harness *h, guint n)
{
  gint64 deadline = g_get_monotonic_time () + LAG_REPORT_WAIT_US;
  GSource *ticker = g_timeout_source_new (50);

  g_source_set_callback (ticker, tick, NULL, NULL);
  g_source_attach (ticker, h->context);
  while (harness_n_reports (h) < n && g_get_monotonic_time () < deadline)
    g_main_context_iteration (h->context, TRUE);
  g_source_destroy (ticker);
  g_source_unref (ticker);
  return harness_n_reports (h) >= n;
}

/* The lags the watcher counted (and handed to the reporting thread). */
static guint
lags_counted (LagWatch *watch)
{
  LagWatchStats *stats = lagwatch_get_stats (watch);
  guint lags;

  g_assert_nonnull (stats);
  lags = lagwatch_stats_get_lags (stats);
  lagwatch_stats_free (stats);
  return lags;
}

/* stderr is a pipe nobody reads, full before the first report: the stderr
 * sink drops what the pipe cannot take (it waits for a stalled reader once,
 * lw-sink-fd.c), and the sink thread's queue bounds what waits for it.
 *
 * While stderr is stalled, no assertion may fail: its message would block
 * on the pipe, or later go to the drain thread, and the subprocess would
 * end with no word said. Failures are checked once stderr is back, and
 * stdout (where the messages go) is line-buffered, so that what was said
 * before a failure reaches the test process. Each lag is waited for by its
 * report, not by a deadline for all of them: a loaded machine makes the
 * run slower, not failed. */
static void
stalled_stderr_child (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GString) drained = g_string_new ("");
  int saved_stderr = dup (STDERR_FILENO);
  int pipe_fds[2];
  Harness h;
  guint delivered, ran = 0, unreported = 0, still_held = 0, counted;
  gboolean last_reported;
  gint64 detach_us;
  GThread *drainer;
  Drain drain;

  setvbuf (stdout, NULL, _IOLBF, 0);
  g_assert_true (g_unix_open_pipe (pipe_fds, FD_CLOEXEC, NULL));
  fill_pipe (pipe_fds[1]);

  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_output (config, "stderr", NULL));
  harness_init_with_config (&h, config);
  g_assert_cmpint (dup2 (pipe_fds[1], STDERR_FILENO), ==, STDERR_FILENO);

  /* N_LAGS reports through the stalled sink, more than its queue holds.
   * At most twice as many lags: a watcher that misses them all stops the
   * loop, and the count below fails. */
  while (harness_n_reports (&h) < N_LAGS && ran < 2 * N_LAGS)
    {
      guint before = harness_n_reports (&h);

      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (2 * THRESHOLD_MS));
      ran++;
      if (!wait_reports_quietly (&h, before + 1))
        unreported++;
    }
  delivered = harness_n_reports (&h);

  /* The reader comes back: the next record that gets through is preceded
   * by the count of those dropped meanwhile, and the summary follows at
   * detach. */
  drain.fd = pipe_fds[0];
  drain.out = drained;
  drainer = g_thread_new ("drain", drain_thread, &drain);
  do
    {
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (2 * THRESHOLD_MS));
      ran++;
    }
  while (!(last_reported = wait_reports_quietly (&h, delivered + 1)) && ran < 2 * N_LAGS + 5);
  counted = lags_counted (h.watch);

  detach_us = g_get_monotonic_time ();
  lagwatch_detach (g_steal_pointer (&h.watch));
  detach_us = g_get_monotonic_time () - detach_us;
  g_thread_join (drainer);

  /* What the sink thread still holds: bounded by its queue. */
  for (guint i = 0; i < delivered; i++)
    if (g_atomic_int_get (&harness_report (&h, i)->ref_count) > 1)
      still_held++;

  g_assert_cmpint (dup2 (saved_stderr, STDERR_FILENO), ==, STDERR_FILENO);

  g_test_message ("%u lags run, %u not reported by the watcher; the callback got %u while stderr was "
                  "stalled, %u in all, of %u counted; detach took %.1f ms; the sink thread held %u",
                  ran, unreported, delivered, harness_n_reports (&h), counted, detach_us / 1000.0, still_held);
  g_assert_cmpuint (delivered, ==, N_LAGS);
  g_assert_true (last_reported);
  /* Every lag the watcher reported reached the callback, sink stalled or
   * not (the watcher counted the last one before detach). */
  g_assert_cmpuint (harness_n_reports (&h), ==, counted);
  g_assert_cmpint (detach_us, <, (LW_SINK_QUEUE_STOP_MS + 5000) * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpuint (still_held, <=, LW_SINK_QUEUE_MAX + 1);
  /* Once the reader reads, the drops are said, then the summary. */
  g_test_message ("drained: %s", drained->str + MAX ((gssize) drained->len - 2000, 0));
  /* "1 report dropped" or "N reports dropped". */
  g_assert_nonnull (strstr (drained->str, " dropped: sink stalled"));
  g_assert_nonnull (strstr (drained->str, "summary of this run"));
  harness_clear (&h);
}

static void
test_stalled_stderr (void)
{
  if (g_test_subprocess ())
    {
      stalled_stderr_child ();
      return;
    }
  g_test_trap_subprocess (NULL, 90 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

/* The lags @watch reported so far (its latency profile's count; where it
 * has none, G_MAXUINT: no count to wait for). */
static guint
reported_lags (LagWatch *watch)
{
  LagWatchStats *stats = lagwatch_get_stats (watch);
  guint lags = stats != NULL ? lagwatch_stats_get_lags (stats) : G_MAXUINT;

  lagwatch_stats_free (stats);
  return lags;
}

/* A callback that blocks on its first report until released. */
typedef struct
{
  GMutex   lock;
  GCond    cond;
  gboolean released;
  guint    calls;
} Gate;

static void
on_report_gated (LagWatchReport *report, gpointer data)
{
  Gate *gate = data;

  g_mutex_lock (&gate->lock);
  gate->calls++;
  while (!gate->released)
    g_cond_wait (&gate->cond, &gate->lock);
  g_mutex_unlock (&gate->lock);
}

/* While the callback blocks, the watcher's queue holds
 * LW_REPORTER_QUEUE_MAX reports at most; the rest are dropped, and the
 * sinks say so. */
static void
test_slow_callback_bounded (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-reporter-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "lags.jsonl", NULL);
  g_autofree char *output = g_strconcat ("json:", path, NULL);
  g_autofree char *json = NULL;
  const guint n_lags = LW_REPORTER_QUEUE_MAX + 16;
  Gate gate = { 0 };
  Harness h;
  guint calls;

  g_assert_nonnull (dir);
  g_mutex_init (&gate.lock);
  g_cond_init (&gate.cond);
  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  harness_init_with_config (&h, config);
  lagwatch_set_report_func (h.watch, on_report_gated, &gate, NULL);
  /* Until n_lags lags were reported (the last one is reported at detach):
   * under a slow runtime (ThreadSanitizer) a lag the watcher got to only
   * after it ended is counted missed, not queued. */
  for (guint i = 0; i < n_lags || reported_lags (h.watch) < n_lags - 1; i++)
    {
      g_assert_cmpuint (i, <, 4 * n_lags);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (2 * THRESHOLD_MS));
    }

  g_mutex_lock (&gate.lock);
  gate.released = TRUE;
  g_cond_broadcast (&gate.cond);
  g_mutex_unlock (&gate.lock);
  lagwatch_detach (g_steal_pointer (&h.watch));  /* delivers what was queued */

  g_mutex_lock (&gate.lock);  /* (the reporting thread wrote it under the lock) */
  calls = gate.calls;
  g_mutex_unlock (&gate.lock);
  g_test_message ("%u lags, the callback got %u", n_lags, calls);
  /* The blocked call and the queue: LW_REPORTER_QUEUE_MAX. Plus one: the
   * last lag was still going (the loop had not polled since) and detach
   * reports it, after the release, into a queue with room. */
  g_assert_cmpuint (calls, >, 0);
  g_assert_cmpuint (calls, <=, LW_REPORTER_QUEUE_MAX + 1);
  g_assert_true (g_file_get_contents (path, &json, NULL, NULL));
  g_assert_nonnull (strstr (json, "\"event\":\"dropped\""));
  g_assert_nonnull (strstr (json, "\"reason\":\"reporting thread behind\""));
  harness_clear (&h);
  g_assert_cmpint (g_unlink (path), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
  g_mutex_clear (&gate.lock);
  g_cond_clear (&gate.cond);
}

/* Threads of a pool that sleep in the same function, called from
 * generated code (as a JIT's frames are: in no module). */
#define POOL_THREADS 8

typedef struct
{
  GMutex   lock;
  GCond    cond;
  gboolean stop;
  guint    asleep;
  void   (*generated) (void (*func) (void));
} Pool;

static Pool pool;

static __attribute__ ((noinline)) void
pool_sleep (void)
{
  g_mutex_lock (&pool.lock);
  pool.asleep++;
  g_cond_broadcast (&pool.cond);
  while (!pool.stop)
    g_cond_wait (&pool.cond, &pool.lock);
  g_mutex_unlock (&pool.lock);
}

static gpointer
pool_thread (gpointer data)
{
  pool.generated (pool_sleep);
  return NULL;
}

/* A hang beside POOL_THREADS threads with the same stack through
 * generated code: its record looks each distinct address up once, and
 * reads the mappings once (for the generated code's frames) however many
 * stacks hold such frames. */
static void
test_hang_names_each_address_once (void)
{
  /* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret */
  static const guint8 code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autofree char *dir = g_dir_make_tmp ("lagwatch-reporter-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "lags.jsonl", NULL);
  g_autofree char *output = g_strconcat ("json:", path, NULL);
  g_autofree char *json = NULL;
  GThread *threads[POOL_THREADS];
  GHashTableIter iter;
  gpointer key, value;
  guint most = 0, records;
  void *page;
  Harness h;

  page = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true (page != MAP_FAILED);
  memcpy (page, code, sizeof code);
  g_assert_cmpint (mprotect (page, 4096, PROT_READ | PROT_EXEC), ==, 0);
  pool.generated = page;
  g_mutex_init (&pool.lock);
  g_cond_init (&pool.cond);
  for (guint i = 0; i < POOL_THREADS; i++)
    threads[i] = g_thread_new (POOL_NAME, pool_thread, NULL);
  g_mutex_lock (&pool.lock);
  while (pool.asleep < POOL_THREADS)
    g_cond_wait (&pool.cond, &pool.lock);
  g_mutex_unlock (&pool.lock);

  g_assert_true (lagwatch_config_set_threshold_ms (config, THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_hang_ms (config, 5 * THRESHOLD_MS));
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  g_assert_true (lagwatch_config_set_state_dir (config, dir));
  harness_init_with_config (&h, config);
  g_mutex_lock (&reporting_lock);
  reporting_lookups = g_hash_table_new (NULL, NULL);
  reporting_maps_reads = 0;
  g_mutex_unlock (&reporting_lock);
  g_atomic_int_set (&pool_names_written, 0);
  harness_run_lag (&h, spin_ms, GINT_TO_POINTER (20 * THRESHOLD_MS));
  /* The lag's own record comes after its hang's. */
  harness_wait_reports (&h, 1);
  harness_clear (&h);

  g_assert_true (g_file_get_contents (path, &json, NULL, NULL));
  g_assert_nonnull (strstr (json, "\"event\":\"hang\""));
  g_assert_nonnull (strstr (json, "\"module\":\"[jit]\""));
  records = 2;  /* the hang's, then the lag's */
  g_mutex_lock (&reporting_lock);
  g_hash_table_iter_init (&iter, reporting_lookups);
  while (g_hash_table_iter_next (&iter, &key, &value))
    most = MAX (most, GPOINTER_TO_UINT (value));
  g_test_message ("%u distinct addresses looked up, %u times at most; /proc/self/maps read %u times",
                  g_hash_table_size (reporting_lookups), most, reporting_maps_reads);
  /* Once per record; every pool thread's frames are the same addresses. */
  g_assert_cmpuint (g_hash_table_size (reporting_lookups), >, 0);
  g_assert_cmpuint (most, <=, records);
  g_assert_cmpuint (reporting_maps_reads, >=, 1);
  g_assert_cmpuint (reporting_maps_reads, <=, records);
  g_clear_pointer (&reporting_lookups, g_hash_table_unref);
  g_mutex_unlock (&reporting_lock);
  /* Every pool thread's name, once: one serialization of the record. */
  g_test_message ("pool thread names written into JSON: %d", g_atomic_int_get (&pool_names_written));
  g_assert_cmpint (g_atomic_int_get (&pool_names_written), ==, POOL_THREADS);

  g_mutex_lock (&pool.lock);
  pool.stop = TRUE;
  g_cond_broadcast (&pool.cond);
  g_mutex_unlock (&pool.lock);
  for (guint i = 0; i < POOL_THREADS; i++)
    g_thread_join (threads[i]);
  munmap (page, 4096);
  harness_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/reporter/watcher-never-symbolizes", test_watcher_never_symbolizes);
  g_test_add_func ("/reporter/stalled-stderr", test_stalled_stderr);
  g_test_add_func ("/reporter/slow-callback-bounded", test_slow_callback_bounded);
  g_test_add_func ("/reporter/hang-names-each-address-once", test_hang_names_each_address_once);
  return g_test_run ();
}
