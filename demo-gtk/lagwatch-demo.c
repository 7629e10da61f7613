/* lagwatch-demo: a GTK 4 application that freezes its own main thread on
 * demand, six ways, and lists the reports lagwatch makes of each freeze. A
 * seventh way, stutter, is many short busy periods, none a lag: the jank a
 * user feels below the threshold.
 *
 *   lagwatch-demo [--kind=busy|sleep|io|mutex|recursion|timer|stutter]
 *                 [--duration=MS] [--threshold=MS] [--print-reports]
 *                 [--save-reports=FILE]
 *
 * Ctrl+F freezes the way chosen in the window; Ctrl+1 to Ctrl+7 choose a
 * way and freeze at once; Ctrl+S saves the session's reports (JSON Lines,
 * for lagwatch-report); Ctrl+Q quits. The selected lag shows as its stack
 * and as a flame graph of its samples, its calls as a timeline. Each way is its own noipa function
 * (demo_freeze_busy, demo_freeze_sleep, ...), so the reports name it.
 * The list shows how many frames the demo's own window missed in each lag
 * (lagwatch follows GTK's frame clocks).
 *
 * Threads: everything here runs on the main thread (the one that runs the
 * GTK main loop, which lagwatch watches), except demo_on_report(), which
 * lagwatch calls on its watcher thread, and demo_lock_holder(), the worker
 * of the mutex freeze.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gtk/gtk.h>
#include <json-glib/json-glib.h>

#include "lagwatch.h"

/* Keeps the calling function's frame on the stack when it ends in a call:
 * the call is no longer in tail position, so it cannot become a jump, and
 * reports show who called the freeze. */
#define DEMO_KEEP_FRAME() __asm__ volatile ("" ::: "memory")

#define DEMO_RECURSION_DEPTH 60
#define DEMO_IO_BLOCK_SIZE (1024 * 1024)
#define DEMO_IO_BLOCKS_PER_ROUND 4
#define DEMO_TIMER_DELAY_MS 10
#define DEMO_MAX_DURATION_MS 60000
#define DEMO_MAX_THRESHOLD_MS 3600000
/* The stutter: busy periods of 30 to 60 ms, a frame apart, for 2 s. */
#define DEMO_STUTTER_SPAN_MS 2000
#define DEMO_STUTTER_MIN_MS 30
#define DEMO_STUTTER_MAX_MS 60
#define DEMO_STUTTER_GAP_MS 16

typedef enum
{
  DEMO_FREEZE_BUSY,
  DEMO_FREEZE_SLEEP,
  DEMO_FREEZE_FILE_IO,
  DEMO_FREEZE_MUTEX,
  DEMO_FREEZE_RECURSION,
  DEMO_FREEZE_TIMER,
  DEMO_FREEZE_STUTTER,
} DemoFreezeKind;

/* Indexed by DemoFreezeKind; the id is the --kind value and the target of
 * app.freeze-kind, the label is what the drop-down shows. */
static const struct
{
  const char *id;
  const char *label;
  const char *accel;
} demo_kinds[] = {
  { "busy", "busy computation", "<Control>1" },
  { "sleep", "sleeping (usleep)", "<Control>2" },
  { "io", "file I/O (write + fsync)", "<Control>3" },
  { "mutex", "waiting for a mutex", "<Control>4" },
  { "recursion", "deep recursion, then busy", "<Control>5" },
  { "timer", "a slow GSource timer", "<Control>6" },
  { "stutter", "stutter (30–60 ms, 2 s, no lag)", "<Control>7" },
};

/* Command-line options, filled in by GApplication before startup. */
static char *opt_kind;
static int opt_duration_ms = 400;
static int opt_threshold_ms = 100;
static gboolean opt_print_reports;
static char *opt_save_reports;

static const GOptionEntry demo_options[] = {
  { "kind", 0, 0, G_OPTION_ARG_STRING, &opt_kind,
    "How Freeze blocks the main thread: busy, sleep, io, mutex, recursion, timer or stutter", "KIND" },
  { "duration", 0, 0, G_OPTION_ARG_INT, &opt_duration_ms, "How long a freeze lasts (default 400)", "MS" },
  { "threshold", 0, 0, G_OPTION_ARG_INT, &opt_threshold_ms,
    "lagwatch's threshold (default 100; LAGWATCH_THRESHOLD_MS overrides it)", "MS" },
  { "print-reports", 0, 0, G_OPTION_ARG_NONE, &opt_print_reports,
    "Print each report on stdout as the window receives it, then a \"list:\" line once the list showing it is painted",
    NULL },
  { "save-reports", 0, 0, G_OPTION_ARG_FILENAME, &opt_save_reports,
    "Where Save (Ctrl+S) writes the session's reports, as JSON Lines, without asking (default: a file chooser)",
    "FILE" },
  { NULL }
};

/* Whose code a frame runs, as the stack view and the flame graph colour it.
 * The program is what lagwatch's report calls the program (its
 * is_program rule, one for every output); of the rest, the toolkit (GTK and
 * the libraries it draws with) has a colour of its own, so that a lag in
 * GTK's painting reads as such, and the system (libc, GLib, lagwatch, the
 * interpreters) is grey. A toolkit library counts as the toolkit even where
 * lagwatch's rule calls it the program's. */
typedef enum
{
  DEMO_FRAME_PROGRAM,
  DEMO_FRAME_TOOLKIT,
  DEMO_FRAME_SYSTEM,
} DemoFrameKind;

/* One box of the flame graph: a function called by its parent, with the
 * samples that had it at this place in the stack. */
typedef struct _DemoFlameNode DemoFlameNode;
struct _DemoFlameNode
{
  char          *name;
  DemoFrameKind  kind;      /* its colour */
  guint          samples;
  GPtrArray     *children;  /* of DemoFlameNode, owned; NULL while none */
};

/* The application's state; main thread only. The widgets belong to the
 * window, which may be gone (window == NULL) while a report is in flight. */
static struct
{
  LagWatch           *watch;       /* NULL when lagwatch is not watching */
  DemoFreezeKind      initial_kind;
  GListStore         *lags;        /* of DemoLag, newest first */
  GtkWindow          *window;      /* weak */
  GtkDropDown        *kind_choice;
  GtkSpinButton      *duration;
  GtkSingleSelection *selection;
  GtkAdjustment      *table_scroll; /* the list's vertical scrolling */
  GtkTextBuffer      *stack_text;
  GtkDrawingArea     *flame_area;
  GtkAdjustment      *flame_scroll; /* the flame graph's vertical scrolling */
  DemoFlameNode      *flame;       /* the selected lag's samples as a tree, NULL: none */
  char               *flame_id;    /* its lag's id */
  guint               flame_rows;  /* its depth: rows of boxes */
  gboolean            flame_told;  /* its "flame:" line was printed (--print-reports) */
  gboolean            flame_scrolled; /* the graph was scrolled to its program box */
  gint64              freeze_start_us; /* the last freeze the user asked for, wall clock; */
  gint64              freeze_end_us;   /* 0 before the first */
  gpointer            freeze_lag;      /* its DemoLag once reported, compared only */
  GdkFrameClock      *painting_clock; /* set while a "list:" line waits for a paint */
  gulong              after_paint_handler;
} demo;

/* ---- The freezes: all on the main thread, each its own frame ---------- */

/* Stands for real work: arithmetic until @end_us (monotonic). Inlined, so
 * the samples land in the named function that calls it. */
static inline __attribute__ ((always_inline)) void
demo_compute_until (gint64 end_us)
{
  static volatile guint64 result;
  guint64 x = result;

  while (g_get_monotonic_time () < end_us)
    for (int i = 0; i < 10000; i++)
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  result = x;
}

static __attribute__ ((noipa)) void
demo_freeze_busy (guint ms)
{
  demo_compute_until (g_get_monotonic_time () + (gint64) ms * 1000);
}

static __attribute__ ((noipa)) void
demo_freeze_sleep (guint ms)
{
  /* glibc's usleep() takes more than a second too (it is nanosleep). */
  usleep ((useconds_t) ms * 1000);
  DEMO_KEEP_FRAME ();
}

/* Synchronous writes, each round made durable with fsync(), until @ms have
 * passed (the last round may overrun). The file is unlinked at once. */
static __attribute__ ((noipa)) void
demo_freeze_file_io (guint ms)
{
  gint64 end_us = g_get_monotonic_time () + (gint64) ms * 1000;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  g_autofree char *block = g_malloc (DEMO_IO_BLOCK_SIZE);
  int fd = g_file_open_tmp ("lagwatch-demo-XXXXXX", &path, &error);
  gboolean ok = TRUE;

  if (fd < 0)
    {
      g_warning ("file I/O freeze: %s", error->message);
      return;
    }
  unlink (path);
  memset (block, 0x5a, DEMO_IO_BLOCK_SIZE);
  while (ok && g_get_monotonic_time () < end_us)
    {
      for (off_t i = 0; ok && i < DEMO_IO_BLOCKS_PER_ROUND; i++)
        ok = pwrite (fd, block, DEMO_IO_BLOCK_SIZE, i * DEMO_IO_BLOCK_SIZE) == DEMO_IO_BLOCK_SIZE;
      ok = ok && fsync (fd) == 0;
    }
  if (!ok)
    g_warning ("file I/O freeze: writing %s: %s", path, g_strerror (errno));
  close (fd);
}

typedef struct
{
  GMutex   lock;      /* held by the worker for ms, wanted by the main thread */
  GMutex   handshake; /* guards held */
  GCond    held_cond;
  gboolean held;
  guint    ms;
} DemoLockFreeze;

