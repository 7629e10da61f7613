/* bench-calltree.c: how honest a lag's call tree is about calls shorter
 * than the sampling interval (report only, nothing is judged)
 *
 * Runs the known-profile lags of tests/known-profile.h (interleaved 3-9 ms
 * calls of two functions; three functions at 60/30/10%) under lagwatch and
 * prints, per function, its share of the variant's functions:
 * - tree: the call tree's (timed calls and summaries);
 * - samples: the samples whose stack names it;
 * - log@samples: the program's own log at the samples' instants;
 * - log CPU: the program's own log, in CPU time (the truth);
 * - perf: `perf record` of the same lag, in the same order of calls (its
 *   seed, printed), without lagwatch (cpu-clock, 1 kHz,
 *   DWARF call graphs, the function's share with its callees), when perf
 *   (Debian package linux-perf) is installed and allowed; else it says so.
 *
 * Usage: bench-calltree [--runs N] [--short]
 *        bench-calltree --workload VARIANT [--seed N]   (the lag alone, for perf)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "known-profile.h"
#include "lw-call-tree.h"

/* Main thread. The variant named @name, NULL when none is. */
static const KpVariant *
bench_variant (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (kp_variants); i++)
    if (g_strcmp0 (kp_variants[i].name, name) == 0)
      return &kp_variants[i];
  return NULL;
}

/* Main thread. Each function's share of @v's functions in `perf record`
 * of the lag run alone, into @perf; FALSE with @why set when perf is
 * absent or fails. */
static gboolean
bench_perf (const KpVariant *v, const char *self, double *perf, char **why)
{
  g_autofree char *perf_path = g_find_program_in_path ("perf");
  g_autofree char *dir = NULL, *data = NULL, *out = NULL, *err = NULL;
  double sum = 0;
  int status = 0;

  if (perf_path == NULL)
    {
      *why = g_strdup ("perf is not installed (Debian package linux-perf)");
      return FALSE;
    }
  dir = g_dir_make_tmp ("bench-calltree-XXXXXX", NULL);
  if (dir == NULL)
    {
      *why = g_strdup ("no temporary directory");
      return FALSE;
    }
  data = g_build_filename (dir, "perf.data", NULL);
  {
    g_autofree char *seed = g_strdup_printf ("%u", kp_seed);
    const char *record[] = { perf_path, "record", "-q", "-e", "cpu-clock", "-F", "1000", "--call-graph",
                             "dwarf,16384", "-o", data, "--", self, "--workload", v->name, "--seed", seed, NULL };

    if (!g_spawn_sync (NULL, (char **) record, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, NULL)
        || !g_spawn_check_wait_status (status, NULL))
      {
        *why = g_strdup_printf ("perf record failed: %s", err != NULL ? g_strstrip (err) : "?");
        g_unlink (data);
        g_rmdir (dir);
        return FALSE;
      }
    g_clear_pointer (&err, g_free);
  }
  {
    const char *report[] = { perf_path, "report", "-i", data, "--stdio", "-q", "--children", "--sort",
                             "symbol", "-g", "none", NULL };

    if (!g_spawn_sync (NULL, (char **) report, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, NULL)
        || !g_spawn_check_wait_status (status, NULL))
      {
        *why = g_strdup_printf ("perf report failed: %s", err != NULL ? g_strstrip (err) : "?");
        g_unlink (data);
        g_rmdir (dir);
        return FALSE;
      }
  }
  g_unlink (data);
  g_rmdir (dir);
  /* Lines "Children% Self% [.] symbol ...", empty words between the
   * spaces: the first column counts the function with what it called. */
  for (guint f = 0; f < v->n_functions; f++)
    perf[f] = 0;
  {
    g_auto(GStrv) lines = g_strsplit (out, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++)
      {
        g_auto(GStrv) words = g_strsplit_set (g_strstrip (lines[i]), " \t", -1);
        guint n;

        /* Drop the empty words runs of spaces leave. */
        n = 0;
        for (guint k = 0; words[k] != NULL; k++)
          if (*words[k] != '\0')
            words[n++] = words[k];
          else
            g_free (words[k]);
        words[n] = NULL;

        for (guint k = 1; k + 1 < n; k++)
          if (g_str_equal (words[k], "[.]"))
            for (guint f = 0; f < v->n_functions; f++)
              if (g_str_equal (words[k + 1], v->functions[f]))
                perf[f] = g_ascii_strtod (words[0], NULL);
      }
  }
  for (guint f = 0; f < v->n_functions; f++)
    sum += perf[f];
  if (sum <= 0)
    {
      *why = g_strdup ("perf saw none of the functions");
      return FALSE;
    }
  for (guint f = 0; f < v->n_functions; f++)
    perf[f] /= sum;
  return TRUE;
}

