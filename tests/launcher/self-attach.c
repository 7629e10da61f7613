/* self-attach.c: programs that attach lagwatch themselves, run under the
 * launcher, and a program whose child runs in a new pid namespace
 *
 *   self-attach MODE
 *
 * The test (test-launcher-self.c) runs this program under the launcher.
 * MODE is:
 *   before    attach before the loop runs, then freeze once
 *   loop      attach from a callback of the running loop, then freeze once
 *   startup   a GApplication that iterates its context and attaches in
 *             "startup", freezes in "activate"
 *   reattach  attach, freeze; the report callback detaches and attaches the
 *             same context again; freeze again
 *   ns-parent freeze once, then run "unshare --pid --fork self-attach
 *             ns-child" and wait for it
 *   ns-child  freeze once; exit 3 if lagwatch is attached to it
 * Each attach writes to json:$LW_TEST_JSON only, threshold 100 ms, with a
 * callback that counts its reports. Every freeze is a 300 ms sleep in a
 * source named "self-attach: freeze" ("self-attach: child freeze" in the
 * child). Prints "callback reports: N" and exits 0 when each freeze was
 * reported to the callback (1 for each).
 */
#include <gio/gio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "lagwatch.h"

#define FREEZE_MS 300
#define WAIT_REPORT_S 60

static GMutex lock;
static GCond changed;
static guint reports;
static gboolean reattach_mode;
static LagWatch *reattached;
static char *reattach_error;
static LagWatch *watch;

/* Reporting thread. */
static void
on_report (LagWatchReport *report, gpointer data)
{
  g_mutex_lock (&lock);
  reports++;
  if (reattach_mode && reports == 1)
    {
      g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
      g_autoptr(GError) error = NULL;
      g_autofree char *output = g_strconcat ("json:", g_getenv ("LW_TEST_JSON"), NULL);

      lagwatch_detach (watch);
      lagwatch_config_set_threshold_ms (config, 100);
      lagwatch_config_set_output (config, output, NULL);
      reattached = lagwatch_attach_full (NULL, config, &error);
      if (reattached == NULL)
        reattach_error = g_strdup (error->message);
      else
        lagwatch_set_report_func (reattached, on_report, NULL, NULL);
    }
  g_cond_broadcast (&changed);
  g_mutex_unlock (&lock);
}

/* Loop thread (or main thread before the loop). */
static void
attach_own (void)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  g_autoptr(GError) error = NULL;
  g_autofree char *output = g_strconcat ("json:", g_getenv ("LW_TEST_JSON"), NULL);

  lagwatch_config_set_threshold_ms (config, 100);
  g_assert_true (lagwatch_config_set_output (config, output, NULL));
  watch = lagwatch_attach_full (NULL, config, &error);
  if (watch == NULL)
    {
      printf ("attach failed: %s\n", error->message);
      exit (10);
    }
  lagwatch_set_report_func (watch, on_report, NULL, NULL);
}

/* Loop thread. Waits until the callback counted @n reports. */
static gboolean
wait_reports (guint n)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_REPORT_S * G_TIME_SPAN_SECOND;
  gboolean done;

  g_mutex_lock (&lock);
  while (reports < n && g_cond_wait_until (&changed, &lock, deadline))
    ;
  done = reports >= n;
  g_mutex_unlock (&lock);
  return done;
}

static gboolean
freeze (gpointer data)
{
  g_usleep (FREEZE_MS * 1000);
  return G_SOURCE_REMOVE;
}

/* Loop thread: the freeze in its own named source. */
static void
add_freeze (const char *name)
{
  GSource *source = g_idle_source_new ();

  g_source_set_name (source, name);
  g_source_set_callback (source, freeze, NULL, NULL);
  g_source_attach (source, NULL);
  g_source_unref (source);
}

typedef struct
{
  GMainLoop *loop;
  guint      freezes;
  guint      done;
} Run;

/* Loop thread, after each freeze: the next freeze once reported, or quit. */
static gboolean
after_freeze (gpointer data)
{
  Run *run = data;

  if (!wait_reports (run->done + 1))
    {
      g_main_loop_quit (run->loop);
      return G_SOURCE_REMOVE;
    }
  run->done++;
  if (run->done == run->freezes)
    {
      g_main_loop_quit (run->loop);
      return G_SOURCE_REMOVE;
    }
  add_freeze ("self-attach: freeze");
  return G_SOURCE_CONTINUE;
}

/* Loop thread. */
static gboolean
start (gpointer data)
{
  Run *run = data;

  if (watch == NULL)
    attach_own ();
  add_freeze ("self-attach: freeze");
  /* Lower priority than the idle: runs after the freeze. */
  g_idle_add_full (G_PRIORITY_LOW, after_freeze, run, NULL);
  return G_SOURCE_REMOVE;
}