/* Worker thread "demo-lock-holder": takes the lock, says so, keeps it. */
static gpointer
demo_lock_holder (gpointer data)
{
  DemoLockFreeze *freeze = data;

  g_mutex_lock (&freeze->lock);
  g_mutex_lock (&freeze->handshake);
  freeze->held = TRUE;
  g_cond_signal (&freeze->held_cond);
  g_mutex_unlock (&freeze->handshake);
  g_usleep ((gulong) freeze->ms * 1000);
  g_mutex_unlock (&freeze->lock);
  return NULL;
}

/* Blocks on a GMutex that a worker holds for @ms: the report shows the
 * main thread waiting in futex(), and a hang record (from LAGWATCH_HANG_MS)
 * shows the holder too. */
static __attribute__ ((noipa)) void
demo_freeze_mutex (guint ms)
{
  DemoLockFreeze freeze = { .ms = ms };
  GThread *holder;

  g_mutex_init (&freeze.lock);
  g_mutex_init (&freeze.handshake);
  g_cond_init (&freeze.held_cond);
  holder = g_thread_new ("demo-lock-holder", demo_lock_holder, &freeze);
  g_mutex_lock (&freeze.handshake);
  while (!freeze.held)
    g_cond_wait (&freeze.held_cond, &freeze.handshake);
  g_mutex_unlock (&freeze.handshake);

  g_mutex_lock (&freeze.lock);
  g_mutex_unlock (&freeze.lock);

  g_thread_join (holder);
  g_cond_clear (&freeze.held_cond);
  g_mutex_clear (&freeze.handshake);
  g_mutex_clear (&freeze.lock);
}

/* @depth nested calls of itself, then computation until @end_us. */
static __attribute__ ((noipa)) void
demo_freeze_recursion (guint depth, gint64 end_us)
{
  if (depth > 1)
    demo_freeze_recursion (depth - 1, end_us);
  else
    demo_compute_until (end_us);
  DEMO_KEEP_FRAME ();
}

/* Main thread. Notes that a freeze the user asked for ran from @start_us
 * (wall clock) until now: its lag is the one to show. */
static void
demo_freeze_ran (gint64 start_us)
{
  demo.freeze_start_us = start_us;
  demo.freeze_end_us = g_get_real_time ();
  demo.freeze_lag = NULL;
}

/* Dispatched by the "demo: slow timer" source: computes for @data ms. */
static __attribute__ ((noipa)) gboolean
demo_freeze_timer_callback (gpointer data)
{
  gint64 start_us = g_get_real_time ();

  demo_compute_until (g_get_monotonic_time () + (gint64) GPOINTER_TO_UINT (data) * 1000);
  demo_freeze_ran (start_us);
  return G_SOURCE_REMOVE;
}

/* The timer fires once, a moment after the action that added it returned:
 * its lag is a busy period of its own, in a GSource with a name. */
static void
demo_add_slow_timer (guint ms)
{
  GSource *timer = g_timeout_source_new (DEMO_TIMER_DELAY_MS);

  g_source_set_name (timer, "demo: slow timer");
  g_source_set_callback (timer, demo_freeze_timer_callback, GUINT_TO_POINTER (ms), NULL);
  g_source_attach (timer, NULL);
  g_source_unref (timer);
}

/* ---- The stutter: jank under the threshold -------------------------------- */

typedef struct
{
  gint64 end_us;       /* monotonic: the last busy period starts before */
  guint  periods;
  gint64 busy_us;
  gint64 longest_us;
} DemoStutter;

/* Dispatched by the "demo: stutter" source, a frame after the last busy
 * period: one more busy period of 30 to 60 ms, its own loop iteration, so
 * each one is a slow frame and none a lag (threshold 100 ms). With
 * --print-reports, says at the end "stutter: N busy periods, 30-60 ms, over
 * T ms, longest L ms". */
static __attribute__ ((noipa)) gboolean
demo_freeze_stutter_step (gpointer data)
{
  DemoStutter *stutter = data;
  gint64 start = g_get_monotonic_time (), spun;

  demo_compute_until (start + g_random_int_range (DEMO_STUTTER_MIN_MS, DEMO_STUTTER_MAX_MS + 1) * 1000);
  spun = g_get_monotonic_time () - start;
  stutter->periods++;
  stutter->busy_us += spun;
  stutter->longest_us = MAX (stutter->longest_us, spun);
  if (g_get_monotonic_time () < stutter->end_us)
    return G_SOURCE_CONTINUE;
  if (opt_print_reports)
    {
      printf ("stutter: %u busy periods, %d-%d ms, over %d ms, longest %.1f ms\n", stutter->periods,
              DEMO_STUTTER_MIN_MS, DEMO_STUTTER_MAX_MS, DEMO_STUTTER_SPAN_MS, stutter->longest_us / 1000.0);
      fflush (stdout);
    }
  return G_SOURCE_REMOVE;
}

/* Starts the stutter: it runs after the action returns, for 2 s whatever
 * the duration chosen (a stutter is many busy periods, not one long one). */
static void
demo_add_stutter (void)
{
  GSource *source = g_timeout_source_new (DEMO_STUTTER_GAP_MS);
  DemoStutter *stutter = g_new0 (DemoStutter, 1);

  stutter->end_us = g_get_monotonic_time () + DEMO_STUTTER_SPAN_MS * 1000;
  g_source_set_name (source, "demo: stutter");
  g_source_set_callback (source, demo_freeze_stutter_step, stutter, g_free);
  g_source_attach (source, NULL);
  g_source_unref (source);
}

/* Freezes the main thread the way @kind says, for @ms (the timer: later). */
static __attribute__ ((noipa)) void
demo_freeze (DemoFreezeKind kind, guint ms)
{
  gint64 start_us = g_get_real_time ();

  switch (kind)
    {
    case DEMO_FREEZE_BUSY:
      demo_freeze_busy (ms);
      break;
    case DEMO_FREEZE_SLEEP:
      demo_freeze_sleep (ms);
      break;
    case DEMO_FREEZE_FILE_IO:
      demo_freeze_file_io (ms);
      break;
    case DEMO_FREEZE_MUTEX:
      demo_freeze_mutex (ms);
      break;
    case DEMO_FREEZE_RECURSION:
      demo_freeze_recursion (DEMO_RECURSION_DEPTH, g_get_monotonic_time () + (gint64) ms * 1000);
      break;
    case DEMO_FREEZE_TIMER:
      demo_add_slow_timer (ms);
      break;
    case DEMO_FREEZE_STUTTER:
      demo_add_stutter ();
      break;
    }
  /* The timer and the stutter freeze later, in their own callbacks. */
  if (kind != DEMO_FREEZE_TIMER && kind != DEMO_FREEZE_STUTTER)
    demo_freeze_ran (start_us);
  DEMO_KEEP_FRAME ();
}

static gboolean
demo_kind_from_id (const char *id, DemoFreezeKind *kind)
{
  for (guint i = 0; i < G_N_ELEMENTS (demo_kinds); i++)
    if (g_strcmp0 (id, demo_kinds[i].id) == 0)
      {
        *kind = (DemoFreezeKind) i;
        return TRUE;
      }
  return FALSE;
}

/* ---- DemoLag: a report as an item of the list model --------------------- */

#define DEMO_TYPE_LAG (demo_lag_get_type ())
G_DECLARE_FINAL_TYPE (DemoLag, demo_lag, DEMO, LAG, GObject)

struct _DemoLag
{
  GObject         parent_instance;
  LagWatchReport *report;
};

G_DEFINE_FINAL_TYPE (DemoLag, demo_lag, G_TYPE_OBJECT)

static void
demo_lag_finalize (GObject *object)
{
  lagwatch_report_unref (DEMO_LAG (object)->report);
  G_OBJECT_CLASS (demo_lag_parent_class)->finalize (object);
}

static void
demo_lag_class_init (DemoLagClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = demo_lag_finalize;
}

static void
demo_lag_init (DemoLag *self)
{
}

/* ---- Reports as text ---------------------------------------------------- */

/* Main thread. The kind of a frame of @module (NULL: unknown) that
 * lagwatch calls the program's (@is_program) or not: see DemoFrameKind. */
static DemoFrameKind
demo_frame_kind (const char *module, gboolean is_program)
{
  /* GTK 4 and what it lays out, paints and talks to the display with. */
  static const char *const toolkit[] = {
    "libgtk-4.so", "libadwaita-1.so", "libgraphene-1.0.so", "libpango", "libcairo", "libpixman-1.so",
    "libharfbuzz", "libfreetype.so", "libfontconfig.so", "libepoxy.so", "libX11", "libxcb",
    "libwayland-", "libGL", "libEGL", "libvulkan.so", "libgdk_pixbuf-2.0.so",
  };
  const char *base;

  if (module != NULL)
    {
      base = strrchr (module, '/');
      base = base != NULL ? base + 1 : module;
      for (guint i = 0; i < G_N_ELEMENTS (toolkit); i++)
        if (g_str_has_prefix (base, toolkit[i]))
          return DEMO_FRAME_TOOLKIT;
    }
  return is_program ? DEMO_FRAME_PROGRAM : DEMO_FRAME_SYSTEM;
}

static char *
demo_time_text (LagWatchReport *report)
{
  gint64 start_us = lagwatch_report_get_start_time (report);
  g_autoptr(GDateTime) start = g_date_time_new_from_unix_local (start_us / G_USEC_PER_SEC);
  g_autofree char *seconds = g_date_time_format (start, "%H:%M:%S");

  return g_strdup_printf ("%s.%03d", seconds, (int) (start_us % G_USEC_PER_SEC / 1000));
}

