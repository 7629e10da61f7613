/* lagwatch-gobject.c: the GObject face of lagwatch (lagwatch-gobject.h)
 *
 * LagWatchMonitor is an abstract type: g_object_new() of it fails, and so
 * do `LagWatch.Monitor()` in Python (TypeError) and `new LagWatch.Monitor()`
 * in GJS (an exception), where a monitor made so would watch nothing. Its
 * instances are LwAttachedMonitor, a final subclass no header names, made
 * by lagwatch_monitor_new() only, after the attach succeeded. A subclass a
 * program registers itself (from a binding) is refused when constructed.
 *
 * A LagWatchMonitor owns one LagWatch. lagwatch hands each report to
 * lw_monitor_on_report() on its reporting thread; that function only queues
 * an idle source on the monitor's report context, and the source emits
 * ::report there. The source reaches the monitor through a weak reference,
 * so a monitor finalized while reports are queued simply drops them.
 */
#include "lagwatch-gobject.h"

#include "lw-config.h"
#include "lw-private.h"

G_DEFINE_BOXED_TYPE (LagWatchReport, lagwatch_report, lagwatch_report_ref, lagwatch_report_unref)
G_DEFINE_BOXED_TYPE (LagWatchConfig, lagwatch_config, lw_config_copy, lagwatch_config_free)
G_DEFINE_BOXED_TYPE (LagWatchFrame, lagwatch_frame, lagwatch_frame_copy, lagwatch_frame_free)
G_DEFINE_BOXED_TYPE (LagWatchStats, lagwatch_stats, lagwatch_stats_copy, lagwatch_stats_free)

LagWatchFrame *
lagwatch_frame_copy (const LagWatchFrame *frame)
{
  LagWatchFrame *copy = g_new (LagWatchFrame, 1);

  g_return_val_if_fail (frame != NULL, NULL);
  *copy = *frame;
  copy->module = g_strdup (frame->module);
  copy->build_id = g_strdup (frame->build_id);
  copy->symbol = g_strdup (frame->symbol);
  copy->file = g_strdup (frame->file);
  copy->language = g_strdup (frame->language);
  return copy;
}

void
lagwatch_frame_free (LagWatchFrame *frame)
{
  if (frame == NULL)
    return;
  g_free (frame->module);
  g_free (frame->build_id);
  g_free (frame->symbol);
  g_free (frame->file);
  g_free (frame->language);
  g_free (frame);
}

LagWatchFrame *
lagwatch_report_get_frame_info (LagWatchReport *report, guint index)
{
  LagWatchFrame *frame;
  const char *module = NULL, *build_id = NULL, *symbol = NULL;

  g_return_val_if_fail (report != NULL, NULL);
  if (index >= lagwatch_report_get_n_frames (report))
    return NULL;
  frame = g_new0 (LagWatchFrame, 1);
  frame->ip = lagwatch_report_get_frame (report, index, &module, &build_id, &frame->module_offset,
                                         &symbol, &frame->symbol_offset);
  frame->module = g_strdup (module);
  frame->build_id = g_strdup (build_id);
  frame->symbol = g_strdup (symbol);
  frame->file = g_strdup (lagwatch_report_get_frame_location (report, index, &frame->line));
  frame->language = g_strdup (lagwatch_report_get_frame_language (report, index));
  frame->inlined = lagwatch_report_get_frame_inlined (report, index);
  frame->is_program = lagwatch_report_get_frame_is_program (report, index);
  return frame;
}

/* What a queued report needs to find its monitor: shared by the monitor
 * and every source in flight, freed by the last of them. */
typedef struct
{
  gatomicrefcount ref_count;
  GWeakRef        monitor;
  GMainContext   *context;
} LwMonitorLink;

struct _LagWatchMonitor
{
  GObject        parent_instance;
  LagWatch      *watch;           /* NULL once detached */
  LwMonitorLink *link;
};

enum
{
  PROP_0,
  PROP_THRESHOLD_MS,
  PROP_REPORT_CONTEXT,
  PROP_ATTACHED,
  N_PROPS
};

enum
{
  SIGNAL_REPORT,
  N_SIGNALS
};

static GParamSpec *lw_monitor_props[N_PROPS];
static guint lw_monitor_signals[N_SIGNALS];

G_DEFINE_ABSTRACT_TYPE (LagWatchMonitor, lagwatch_monitor, G_TYPE_OBJECT)

