/* test-lifecycle.c: lagwatch never holds the program's life in its hands
 *
 * A report callback may detach any watch, its own or another whose
 * callback is running at the same moment and detaching this one: every
 * call returns and every watch ends. Everything runs in a subprocess
 * with a deadline; the waits inside are on conditions, with generous
 * deadlines that fail the test only when the awaited thing never comes.
 */
#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lag-harness.h"

#define SUBPROCESS_TIMEOUT_US (60 * G_USEC_PER_SEC)
#define WAIT_US               (30 * G_USEC_PER_SEC)

/* -- detach from report callbacks ----------------------------------------- */

typedef struct _Pair Pair;

typedef struct
{
  Pair         *pair;
  GMainContext *context;
  LagWatch     *watch;
  guint         index;
  GThread      *thread;
} Side;

struct _Pair
{
  Side     sides[2];
  gboolean cross;       /* each callback detaches the other watch, else its own */
  GMutex   lock;
  GCond    cond;
  /* HOLDS: lock */
  guint    entered;     /* callbacks that have begun */
  guint    returned;    /* ... and whose lagwatch_detach() returned */
  guint    ended;       /* watches whose callback was released (destroy notify) */
  gboolean stop;
};

/* Waits, @pair's lock held, until *@count reaches @n; FALSE at the deadline. */
static gboolean
pair_wait (Pair *pair, guint *count, guint n)
{
  gint64 deadline = g_get_monotonic_time () + WAIT_US;

  while (*count < n)
    if (!g_cond_wait_until (&pair->cond, &pair->lock, deadline))
      return *count >= n;
  return TRUE;
}

/* Reporting thread of a side's watch. Once both callbacks run at the same
 * time (crossed), detaches the other side's watch; else its own. */
static void
on_report_detach (LagWatchReport *report, gpointer data)
{
  Side *side = data;
  Pair *pair = side->pair;
  LagWatch *target;
  static _Atomic gboolean detached[2];

  if (atomic_exchange (&detached[side->index], TRUE))
    return;  /* a later lag: the first callback detached already */
  g_mutex_lock (&pair->lock);
  pair->entered++;
  g_cond_broadcast (&pair->cond);
  if (pair->cross)
    g_assert_true (pair_wait (pair, &pair->entered, 2));
  g_mutex_unlock (&pair->lock);

  target = pair->sides[pair->cross ? 1 - side->index : side->index].watch;
  lagwatch_detach (target);

  g_mutex_lock (&pair->lock);
  pair->returned++;
  g_cond_broadcast (&pair->cond);
  g_mutex_unlock (&pair->lock);
}

/* Any thread: the watch released its callback, its reporting ended. */
static void
on_callback_released (gpointer data)
{
  Side *side = data;
  Pair *pair = side->pair;

  g_mutex_lock (&pair->lock);
  pair->ended++;
  g_cond_broadcast (&pair->cond);
  g_mutex_unlock (&pair->lock);
  g_main_context_wakeup (side->context);
}

static gboolean
run_once (gpointer data)
{
  spin_ms (data);
  return G_SOURCE_REMOVE;
}

/* A side's loop thread: one lag of 150 ms, then the loop until the test
 * says stop. */
static gpointer
side_main (gpointer data)
{
  Side *side = data;
  Pair *pair = side->pair;
  gboolean stop = FALSE;
  GSource *idle;

  g_main_context_push_thread_default (side->context);
  idle = g_idle_source_new ();
  g_source_set_callback (idle, run_once, GINT_TO_POINTER (150), NULL);
  g_source_attach (idle, side->context);
  g_source_unref (idle);
  while (!stop)
    {
      g_main_context_iteration (side->context, TRUE);
      g_mutex_lock (&pair->lock);
      stop = pair->stop;
      g_mutex_unlock (&pair->lock);
    }
  g_main_context_pop_thread_default (side->context);
  return NULL;
}

static void
detach_from_callbacks (gboolean cross)
{
  Pair pair = { .cross = cross };
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();

  g_mutex_init (&pair.lock);
  g_cond_init (&pair.cond);
  g_assert_true (lagwatch_config_set_threshold_ms (config, 50));
  g_assert_true (lagwatch_config_set_output (config, "none", NULL));
  for (guint i = 0; i < 2; i++)
    {
      Side *side = &pair.sides[i];

      side->pair = &pair;
      side->index = i;
      side->context = g_main_context_new ();
      side->watch = lagwatch_attach_with_config (side->context, config);
      g_assert_nonnull (side->watch);
      lagwatch_set_report_func (side->watch, on_report_detach, side, on_callback_released);
    }
  for (guint i = 0; i < 2; i++)
    pair.sides[i].thread = g_thread_new ("loop", side_main, &pair.sides[i]);

  g_mutex_lock (&pair.lock);
  pair_wait (&pair, &pair.returned, 2);
  g_assert_cmpuint (pair.returned, ==, 2);   /* both lagwatch_detach() calls returned */
  pair_wait (&pair, &pair.ended, 2);
  g_assert_cmpuint (pair.ended, ==, 2);      /* both watches ended */
  pair.stop = TRUE;
  g_mutex_unlock (&pair.lock);
  for (guint i = 0; i < 2; i++)
    {
      g_main_context_wakeup (pair.sides[i].context);
      g_thread_join (pair.sides[i].thread);
      g_assert_false (lagwatch_is_attached (pair.sides[i].context));
      g_main_context_unref (pair.sides[i].context);
    }
  g_mutex_clear (&pair.lock);
  g_cond_clear (&pair.cond);
}

/* Two watches whose callbacks, running at once, each detach the other. */
static void
test_detach_crossed (void)
{
  if (g_test_subprocess ())
    {
      detach_from_callbacks (TRUE);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Two watches whose callbacks each detach their own. */
static void
test_detach_own (void)
{
  if (g_test_subprocess ())
    {
      detach_from_callbacks (FALSE);
      return;
    }
  g_test_trap_subprocess (NULL, SUBPROCESS_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_setenv ("G_DEBUG", "fatal-warnings", TRUE);
  g_unsetenv ("LAGWATCH_OUTPUT");
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/lifecycle/detach-from-callback/crossed", test_detach_crossed);
  g_test_add_func ("/lifecycle/detach-from-callback/own", test_detach_own);
  return g_test_run ();
}
