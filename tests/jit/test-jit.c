/* test-jit: stacks through generated code, and its names from perf maps
 *
 * Code is generated at run time into an anonymous executable mapping, as a
 * JIT does: a thread calls it, it calls itself, and then a spinning C
 * function; the thread is caught there and its stack walked. The walk must
 * go through the generated frames (by frame pointer, or by a scan when the
 * code uses rbp as an ordinary register) down to the thread's start. Then
 * such frames are marked and named from a perf map, and maps that are not
 * to be trusted are not read.
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lagwatch.h"
#include "lw-capture.h"
#include "lw-clock.h"
#include "lw-modules.h"
#include "lw-perfmap.h"
#include "lw-symbols.h"
#include "lw-unwind.h"
#include "lw-watcher.h"

#define NOIPA __attribute__ ((noipa))
#define MAX_FRAMES 64

typedef struct
{
  void        (*generated) (gpointer t, gpointer callee, gpointer next);
  volatile int  stop;
  volatile int  ready;
  pid_t         tid;
} Target;

/* gen (t, callee, next): calls callee (t, next), keeping a frame pointer. */
static const guint8 code_with_frame_pointer[] = {
  0x55,              /* push rbp */
  0x48, 0x89, 0xe5,  /* mov rbp, rsp */
  0x48, 0x89, 0xf0,  /* mov rax, rsi */
  0x48, 0x89, 0xd6,  /* mov rsi, rdx */
  0xff, 0xd0,        /* call rax */
  0x5d,              /* pop rbp */
  0xc3,              /* ret */
};

/* The same, but rbp used as an ordinary register (zeroed), as optimized
 * JIT code may: saved on entry like callee-saved registers are. */
static const guint8 code_without_frame_pointer[] = {
  0x55,              /* push rbp */
  0x48, 0x31, 0xed,  /* xor rbp, rbp */
  0x48, 0x89, 0xf0,  /* mov rax, rsi */
  0x48, 0x89, 0xd6,  /* mov rsi, rdx */
  0xff, 0xd0,        /* call rax */
  0x5d,              /* pop rbp */
  0xc3,              /* ret */
};

/* The same, rbp an ordinary register that happens to point at two zero
 * words on the stack (optimized code keeps any value in it): the chain
 * reads 0 where a return address would be. That is no end of the stack
 * (none begins in generated code): the walk scans on to the caller. */
static const guint8 code_with_zero_link[] = {
  0x55,                    /* push rbp */
  0x6a, 0x00,              /* push 0 */
  0x6a, 0x00,              /* push 0 */
  0x48, 0x89, 0xe5,        /* mov rbp, rsp */
  0x48, 0x89, 0xf0,        /* mov rax, rsi */
  0x48, 0x89, 0xd6,        /* mov rsi, rdx */
  0xff, 0xd0,              /* call rax */
  0x48, 0x83, 0xc4, 0x10,  /* add rsp, 16 */
  0x5d,                    /* pop rbp */
  0xc3,                    /* ret */
};

/* The same with a second record linked into the rbp chain, as
 * SpiderMonkey links its frames that call into C++: [rbp] the frame's rbp,
 * [rbp + 8] a data word (DATA_WORD_AT: patched with a heap address), not a
 * return address. */
static const guint8 code_with_data_record[] = {
  0x55,                                            /* push rbp */
  0x48, 0x89, 0xe5,                                /* mov rbp, rsp */
  0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,              /* movabs rax, DATA */
  0x50,                                            /* push rax */
  0x55,                                            /* push rbp */
  0x48, 0x89, 0xe5,                                /* mov rbp, rsp */
  0x48, 0x89, 0xf0,                                /* mov rax, rsi */
  0x48, 0x89, 0xd6,                                /* mov rsi, rdx */
  0xff, 0xd0,                                      /* call rax */
  0x5d,                                            /* pop rbp */
  0x58,                                            /* pop rax */
  0x5d,                                            /* pop rbp */
  0xc3,                                            /* ret */
};
#define DATA_WORD_AT 6

static volatile guint64 sink;

static NOIPA void
jit_test_spin (Target *t)
{
  t->ready = 1;
  while (!t->stop)
    sink++;
}

static NOIPA void
jit_test_body (Target *t)
{
  /* body -> generated -> generated -> spin */
  t->generated (t, (gpointer) t->generated, (gpointer) jit_test_spin);
  __asm__ volatile ("" ::: "memory");
}

static gpointer
jit_test_thread (gpointer data)
{
  Target *t = data;

  t->tid = gettid ();
  jit_test_body (t);
  return NULL;
}

/* The heap address code_with_data_record keeps in its record. */
static gpointer data_word;