/* "computing 98%", "waiting: sleeping in clock_nanosleep", or, for a thread
 * that was runnable but got little CPU (a busy machine), "running 40% (the
 * CPU was busy elsewhere)". */
static char *
demo_thread_text (LagWatchReport *report)
{
  double cpu_ms = lagwatch_report_get_cpu_ms (report);
  double duration_ms = lagwatch_report_get_duration_ms (report);
  const char *state = lagwatch_report_get_thread_state (report);
  const char *syscall_name = lagwatch_report_get_syscall (report);
  double share;

  if (cpu_ms < 0 || duration_ms <= 0)
    return g_strdup ("?");
  share = 100 * cpu_ms / duration_ms;
  if (share >= 50)
    return g_strdup_printf ("computing %.0f%%", MIN (share, 100));
  if (g_strcmp0 (state, "running") == 0)
    return g_strdup_printf ("running %.0f%% (the CPU was busy elsewhere)", share);
  if (g_strcmp0 (state, "disk") == 0)
    state = "disk I/O";
  return g_strdup_printf ("waiting: %s%s%s", state != NULL ? state : "blocked",
                          syscall_name != NULL ? " in " : "", syscall_name != NULL ? syscall_name : "");
}

/* The innermost three program frames (lagwatch's rule: not libc, GLib,
 * lagwatch, the C++ standard library or an interpreter), outermost last:
 * "demo_freeze_busy ← demo_freeze ← demo_on_freeze_kind". */
static char *
demo_where_text (LagWatchReport *report)
{
  GString *where = g_string_new (NULL);
  guint shown = 0;

  for (guint i = 0; i < lagwatch_report_get_n_frames (report) && shown < 3; i++)
    {
      const char *module = NULL, *symbol = NULL;
      guint64 module_offset = 0;
      g_autofree char *base = NULL;

      lagwatch_report_get_frame (report, i, &module, NULL, &module_offset, &symbol, NULL);
      if (!lagwatch_report_get_frame_is_program (report, i))
        continue;
      if (shown++ > 0)
        g_string_append (where, " ← ");
      if (symbol != NULL)
        g_string_append (where, symbol);
      else
        {
          base = module != NULL ? g_path_get_basename (module) : g_strdup ("?");
          g_string_append_printf (where, "%s+0x%" G_GINT64_MODIFIER "x", base, module_offset);
        }
    }
  if (shown == 0)
    g_string_append (where, lagwatch_report_get_n_frames (report) > 0 ? "(only library frames)" : "(no stack)");
  return g_string_free (where, FALSE);
}

/* Main thread. One line of the stack view for frames @first to @last
 * (innermost first) of @report: several when they are a run of unnamed
 * frames of one module, which fold into one line with their count. */
static char *
demo_stack_line (LagWatchReport *report, guint first, guint last)
{
  const char *module = NULL, *symbol = NULL;
  guint64 module_offset = 0, symbol_offset = 0;
  g_autofree char *base = NULL;

  lagwatch_report_get_frame (report, first, &module, NULL, &module_offset, &symbol, &symbol_offset);
  base = module != NULL ? g_path_get_basename (module) : g_strdup ("?");
  if (last > first)
    return g_strdup_printf ("#%u-%u ?? ×%u  (%s, no symbols)\n", first, last, last - first + 1, base);
  if (symbol == NULL)
    return g_strdup_printf ("#%-3u ??  (%s +0x%" G_GINT64_MODIFIER "x)\n", first, base, module_offset);
  /* An inlined call has no address of its own: the next frame's. */
  if (lagwatch_report_get_frame_inlined (report, first))
    return g_strdup_printf ("#%-3u %s (inlined)  (%s)\n", first, symbol, base);
  return g_strdup_printf ("#%-3u %s+0x%" G_GINT64_MODIFIER "x  (%s +0x%" G_GINT64_MODIFIER "x)\n",
                          first, symbol, symbol_offset, base, module_offset);
}

/* Main thread. TRUE when frame @index of @report is unnamed and in @module. */
static gboolean
demo_frame_unnamed_in (LagWatchReport *report, guint index, const char *module)
{
  const char *frame_module = NULL, *symbol = NULL;

  lagwatch_report_get_frame (report, index, &frame_module, NULL, NULL, &symbol, NULL);
  return symbol == NULL && module != NULL && g_strcmp0 (frame_module, module) == 0;
}

/* "#n symbol+0xoff  (module +0xoffset)" for every frame of the heaviest
 * stack; program frames in bold, toolkit frames in the toolkit's colour, a
 * run of unnamed frames of one library (stripped GTK) on one line. */
static void
demo_show_stack (LagWatchReport *report)
{
  GtkTextBuffer *text = demo.stack_text;
  GtkTextIter end;
  const char *source = lagwatch_report_get_source (report);
  guint n_frames = lagwatch_report_get_n_frames (report);
  g_autofree char *header = NULL;
  static const char *const tags[] = {
    [DEMO_FRAME_PROGRAM] = "program", [DEMO_FRAME_TOOLKIT] = "toolkit", [DEMO_FRAME_SYSTEM] = NULL,
  };

  gtk_text_buffer_set_text (text, "", 0);
  gtk_text_buffer_get_end_iter (text, &end);
  header = g_strdup_printf ("lag %s: %.1f ms (threshold %u ms), %s%s%s; %u samples; heaviest stack, innermost first:\n",
                            lagwatch_report_get_id (report), lagwatch_report_get_duration_ms (report),
                            lagwatch_report_get_threshold_ms (report),
                            source != NULL ? "in GSource \"" : "in no named GSource",
                            source != NULL ? source : "", source != NULL ? "\"" : "",
                            lagwatch_report_get_n_samples (report));
  gtk_text_buffer_insert (text, &end, header, -1);
  for (guint i = 0; i < n_frames;)
    {
      const char *module = NULL;
      guint last = i;
      g_autofree char *line = NULL;
      DemoFrameKind kind;

      lagwatch_report_get_frame (report, i, &module, NULL, NULL, NULL, NULL);
      if (demo_frame_unnamed_in (report, i, module))
        while (last + 1 < n_frames && demo_frame_unnamed_in (report, last + 1, module))
          last++;
      line = demo_stack_line (report, i, last);
      kind = demo_frame_kind (module, lagwatch_report_get_frame_is_program (report, i));
      if (tags[kind] == NULL)
        gtk_text_buffer_insert (text, &end, line, -1);
      else
        gtk_text_buffer_insert_with_tags_by_name (text, &end, line, -1, tags[kind], NULL);
      i = last + 1;
    }
  if (n_frames == 0)
    gtk_text_buffer_insert (text, &end, "(no stack was taken)\n", -1);
}

/* ---- The flame graph: the selected lag's samples, root at the bottom ----- */

#define DEMO_FLAME_ROW_HEIGHT 18
#define DEMO_FLAME_LABEL_MIN_WIDTH 30

/* Main thread. */
static void
demo_flame_node_free (DemoFlameNode *node)
{
  if (node == NULL)
    return;
  g_free (node->name);
  if (node->children != NULL)
    g_ptr_array_unref (node->children);
  g_free (node);
}

/* Main thread. The child of @parent named @name, added when missing. */
static DemoFlameNode *
demo_flame_child (DemoFlameNode *parent, const char *name, DemoFrameKind kind)
{
  DemoFlameNode *child;

  if (parent->children == NULL)
    parent->children = g_ptr_array_new_with_free_func ((GDestroyNotify) demo_flame_node_free);
  for (guint i = 0; i < parent->children->len; i++)
    {
      child = parent->children->pdata[i];
      if (g_str_equal (child->name, name))
        return child;
    }
  child = g_new0 (DemoFlameNode, 1);
  child->name = g_strdup (name);
  child->kind = kind;
  g_ptr_array_add (parent->children, child);
  return child;
}

/* A string member of @object, NULL when missing or null. */
static const char *
demo_json_string (JsonObject *object, const char *member)
{
  JsonNode *node = json_object_get_member (object, member);

  return node != NULL && json_node_get_value_type (node) == G_TYPE_STRING ? json_node_get_string (node) : NULL;
}

/* A boolean member of @object, FALSE when missing or not a boolean. */
static gboolean
demo_json_boolean (JsonObject *object, const char *member)
{
  JsonNode *node = json_object_get_member (object, member);

  return node != NULL && json_node_get_value_type (node) == G_TYPE_BOOLEAN && json_node_get_boolean (node);
}

/* Main thread. The samples of @report as a tree, from the stacks of its
 * JSON record (each stack with its sample count, innermost frame first);
 * NULL when it has none. Frames are merged by name, so one box per function
 * at each place in the calling chain. Its depth in rows goes to @n_rows. */
