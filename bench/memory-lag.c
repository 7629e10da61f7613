/* memory-lag: preloaded into gtk4-widget-factory by bench-memory. One
 * second after the program's loop first runs (its window is up), it reads
 * the process's memory (/proc/self/smaps_rollup: Rss and Anonymous), then
 * a GSource callback computes for 300 ms of CPU time: a lag. It then waits,
 * polling every 20 ms from the loop, until lagwatch's record of that lag is
 * in the JSON Lines file $LW_BENCH_JSON (when set; otherwise 500 ms, the
 * run without lagwatch), reads the memory again, prints one line to
 * $LW_BENCH_OUT and ends the program:
 *   "before_rss_kib=N before_anon_kib=N after_rss_kib=N after_anon_kib=N earlier=N"
 * where earlier counts the other lags reported by then (the program's own
 * start-up on a loaded machine): then this was not the first report.
 * The program itself is not changed. Main thread only (GSource callbacks). */
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static struct
{
  guint64 before_rss, before_anon;
  gint64  waited_from_us;
} lw_bench;

/* Rss and Anonymous of this process, in KiB. */
static void
lw_bench_memory (guint64 *rss_kib, guint64 *anon_kib)
{
  g_autofree char *text = NULL;

  *rss_kib = *anon_kib = 0;
  if (!g_file_get_contents ("/proc/self/smaps_rollup", &text, NULL, NULL))
    return;
  for (char *line = text; line != NULL && *line != '\0';)
    {
      char *next = strchr (line, '\n');

      if (next != NULL)
        *next++ = '\0';
      sscanf (line, "Rss: %" G_GUINT64_FORMAT " kB", rss_kib);
      sscanf (line, "Anonymous: %" G_GUINT64_FORMAT " kB", anon_kib);
      line = next;
    }
}

static gint64
lw_bench_thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* The whole lag records in the JSON Lines file at @path (0 if none), and
 * in *@ours whether one of them is the lag of this bench (its function in
 * the stack). */
static guint
lw_bench_reports (const char *path, gboolean *ours)
{
  g_autofree char *text = NULL;
  guint n = 0;

  *ours = FALSE;
  if (path == NULL || !g_file_get_contents (path, &text, NULL, NULL))
    return 0;
  for (char *line = text, *end; (end = strchr (line, '\n')) != NULL; line = end + 1)
    {
      *end = '\0';
      if (strstr (line, "\"event\":\"lag\"") == NULL)
        continue;
      n++;
      *ours |= strstr (line, "lw_bench_lag") != NULL;
    }
  return n;
}

static gboolean
lw_bench_wait_report (gpointer data)
{
  const char *json = g_getenv ("LW_BENCH_JSON");
  const char *out = g_getenv ("LW_BENCH_OUT");
  guint64 rss, anon;
  gboolean ours = FALSE;
  guint n = json != NULL ? lw_bench_reports (json, &ours) : 0;
  FILE *file;

  if (json != NULL ? !ours
                   : g_get_monotonic_time () - lw_bench.waited_from_us < 500 * G_TIME_SPAN_MILLISECOND)
    return G_SOURCE_CONTINUE;
  lw_bench_memory (&rss, &anon);
  if (out != NULL && (file = fopen (out, "w")) != NULL)
    {
      fprintf (file, "before_rss_kib=%" G_GUINT64_FORMAT " before_anon_kib=%" G_GUINT64_FORMAT
               " after_rss_kib=%" G_GUINT64_FORMAT " after_anon_kib=%" G_GUINT64_FORMAT " earlier=%u\n",
               lw_bench.before_rss, lw_bench.before_anon, rss, anon, n > 0 ? n - 1 : 0);
      fclose (file);
    }
  if (g_application_get_default () != NULL)
    g_application_quit (g_application_get_default ());
  return G_SOURCE_REMOVE;
}

static __attribute__ ((noipa)) gboolean
lw_bench_lag (gpointer data)
{
  gint64 end;

  lw_bench_memory (&lw_bench.before_rss, &lw_bench.before_anon);
  end = lw_bench_thread_cpu_us () + 300 * 1000;
  while (lw_bench_thread_cpu_us () < end)
    ;
  lw_bench.waited_from_us = g_get_monotonic_time ();
  g_timeout_add (20, lw_bench_wait_report, NULL);
  return G_SOURCE_REMOVE;
}

__attribute__ ((constructor)) static void
lw_bench_init (void)
{
  if (g_getenv ("LW_BENCH_OUT") != NULL)
    g_timeout_add (1000, lw_bench_lag, NULL);
}