/* An anonymous executable mapping holding @code. */
static gpointer
generate (const guint8 *code, gsize len)
{
  void *page = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

  g_assert_true (page != MAP_FAILED);
  memcpy (page, code, len);
  if (code == code_with_data_record)
    memcpy ((guint8 *) page + DATA_WORD_AT, &data_word, sizeof data_word);
  g_assert_cmpint (mprotect (page, 4096, PROT_READ | PROT_EXEC), ==, 0);
  return page;
}

/* Catches a thread in jit_test_spin, called through @code, and walks it. */
static void
check_walk (const guint8 *code, gsize len, guint min_generated)
{
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  GMainContext *context = g_main_context_new ();
  LwSnapshot *snap = lw_snapshot_new (256 * 1024);
  LwUnwinder *unwinder = lw_unwinder_new ();
  Target target = { 0 };
  uintptr_t ips[MAX_FRAMES];
  gboolean truncated = TRUE;
  GThread *thread;
  LagWatch *watch;
  GString *names = g_string_new (NULL);
  gint spin = -1, body = -1, start = -1;
  guint n = 0, generated = 0, taken = 0;
  uintptr_t page;

  g_assert_nonnull (unwinder);
  target.generated = generate (code, len);
  page = (uintptr_t) target.generated;
  lagwatch_config_set_output (config, "none", NULL);
  watch = lagwatch_attach_with_config (context, config);
  g_assert_nonnull (watch);
  lagwatch_pause (watch);  /* its capture slot is ours */

  thread = g_thread_new ("jit-target", jit_test_thread, &target);
  while (!target.ready)
    g_usleep (100);
  /* The thread may be caught between two instructions of the loop, or in
   * a signal's way: one clean capture is enough. */
  for (guint attempt = 0; attempt < 100 && taken == 0; attempt++)
    if (lw_capture_take_thread (watch->slot, target.tid, 0, 0, 0, snap, 5 * G_TIME_SPAN_SECOND * 1000)
        == LW_CAPTURE_OK && snap->via_signal)
      {
        n = lw_unwinder_walk (unwinder, snap, ips, MAX_FRAMES, &truncated);
        taken++;
      }
  target.stop = 1;
  g_thread_join (thread);
  g_assert_cmpuint (taken, ==, 1);

  for (guint i = 0; i < n; i++)
    {
      LwFrame frame;

      lw_symbols_resolve (ips[i], i > 0, &frame);
      if (ips[i] >= page && ips[i] < page + 4096)
        {
          generated++;
          g_string_append (names, " [generated]");
        }
      else
        {
          g_string_append_printf (names, " %s", frame.symbol ? frame.symbol : "??");
          /* Every other frame is a module's code: no data word read as a
           * return address. */
          if (!lw_modules_is_readable (ips[i] - (i > 0), 1))
            g_error ("frame %u at %#" G_GINTPTR_MODIFIER "x is no code", i, ips[i]);
        }
      if (g_strcmp0 (frame.symbol, "jit_test_spin") == 0 && spin < 0)
        spin = (gint) i;
      if (g_strcmp0 (frame.symbol, "jit_test_body") == 0 && body < 0)
        body = (gint) i;
      if (g_strcmp0 (frame.symbol, "jit_test_thread") == 0 && start < 0)
        start = (gint) i;
      lw_frame_clear (&frame);
    }
  g_test_message ("%u frames%s:%s", n, truncated ? " (truncated)" : "", names->str);
  g_assert_cmpint (spin, ==, 0);
  g_assert_cmpuint (generated, >=, min_generated);
  g_assert_cmpint (body, >, spin);
  g_assert_cmpint (start, ==, body + 1);
  g_assert_false (truncated);

  g_string_free (names, TRUE);
  lagwatch_detach (watch);
  g_main_context_unref (context);
  lw_unwinder_free (unwinder);
  lw_snapshot_free (snap);
  munmap (target.generated, 4096);
}

static void
test_walk_frame_pointer (void)
{
  check_walk (code_with_frame_pointer, sizeof code_with_frame_pointer, 2);
}

static void
test_walk_without_frame_pointer (void)
{
  check_walk (code_without_frame_pointer, sizeof code_without_frame_pointer, 1);
}

static void
test_walk_zero_link (void)
{
  check_walk (code_with_zero_link, sizeof code_with_zero_link, 1);
}

/* A record of the chain whose word above the saved rbp is a heap
 * address: passed over, both generated frames found by frame pointer. */
static void
test_walk_data_record (void)
{
  data_word = g_malloc (64);
  check_walk (code_with_data_record, sizeof code_with_data_record, 2);
  g_free (data_word);
}

