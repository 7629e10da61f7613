/* lw-report.c: LagWatchReport: its life and its accessors */
#include "lw-report.h"
#include "lw-tracing.h"

#include <stdlib.h>
#include <string.h>

LagWatchReport *
lw_report_new (void)
{
  LagWatchReport *report = g_new0 (LagWatchReport, 1);

  report->ref_count = 1;
  report->caught_ms = -1;
  report->cpu_ms = -1;
  report->event = "lag";
  report->run_delay_ms = -1;
  report->throttled_ms = -1;
  return report;
}

gboolean
lw_report_thread_left_out (const LagWatchReport *report, guint i)
{
  return i + report->threads_left_out >= report->n_threads;
}

const char *
lw_report_thread_stack_error (const LagWatchReport *report, guint i)
{
  if (lw_report_thread_left_out (report, i))
    return "left out: the hang record would have exceeded its size limit";
  return report->threads[i].stack_error;
}

void
lw_report_stack_clear (LwReportStack *stack)
{
  for (guint i = 0; i < stack->n_frames; i++)
    lw_frame_clear (&stack->frames[i]);
  g_free (stack->frames);
  g_free (stack->thread_name);
  g_free (stack->thread_state);
  g_free (stack->stack_error);
  memset (stack, 0, sizeof *stack);
}

LagWatchReport *
lagwatch_report_ref (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  g_atomic_int_inc (&report->ref_count);
  return report;
}

void
lagwatch_report_unref (LagWatchReport *report)
{
  g_return_if_fail (report != NULL);
  if (!g_atomic_int_dec_and_test (&report->ref_count))
    return;
  for (guint i = 0; i < report->n_frames; i++)
    lw_frame_clear (&report->frames[i]);
  g_free (report->frames);
  for (guint i = 0; i < report->n_stacks; i++)
    lw_report_stack_clear (&report->stacks[i]);
  g_free (report->stacks);
  for (guint i = 0; i < report->n_threads; i++)
    lw_report_stack_clear (&report->threads[i]);
  g_free (report->threads);
  g_free (report->source);
  g_free (report->source_callback);
  g_free (report->wchan);
  g_free (report->fingerprint);
  g_free (report->fingerprint2);
  g_free (report->previous_exe);
  g_free (report->id);
  g_free (report->thread_name);
  g_free (report->stack_method);
  g_free (report->stack_error);
  g_free (report->json);
  for (guint i = 0; i < report->n_windows; i++)
    g_free (report->windows[i].title);
  g_free (report->windows);
  for (guint i = 0; i < report->n_sampled; i++)
    lw_report_stack_clear (&report->sampled[i]);
  g_free (report->sampled);
  g_free (report->timeline);
  lw_call_free (report->calls);
  g_free (report->call_list);
  g_free (report->call_depth);
  lw_tracing_free (report->tracing);
  g_free (report);
}

const char *
lagwatch_report_get_id (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->id;
}

double
lagwatch_report_get_duration_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->duration_ms;
}

guint
lagwatch_report_get_threshold_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->threshold_ms;
}

gint64
lagwatch_report_get_start_time (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->start_time_us;
}

int
lagwatch_report_get_thread_id (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->thread_id;
}

gboolean
lagwatch_report_get_complete (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->complete;
}

guint
lagwatch_report_get_n_frames (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_frames;
}

guint64
lagwatch_report_get_frame (LagWatchReport *report,
                           guint           index,
                           const char    **module,
                           const char    **build_id,
                           guint64        *module_offset,
                           const char    **symbol,
                           guint64        *symbol_offset)
{
  const LwFrame *frame;

  g_return_val_if_fail (report != NULL, 0);
  if (index >= report->n_frames)
    return 0;
  frame = &report->frames[index];
  if (module != NULL)
    *module = frame->module;
  if (build_id != NULL)
    *build_id = frame->build_id;
  if (module_offset != NULL)
    *module_offset = frame->module_offset;
  if (symbol != NULL)
    *symbol = frame->symbol;
  if (symbol_offset != NULL)
    *symbol_offset = frame->symbol_offset;
  return frame->ip;
}

