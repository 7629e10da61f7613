/* bench-stats.h: the order statistics the benchmarks quote (medians and
 * percentiles of times), one copy for every benchmark. Any thread. */
#pragma once

#include <glib.h>

static G_GNUC_UNUSED int
bench_compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* The value at fraction @p (0 to 1) of @values, which it sorts. */
static G_GNUC_UNUSED double
bench_percentile (GArray *values, double p)
{
  if (values->len == 0)
    return 0.0;
  g_array_sort (values, bench_compare_doubles);
  return g_array_index (values, double, MIN (values->len - 1, (guint) (p * values->len)));
}

/* The median of @values (the upper one of an even count), which it sorts. */
static G_GNUC_UNUSED double
bench_median (GArray *values)
{
  return bench_percentile (values, 0.5);
}