static char *
perfmap_path (void)
{
  return g_strdup_printf ("/tmp/perf-%d.map", (int) getpid ());
}

/* Two frames: one in generated code (exact pc), one in the heap. */
static void
name_two (uintptr_t in_code, uintptr_t in_heap, LwFrame frames[2])
{
  frames[0] = (LwFrame) { .ip = in_code };
  frames[1] = (LwFrame) { .ip = in_heap + 1 };  /* a return address: looked up at ip - 1 */
  lw_perfmap_name_frames (frames, 2);
}

static void
test_perfmap_names (void)
{
  g_autofree char *path = perfmap_path ();
  g_autofree char *map = NULL;
  guint8 *code = generate (code_with_frame_pointer, sizeof code_with_frame_pointer);
  g_autofree guint64 *heap = g_new0 (guint64, 4);
  uintptr_t pc = (uintptr_t) code + 4;
  LwFrame frames[2];

  /* No map: marked, not named. */
  unlink (path);
  name_two (pc, (uintptr_t) heap, frames);
  g_assert_cmpstr (frames[0].module, ==, LW_JIT_MODULE);
  g_assert_cmphex (frames[0].module_offset, ==, 4);
  g_assert_null (frames[0].symbol);
  g_assert_null (frames[1].module);  /* the heap is not code */
  lw_frame_clear (&frames[0]);
  lw_frame_clear (&frames[1]);

  /* A map: the last line that covers the address wins. */
  map = g_strdup_printf ("%" G_GINTPTR_MODIFIER "x 10 first\n"
                         "not a line\n"
                         "%" G_GINTPTR_MODIFIER "x 8 jsSpinFor (app.js:3)\n",
                         (guintptr) code, (guintptr) code + 2);
  g_assert_true (g_file_set_contents (path, map, -1, NULL));
  name_two (pc, (uintptr_t) heap, frames);
  g_assert_cmpstr (frames[0].module, ==, LW_JIT_MODULE);
  g_assert_cmpstr (frames[0].symbol, ==, "jsSpinFor (app.js:3)");
  g_assert_cmphex (frames[0].symbol_offset, ==, 2);
  g_assert_null (frames[1].symbol);
  lw_frame_clear (&frames[0]);
  lw_frame_clear (&frames[1]);

  unlink (path);
  munmap (code, 4096);
}

/* Maps that are not read: a link (planted in /tmp to name frames), a file
 * bigger than the bound, another user's file (as root only). */
static void
test_perfmap_untrusted (void)
{
  g_autofree char *path = perfmap_path ();
  g_autofree char *elsewhere = g_strdup_printf ("/tmp/lagwatch-test-jit-%d.map", (int) getpid ());
  g_autofree char *map = NULL;
  guint8 *code = generate (code_with_frame_pointer, sizeof code_with_frame_pointer);
  uintptr_t pc = (uintptr_t) code;
  LwFrame frame;
  int fd;

  map = g_strdup_printf ("%" G_GINTPTR_MODIFIER "x 10 planted\n", (guintptr) code);
  g_assert_true (g_file_set_contents (elsewhere, map, -1, NULL));
  unlink (path);
  g_assert_cmpint (symlink (elsewhere, path), ==, 0);
  frame = (LwFrame) { .ip = pc };
  lw_perfmap_name_frames (&frame, 1);
  g_assert_cmpstr (frame.module, ==, LW_JIT_MODULE);
  g_assert_null (frame.symbol);
  unlink (path);

  /* Bigger than the bound (sparse): not read, however it starts. */
  g_assert_true (g_file_set_contents (path, map, -1, NULL));
  fd = open (path, O_WRONLY);
  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (ftruncate (fd, (off_t) LW_PERFMAP_MAX_BYTES + 1), ==, 0);
  close (fd);
  frame = (LwFrame) { .ip = pc };
  lw_perfmap_name_frames (&frame, 1);
  g_assert_null (frame.symbol);

  if (geteuid () == 0)
    {
      g_assert_true (g_file_set_contents (path, map, -1, NULL));
      g_assert_cmpint (chown (path, 65534, 65534), ==, 0);
      frame = (LwFrame) { .ip = pc };
      lw_perfmap_name_frames (&frame, 1);
      g_assert_null (frame.symbol);
    }
  unlink (path);
  unlink (elsewhere);
  munmap (code, 4096);
}

