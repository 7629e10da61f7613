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
 *
 * /fp-sleep/stale-return: the sleeping function's frame holds the return
 * address an earlier call from the same caller left there (into a wrapper
 * without a frame pointer, after its call to a leaf, as GLib's
 * g_get_monotonic_time() leaves one on Debian unstable), which reads as a
 * caller that holds for two links: the stack must still go from the
 * sleeping function straight to its real caller, never through the
 * wrapper.
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

/* A wrapper without a frame pointer that calls a leaf after taking 40
 * bytes of stack, as GLib's g_get_monotonic_time() is on Debian unstable
 * (8 bytes there): its CFI at the return address of that call,
 * lw_stale_wrapper_return, says the return address into its own caller
 * lies 40 bytes above where the call's did.
 *
 * And a function built with a frame pointer that sleeps in usleep() with
 * that return address in its frame's space, 48 bytes below the slot of
 * its own return address, the rest of its 64 bytes zeroed: what the
 * wrapper leaves there when the same caller has just called it (the
 * wrapper's 40 bytes and its own return address between), which the
 * wrapper's CFI reads as a caller that holds; no other leftover of earlier
 * calls, so the stack copied is the same every run.
 *
 * Both in assembly, so that no compiler, optimizer or sanitizer lays them
 * out otherwise. */
void lw_stale_leaf (void);
void lw_stale_wrapper (void);
void lw_stale_sleeper (void);

__attribute__ ((noipa, used)) void
lw_stale_leaf (void)
{
}

__asm__ (".text\n"
         ".globl lw_stale_wrapper\n"
         ".hidden lw_stale_wrapper\n"
         ".type lw_stale_wrapper, @function\n"
         "lw_stale_wrapper:\n"
         "  .cfi_startproc\n"
         "  sub $40, %rsp\n"
         "  .cfi_adjust_cfa_offset 40\n"
         "  call lw_stale_leaf\n"
         "lw_stale_wrapper_return:\n"
         "  add $40, %rsp\n"
         "  .cfi_adjust_cfa_offset -40\n"
         "  ret\n"
         "  .cfi_endproc\n"
         "  .size lw_stale_wrapper, .-lw_stale_wrapper\n"
         "\n"
         ".globl lw_stale_sleeper\n"
         ".hidden lw_stale_sleeper\n"
         ".type lw_stale_sleeper, @function\n"
         "lw_stale_sleeper:\n"
         "  .cfi_startproc\n"
         "  push %rbp\n"
         "  .cfi_def_cfa_offset 16\n"
         "  .cfi_offset %rbp, -16\n"
         "  mov %rsp, %rbp\n"
         "  .cfi_def_cfa_register %rbp\n"
         "  sub $64, %rsp\n"
         "  xor %eax, %eax\n"
         "  mov %rax, -64(%rbp)\n"
         "  mov %rax, -56(%rbp)\n"
         "  mov %rax, -48(%rbp)\n"
         "  mov %rax, -32(%rbp)\n"
         "  mov %rax, -24(%rbp)\n"
         "  mov %rax, -16(%rbp)\n"
         "  mov %rax, -8(%rbp)\n"
         "  lea lw_stale_wrapper_return(%rip), %rax\n"
         "  mov %rax, -40(%rbp)\n"
         "  mov $" G_STRINGIFY (SLEEP_MS) "000, %edi\n"
         "  call usleep@PLT\n"
         "  leave\n"
         "  .cfi_def_cfa %rsp, 8\n"
         "  ret\n"
         "  .cfi_endproc\n"
         "  .size lw_stale_sleeper, .-lw_stale_sleeper\n");

/* The lag: the sleep, called from here directly (not as a tail call,
 * which -O2 would make of it: this frame stays). */
static LAGGY void
sleep_after_wrapper (gpointer data)
{
  lw_stale_sleeper ();
  __asm__ volatile ("" ::: "memory");
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

/* @report's record, parsed by @parser: its "stacks" array. */
static JsonArray *
record_stacks (LagWatchReport *report, JsonParser *parser)
{
  g_autofree char *json = lagwatch_report_to_json (report);

  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  return json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "stacks");
}

/* The sampled stacks of @report's record that hold @sleeping, each checked
 * to reach main through @function and the dispatch. Returns how many. */
static guint
check_stacks (LagWatchReport *report, const char *sleeping, const char *function)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonArray *stacks = record_stacks (report, parser);
  guint checked = 0;

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

/* Every stack of @report's record that holds @function has @caller as the
 * very next frame, and no frame named @never. Returns how many held it. */
static guint
check_caller (LagWatchReport *report, const char *function, const char *caller, const char *never)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonArray *stacks = record_stacks (report, parser);
  guint checked = 0;

  for (guint i = 0; i < json_array_get_length (stacks); i++)
    {
      JsonArray *stack = json_object_get_array_member (json_array_get_object_element (stacks, i), "stack");
      guint n = json_array_get_length (stack);

      for (guint k = 0; k < n; k++)
        {
          JsonObject *frame = json_array_get_object_element (stack, k);
          const char *symbol = json_object_get_null_member (frame, "symbol") ? NULL
                               : json_object_get_string_member (frame, "symbol");
          const char *next = NULL;

          g_assert_cmpstr (symbol, !=, never);
          if (g_strcmp0 (symbol, function) != 0)
            continue;
          checked++;
          if (k + 1 < n && !json_object_get_null_member (json_array_get_object_element (stack, k + 1), "symbol"))
            next = json_object_get_string_member (json_array_get_object_element (stack, k + 1), "symbol");
          if (g_strcmp0 (next, caller) != 0)
            {
              g_autofree char *text = lagwatch_report_to_text (report);

              g_test_message ("%s", text);
              g_error ("stack %u: %s's caller is %s, not %s", i, function, next ? next : "(none)", caller);
            }
        }
    }
  return checked;
}

static void
test_stale_return (void)
{
  Harness h;
  LagWatchReport *report;

  harness_init (&h, THRESHOLD_MS);
  harness_run_lag (&h, sleep_after_wrapper, NULL);
  harness_wait_reports (&h, 1);
  report = harness_report (&h, 0);
  g_assert_cmpuint (check_stacks (report, "usleep", "lw_stale_sleeper"), >, 0);
  g_assert_cmpuint (check_caller (report, "lw_stale_sleeper", "sleep_after_wrapper", "lw_stale_wrapper"), >, 0);
  harness_clear (&h);
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
  g_test_add_func ("/fp-sleep/stale-return", test_stale_return);
  return g_test_run ();
}