static DemoFlameNode *
demo_flame_from_report (LagWatchReport *report, guint *n_rows)
{
  g_autofree char *json = lagwatch_report_to_json (report);
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *record;
  JsonArray *stacks;
  DemoFlameNode *root;

  *n_rows = 0;
  if (!json_parser_load_from_data (parser, json, -1, NULL)
      || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    return NULL;
  record = json_node_get_object (json_parser_get_root (parser));
  if (!json_object_has_member (record, "stacks")
      || !JSON_NODE_HOLDS_ARRAY (json_object_get_member (record, "stacks")))
    return NULL;
  stacks = json_object_get_array_member (record, "stacks");
  root = g_new0 (DemoFlameNode, 1);
  root->name = g_strdup ("all samples");
  root->kind = DEMO_FRAME_SYSTEM;
  for (guint i = 0; i < json_array_get_length (stacks); i++)
    {
      JsonObject *stack = json_array_get_object_element (stacks, i);
      JsonArray *frames;
      guint samples, n_frames;
      DemoFlameNode *node = root;

      if (stack == NULL || !json_object_has_member (stack, "stack"))
        continue;
      samples = (guint) json_object_get_int_member (stack, "samples");
      frames = json_object_get_array_member (stack, "stack");
      n_frames = json_array_get_length (frames);
      root->samples += samples;
      *n_rows = MAX (*n_rows, n_frames + 1);
      for (guint f = n_frames; f-- > 0;)
        {
          JsonObject *frame = json_array_get_object_element (frames, f);
          const char *symbol = demo_json_string (frame, "symbol");
          const char *module = demo_json_string (frame, "module");
          g_autofree char *base = module != NULL ? g_path_get_basename (module) : NULL;
          g_autofree char *unnamed = NULL;

          if (symbol == NULL)
            unnamed = g_strdup_printf ("?? (%s +%s)", base != NULL ? base : "?",
                                       demo_json_string (frame, "module_offset") ?: "?");
          node = demo_flame_child (node, symbol != NULL ? symbol : unnamed,
                                   demo_frame_kind (module, demo_json_boolean (frame, "is_program")));
          node->samples += samples;
        }
    }
  if (root->samples == 0)
    g_clear_pointer (&root, demo_flame_node_free);
  return root;
}

/* What one drawing of the graph saw; main thread. */
typedef struct
{
  guint          n_boxes;
  guint          n_rows;
} DemoFlameDrawn;

/* Main thread. Draws @node and its children in [@x, @x + @width) at row
 * @depth from the bottom of an area @height tall (the root at the bottom, as
 * Sysprof and speedscope draw it), and notes what it drew in @drawn. */
static void
demo_flame_draw_node (cairo_t *cr, GtkWidget *area, DemoFlameNode *node, double x, double width, int height,
                      guint depth, DemoFlameDrawn *drawn)
{
  double y = height - (depth + 1.0) * DEMO_FLAME_ROW_HEIGHT;

  if (width < 1)
    return;
  drawn->n_boxes++;
  drawn->n_rows = MAX (drawn->n_rows, depth + 1);
  switch (node->kind)
    {
    case DEMO_FRAME_PROGRAM:
      {
        guint hash = g_str_hash (node->name);

        cairo_set_source_rgb (cr, 0.90 + (hash % 10) / 100.0, 0.45 + (hash / 10 % 30) / 100.0, 0.20);
        break;
      }
    case DEMO_FRAME_TOOLKIT:
      {
        guint hash = g_str_hash (node->name);

        cairo_set_source_rgb (cr, 0.50 + (hash % 10) / 100.0, 0.68 + (hash / 10 % 10) / 100.0, 0.92);
        break;
      }
    case DEMO_FRAME_SYSTEM:
    default:
      cairo_set_source_rgb (cr, 0.80, 0.80, 0.80);
      break;
    }
  cairo_rectangle (cr, x + 0.5, y + 0.5, width - 1, DEMO_FLAME_ROW_HEIGHT - 1);
  cairo_fill (cr);
  if (width >= DEMO_FLAME_LABEL_MIN_WIDTH)
    {
      g_autoptr(PangoLayout) layout = gtk_widget_create_pango_layout (area, node->name);

      pango_layout_set_width (layout, (int) ((width - 6) * PANGO_SCALE));
      pango_layout_set_ellipsize (layout, PANGO_ELLIPSIZE_END);
      cairo_set_source_rgb (cr, 0.1, 0.1, 0.1);
      cairo_move_to (cr, x + 3, y + 2);
      pango_cairo_show_layout (cr, layout);
    }
  if (node->children == NULL)
    return;
  for (guint i = 0; i < node->children->len; i++)
    {
      DemoFlameNode *child = node->children->pdata[i];
      double child_width = width * child->samples / node->samples;

      demo_flame_draw_node (cr, area, child, x, child_width, height, depth + 1, drawn);
      x += child_width;
    }
}

/* Main thread. The box the graph keeps in view: on the heaviest path
 * from the root (at each row the child with the most samples, the first of
 * equals), its deepest program box, at row *@depth; NULL when the path
 * has none. Not the widest program box: main holds every sample, and
 * when one sample was taken after the culprit returned (its caller still
 * working, on a loaded machine), the culprit holds one fewer and main
 * would be the widest of all. */
static DemoFlameNode *
demo_flame_culprit (DemoFlameNode *root, guint *depth)
{
  DemoFlameNode *node = root, *culprit = NULL;

  for (guint row = 0;; row++)
    {
      DemoFlameNode *heaviest = NULL;

      if (node->kind == DEMO_FRAME_PROGRAM)
        {
          culprit = node;
          *depth = row;
        }
      for (guint i = 0; node->children != NULL && i < node->children->len; i++)
        {
          DemoFlameNode *child = node->children->pdata[i];

          if (heaviest == NULL || child->samples > heaviest->samples)
            heaviest = child;
        }
      if (heaviest == NULL)
        return culprit;
      node = heaviest;
    }
}

/* Main thread, an idle callback: scrolls the graph to @user_data, the top
 * of the row to show (in the area's coordinates). */
static gboolean
demo_flame_scroll_to (gpointer user_data)
{
  if (demo.flame_scroll != NULL)
    gtk_adjustment_set_value (demo.flame_scroll, GPOINTER_TO_INT (user_data));
  return G_SOURCE_REMOVE;
}

/* Main thread, GtkDrawingArea's draw function. Once the area has the
 * graph's height, the culprit's box (demo_flame_culprit()) must be in
 * view: if it is not, the graph is scrolled (once) to show it with its
 * callers below. With --print-reports, the first drawing of each lag's
 * graph so laid out is told on stdout: "flame: ID: N boxes, R rows,
 * culprit box NAME (S of T samples), in view" (or "out of view"), as the
 * window shows it. */
static void
demo_flame_draw (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer user_data)
{
  DemoFlameDrawn drawn = { 0 };
  DemoFlameNode *culprit;
  gboolean laid_out, in_view = FALSE;
  double box_top = 0;
  guint culprit_depth = 0;

  if (demo.flame == NULL)
    return;
  demo_flame_draw_node (cr, GTK_WIDGET (area), demo.flame, 0, width, height, 0, &drawn);
  /* Until GTK has allocated the new graph's height, this is a drawing at
   * the old one: told nothing, scrolled nowhere. */
  laid_out = height >= (int) (demo.flame_rows * DEMO_FLAME_ROW_HEIGHT) && demo.flame_scroll != NULL
             && gtk_adjustment_get_page_size (demo.flame_scroll) > 0;
  culprit = demo_flame_culprit (demo.flame, &culprit_depth);
  if (!laid_out || culprit == NULL)
    return;
  box_top = height - (culprit_depth + 1.0) * DEMO_FLAME_ROW_HEIGHT;
  in_view = box_top >= gtk_adjustment_get_value (demo.flame_scroll)
            && box_top + DEMO_FLAME_ROW_HEIGHT
               <= gtk_adjustment_get_value (demo.flame_scroll) + gtk_adjustment_get_page_size (demo.flame_scroll);
  if (!in_view && !demo.flame_scrolled)
    {
      /* The box two rows from the top of the view, its callers under it. */
      demo.flame_scrolled = TRUE;
      g_idle_add (demo_flame_scroll_to, GINT_TO_POINTER ((int) MAX (box_top - 2 * DEMO_FLAME_ROW_HEIGHT, 0)));
      return;
    }
  if (opt_print_reports && !demo.flame_told)
    {
      demo.flame_told = TRUE;
      printf ("flame: %s: %u boxes, %u rows, culprit box %s (%u of %u samples), %s\n",
              demo.flame_id, drawn.n_boxes, drawn.n_rows, culprit->name, culprit->samples,
              demo.flame->samples, in_view ? "in view" : "out of view");
      fflush (stdout);
    }
}

/* Main thread. Shows the samples of @report (NULL: none) in the graph. */
static void
demo_show_flame (LagWatchReport *report)
{
  g_clear_pointer (&demo.flame, demo_flame_node_free);
  g_clear_pointer (&demo.flame_id, g_free);
  demo.flame_rows = 0;
  demo.flame_told = FALSE;
  demo.flame_scrolled = FALSE;
  if (report != NULL)
    {
      demo.flame = demo_flame_from_report (report, &demo.flame_rows);
      demo.flame_id = g_strdup (lagwatch_report_get_id (report));
    }
  if (demo.flame_area != NULL)
    {
      gtk_drawing_area_set_content_height (demo.flame_area, (int) (demo.flame_rows * DEMO_FLAME_ROW_HEIGHT));
      gtk_widget_queue_draw (GTK_WIDGET (demo.flame_area));
    }
}

/* ---- The call timeline: the selected lag's calls in time order ----------
 *
 * Under the stack: one bar per call of lagwatch's call tree
 * (lagwatch_report_get_call()), x the time from the lag's start, one row per
 * depth, so the order and length of what ran show at a glance. Main thread. */

#define DEMO_CALLS_ROW_HEIGHT 16

static struct
{
  LagWatchReport *report;  /* the selected lag, NULL: none */
  GtkDrawingArea *area;    /* weak */
  gboolean        told;    /* its "calls:" line was printed (--print-reports) */
} demo_calls;

/* The call of @report that ran longest itself, outside the calls it made
 * (the calls are in pre-order: a call's children follow it, one row
 * deeper): its name, and that time in *@self_ms. NULL when there is no
 * call. Main thread. */
static const char *
demo_calls_busiest (LagWatchReport *report, double *self_ms)
{
  guint n_calls = lagwatch_report_get_n_calls (report);
  const char *busiest = NULL;

  *self_ms = 0;
  for (guint i = 0; i < n_calls; i++)
    {
      guint depth, child_depth;
      double start_ms, duration_ms, child_start_ms, child_ms;
      const char *name = lagwatch_report_get_call (report, i, &depth, &start_ms, &duration_ms);
      double self = duration_ms;

      for (guint j = i + 1; j < n_calls; j++)
        {
          lagwatch_report_get_call (report, j, &child_depth, &child_start_ms, &child_ms);
          if (child_depth <= depth)
            break;
          if (child_depth == depth + 1)
            self -= child_ms;
        }
      if (busiest == NULL || self > *self_ms)
        {
          busiest = name != NULL ? name : "??";
          *self_ms = self;
        }
    }
  return busiest;
}

/* GtkDrawingArea's draw function. With --print-reports, the first drawing of
 * each lag's timeline is told on stdout: "calls: ID: N calls, R rows,
 * busiest NAME (D ms)", the call that ran longest outside the calls it made
 * (the deepest call is not the culprit: a short call made after the culprit
 * returned, a write to the X server say, can be deeper). */
static void
demo_calls_draw (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer user_data)
{
  LagWatchReport *report = demo_calls.report;
  guint n_calls, rows = 0;
  double lag_ms;

  if (report == NULL)
    return;
  n_calls = lagwatch_report_get_n_calls (report);
  lag_ms = MAX (lagwatch_report_get_duration_ms (report), 1);
  for (guint i = 0; i < n_calls; i++)
    {
      guint depth;
      double start_ms, duration_ms;
      const char *name = lagwatch_report_get_call (report, i, &depth, &start_ms, &duration_ms);
      double x = width * start_ms / lag_ms, w = MAX (width * duration_ms / lag_ms, 1);
      double y = depth * DEMO_CALLS_ROW_HEIGHT;
      guint hash = g_str_hash (name != NULL ? name : "??"), n_short = 0;
      double share = 0;
      gboolean summary = lagwatch_report_get_call_summary (report, i, &n_short, &share);

      rows = MAX (rows, depth + 1);
      /* A summary of calls too short to time: its duration is their total,
       * not a span, so it is drawn faint, from its first call. */
      cairo_set_source_rgba (cr, 0.35 + (hash % 20) / 100.0, 0.55 + (hash / 20 % 20) / 100.0, 0.85,
                             summary ? 0.35 : 1.0);
      cairo_rectangle (cr, x + 0.5, y + 0.5, w - 1, DEMO_CALLS_ROW_HEIGHT - 1);
      cairo_fill (cr);
      if (w >= DEMO_FLAME_LABEL_MIN_WIDTH)
        {
          g_autofree char *label = summary
            ? g_strdup_printf ("%s: %u short calls, ~%.0f%%", name != NULL ? name : "??", n_short, 100 * share)
            : g_strdup_printf ("%s %.0f ms", name != NULL ? name : "??", duration_ms);
          g_autoptr(PangoLayout) layout = gtk_widget_create_pango_layout (GTK_WIDGET (area), label);

          pango_layout_set_width (layout, (int) ((w - 6) * PANGO_SCALE));
          pango_layout_set_ellipsize (layout, PANGO_ELLIPSIZE_END);
          cairo_set_source_rgb (cr, 0.05, 0.05, 0.05);
          cairo_move_to (cr, x + 3, y + 1);
          pango_cairo_show_layout (cr, layout);
        }
    }
  gtk_drawing_area_set_content_height (area, (int) (MAX (rows, 1) * DEMO_CALLS_ROW_HEIGHT));
  if (opt_print_reports && !demo_calls.told)
    {
      double busiest_ms;
      const char *busiest = demo_calls_busiest (report, &busiest_ms);

      demo_calls.told = TRUE;
      printf ("calls: %s: %u calls, %u rows, busiest %s (%.0f ms)\n", lagwatch_report_get_id (report),
              n_calls, rows, busiest != NULL ? busiest : "(none)", busiest_ms);
      fflush (stdout);
    }
}

/* Shows the calls of @report (NULL: none) in the timeline. */
static void
demo_show_calls (LagWatchReport *report)
{
  g_clear_pointer (&demo_calls.report, lagwatch_report_unref);
  demo_calls.told = FALSE;
  if (report != NULL)
    demo_calls.report = lagwatch_report_ref (report);
  if (demo_calls.area != NULL)
    gtk_widget_queue_draw (GTK_WIDGET (demo_calls.area));
}

/* The flame graph above the call timeline; the graph takes what room the
 * window gives, the timeline keeps a few rows. */
static GtkWidget *
demo_flame_and_calls_new (GtkWidget *flame_view)
{
  GtkWidget *area = gtk_drawing_area_new ();
  GtkWidget *scrolled = gtk_scrolled_window_new ();
  GtkWidget *paned = gtk_paned_new (GTK_ORIENTATION_VERTICAL);

  demo_calls.area = GTK_DRAWING_AREA (area);
  g_object_add_weak_pointer (G_OBJECT (area), (gpointer *) &demo_calls.area);
  gtk_drawing_area_set_draw_func (demo_calls.area, demo_calls_draw, NULL, NULL);
  gtk_widget_set_tooltip_text (area, "The selected lag's calls in time order, from its samples: "
                                     "x = time in the lag, callers above callees");
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scrolled), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scrolled), area);
  gtk_paned_set_start_child (GTK_PANED (paned), flame_view);
  gtk_paned_set_end_child (GTK_PANED (paned), scrolled);
  gtk_drawing_area_set_content_height (demo_calls.area, 4 * DEMO_CALLS_ROW_HEIGHT);
  gtk_scrolled_window_set_min_content_height (GTK_SCROLLED_WINDOW (scrolled), 4 * DEMO_CALLS_ROW_HEIGHT);
  gtk_paned_set_shrink_end_child (GTK_PANED (paned), FALSE);
  gtk_paned_set_resize_end_child (GTK_PANED (paned), FALSE);
  return paned;
}