const char *
lagwatch_report_get_frame_location (LagWatchReport *report, guint index, guint *line)
{
  g_return_val_if_fail (report != NULL, NULL);
  if (line != NULL)
    *line = index < report->n_frames ? report->frames[index].line : 0;
  return index < report->n_frames ? report->frames[index].file : NULL;
}

const char *
lagwatch_report_get_source (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->source;
}

const char *
lagwatch_report_get_phase (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->phase;
}

double
lagwatch_report_get_cpu_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, -1);
  return report->cpu_ms;
}

const char *
lagwatch_report_get_thread_state (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->thread_state;
}

const char *
lagwatch_report_get_syscall (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->syscall;
}

guint
lagwatch_report_get_n_samples (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_samples;
}

const char *
lagwatch_report_get_fingerprint (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->fingerprint;
}

guint
lagwatch_report_get_n_windows (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_windows;
}

guint
lagwatch_report_get_frames_missed (LagWatchReport *report,
                                   guint           index,
                                   const char    **title,
                                   double         *refresh_interval_ms)
{
  gboolean in_range;

  g_return_val_if_fail (report != NULL, 0);
  /* Out of range (a report with no window): empty, as the frame getters. */
  in_range = index < report->n_windows;
  if (title != NULL)
    *title = in_range ? report->windows[index].title : NULL;
  if (refresh_interval_ms != NULL)
    *refresh_interval_ms = in_range ? report->windows[index].refresh_interval_ms : 0;
  return in_range ? report->windows[index].frames_missed : 0;
}

const char *
lagwatch_report_get_frame_language (LagWatchReport *report,
                                    guint           index)
{
  g_return_val_if_fail (report != NULL, NULL);
  if (index >= report->n_frames)
    return NULL;
  return report->frames[index].lang != NULL ? report->frames[index].lang : "native";
}

/* Any thread. */
gboolean
lagwatch_report_get_frame_inlined (LagWatchReport *report,
                                   guint           index)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return index < report->n_frames && report->frames[index].inlined;
}

double
lagwatch_report_get_run_delay_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, -1);
  return report->run_delay_ms;
}

gboolean
lagwatch_report_get_cpu_starved (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->cpu_starved;
}

gboolean
lagwatch_report_get_input_pending (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->input_pending;
}

/* The calls under @call into @list, pre-order. */
static void
lw_report_list_calls (LwCall *call, guint depth, GPtrArray *list, GArray *depths)
{
  for (guint i = 0; call->children != NULL && i < call->children->len; i++)
    {
      g_ptr_array_add (list, call->children->pdata[i]);
      g_array_append_val (depths, depth);
      lw_report_list_calls (call->children->pdata[i], depth + 1, list, depths);
    }
}

void
lw_report_set_calls (LagWatchReport *report, LwCall *root, gboolean exact)
{
  GPtrArray *list;
  GArray *depths;

  if (report->calls != NULL && report->calls_exact && !exact)
    {
      lw_call_free (root);
      return;
    }
  lw_call_free (report->calls);
  g_clear_pointer (&report->call_list, g_free);
  g_clear_pointer (&report->call_depth, g_free);
  report->n_calls = 0;
  report->calls = root;
  report->calls_exact = exact && root != NULL;
  if (root == NULL)
    return;
  list = g_ptr_array_new ();
  depths = g_array_new (FALSE, FALSE, sizeof (guint));
  lw_report_list_calls (root, 0, list, depths);
  report->n_calls = list->len;
  report->call_list = (LwCall **) g_ptr_array_free (list, FALSE);
  report->call_depth = (guint *) g_array_free (depths, FALSE);
}

guint
lagwatch_report_get_n_calls (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->n_calls;
}

