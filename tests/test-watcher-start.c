/* test-watcher-start.c: a lag right after lagwatch_attach(), on a machine
 * too loaded to run the new watcher thread at once
 *
 * A new thread does not run the moment it is created: on a loaded machine
 * its first CPU can come hundreds of milliseconds later (up to 440 ms seen
 * in test-stress). A lag that begins after lagwatch_attach() returned and
 * ends before the watcher's first look would be neither seen nor said (the
 * stress test's second watch lags right after each attach).
 * lagwatch_attach() returns once the watcher watches.
 *
 * The late first CPU is made on purpose: the watcher thread's first call,
 * lw_threadinfo_own_enter(), is wrapped (-Wl,--wrap, tests/meson.build)
 * to sleep first in the thread named "lagwatch". Runs in a subprocess.
 */
#include <glib.h>
#include <sys/prctl.h>

#include "lag-harness.h"
#include "lw-clock.h"
#include "lw-threadinfo.h"
#include "lw-watcher.h"

#define CHILD_TIMEOUT_US (90 * G_USEC_PER_SEC)
/* The watcher's first look comes this late; the lag is over before it. */
#define START_DELAY_MS   400
#define LAG_MS           250

/* How long the watcher thread sleeps before its first look, 0: not at all. */
static _Atomic int64_t start_delay_ns;

void __real_lw_threadinfo_own_enter (void);
void __wrap_lw_threadinfo_own_enter (void);

/* lagwatch's threads' first call: the watcher's starts late. */
void
__wrap_lw_threadinfo_own_enter (void)
{
  char name[16] = "";

  __real_lw_threadinfo_own_enter ();
  prctl (PR_GET_NAME, name, 0, 0, 0);
  if (g_str_equal (name, "lagwatch") && atomic_load (&start_delay_ns) > 0)
    {
      struct timespec delay = lw_clock_timespec (atomic_load (&start_delay_ns));

      nanosleep (&delay, NULL);
    }
}

/* A lag begun right after attach, and over before a watcher that started
 * late could look: reported once, with its length. */
static void
test_lag_right_after_attach (void)
{
  if (g_test_subprocess ())
    {
      Harness h;
      LagWatchReport *report;

      atomic_store (&start_delay_ns, (int64_t) START_DELAY_MS * LW_NSEC_PER_MSEC);
      harness_init (&h, 100);
      harness_run_lag (&h, spin_ms, GINT_TO_POINTER (LAG_MS));
      harness_wait_reports (&h, 1);
      report = harness_report (&h, 0);
      g_assert_cmpfloat (lagwatch_report_get_duration_ms (report), >=, LAG_MS);
      g_assert_cmpint (lagwatch_report_get_thread_id (report), ==, gettid ());
      harness_clear (&h);
      return;
    }
  g_test_trap_subprocess (NULL, CHILD_TIMEOUT_US, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/watcher/lag-right-after-attach", test_lag_right_after_attach);

  return g_test_run ();
}
