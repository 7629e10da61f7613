/* test-fp-sleep.c: whole stacks of a thread sleeping under frame-pointer code
 *
 * A thread caught sleeping is read from /proc (its stack pointer and pc
 * only, from /proc/TID/syscall): no signal interrupts its system call.
 * Code built with frame pointers (-O0, or -fno-omit-frame-pointer, as
 * meson's debug builds and several distributions build) finds its caller
 * through rbp, which /proc does not give and the system call wrappers
 * never save. This file is built twice, at -O0 and at -O2 with
 * -fno-omit-frame-pointer (tests/meson.build): in each, a lag sleeping in
 * usleep, poll, a futex and fsync must have every sampled stack that
 * reached the sleep go on through the lag's function, the GSource
 * callback and GLib's dispatch to main (g_main_context_dispatch; on
 * Debian 13's GLib 2.84 the stack holds the static g_main_dispatch, named
 * from its address, and not the public function).
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "lag-harness.h"
#include "report-json.h"

#define THRESHOLD_MS 100
#define SLEEP_MS     300

static LAGGY void
sleep_in_usleep (gpointer data)
{
  g_assert_cmpint (usleep (SLEEP_MS * 1000), ==, 0);
}

static LAGGY void
sleep_in_poll (gpointer data)
{
  g_assert_cmpint (poll (NULL, 0, SLEEP_MS), ==, 0);
}

/* GLib's condition variable waits in the futex system call. */
static LAGGY void
sleep_in_futex (gpointer data)
{
  GMutex mutex;
  GCond cond;
  gint64 end = g_get_monotonic_time () + SLEEP_MS * G_TIME_SPAN_MILLISECOND;

  g_mutex_init (&mutex);
  g_cond_init (&cond);
  g_mutex_lock (&mutex);
  while (g_cond_wait_until (&cond, &mutex, end))
    ;  /* a spurious wake-up: nobody signals */
  g_mutex_unlock (&mutex);
  g_cond_clear (&cond);
  g_mutex_clear (&mutex);
}

/* Writes and syncs a file until SLEEP_MS have passed: fsync sleeps while
 * the disk writes, if the file system has a disk under it. */
static LAGGY void
sleep_in_fsync (gpointer data)
{
  const char *path = data;
  gint64 end = g_get_monotonic_time () + SLEEP_MS * G_TIME_SPAN_MILLISECOND;
  static char block[1 << 20];
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

  g_assert_cmpint (fd, >=, 0);
  while (g_get_monotonic_time () < end)
    {
      for (guint i = 0; i < 16; i++)
        g_assert_cmpint (write (fd, block, sizeof block), ==, sizeof block);
      g_assert_cmpint (fsync (fd), ==, 0);
    }
  close (fd);
}

/* TRUE when a frame of @stack is named one of @names, "|"-separated (libc
 * names a wrapper by one of its aliases, which differ between releases:
 * "__poll" or "poll"). */
static gboolean
frames_have_any (JsonArray *stack, const char *names)
{
  g_auto(GStrv) each = g_strsplit (names, "|", -1);

  for (guint i = 0; each[i] != NULL; i++)
    if (json_frames_have (stack, each[i]))
      return TRUE;
  return FALSE;
}

/* The sampled stacks of @report's record that hold @sleeping, each checked
 * to reach main through @function and the dispatch. Returns how many. */
static guint
check_stacks (LagWatchReport *report, const char *sleeping, const char *function)
{
  g_autofree char *json = lagwatch_report_to_json (report);
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonArray *stacks;
  guint checked = 0;

  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  stacks = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "stacks");
  for (guint i = 0; i < json_array_get_length (stacks); i++)
    {
      JsonArray *stack = json_object_get_array_member (json_array_get_object_element (stacks, i), "stack");

      if (!frames_have_any (stack, sleeping))
        continue;
      checked++;
      if (!json_frames_have (stack, function) || !json_frames_have (stack, "harness_run_lag_cb")
          || !(json_frames_have (stack, "g_main_context_dispatch") || json_frames_have (stack, "g_main_dispatch"))
          || !json_frames_have (stack, "main"))
        {
          g_autofree char *text = lagwatch_report_to_text (report);

          g_test_message ("%s", text);
          g_error ("a stack sleeping in %s does not reach main through %s, harness_run_lag_cb and "
                   "GLib's dispatch (stack %u of the record)", sleeping, function, i);
        }
    }
  return checked;
}

/* Runs @func in a dispatch; its lag's stacks that hold @sleeping must reach
 * main. Returns how many did. */
static guint
check_sleep (HarnessLagFunc func, gpointer data, const char *function, const char *sleeping)
{
  Harness h;
  LagWatchReport *report;
  guint checked;

  harness_init (&h, THRESHOLD_MS);
  harness_run_lag (&h, func, data);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_true (harness_stack_has (report, function, NULL));
  checked = check_stacks (report, sleeping, function);
  g_test_message ("%u sampled stacks in %s reach main", checked, sleeping);
  harness_clear (&h);
  return checked;
}

static void
test_usleep (void)
{
  g_assert_cmpuint (check_sleep (sleep_in_usleep, NULL, "sleep_in_usleep", "usleep"), >, 0);
}

static void
test_poll (void)
{
  g_assert_cmpuint (check_sleep (sleep_in_poll, NULL, "sleep_in_poll", "poll|__poll"), >, 0);
}

static void
test_futex (void)
{
  g_assert_cmpuint (check_sleep (sleep_in_futex, NULL, "sleep_in_futex", "g_cond_wait_until"), >, 0);
}

static void
test_fsync (void)
{
  /* In the working directory (the build tree): on a disk more often than
   * the temporary directory, which may be a tmpfs, where fsync never sleeps. */
  g_autofree char *path = g_strdup_printf ("fp-sleep-%d.data", (int) getpid ());
  guint checked = check_sleep (sleep_in_fsync, path, "sleep_in_fsync", "fsync|__fsync|__libc_fsync");

  unlink (path);
  if (checked == 0)
    g_test_skip ("no sample caught fsync sleeping: this file system wrote 16 MiB faster than a sample");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/fp-sleep/usleep", test_usleep);
  g_test_add_func ("/fp-sleep/poll", test_poll);
  g_test_add_func ("/fp-sleep/futex", test_futex);
  g_test_add_func ("/fp-sleep/fsync", test_fsync);
  return g_test_run ();
}