static void
test_perfmap_parse (void)
{
  static const char text[] =
    "1000 100 outer\n"
    "0x1010 0x10 inner\r\n"
    "1020 10\n"                              /* no name */
    "1030 0 empty\n"                         /* no size */
    "10000000000000000 10 too-big\n"         /* more than 64 bits */
    "ffffffffffffffff 2 wraps\n"
    "1040 10 tab\there\n"
    "zz 10 garbage\n"
    "1050 10 unterminated";
  uintptr_t addrs[] = { 0x1000, 0x1018, 0x1045, 0x1055, 0x2000 };
  uintptr_t starts[G_N_ELEMENTS (addrs)] = { 0 };
  char *names[G_N_ELEMENTS (addrs)];
  g_autofree char *long_line = NULL;
  GString *line = g_string_new ("1000 10 ");

  g_assert_true (lw_perfmap_parse (text, strlen (text), addrs, G_N_ELEMENTS (addrs), names, starts));
  g_assert_cmpstr (names[0], ==, "outer");
  g_assert_cmpstr (names[1], ==, "inner");
  g_assert_cmphex (starts[1], ==, 0x1010);
  g_assert_cmpstr (names[2], ==, "tab?here");
  g_assert_cmpstr (names[3], ==, "unterminated");
  g_assert_null (names[4]);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    g_free (names[i]);

  /* A name over the bound is skipped, not cut. */
  for (guint i = 0; i < 600; i++)
    g_string_append_c (line, 'x');
  long_line = g_string_free (line, FALSE);
  g_assert_false (lw_perfmap_parse (long_line, strlen (long_line), addrs, 1, names, starts));
  g_assert_null (names[0]);
}

/* The generated code the child names, kept here: once main() has exited,
 * a leak checker reads no stack of it. */
static guint8 *child_code;

/* The child's thread, once main() has exited: names a frame of generated
 * code from the perf map, and ends the process, 0 when it was named. */
static gpointer
perfmap_child_thread (gpointer data)
{
  g_autofree char *main_stat = g_strdup_printf ("/proc/%d/task/%d/stat", (int) getpid (), (int) getpid ());
  g_autofree char *path = perfmap_path ();
  gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  LwFrame frame = { .ip = (uintptr_t) child_code + 4 };
  gboolean named;

  for (;;)
    {
      g_autofree char *stat = NULL;
      const char *end;

      if (g_file_get_contents (main_stat, &stat, NULL, NULL) && (end = strrchr (stat, ')')) != NULL
          && end[1] == ' ' && end[2] == 'Z')
        break;
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10 * 1000);
    }
  lw_perfmap_name_frames (&frame, 1);
  named = g_strcmp0 (frame.symbol, "jsSpinFor") == 0;
  lw_frame_clear (&frame);
  unlink (path);
  exit (named ? 0 : 3);
}

/* The child (this program run with --perfmap-child): generated code and
 * its perf map, then main() ends with pthread_exit(). */
static G_GNUC_NORETURN void
perfmap_child (void)
{
  g_autofree char *path = perfmap_path ();
  char *map;

  child_code = generate (code_with_frame_pointer, sizeof code_with_frame_pointer);
  map = g_strdup_printf ("%" G_GINTPTR_MODIFIER "x 10 jsSpinFor\n", (guintptr) child_code);
  g_assert_true (g_file_set_contents (path, map, -1, NULL));
  g_free (map);
  g_thread_unref (g_thread_new ("namer", perfmap_child_thread, NULL));
  g_free (g_steal_pointer (&path));
  pthread_exit (NULL);
}

/* Frames of generated code are still named once main() has ended with
 * pthread_exit(): /proc/self then shows the exited first thread, whose
 * maps are empty; the calling thread's (/proc/thread-self) are not. */
static void
test_perfmap_after_main_exit (void)
{
  char *argv[] = { (char *) "/proc/self/exe", (char *) "--perfmap-child", NULL };
  g_autoptr(GError) error = NULL;
  int status;

  g_assert_true (g_spawn_sync (NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);  /* 3: not named */
}

int
main (int argc, char **argv)
{
  if (argc == 2 && g_str_equal (argv[1], "--perfmap-child"))
    {
      lw_modules_init ();
      perfmap_child ();
    }
  g_test_init (&argc, &argv, NULL);
  lw_modules_init ();
  g_test_add_func ("/jit/walk/frame-pointer", test_walk_frame_pointer);
  g_test_add_func ("/jit/walk/without-frame-pointer", test_walk_without_frame_pointer);
  g_test_add_func ("/jit/walk/data-record", test_walk_data_record);
  g_test_add_func ("/jit/walk/zero-link", test_walk_zero_link);
  g_test_add_func ("/jit/perfmap/names", test_perfmap_names);
  g_test_add_func ("/jit/perfmap/untrusted", test_perfmap_untrusted);
  g_test_add_func ("/jit/perfmap/parse", test_perfmap_parse);
  g_test_add_func ("/jit/perfmap/after-main-exit", test_perfmap_after_main_exit);
  return g_test_run ();
}