/* ---- Reports: from the watcher thread to the window --------------------- */

/* Main thread, after the first frame painted since a report arrived:
 * "list: 3 rows: 4242-3 4242-2 4242-1", the ids of the rows, newest first. */
static void
demo_on_after_paint (GdkFrameClock *clock, gpointer user_data)
{
  GListModel *lags = G_LIST_MODEL (demo.lags);
  guint n_rows = g_list_model_get_n_items (lags);
  GString *line = g_string_new (NULL);

  g_signal_handler_disconnect (clock, demo.after_paint_handler);
  demo.after_paint_handler = 0;
  demo.painting_clock = NULL;
  g_string_printf (line, "list: %u row%s:", n_rows, n_rows == 1 ? "" : "s");
  for (guint i = 0; i < n_rows; i++)
    {
      g_autoptr(DemoLag) lag = g_list_model_get_item (lags, i);

      g_string_append_printf (line, " %s", lagwatch_report_get_id (lag->report));
    }
  puts (line->str);
  fflush (stdout);
  g_string_free (line, TRUE);
}

/* Main thread. TRUE when @report is the lag of the last freeze the user
 * asked for: the lag was going on while the freeze ran. */
static gboolean
demo_report_is_the_freeze (LagWatchReport *report)
{
  gint64 start_us = lagwatch_report_get_start_time (report);
  gint64 end_us = start_us + (gint64) (lagwatch_report_get_duration_ms (report) * 1000);

  return demo.freeze_end_us != 0 && start_us <= demo.freeze_end_us && end_us >= demo.freeze_start_us;
}

/* Main thread, from an idle source that demo_on_report() added. Puts the
 * report at the head of the list, then prints it when --print-reports was
 * given, so a test sees on stdout only what went through the callback and
 * into the list. The selection (whose stack and flame graph show) goes to
 * the lag of the freeze the user asked for, and stays on it: other lags
 * that follow (the window repainting on a busy machine) do not take it.
 * Otherwise it follows the newest lag while it was on the newest row. */
static gboolean
demo_show_report (gpointer data)
{
  LagWatchReport *report = data;
  g_autoptr(DemoLag) lag = NULL;
  g_autofree char *text = NULL;
  guint selected;
  gboolean follow;

  if (demo.window == NULL)  /* closed: the application is quitting */
    return G_SOURCE_REMOVE;
  selected = gtk_single_selection_get_selected (demo.selection);
  lag = g_object_new (DEMO_TYPE_LAG, NULL);
  lag->report = lagwatch_report_ref (report);
  if (demo.freeze_lag == NULL && demo_report_is_the_freeze (report))
    {
      demo.freeze_lag = lag;
      follow = TRUE;
    }
  else if (demo.freeze_lag != NULL && demo.freeze_lag == gtk_single_selection_get_selected_item (demo.selection))
    follow = FALSE;
  else
    follow = selected == 0 || selected == GTK_INVALID_LIST_POSITION;
  g_list_store_insert (demo.lags, 0, lag);
  if (follow)
    {
      gtk_single_selection_set_selected (demo.selection, 0);
      gtk_adjustment_set_value (demo.table_scroll, 0);
    }

  if (opt_print_reports)
    {
      text = lagwatch_report_to_text (report);
      fputs (text, stdout);
      fflush (stdout);
      /* Once the frame that shows the new row is painted, list the rows: a
       * script sees the report is in the list, and can take its screenshot. */
      if (demo.after_paint_handler == 0 && gtk_widget_get_frame_clock (GTK_WIDGET (demo.window)) != NULL)
        {
          demo.painting_clock = gtk_widget_get_frame_clock (GTK_WIDGET (demo.window));
          demo.after_paint_handler = g_signal_connect (demo.painting_clock, "after-paint",
                                                       G_CALLBACK (demo_on_after_paint), NULL);
          gtk_widget_queue_draw (GTK_WIDGET (demo.window));
        }
    }
  return G_SOURCE_REMOVE;
}