static int
finish (guint expected)
{
  g_mutex_lock (&lock);
  printf ("callback reports: %u of %u\n", reports, expected);
  if (reattach_mode)
    printf ("re-attach from the callback: %s\n", reattached != NULL ? "attached" : reattach_error);
  g_mutex_unlock (&lock);
  return reports == expected ? 0 : 1;
}

/* The default context iterates once first, as the startup of a GTK
 * application may (GTK's own handler runs before the program's): the
 * launcher's watch is attached by then. */
static void
on_startup (GApplication *app, gpointer data)
{
  g_main_context_iteration (NULL, FALSE);
  attach_own ();
}

/* Loop thread, after the freeze (a later dispatch: the lag is over). */
static gboolean
app_after_freeze (gpointer data)
{
  wait_reports (1);
  g_application_release (data);
  return G_SOURCE_REMOVE;
}

static gboolean
app_freeze (gpointer data)
{
  g_usleep (FREEZE_MS * 1000);
  g_idle_add_full (G_PRIORITY_LOW, app_after_freeze, data, NULL);
  return G_SOURCE_REMOVE;
}

static void
on_activate (GApplication *app, gpointer data)
{
  GSource *source = g_idle_source_new ();

  g_application_hold (app);
  g_source_set_name (source, "self-attach: freeze");
  g_source_set_callback (source, app_freeze, app, NULL);
  g_source_attach (source, NULL);
  g_source_unref (source);
}

static int
run_application (void)
{
  g_autoptr(GApplication) app = g_application_new ("org.lagwatch.SelfAttach", G_APPLICATION_NON_UNIQUE);

  g_signal_connect (app, "startup", G_CALLBACK (on_startup), NULL);
  g_signal_connect (app, "activate", G_CALLBACK (on_activate), NULL);
  g_application_run (app, 0, NULL);
  return finish (1);
}

typedef struct
{
  GMainLoop  *loop;
  const char *self;
  int         status;
} NsParent;

/* Loop thread. The child's exit status. */
static void
child_exited (GPid pid, gint wait_status, gpointer data)
{
  NsParent *parent = data;

  parent->status = WIFEXITED (wait_status) ? WEXITSTATUS (wait_status) : 128;
  g_spawn_close_pid (pid);
  g_main_loop_quit (parent->loop);
}

/* Loop thread, after the freeze: the child, in a new pid namespace. */
static gboolean
spawn_child (gpointer data)
{
  NsParent *parent = data;
  const char *argv[] = { "unshare", "--pid", "--fork", parent->self, "ns-child", NULL };
  g_autoptr(GError) error = NULL;
  GPid pid;

  if (!g_spawn_async (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                      NULL, NULL, &pid, &error))
    {
      printf ("cannot run unshare: %s\n", error->message);
      parent->status = 10;
      g_main_loop_quit (parent->loop);
      return G_SOURCE_REMOVE;
    }
  g_child_watch_add (pid, child_exited, parent);
  return G_SOURCE_REMOVE;
}

/* ns-parent: freeze once, then the child in its own pid namespace. */
static int
run_ns_parent (const char *self)
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  NsParent parent = { loop, self, -1 };

  add_freeze ("self-attach: freeze");
  g_idle_add_full (G_PRIORITY_LOW, spawn_child, &parent, NULL);
  g_main_loop_run (loop);
  printf ("child exit status %d\n", parent.status);
  return parent.status;
}

/* ns-child: freeze once; 3 when lagwatch attached to this process. */
static int
run_ns_child (void)
{
  add_freeze ("self-attach: child freeze");
  while (g_main_context_pending (NULL))
    g_main_context_iteration (NULL, FALSE);
  return lagwatch_is_attached (NULL) ? 3 : 0;
}

int
main (int argc, char **argv)
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  Run run = { loop, 1, 0 };
  const char *mode = argc > 1 ? argv[1] : "";

  setvbuf (stdout, NULL, _IONBF, 0);
  if (g_str_equal (mode, "startup"))
    return run_application ();
  if (g_str_equal (mode, "ns-parent"))
    return run_ns_parent (argv[0]);
  if (g_str_equal (mode, "ns-child"))
    return run_ns_child ();
  if (g_str_equal (mode, "before") || g_str_equal (mode, "reattach"))
    attach_own ();
  else if (!g_str_equal (mode, "loop"))
    {
      fprintf (stderr, "self-attach: unknown mode '%s'\n", mode);
      return 2;
    }
  reattach_mode = g_str_equal (mode, "reattach");
  if (reattach_mode)
    run.freezes = 2;
  g_idle_add (start, &run);
  g_main_loop_run (loop);
  return finish (run.freezes);
}
