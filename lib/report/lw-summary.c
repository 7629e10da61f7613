/* lw-summary.c: per-fingerprint counts, Fibonacci back-off, summary table */
#include "lw-summary.h"
#include "lw-report-text.h"
#include "lw-say.h"

/* Fingerprints tracked one by one; the rest share one row, so that a
 * program with endlessly new stacks keeps a bounded table (about 150 bytes
 * a row). */
#define LW_SUMMARY_MAX_ROWS 1024
#define LW_SUMMARY_OTHER    "(other)"

typedef struct
{
  char   *fingerprint;
  char   *label;        /* innermost program symbol, for the table */
  guint   count;
  guint   shown_at;     /* occurrence last shown on a human sink */
  double  total_ms;
  double  worst_ms;
  guint   order;        /* first-seen order, for a stable table */
} LwSummaryEntry;

struct _LwSummary
{
  GMutex      lock;
  GHashTable *entries;  /* fingerprint -> LwSummaryEntry */
  char       *run_line; /* the latency profile's line, shown first; NULL: none */
  char       *missed_line; /* the lags seen only after they ended; NULL: none */
};

static void
lw_summary_entry_free (gpointer data)
{
  LwSummaryEntry *entry = data;

  g_free (entry->fingerprint);
  g_free (entry->label);
  g_free (entry);
}

LwSummary *
lw_summary_new (void)
{
  LwSummary *summary = g_new0 (LwSummary, 1);

  g_mutex_init (&summary->lock);
  summary->entries = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, lw_summary_entry_free);
  return summary;
}

void
lw_summary_free (LwSummary *summary)
{
  if (summary == NULL)
    return;
  g_hash_table_unref (summary->entries);
  g_mutex_clear (&summary->lock);
  g_free (summary->run_line);
  g_free (summary->missed_line);
  g_free (summary);
}

gboolean
lw_summary_is_fibonacci (guint n)
{
  guint a = 1, b = 2;

  while (a < n)
    {
      guint next = a + b;

      a = b;
      b = next;
    }
  return a == n;
}

/* Reporting thread. The innermost program frame, as the text report
 * names it; "(no stack)" only when there is no frame at all. */
static char *
lw_summary_label (const LagWatchReport *report)
{
  return lw_report_stack_label (report->frames, report->n_frames);
}

gboolean
lw_summary_record (LwSummary *summary, LagWatchReport *report, guint *skipped)
{
  LwSummaryEntry *entry;
  gboolean show;

  g_mutex_lock (&summary->lock);
  entry = g_hash_table_lookup (summary->entries, report->fingerprint);
  if (entry == NULL && g_hash_table_size (summary->entries) >= LW_SUMMARY_MAX_ROWS)
    entry = g_hash_table_lookup (summary->entries, LW_SUMMARY_OTHER);
  if (entry == NULL && g_hash_table_size (summary->entries) >= LW_SUMMARY_MAX_ROWS - 1)
    {
      entry = g_new0 (LwSummaryEntry, 1);
      entry->fingerprint = g_strdup (LW_SUMMARY_OTHER);
      entry->label = g_strdup ("(every other stack)");
      entry->order = g_hash_table_size (summary->entries);
      g_hash_table_insert (summary->entries, entry->fingerprint, entry);
    }
  if (entry == NULL)
    {
      entry = g_new0 (LwSummaryEntry, 1);
      entry->fingerprint = g_strdup (report->fingerprint);
      entry->label = lw_summary_label (report);
      entry->order = g_hash_table_size (summary->entries);
      g_hash_table_insert (summary->entries, entry->fingerprint, entry);
    }
  entry->count++;
  entry->total_ms += report->duration_ms;
  entry->worst_ms = MAX (entry->worst_ms, report->duration_ms);
  report->occurrence = entry->count;
  show = lw_summary_is_fibonacci (entry->count);
  *skipped = show ? entry->count - entry->shown_at - 1 : 0;
  if (show)
    entry->shown_at = entry->count;
  g_mutex_unlock (&summary->lock);
  return show;
}

static gint
lw_summary_by_total (gconstpointer a, gconstpointer b)
{
  const LwSummaryEntry *x = *(LwSummaryEntry * const *) a;
  const LwSummaryEntry *y = *(LwSummaryEntry * const *) b;

  if (x->total_ms != y->total_ms)
    return x->total_ms > y->total_ms ? -1 : 1;
  return (gint) x->order - (gint) y->order;
}

void
lw_summary_set_run_line (LwSummary *summary, const char *line)
{
  g_mutex_lock (&summary->lock);
  g_free (summary->run_line);
  summary->run_line = g_strdup (line);
  g_mutex_unlock (&summary->lock);
}

void
lw_summary_set_missed_line (LwSummary *summary, const char *line)
{
  g_mutex_lock (&summary->lock);
  g_free (summary->missed_line);
  summary->missed_line = g_strdup (line);
  g_mutex_unlock (&summary->lock);
}

char *
lw_summary_to_text (LwSummary *summary, guint64 dropped_stalled, guint64 dropped_behind)
{
  g_autoptr(GPtrArray) rows = NULL;
  GString *out;
  GHashTableIter iter;
  gpointer entry;

  g_mutex_lock (&summary->lock);
  if (g_hash_table_size (summary->entries) == 0 && dropped_stalled == 0 && dropped_behind == 0
      && summary->missed_line == NULL)
    {
      g_mutex_unlock (&summary->lock);
      return NULL;
    }
  rows = g_ptr_array_new ();
  g_hash_table_iter_init (&iter, summary->entries);
  while (g_hash_table_iter_next (&iter, NULL, &entry))
    g_ptr_array_add (rows, entry);
  g_ptr_array_sort (rows, lw_summary_by_total);

  out = g_string_new (NULL);
  if (summary->run_line != NULL)
    g_string_append_printf (out, "lagwatch: this run: %s\n", summary->run_line);
  g_string_append (out, "lagwatch: summary of this run's lags, by stack (heaviest total first)\n");
  g_string_append_printf (out, "  %6s  %10s  %10s  %-16s  %s\n", "count", "total ms", "worst ms",
                          "fingerprint", "innermost program frame");
  for (guint i = 0; i < rows->len; i++)
    {
      const LwSummaryEntry *row = rows->pdata[i];
      g_autofree char *label = lw_text_escape (row->label);  /* a name can hold anything */

      g_string_append_printf (out, "  %6u  %10.1f  %10.1f  %-16s  %s\n", row->count, row->total_ms,
                              row->worst_ms, row->fingerprint, label);
    }
  if (summary->missed_line != NULL)
    g_string_append_printf (out, "  %s\n", summary->missed_line);
  g_mutex_unlock (&summary->lock);
  if (dropped_stalled > 0)
    g_string_append_printf (out, "  %" G_GUINT64_FORMAT " reports dropped: sink stalled "
                            "(a reader of the output stopped reading)\n", dropped_stalled);
  if (dropped_behind > 0)
    g_string_append_printf (out, "  %" G_GUINT64_FORMAT " reports dropped: the reporting thread "
                            "fell behind (a slow report callback)\n", dropped_behind);
  return g_string_free (out, FALSE);
}