/* Main thread. One run of @v under lagwatch; prints its table. */
static void
bench_run (const KpVariant *v, const char *self, gboolean with_perf)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  double truth[KP_MAX_FUNCTIONS], at_samples[KP_MAX_FUNCTIONS], tree[KP_MAX_FUNCTIONS];
  double samples[KP_MAX_FUNCTIONS], perf[KP_MAX_FUNCTIONS];
  g_autofree char *why = NULL;
  gboolean perf_ok = FALSE;
  LagWatchReport *report;
  Harness h;

  g_assert_true (lagwatch_config_set_threshold_ms (config, 20));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  harness_init_with_config (&h, config);
  kp_seed = g_random_int ();
  harness_run_lag (&h, known_profile_run, (gpointer) v);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  if (with_perf)
    perf_ok = bench_perf (v, self, perf, &why);
  printf ("%s (order seed %u): %u samples %.1f ms apart (median, wall), %u calls logged, lag %.0f ms, %.0f ms of CPU\n",
          v->name, kp_seed, report->n_timeline, lw_report_sample_interval (report, 0) / 1e6, kp_n_log,
          lagwatch_report_get_duration_ms (report), lagwatch_report_get_cpu_ms (report));
  if (!known_profile_shares (report, v, truth, at_samples, tree, samples))
    printf ("  the tree or the samples hold none of the functions\n");
  else
    {
      printf ("  %-12s %7s %8s %12s %8s %7s\n", "function", "tree", "samples", "log@samples", "log CPU", "perf");
      for (guint f = 0; f < v->n_functions; f++)
        {
          g_autofree char *perf_text = perf_ok ? g_strdup_printf ("%6.1f%%", 100 * perf[f]) : g_strdup ("-");

          printf ("  %-12s %6.1f%% %7.1f%% %11.1f%% %7.1f%% %7s\n", v->functions[f], 100 * tree[f],
                  100 * samples[f], 100 * at_samples[f], 100 * truth[f], perf_text);
        }
    }
  if (with_perf && !perf_ok)
    printf ("  perf: %s\n", why);
  harness_clear (&h);
}

int
main (int argc, char **argv)
{
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  const char *workload = NULL;
  gint64 seed = 12345;
  gint runs = 3;
  gboolean is_short = FALSE;
  GOptionEntry entries[] = {
    { "runs", 0, 0, G_OPTION_ARG_INT, &runs, "Runs of each variant (3)", "N" },
    { "short", 0, 0, G_OPTION_ARG_NONE, &is_short, "One run, no perf (the test suite's)", NULL },
    { "workload", 0, 0, G_OPTION_ARG_STRING, &workload, "Only run the lag of VARIANT, for perf", "VARIANT" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "With --workload: the order's seed (the run's, for perf)", "N" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = g_option_context_new ("- the call tree's shares against the truth");
  g_autoptr(GError) error = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      fprintf (stderr, "bench-calltree: %s\n", error->message);
      return 2;
    }
  if (workload != NULL)
    {
      const KpVariant *v = bench_variant (workload);

      if (v == NULL)
        {
          fprintf (stderr, "bench-calltree: no variant \"%s\" (interleaved, blocks)\n", workload);
          return 2;
        }
      kp_seed = (guint32) seed;
      known_profile_run ((gpointer) v);
      return 0;
    }
  if (is_short)
    runs = 1;
  if (runs < 1)
    runs = 1;
  for (guint i = 0; i < G_N_ELEMENTS (kp_variants); i++)
    for (gint r = 0; r < runs; r++)
      bench_run (&kp_variants[i], self, !is_short);
  return 0;
}