/* Watcher thread (lagwatch's): must not touch GTK or the demo's state. It
 * takes a reference on the report and queues an idle source on the main
 * thread's context, which shows it there. Not g_main_context_invoke(): from
 * a thread with no thread-default context it may acquire the global default
 * context and run the function right here, on this thread. */
static void
demo_on_report (LagWatchReport *report, gpointer user_data)
{
  g_idle_add_full (G_PRIORITY_DEFAULT, demo_show_report, lagwatch_report_ref (report),
                   (GDestroyNotify) lagwatch_report_unref);
}

/* ---- The window ---------------------------------------------------------- */

typedef enum
{
  DEMO_COLUMN_TIME,
  DEMO_COLUMN_DURATION,
  DEMO_COLUMN_FRAMES,
  DEMO_COLUMN_SOURCE,
  DEMO_COLUMN_THREAD,
  DEMO_COLUMN_WHERE,
} DemoColumn;

/* Widths in pixels; the last column takes the rest. */
static const struct
{
  const char *title;
  float       xalign;
  int         width;
} demo_columns[] = {
  [DEMO_COLUMN_TIME] = { "Began", 0, 105 },
  [DEMO_COLUMN_DURATION] = { "Duration", 1, 85 },
  [DEMO_COLUMN_FRAMES] = { "Frames missed", 1, 130 },
  [DEMO_COLUMN_SOURCE] = { "GSource", 0, 195 },
  [DEMO_COLUMN_THREAD] = { "Thread", 0, 265 },
  [DEMO_COLUMN_WHERE] = { "Where (innermost frames of the program)", 0, -1 },
};

/* "24 at 60 Hz": the frames the demo's own window missed during the lag
 * (its title begins "lagwatch demo"), "—" when lagwatch did not count them
 * (no GTK window followed, or the window was hidden). */
static char *
demo_frames_text (LagWatchReport *report)
{
  for (guint i = 0; i < lagwatch_report_get_n_windows (report); i++)
    {
      const char *title = NULL;
      double interval_ms = 0;
      guint missed = lagwatch_report_get_frames_missed (report, i, &title, &interval_ms);

      if (title != NULL && g_str_has_prefix (title, "lagwatch demo") && interval_ms > 0)
        return g_strdup_printf ("%u at %.0f Hz", missed, 1000 / interval_ms);
    }
  return g_strdup ("—");
}

static char *
demo_column_text (LagWatchReport *report, DemoColumn column)
{
  const char *source;

  switch (column)
    {
    case DEMO_COLUMN_TIME:
      return demo_time_text (report);
    case DEMO_COLUMN_DURATION:
      return g_strdup_printf ("%.0f ms", lagwatch_report_get_duration_ms (report));
    case DEMO_COLUMN_FRAMES:
      return demo_frames_text (report);
    case DEMO_COLUMN_SOURCE:
      source = lagwatch_report_get_source (report);
      return g_strdup (source != NULL ? source : "—");
    case DEMO_COLUMN_THREAD:
      return demo_thread_text (report);
    case DEMO_COLUMN_WHERE:
      return demo_where_text (report);
    }
  g_return_val_if_reached (NULL);
}

static void
demo_cell_setup (GtkSignalListItemFactory *factory, GtkListItem *item, gpointer column)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_xalign (GTK_LABEL (label), demo_columns[GPOINTER_TO_UINT (column)].xalign);
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
  gtk_list_item_set_child (item, label);
}

static void
demo_cell_bind (GtkSignalListItemFactory *factory, GtkListItem *item, gpointer column)
{
  DemoLag *lag = gtk_list_item_get_item (item);
  g_autofree char *text = demo_column_text (lag->report, GPOINTER_TO_UINT (column));

  gtk_label_set_text (GTK_LABEL (gtk_list_item_get_child (item)), text);
  gtk_widget_set_tooltip_text (gtk_list_item_get_child (item), text);
}

static GtkWidget *
demo_lag_table_new (void)
{
  GtkWidget *table;

  demo.selection = gtk_single_selection_new (G_LIST_MODEL (g_object_ref (demo.lags)));
  table = gtk_column_view_new (GTK_SELECTION_MODEL (demo.selection));
  gtk_column_view_set_show_column_separators (GTK_COLUMN_VIEW (table), TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (demo_columns); i++)
    {
      GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();
      GtkColumnViewColumn *column;

      g_signal_connect (factory, "setup", G_CALLBACK (demo_cell_setup), GUINT_TO_POINTER (i));
      g_signal_connect (factory, "bind", G_CALLBACK (demo_cell_bind), GUINT_TO_POINTER (i));
      column = gtk_column_view_column_new (demo_columns[i].title, factory);
      gtk_column_view_column_set_fixed_width (column, demo_columns[i].width);
      gtk_column_view_column_set_expand (column, i == DEMO_COLUMN_WHERE);
      gtk_column_view_column_set_resizable (column, TRUE);
      gtk_column_view_append_column (GTK_COLUMN_VIEW (table), column);
      g_object_unref (column);
    }
  return table;
}

static void
demo_on_selected (GtkSingleSelection *selection, GParamSpec *pspec, gpointer user_data)
{
  DemoLag *lag = gtk_single_selection_get_selected_item (selection);

  if (lag != NULL)
    demo_show_stack (lag->report);
  else
    gtk_text_buffer_set_text (demo.stack_text, "", 0);
  demo_show_flame (lag != NULL ? lag->report : NULL);
  demo_show_calls (lag != NULL ? lag->report : NULL);
}

/* The title counts the rows of the list: "lagwatch demo — 2 lags". */
static void
demo_update_title (GListModel *lags, guint position, guint removed, guint added, gpointer window)
{
  guint n_rows = g_list_model_get_n_items (lags);
  g_autofree char *title = NULL;

  if (n_rows == 0)
    title = g_strdup ("lagwatch demo — no lags yet");
  else
    title = g_strdup_printf ("lagwatch demo — %u lag%s", n_rows, n_rows == 1 ? "" : "s");
  gtk_window_set_title (window, title);
}

static void
demo_on_threshold_changed (GtkSpinButton *spin, gpointer user_data)
{
  lagwatch_set_threshold_ms (demo.watch, (guint) gtk_spin_button_get_value_as_int (spin));
}

static GtkWidget *
demo_labeled (GtkWidget *box, const char *text, GtkWidget *widget)
{
  gtk_box_append (GTK_BOX (box), gtk_label_new (text));
  gtk_box_append (GTK_BOX (box), widget);
  return widget;
}

static GtkWidget *
demo_controls_new (void)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  const char *labels[G_N_ELEMENTS (demo_kinds) + 1] = { NULL };
  GtkWidget *freeze = gtk_button_new_with_mnemonic ("_Freeze");
  GtkWidget *threshold = gtk_spin_button_new_with_range (1, DEMO_MAX_THRESHOLD_MS, 10);
  GtkWidget *spacer = gtk_label_new (NULL);
  GtkWidget *save;

  for (guint i = 0; i < G_N_ELEMENTS (demo_kinds); i++)
    labels[i] = demo_kinds[i].label;
  demo.kind_choice = GTK_DROP_DOWN (demo_labeled (box, "Freeze the main thread by", gtk_drop_down_new_from_strings (labels)));
  gtk_drop_down_set_selected (demo.kind_choice, demo.initial_kind);
  demo.duration = GTK_SPIN_BUTTON (demo_labeled (box, "for", gtk_spin_button_new_with_range (1, DEMO_MAX_DURATION_MS, 50)));
  gtk_spin_button_set_value (demo.duration, opt_duration_ms);
  gtk_box_append (GTK_BOX (box), gtk_label_new ("ms"));
  gtk_actionable_set_action_name (GTK_ACTIONABLE (freeze), "app.freeze");
  gtk_widget_add_css_class (freeze, "suggested-action");
  gtk_box_append (GTK_BOX (box), freeze);
  save = gtk_button_new_with_mnemonic ("_Save reports…");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (save), "app.save");
  gtk_widget_set_tooltip_text (save, "Save this session's reports as JSON Lines, for lagwatch-report (Ctrl+S)");
  gtk_box_append (GTK_BOX (box), save);

  gtk_widget_set_hexpand (spacer, TRUE);
  gtk_box_append (GTK_BOX (box), spacer);
  demo_labeled (box, "Report lags over", threshold);
  gtk_box_append (GTK_BOX (box), gtk_label_new ("ms"));
  if (demo.watch != NULL)
    {
      gtk_spin_button_set_value (GTK_SPIN_BUTTON (threshold), lagwatch_get_threshold_ms (demo.watch));
      g_signal_connect (threshold, "value-changed", G_CALLBACK (demo_on_threshold_changed), NULL);
    }
  else
    {
      gtk_widget_set_sensitive (threshold, FALSE);
      gtk_widget_set_tooltip_text (threshold, "lagwatch is not watching (LAGWATCH_DISABLE=1, or see the warning on stderr)");
    }
  return box;
}