/* The one instantiable monitor type, made by lagwatch_monitor_new(). */
typedef struct
{
  LagWatchMonitor parent_instance;
} LwAttachedMonitor;

typedef struct
{
  LagWatchMonitorClass parent_class;
} LwAttachedMonitorClass;

static GType lw_attached_monitor_get_type (void);

G_DEFINE_FINAL_TYPE (LwAttachedMonitor, lw_attached_monitor, LAGWATCH_TYPE_MONITOR)

static void
lw_attached_monitor_class_init (LwAttachedMonitorClass *klass)
{
}

static void
lw_attached_monitor_init (LwAttachedMonitor *self)
{
}

/* Any thread. */
static LwMonitorLink *
lw_monitor_link_ref (LwMonitorLink *link)
{
  g_atomic_ref_count_inc (&link->ref_count);
  return link;
}

/* Any thread. */
static void
lw_monitor_link_unref (gpointer data)
{
  LwMonitorLink *link = data;

  if (!g_atomic_ref_count_dec (&link->ref_count))
    return;
  g_weak_ref_clear (&link->monitor);
  g_main_context_unref (link->context);
  g_free (link);
}

typedef struct
{
  LwMonitorLink  *link;
  LagWatchReport *report;
} LwMonitorDelivery;

/* Any thread: the delivery's source is done with it. */
static void
lw_monitor_delivery_free (gpointer data)
{
  LwMonitorDelivery *delivery = data;

  lagwatch_report_unref (delivery->report);
  lw_monitor_link_unref (delivery->link);
  g_free (delivery);
}

/* The report context's thread: emits ::report, if the monitor still lives. */
static gboolean
lw_monitor_deliver (gpointer data)
{
  LwMonitorDelivery *delivery = data;
  g_autoptr(LagWatchMonitor) monitor = g_weak_ref_get (&delivery->link->monitor);

  if (monitor != NULL)
    g_signal_emit (monitor, lw_monitor_signals[SIGNAL_REPORT], 0, delivery->report);
  return G_SOURCE_REMOVE;
}

/* lagwatch's reporting thread (a LagWatchReportFunc): runs no program code,
 * only queues the report for the monitor's context. */
static void
lw_monitor_on_report (LagWatchReport *report, gpointer data)
{
  LwMonitorLink *link = data;
  LwMonitorDelivery *delivery = g_new (LwMonitorDelivery, 1);
  GSource *source = g_idle_source_new ();

  delivery->link = lw_monitor_link_ref (link);
  delivery->report = lagwatch_report_ref (report);
  g_source_set_priority (source, G_PRIORITY_DEFAULT);
  g_source_set_static_name (source, "lagwatch: report");
  g_source_set_callback (source, lw_monitor_deliver, delivery, lw_monitor_delivery_free);
  g_source_attach (source, link->context);
  g_source_unref (source);
}

/**
 * lagwatch_monitor_new:
 * @context: (nullable): the context to watch, or %NULL for the global default
 *   context
 * @config: (nullable): settings, or %NULL for the defaults; the environment
 *   overrides them, as for lagwatch_attach_with_config()
 * @error: return location for a #GError, or %NULL
 *
 * Attaches lagwatch to @context. Every report is emitted as
 * #LagWatchMonitor::report on the thread-default main context of the thread
 * calling this function (the global default context on the main thread),
 * which must be running for reports to arrive.
 *
 * Thread: any thread; reports go to that thread's thread-default context.
 *
 * Returns: (transfer full): a new monitor, or %NULL with @error set
 *   (%LAGWATCH_ERROR_DISABLED under `LAGWATCH_DISABLE=1`,
 *   %LAGWATCH_ERROR_ALREADY_WATCHED, ...)
 * Since: 0.1
 */
LagWatchMonitor *
lagwatch_monitor_new (GMainContext *context, const LagWatchConfig *config, GError **error)
{
  LagWatch *watch = lagwatch_attach_full (context, config, error);
  LagWatchMonitor *self;

  if (watch == NULL)
    return NULL;
  self = g_object_new (lw_attached_monitor_get_type (), NULL);
  self->watch = watch;
  lagwatch_set_report_func (watch, lw_monitor_on_report, lw_monitor_link_ref (self->link),
                            lw_monitor_link_unref);
  return self;
}

/**
 * lagwatch_monitor_detach:
 * @self: a monitor
 *
 * Stops watching, as lagwatch_detach() does; reports already queued on the
 * report context are still emitted. Does nothing the second time. Dropping
 * the last reference to the monitor detaches it too.
 *
 * Thread: any thread but lagwatch's own.
 *
 * Since: 0.1
 */