const char *
lagwatch_report_get_call (LagWatchReport *report, guint index, guint *depth, double *start_ms,
                          double *duration_ms)
{
  const LwCall *call;

  g_return_val_if_fail (report != NULL, NULL);
  if (index >= report->n_calls)
    return NULL;
  call = report->call_list[index];
  if (depth != NULL)
    *depth = report->call_depth[index];
  if (start_ms != NULL)
    *start_ms = (double) call->start_ns / 1e6;
  if (duration_ms != NULL)
    *duration_ms = (double) call->duration_ns / 1e6;
  return call->name;
}

gboolean
lagwatch_report_get_call_summary (LagWatchReport *report, guint index, guint *n_calls, double *share)
{
  const LwCall *call;

  g_return_val_if_fail (report != NULL, FALSE);
  if (index >= report->n_calls)
    return FALSE;
  call = report->call_list[index];
  if (n_calls != NULL)
    *n_calls = MAX (call->short_calls, 1);
  if (share != NULL)
    *share = report->calls->samples > 0 ? (double) call->samples / report->calls->samples : 0;
  return call->short_calls > 0;
}

gboolean
lagwatch_report_get_calls_exact (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return report->calls_exact;
}

/* Any thread. */
LagWatchReportKind
lagwatch_report_get_kind (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, LAGWATCH_REPORT_KIND_LAG);
  if (g_str_equal (report->event, "hang"))
    return LAGWATCH_REPORT_KIND_HANG;
  if (g_str_equal (report->event, "hang-killed"))
    return LAGWATCH_REPORT_KIND_HANG_KILLED;
  return LAGWATCH_REPORT_KIND_LAG;
}

/* Any thread. */
const char *
lagwatch_report_get_source_callback (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->source_callback;
}

/* Any thread. */
const char *
lagwatch_report_get_source_callback_kind (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->source_callback != NULL ? report->source_callback_kind : NULL;
}

/* Any thread. Known exactly when the JSON record's "priority" is a number. */
gboolean
lagwatch_report_get_priority (LagWatchReport *report, int *priority)
{
  gboolean known;

  g_return_val_if_fail (report != NULL, FALSE);
  known = report->phase != NULL && g_str_equal (report->phase, "dispatch") && report->source_known;
  if (priority != NULL)
    *priority = known ? report->priority : 0;
  return known;
}

/* Any thread. */
double
lagwatch_report_get_caught_ms (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, -1);
  return report->caught_ms >= 0 ? report->caught_ms : -1;
}

/* Any thread. */
guint
lagwatch_report_get_occurrence (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, 0);
  return report->occurrence;
}

/* Any thread. */
const char *
lagwatch_report_get_wchan (LagWatchReport *report)
{
  g_return_val_if_fail (report != NULL, NULL);
  return report->wchan;
}

static int
lw_report_compare_gaps (const void *a, const void *b)
{
  int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

  return (x > y) - (x < y);
}

/* Any thread. */
int64_t
lw_report_sample_interval (const LagWatchReport *report, int64_t fallback_ns)
{
  g_autofree int64_t *gaps = NULL;
  guint n = 0;

  if (report->n_timeline < 2)
    return fallback_ns;
  gaps = g_new (int64_t, report->n_timeline - 1);
  for (guint i = 1; i < report->n_timeline; i++)
    {
      int64_t gap = report->timeline[i].offset_ns - report->timeline[i - 1].offset_ns;

      if (gap > 0)
        gaps[n++] = gap;
    }
  if (n == 0)
    return fallback_ns;
  qsort (gaps, n, sizeof *gaps, lw_report_compare_gaps);
  return gaps[n / 2];
}

/* Any thread. */
guint
lw_report_python_missing (const LagWatchReport *report, LwLangMissing why)
{
  const LwReportStack *stacks = report->n_sampled > 0 ? report->sampled : report->stacks;
  guint n = report->n_sampled > 0 ? report->n_sampled : report->n_stacks, count = 0;

  for (guint i = 0; i < n; i++)
    if (stacks[i].lang_missing == why)
      count += stacks[i].samples;
  return count;
}