static GtkWidget *
demo_stack_view_new (void)
{
  GtkWidget *view = gtk_text_view_new ();
  GtkWidget *scrolled = gtk_scrolled_window_new ();

  gtk_text_view_set_editable (GTK_TEXT_VIEW (view), FALSE);
  gtk_text_view_set_monospace (GTK_TEXT_VIEW (view), TRUE);
  gtk_text_view_set_left_margin (GTK_TEXT_VIEW (view), 8);
  gtk_text_view_set_top_margin (GTK_TEXT_VIEW (view), 6);
  demo.stack_text = gtk_text_view_get_buffer (GTK_TEXT_VIEW (view));
  gtk_text_buffer_create_tag (demo.stack_text, "program", "weight", PANGO_WEIGHT_BOLD, NULL);
  gtk_text_buffer_create_tag (demo.stack_text, "toolkit", "foreground", "#2a5db0", NULL);
  gtk_text_buffer_set_text (demo.stack_text, "Select a lag to see its whole stack.", -1);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scrolled), view);
  return scrolled;
}

/* The flame graph of the selected lag, scrolled vertically when deep (to
 * its culprit's box, see demo_flame_draw). */
static GtkWidget *
demo_flame_view_new (void)
{
  GtkWidget *area = gtk_drawing_area_new ();
  GtkWidget *scrolled = gtk_scrolled_window_new ();

  demo.flame_area = GTK_DRAWING_AREA (area);
  g_object_add_weak_pointer (G_OBJECT (area), (gpointer *) &demo.flame_area);
  gtk_drawing_area_set_draw_func (demo.flame_area, demo_flame_draw, NULL, NULL);
  gtk_widget_set_tooltip_text (area, "The selected lag's samples: callees above callers, the root at the bottom, "
                                     "width = share of the samples; the program in orange, the toolkit in blue, "
                                     "the system in grey");
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scrolled), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scrolled), area);
  demo.flame_scroll = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (scrolled));
  g_object_add_weak_pointer (G_OBJECT (demo.flame_scroll), (gpointer *) &demo.flame_scroll);
  return scrolled;
}

/* ---- The latency chart: every iteration of the last minute ---- */

/* Seconds of history the chart shows, one column each. */
#define DEMO_CHART_SECONDS 60
#define DEMO_CHART_MAX_BUCKETS 32

/* The chart's state; main thread only. Each second, the counts of the
 * latency profile (lagwatch_get_stats) since the second before. */
static struct
{
  GtkDrawingArea *area;        /* weak */
  guint           timer;
  LagWatchStats  *last;        /* the previous snapshot, NULL before the first */
  guint           n_buckets;
  guint64         counts[DEMO_CHART_SECONDS][DEMO_CHART_MAX_BUCKETS];
  guint           lags[DEMO_CHART_SECONDS];
  guint           newest;      /* the column of the latest second */
  guint           filled;      /* columns holding a second so far */
  guint64         told_iterations; /* at the last "chart:" line (--print-reports) */
  guint           told_lags;
} demo_chart;

/* Main thread, once a second: the new column. */
static gboolean
demo_chart_tick (gpointer user_data)
{
  LagWatchStats *stats = demo.watch != NULL ? lagwatch_get_stats (demo.watch) : NULL;
  guint column;

  if (stats == NULL)
    return G_SOURCE_CONTINUE;
  demo_chart.n_buckets = MIN (lagwatch_stats_get_n_buckets (stats), DEMO_CHART_MAX_BUCKETS);
  column = demo_chart.newest = (demo_chart.newest + 1) % DEMO_CHART_SECONDS;
  demo_chart.filled = MIN (demo_chart.filled + 1, DEMO_CHART_SECONDS);
  for (guint b = 0; b < demo_chart.n_buckets; b++)
    demo_chart.counts[column][b] = lagwatch_stats_get_bucket_count (stats, b)
                                   - (demo_chart.last != NULL ? lagwatch_stats_get_bucket_count (demo_chart.last, b) : 0);
  demo_chart.lags[column] = lagwatch_stats_get_lags (stats)
                            - (demo_chart.last != NULL ? lagwatch_stats_get_lags (demo_chart.last) : 0);
  g_clear_pointer (&demo_chart.last, lagwatch_stats_free);
  demo_chart.last = stats;
  if (demo_chart.area != NULL)
    gtk_widget_queue_draw (GTK_WIDGET (demo_chart.area));
  return G_SOURCE_CONTINUE;
}

/* Main thread. The chart: a column per second (newest on the right), a row
 * per bucket (longest on top), darker for more iterations; a frame at
 * 60 Hz as a line; a second with a lag marked red at the top. Under
 * --print-reports, a "chart:" line whenever what it shows changed:
 * "chart: S s, N iterations, F over 16.7 ms, L lags, longest bucket from X ms". */
static void
demo_chart_draw (GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer user_data)
{
  guint64 iterations = 0, over_frame = 0;
  guint lags = 0, n_rows = MAX (demo_chart.n_buckets, 1);
  int longest = -1;
  double column_width = (double) width / DEMO_CHART_SECONDS, row_height = (double) (height - 6) / n_rows;

  cairo_set_source_rgb (cr, 0.97, 0.97, 0.97);
  cairo_paint (cr);
  for (guint age = 0; age < demo_chart.filled; age++)
    {
      guint column = (demo_chart.newest + DEMO_CHART_SECONDS - age) % DEMO_CHART_SECONDS;
      double x = width - (age + 1) * column_width;

      for (guint b = 0; b < demo_chart.n_buckets; b++)
        {
          guint64 n = demo_chart.counts[column][b];
          double shade = 0.25;

          iterations += n;
          if (demo_chart.last != NULL && lagwatch_stats_get_bucket_start_ms (demo_chart.last, b) >= 1000.0 / 60 - 0.01)
            over_frame += n;
          if (n == 0)
            continue;
          longest = MAX (longest, (int) b);
          /* Log shading: 1 iteration is visible, 1,000 is black. */
          for (guint64 m = n; m >= 10 && shade < 1; m /= 10)
            shade += 0.25;
          cairo_set_source_rgba (cr, 0.1, 0.2, 0.5, shade);
          cairo_rectangle (cr, x, height - (b + 1) * row_height, column_width - 1, row_height - 1);
          cairo_fill (cr);
        }
      if (demo_chart.lags[column] > 0)
        {
          lags += demo_chart.lags[column];
          cairo_set_source_rgb (cr, 0.85, 0.1, 0.1);
          cairo_rectangle (cr, x, 0, column_width - 1, 5);
          cairo_fill (cr);
        }
    }
  /* One frame at 60 Hz: the lower edge of the bucket from 16.7 ms. */
  cairo_set_source_rgba (cr, 0.85, 0.4, 0.0, 0.8);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, 0, height - 5 * row_height + 0.5);
  cairo_line_to (cr, width, height - 5 * row_height + 0.5);
  cairo_stroke (cr);

  if (opt_print_reports && demo_chart.last != NULL
      && (iterations != demo_chart.told_iterations || lags != demo_chart.told_lags))
    {
      demo_chart.told_iterations = iterations;
      demo_chart.told_lags = lags;
      printf ("chart: %u s, %" G_GUINT64_FORMAT " iterations, %" G_GUINT64_FORMAT " over 16.7 ms, %u lags, "
              "longest bucket from %g ms\n", demo_chart.filled, iterations, over_frame, lags,
              longest >= 0 ? lagwatch_stats_get_bucket_start_ms (demo_chart.last, (guint) longest) : 0.0);
      fflush (stdout);
    }
}

/* Main thread, as the chart goes. */
static void
demo_chart_destroyed (GtkWidget *area, gpointer user_data)
{
  g_clear_handle_id (&demo_chart.timer, g_source_remove);
  g_clear_pointer (&demo_chart.last, lagwatch_stats_free);
}

/* Main thread. The chart widget, refreshed once a second while it lives. */
static GtkWidget *
demo_chart_new (void)
{
  GtkWidget *area = gtk_drawing_area_new ();

  gtk_widget_set_size_request (area, -1, 60);
  gtk_widget_set_tooltip_text (area, "Every main-loop iteration of the last minute: a column per second, "
                                     "a row per duration (under 1 ms at the bottom, over 10 s at the top), "
                                     "darker for more; the orange line is one frame at 60 Hz; red: a lag");
  demo_chart.area = GTK_DRAWING_AREA (area);
  g_object_add_weak_pointer (G_OBJECT (area), (gpointer *) &demo_chart.area);
  gtk_drawing_area_set_draw_func (demo_chart.area, demo_chart_draw, NULL, NULL);
  g_signal_connect (area, "destroy", G_CALLBACK (demo_chart_destroyed), NULL);
  demo_chart.timer = g_timeout_add_seconds (1, demo_chart_tick, NULL);
  return area;
}