void
lagwatch_monitor_detach (LagWatchMonitor *self)
{
  LagWatch *watch;

  g_return_if_fail (LAGWATCH_IS_MONITOR (self));
  watch = g_steal_pointer (&self->watch);
  if (watch == NULL)
    return;
  lagwatch_detach (watch);
  g_object_notify_by_pspec (G_OBJECT (self), lw_monitor_props[PROP_ATTACHED]);
}

/**
 * lagwatch_monitor_get_attached:
 * @self: a monitor
 *
 * Returns: %TRUE until lagwatch_monitor_detach()
 * Since: 0.1
 */
gboolean
lagwatch_monitor_get_attached (LagWatchMonitor *self)
{
  g_return_val_if_fail (LAGWATCH_IS_MONITOR (self), FALSE);
  return self->watch != NULL;
}

/**
 * lagwatch_monitor_get_threshold_ms:
 * @self: a monitor
 *
 * Returns: the threshold in force, in ms; 0 once detached
 * Since: 0.1
 */
guint
lagwatch_monitor_get_threshold_ms (LagWatchMonitor *self)
{
  g_return_val_if_fail (LAGWATCH_IS_MONITOR (self), 0);
  return self->watch != NULL ? lagwatch_get_threshold_ms (self->watch) : 0;
}

/**
 * lagwatch_monitor_set_threshold_ms: (skip)
 * @self: a monitor
 * @threshold_ms: the new threshold, 1 to 3600000
 *
 * Returns: %TRUE if the value was accepted (and the monitor is attached);
 *   lagwatch_monitor_try_set_threshold_ms() says why not
 * Since: 0.1
 */
gboolean
lagwatch_monitor_set_threshold_ms (LagWatchMonitor *self, guint threshold_ms)
{
  return lagwatch_monitor_try_set_threshold_ms (self, threshold_ms, NULL);
}

/**
 * lagwatch_monitor_try_set_threshold_ms: (rename-to lagwatch_monitor_set_threshold_ms)
 * @self: a monitor
 * @threshold_ms: the new threshold, 1 to 3600000
 * @error: return location for a #GError, or %NULL
 *
 * Changes the threshold of the running watch, as lagwatch_set_threshold_ms()
 * does, and notifies #LagWatchMonitor:threshold-ms. Bindings know this
 * function as `set_threshold_ms()`; the property is read-only, since
 * setting a property cannot fail.
 *
 * Returns: %TRUE if the value was accepted; %FALSE with
 *   %LAGWATCH_ERROR_INVALID for a value out of range, or
 *   %LAGWATCH_ERROR_DETACHED once detached
 * Since: 0.2
 */
gboolean
lagwatch_monitor_try_set_threshold_ms (LagWatchMonitor *self, guint threshold_ms, GError **error)
{
  g_return_val_if_fail (LAGWATCH_IS_MONITOR (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (self->watch == NULL)
    {
      g_set_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_DETACHED,
                   "the monitor is detached: it has no threshold to change");
      return FALSE;
    }
  if (!lagwatch_set_threshold_ms (self->watch, threshold_ms))
    {
      g_set_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID,
                   "threshold %u is out of range: expected 1 to %u milliseconds", threshold_ms,
                   (guint) LW_MAX_DURATION_MS);
      return FALSE;
    }
  g_object_notify_by_pspec (G_OBJECT (self), lw_monitor_props[PROP_THRESHOLD_MS]);
  return TRUE;
}

/**
 * lagwatch_monitor_get_report_context:
 * @self: a monitor
 *
 * Returns: (transfer none): the main context #LagWatchMonitor::report is
 *   emitted on
 * Since: 0.1
 */
GMainContext *
lagwatch_monitor_get_report_context (LagWatchMonitor *self)
{
  g_return_val_if_fail (LAGWATCH_IS_MONITOR (self), NULL);
  return self->link->context;
}

/**
 * lagwatch_monitor_get_stats:
 * @self: a monitor
 *
 * The latency profile of every iteration of the watched loop: see
 * lagwatch_get_stats(). Any thread.
 *
 * Returns: (transfer full) (nullable): the snapshot; %NULL once detached or
 *   when the profile is off
 * Since: 0.2
 */