static void
demo_activate (GApplication *app, gpointer user_data)
{
  GtkWidget *window, *content, *hint, *paned, *details, *table_scroll;

  if (demo.window != NULL)
    {
      gtk_window_present (demo.window);
      return;
    }
  window = gtk_application_window_new (GTK_APPLICATION (app));
  gtk_window_set_default_size (GTK_WINDOW (window), 1100, 760);
  /* A header bar shows the title (the row count) even with no window manager. */
  gtk_window_set_titlebar (GTK_WINDOW (window), gtk_header_bar_new ());
  demo.window = GTK_WINDOW (window);
  g_object_add_weak_pointer (G_OBJECT (window), (gpointer *) &demo.window);
  g_signal_connect_object (demo.lags, "items-changed", G_CALLBACK (demo_update_title), window, 0);
  demo_update_title (G_LIST_MODEL (demo.lags), 0, 0, 0, window);

  content = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_start (content, 12);
  gtk_widget_set_margin_end (content, 12);
  gtk_widget_set_margin_top (content, 12);
  gtk_widget_set_margin_bottom (content, 12);
  gtk_box_append (GTK_BOX (content), demo_controls_new ());
  hint = gtk_label_new ("Ctrl+F freezes; Ctrl+1 … Ctrl+7 choose a way and freeze. "
                        "Newest lag first; select one to see its stack.");
  gtk_label_set_xalign (GTK_LABEL (hint), 0);
  gtk_widget_add_css_class (hint, "dim-label");
  gtk_box_append (GTK_BOX (content), hint);
  gtk_box_append (GTK_BOX (content), demo_chart_new ());

  table_scroll = gtk_scrolled_window_new ();
  demo.table_scroll = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (table_scroll));
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (table_scroll), demo_lag_table_new ());
  g_signal_connect (demo.selection, "notify::selected", G_CALLBACK (demo_on_selected), NULL);
  /* The list on top, a few rows tall; below it the selected lag, which gets
   * the room a larger window gives: its stack beside its flame graph. */
  paned = gtk_paned_new (GTK_ORIENTATION_VERTICAL);
  gtk_widget_set_vexpand (paned, TRUE);
  gtk_paned_set_start_child (GTK_PANED (paned), table_scroll);
  gtk_paned_set_resize_start_child (GTK_PANED (paned), FALSE);
  details = gtk_paned_new (GTK_ORIENTATION_HORIZONTAL);
  gtk_paned_set_start_child (GTK_PANED (details), demo_stack_view_new ());
  gtk_paned_set_end_child (GTK_PANED (details), demo_flame_and_calls_new (demo_flame_view_new ()));
  gtk_paned_set_position (GTK_PANED (details), 500);
  gtk_paned_set_end_child (GTK_PANED (paned), details);
  gtk_paned_set_position (GTK_PANED (paned), 150);
  gtk_box_append (GTK_BOX (content), paned);

  gtk_window_set_child (GTK_WINDOW (window), content);
  gtk_window_present (GTK_WINDOW (window));
}

/* ---- Actions and the application ------------------------------------------- */

/* The duration in the window, including digits typed but not yet entered. */
static guint
demo_duration_ms (void)
{
  gtk_spin_button_update (demo.duration);
  return (guint) gtk_spin_button_get_value_as_int (demo.duration);
}

/* app.freeze (Ctrl+F, the Freeze button): freezes the way chosen. */
static void
demo_on_freeze (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  if (demo.window == NULL)
    return;
  demo_freeze ((DemoFreezeKind) gtk_drop_down_get_selected (demo.kind_choice), demo_duration_ms ());
  DEMO_KEEP_FRAME ();
}

/* app.freeze-kind::ID (Ctrl+1 ... Ctrl+7): chooses the way, freezes. */
static void
demo_on_freeze_kind (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  DemoFreezeKind kind;

  if (demo.window == NULL || !demo_kind_from_id (g_variant_get_string (parameter, NULL), &kind))
    return;
  gtk_drop_down_set_selected (demo.kind_choice, kind);
  demo_freeze (kind, demo_duration_ms ());
  DEMO_KEEP_FRAME ();
}

/* Main thread. Writes the session's reports to @file, oldest first, one
 * JSON record a line (the JSON Lines sink's format, for lagwatch-report).
 * Says on stderr when it fails; with --print-reports, on stdout when done:
 * "saved: N reports to PATH". */
static void
demo_save_reports_to (GFile *file)
{
  GListModel *lags = G_LIST_MODEL (demo.lags);
  guint n = g_list_model_get_n_items (lags);
  GString *lines = g_string_new (NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_file_get_path (file);

  for (guint i = n; i-- > 0;)
    {
      g_autoptr(DemoLag) lag = g_list_model_get_item (lags, i);
      g_autofree char *json = lagwatch_report_to_json (lag->report);

      g_string_append (lines, json);
      g_string_append_c (lines, '\n');
    }
  if (!g_file_replace_contents (file, lines->str, lines->len, NULL, FALSE, G_FILE_CREATE_NONE, NULL, NULL, &error))
    g_printerr ("lagwatch-demo: could not save the reports to %s: %s\n", path, error->message);
  else if (opt_print_reports)
    {
      printf ("saved: %u reports to %s\n", n, path);
      fflush (stdout);
    }
  g_string_free (lines, TRUE);
}

/* Main thread: the file chooser of Save answered. */
static void
demo_on_save_response (GtkNativeDialog *chooser, int response, gpointer user_data)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser));

      demo_save_reports_to (file);
    }
  g_object_unref (chooser);
}

/* app.save (Ctrl+S, the Save button): to --save-reports' file, else where
 * a file chooser says. */
static void
demo_on_save (GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
  GtkFileChooserNative *chooser;

  if (demo.window == NULL)
    return;
  if (opt_save_reports != NULL)
    {
      g_autoptr(GFile) file = g_file_new_for_commandline_arg (opt_save_reports);

      demo_save_reports_to (file);
      return;
    }
  chooser = gtk_file_chooser_native_new ("Save the reports", demo.window, GTK_FILE_CHOOSER_ACTION_SAVE,
                                         "_Save", "_Cancel");
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (chooser), "lagwatch-reports.jsonl");
  g_signal_connect (chooser, "response", G_CALLBACK (demo_on_save_response), NULL);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (chooser));
}

static void
demo_on_quit (GSimpleAction *action, GVariant *parameter, gpointer app)
{
  g_application_quit (app);
}

static const GActionEntry demo_actions[] = {
  { .name = "freeze", .activate = demo_on_freeze },
  { .name = "freeze-kind", .activate = demo_on_freeze_kind, .parameter_type = "s" },
  { .name = "save", .activate = demo_on_save },
  { .name = "quit", .activate = demo_on_quit },
};

/* Before the application registers: checks the options. */
static int
demo_handle_local_options (GApplication *app, GVariantDict *options, gpointer user_data)
{
  if (opt_kind != NULL && !demo_kind_from_id (opt_kind, &demo.initial_kind))
    {
      g_printerr ("lagwatch-demo: --kind: \"%s\" is none of busy, sleep, io, mutex, recursion, timer, stutter\n",
                  opt_kind);
      return 2;
    }
  if (opt_duration_ms < 1 || opt_duration_ms > DEMO_MAX_DURATION_MS)
    {
      g_printerr ("lagwatch-demo: --duration: %d is not within 1-%d ms\n", opt_duration_ms, DEMO_MAX_DURATION_MS);
      return 2;
    }
  if (opt_threshold_ms < 1 || opt_threshold_ms > DEMO_MAX_THRESHOLD_MS)
    {
      g_printerr ("lagwatch-demo: --threshold: %d is not within 1-%d ms\n", opt_threshold_ms, DEMO_MAX_THRESHOLD_MS);
      return 2;
    }
  return -1;
}

/* Attaches lagwatch to the default context, the one GTK runs, before the
 * first window. The environment (LAGWATCH_THRESHOLD_MS, LAGWATCH_OUTPUT...)
 * overrides the configuration, as in any program. */
static void
demo_startup (GApplication *app, gpointer user_data)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();

  demo.lags = g_list_store_new (DEMO_TYPE_LAG);
  lagwatch_config_set_threshold_ms (config, (guint) opt_threshold_ms);
  demo.watch = lagwatch_attach_with_config (NULL, config);
  if (demo.watch != NULL)
    lagwatch_set_report_func (demo.watch, demo_on_report, NULL, NULL);

  g_action_map_add_action_entries (G_ACTION_MAP (app), demo_actions, G_N_ELEMENTS (demo_actions), app);
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.freeze",
                                         (const char *const[]) { "<Control>f", NULL });
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.save",
                                         (const char *const[]) { "<Control>s", NULL });
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.quit",
                                         (const char *const[]) { "<Control>q", NULL });
  for (guint i = 0; i < G_N_ELEMENTS (demo_kinds); i++)
    {
      g_autofree char *action = g_strdup_printf ("app.freeze-kind::%s", demo_kinds[i].id);

      gtk_application_set_accels_for_action (GTK_APPLICATION (app), action,
                                             (const char *const[]) { demo_kinds[i].accel, NULL });
    }
}

/* Before GTK destroys the window: no report is delivered after the detach;
 * one already queued would find demo.window NULL and be dropped. */
static void
demo_shutdown (GApplication *app, gpointer user_data)
{
  if (demo.after_paint_handler != 0)
    g_signal_handler_disconnect (demo.painting_clock, demo.after_paint_handler);
  if (demo.watch != NULL)
    lagwatch_detach (demo.watch);
}

int
main (int argc, char **argv)
{
  g_autoptr(GtkApplication) app = gtk_application_new ("org.lagwatch.Demo", G_APPLICATION_NON_UNIQUE);
  int status;

  g_application_add_main_option_entries (G_APPLICATION (app), demo_options);
  g_application_set_option_context_summary (G_APPLICATION (app),
                                            "Freezes its own main thread on demand and lists lagwatch's reports.\n"
                                            "Ctrl+F: freeze; Ctrl+1 … Ctrl+7: busy, sleep, io, mutex, recursion, "
                                            "timer, stutter; Ctrl+Q: quit.");
  g_signal_connect (app, "handle-local-options", G_CALLBACK (demo_handle_local_options), NULL);
  g_signal_connect (app, "startup", G_CALLBACK (demo_startup), NULL);
  g_signal_connect (app, "activate", G_CALLBACK (demo_activate), NULL);
  g_signal_connect (app, "shutdown", G_CALLBACK (demo_shutdown), NULL);
  status = g_application_run (G_APPLICATION (app), argc, argv);
  g_clear_object (&demo.lags);
  g_clear_pointer (&demo.flame, demo_flame_node_free);
  g_free (demo.flame_id);
  g_clear_pointer (&demo_calls.report, lagwatch_report_unref);
  g_free (opt_kind);
  g_free (opt_save_reports);
  return status;
}