LagWatchStats *
lagwatch_monitor_get_stats (LagWatchMonitor *self)
{
  g_return_val_if_fail (LAGWATCH_IS_MONITOR (self), NULL);
  return self->watch != NULL ? lagwatch_get_stats (self->watch) : NULL;
}

static void
lagwatch_monitor_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  LagWatchMonitor *self = LAGWATCH_MONITOR (object);

  switch (prop_id)
    {
    case PROP_THRESHOLD_MS:
      g_value_set_uint (value, lagwatch_monitor_get_threshold_ms (self));
      break;
    case PROP_REPORT_CONTEXT:
      g_value_set_boxed (value, self->link->context);
      break;
    case PROP_ATTACHED:
      g_value_set_boolean (value, self->watch != NULL);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

/* The monitor's thread: a monitor exists only attached, made by
 * lagwatch_monitor_new(); a binding's subclass of it would watch nothing. */
static void
lagwatch_monitor_constructed (GObject *object)
{
  G_OBJECT_CLASS (lagwatch_monitor_parent_class)->constructed (object);
  if (G_OBJECT_TYPE (object) != lw_attached_monitor_get_type ())
    g_critical ("%s: a LagWatchMonitor is made by lagwatch_monitor_new() only (LagWatch.Monitor.new() "
                "in Python and JavaScript); a subclass of it watches nothing", G_OBJECT_TYPE_NAME (object));
}

static void
lagwatch_monitor_dispose (GObject *object)
{
  lagwatch_monitor_detach (LAGWATCH_MONITOR (object));
  G_OBJECT_CLASS (lagwatch_monitor_parent_class)->dispose (object);
}

static void
lagwatch_monitor_finalize (GObject *object)
{
  LagWatchMonitor *self = LAGWATCH_MONITOR (object);

  lw_monitor_link_unref (self->link);
  G_OBJECT_CLASS (lagwatch_monitor_parent_class)->finalize (object);
}

static void
lagwatch_monitor_class_init (LagWatchMonitorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = lagwatch_monitor_get_property;
  object_class->constructed = lagwatch_monitor_constructed;
  object_class->dispose = lagwatch_monitor_dispose;
  object_class->finalize = lagwatch_monitor_finalize;

  /**
   * LagWatchMonitor:threshold-ms: (getter get_threshold_ms)
   *
   * How long the loop's thread may stay out of poll before it is a lag; 0
   * once detached. Read-only: a property set to a value out of range would
   * only print a warning, so the threshold changes through
   * lagwatch_monitor_try_set_threshold_ms() (`set_threshold_ms()` in
   * Python and GJS), which fails with a #GError.
   *
   * Since: 0.1
   */
  lw_monitor_props[PROP_THRESHOLD_MS] =
    g_param_spec_uint ("threshold-ms", NULL, NULL, 0, LW_MAX_DURATION_MS, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LagWatchMonitor:report-context:
   *
   * The main context #LagWatchMonitor::report is emitted on: the
   * thread-default context of the thread that created the monitor.
   *
   * Since: 0.1
   */
  lw_monitor_props[PROP_REPORT_CONTEXT] =
    g_param_spec_boxed ("report-context", NULL, NULL, G_TYPE_MAIN_CONTEXT,
                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  /**
   * LagWatchMonitor:attached:
   *
   * %TRUE until the monitor is detached.
   *
   * Since: 0.1
   */
  lw_monitor_props[PROP_ATTACHED] =
    g_param_spec_boolean ("attached", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, lw_monitor_props);

  /**
   * LagWatchMonitor::report:
   * @self: the monitor
   * @report: the finished lag
   *
   * Emitted once per finished lag (and per hang record), on
   * #LagWatchMonitor:report-context, after lagwatch wrote it to its sinks.
   *
   * Since: 0.1
   */
  /* Not G_SIGNAL_TYPE_STATIC_SCOPE: GJS then wraps the report without a
   * reference of its own, and a handler that keeps it (in an array, for
   * later) reads freed memory once the emission is over. Copying a report
   * only takes a reference. */
  lw_monitor_signals[SIGNAL_REPORT] =
    g_signal_new ("report", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                  G_TYPE_NONE, 1, LAGWATCH_TYPE_REPORT);
}

static void
lagwatch_monitor_init (LagWatchMonitor *self)
{
  self->link = g_new0 (LwMonitorLink, 1);
  g_atomic_ref_count_init (&self->link->ref_count);
  g_weak_ref_init (&self->link->monitor, self);
  self->link->context = g_main_context_ref_thread_default ();
}
