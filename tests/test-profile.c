/* test-profile.c: grouping samples into stacks (lw-profile.c)
 *
 * Samples are matched by exact addresses when added (the watcher's part)
 * and merged by their frames' functions when the reporting thread groups
 * the stacks the watcher handed over. These tests use addresses
 * inside this program's own functions, which its symbol table names.
 */
#include <glib.h>
#include <stdint.h>

#include "lw-lang-frames.h"
#include "lw-profile.h"

/* Three functions to point into: their bodies are big enough that
 * start + 8 lies inside each. */
static volatile int sink;

static G_GNUC_NO_INLINE void
spinning_here (void)
{
  for (int i = 0; i < 64; i++)
    sink += i * 3;
}

static G_GNUC_NO_INLINE void
spinning_there (void)
{
  for (int i = 0; i < 64; i++)
    sink += i * 5;
}

#define CALLER_A ((uintptr_t) 0x1000)  /* return addresses: compared exactly */
#define CALLER_B ((uintptr_t) 0x2000)

static uintptr_t
in_function (void (*function) (void), uintptr_t offset)
{
  return (uintptr_t) function + offset;
}

static void
add (LwProfile *profile, uintptr_t frame0, uintptr_t caller)
{
  uintptr_t ips[2] = { frame0, caller };

  lw_profile_add (profile, ips, 2, FALSE, 0, FALSE, LW_LANG_MISSING_NONE);
}

/* The profile's stacks as the watcher hands them over (exact, most recent
 * first, frames holding addresses), grouped as the reporting thread does:
 * *@n_groups of them, heaviest first. Free with free_stacks(). */
static LwReportStack *
group (LwProfile *profile, guint max_kept, guint *n_groups)
{
  GPtrArray *exact = lw_profile_exact_stacks (profile);
  LwReportStack *stacks = g_new0 (LwReportStack, MAX (exact->len, 1));

  for (guint i = 0; i < exact->len; i++)
    {
      const LwProfileStack *stack = exact->pdata[i];

      stacks[i].samples = stack->count;
      stacks[i].truncated = stack->truncated;
      stacks[i].lang_missing = stack->lang_missing;
      stacks[i].n_frames = stack->n_ips;
      stacks[i].frames = g_new0 (LwFrame, MAX (stack->n_ips, 1));
      for (guint j = 0; j < stack->n_ips; j++)
        stacks[i].frames[j].ip = stack->ips[j];
    }
  *n_groups = lw_profile_group (stacks, exact->len, max_kept);
  return stacks;
}

static void
free_stacks (LwReportStack *stacks, guint n)
{
  for (guint i = 0; i < n; i++)
    lw_report_stack_clear (&stacks[i]);
  g_free (stacks);
}

/* A sample that ran Python without its Python frames is a stack of its
 * own, with its reason, before and after grouping: the same native frames
 * with the frames read and without them are two things a reader must tell
 * apart. */
static void
test_python_missing_apart (void)
{
  LwProfile *profile = lw_profile_new (256);
  uintptr_t ips[2] = { in_function (spinning_here, 4), CALLER_A };
  LwReportStack *stacks;
  guint n;

  lw_profile_add (profile, ips, 2, FALSE, 0, FALSE, LW_LANG_MISSING_NONE);
  lw_profile_add (profile, ips, 2, FALSE, 0, FALSE, LW_LANG_MISSING_NONE);
  lw_profile_add (profile, ips, 2, FALSE, 0, FALSE, LW_LANG_MISSING_MOVED);
  ips[0] = in_function (spinning_here, 8);
  lw_profile_add (profile, ips, 2, FALSE, 0, FALSE, LW_LANG_MISSING_MOVED);
  g_assert_cmpuint (lw_profile_exact_stacks (profile)->len, ==, 3);
  stacks = group (profile, 5, &n);
  g_assert_cmpuint (n, ==, 2);
  /* Two of each; the tie goes to the most recent, the moved one. */
  g_assert_cmpuint (stacks[0].samples, ==, 2);
  g_assert_cmpint (stacks[0].lang_missing, ==, LW_LANG_MISSING_MOVED);
  g_assert_cmpuint (stacks[1].samples, ==, 2);
  g_assert_cmpint (stacks[1].lang_missing, ==, LW_LANG_MISSING_NONE);
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* A spin loop samples many addresses of one function: one stack. Another
 * function, or another caller, is another stack. */
static void
test_groups_by_function (void)
{
  LwProfile *profile = lw_profile_new (256);
  LwReportStack *stacks;
  guint n;

  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_here, 8), CALLER_A);
  add (profile, in_function (spinning_here, 12), CALLER_A);
  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_there, 4), CALLER_A);
  add (profile, in_function (spinning_there, 8), CALLER_A);
  add (profile, in_function (spinning_here, 4), CALLER_B);

  /* The watcher's list: exact, 6 distinct stacks. */
  g_assert_cmpuint (lw_profile_exact_stacks (profile)->len, ==, 6);
  stacks = group (profile, 5, &n);
  g_assert_cmpuint (n, ==, 3);
  g_assert_cmpuint (stacks[0].samples, ==, 4);
  g_assert_cmpuint (stacks[0].frames[1].ip, ==, CALLER_A);
  /* The most recent sample's exact address is the one shown. */
  g_assert_cmpuint (stacks[0].frames[0].ip, ==, in_function (spinning_here, 4));
  g_assert_cmpuint (stacks[1].samples, ==, 2);
  g_assert_cmpuint (stacks[1].frames[0].ip, ==, in_function (spinning_there, 8));
  g_assert_cmpuint (stacks[2].samples, ==, 1);
  g_assert_cmpuint (stacks[2].frames[1].ip, ==, CALLER_B);
  g_assert_cmpuint (lw_profile_n_samples (profile), ==, 7);
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* Two calls of one function from two lines of one caller are one stack:
 * the stack is a chain of functions, as lagwatch-report merges stacks by
 * function name, so that both give its share the same number. */
static void
test_call_sites_of_one_caller_are_one_stack (void)
{
  LwProfile *profile = lw_profile_new (256);
  LwReportStack *stacks;
  guint n;

  add (profile, in_function (spinning_here, 4), in_function (spinning_there, 8));
  add (profile, in_function (spinning_here, 4), in_function (spinning_there, 16));
  add (profile, in_function (spinning_here, 8), in_function (spinning_there, 16));
  add (profile, in_function (spinning_there, 4), in_function (spinning_here, 8));
  g_assert_cmpuint (lw_profile_exact_stacks (profile)->len, ==, 4);
  stacks = group (profile, 5, &n);
  g_assert_cmpuint (n, ==, 2);
  g_assert_cmpuint (stacks[0].samples, ==, 3);
  /* Its frames are the most recent sample's, exact. */
  g_assert_cmpuint (stacks[0].frames[0].ip, ==, in_function (spinning_here, 8));
  g_assert_cmpuint (stacks[0].frames[1].ip, ==, in_function (spinning_there, 16));
  g_assert_cmpuint (stacks[1].samples, ==, 1);
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* The watcher's list is by exact address, most recent first; grouping
 * keeps the heaviest groups only, and frees the rest. */
static void
test_exact_then_capped (void)
{
  LwProfile *profile = lw_profile_new (256);
  GPtrArray *exact;
  LwReportStack *stacks;
  guint n;

  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_here, 8), CALLER_A);
  add (profile, in_function (spinning_here, 8), CALLER_A);
  add (profile, 0x10, CALLER_B);
  exact = lw_profile_exact_stacks (profile);
  g_assert_cmpuint (exact->len, ==, 3);
  g_assert_cmpuint (((LwProfileStack *) exact->pdata[0])->ips[0], ==, 0x10);
  g_assert_cmpuint (((LwProfileStack *) exact->pdata[1])->ips[0], ==, in_function (spinning_here, 8));
  g_assert_cmpuint (((LwProfileStack *) exact->pdata[1])->count, ==, 2);

  stacks = group (profile, 1, &n);
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmpuint (stacks[0].samples, ==, 3);
  g_assert_cmpuint (stacks[0].frames[0].ip, ==, in_function (spinning_here, 8));
  g_assert_null (stacks[1].frames);
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* Addresses no symbol covers count exactly. */
static void
test_unnamed_frames_count_exactly (void)
{
  LwProfile *profile = lw_profile_new (256);
  LwReportStack *stacks;
  guint n;

  add (profile, 0x10, CALLER_A);
  add (profile, 0x18, CALLER_A);
  add (profile, 0x18, CALLER_A);
  stacks = group (profile, 5, &n);
  g_assert_cmpuint (n, ==, 2);
  g_assert_cmpuint (stacks[0].samples, ==, 2);
  g_assert_cmpuint (stacks[0].frames[0].ip, ==, 0x18);
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* Equal counts: the stack seen last comes first. */
static void
test_ties_go_to_the_latest (void)
{
  LwProfile *profile = lw_profile_new (256);
  LwReportStack *stacks;
  guint n;

  add (profile, in_function (spinning_there, 4), CALLER_A);
  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_there, 8), CALLER_A);
  add (profile, in_function (spinning_here, 8), CALLER_A);
  stacks = group (profile, 5, &n);
  g_assert_cmpuint (n, ==, 2);
  g_assert_cmpuint (stacks[0].frames[0].ip, ==, in_function (spinning_here, 8));
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* Among equally heavy stacks, one with the script's own frames comes
 * before a later one without (a sample read as the handler returned). */
static void
test_ties_go_to_the_script (void)
{
  LwProfile *profile = lw_profile_new (256);
  uintptr_t handler = lw_lang_frame_intern ("javascript", "jsSlowHandler", "loop-run.js", 17);
  LwReportStack *stacks;
  guint n;

  g_assert_true (lw_lang_frame_is (handler));
  add (profile, in_function (spinning_there, 4), handler);
  add (profile, in_function (spinning_here, 4), CALLER_A);
  stacks = group (profile, 5, &n);
  g_assert_cmpuint (n, ==, 2);
  g_assert_cmpuint (stacks[0].frames[1].ip, ==, handler);
  free_stacks (stacks, n);
  lw_profile_free (profile);
}

/* A full profile says so; thinning keeps the later sample of each pair,
 * and the counts follow. */
static void
test_budget_and_thinning (void)
{
  LwProfile *profile = lw_profile_new (8);
  LwReportStack *stacks;
  guint n;
  gboolean full = FALSE;

  for (int i = 0; i < 8; i++)
    {
      g_assert_false (full);
      add (profile, i % 2 == 0 ? in_function (spinning_here, 4) : in_function (spinning_there, 4),
           CALLER_A);
      full = lw_profile_n_samples (profile) >= 8;
    }
  g_assert_true (full);
  lw_profile_thin (profile);
  g_assert_cmpuint (lw_profile_n_samples (profile), ==, 4);
  stacks = group (profile, 5, &n);
  /* Samples alternate here, there: the later of each pair is "there". */
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmpuint (stacks[0].samples, ==, 4);
  g_assert_cmpuint (stacks[0].frames[0].ip, ==, in_function (spinning_there, 4));
  free_stacks (stacks, n);

  lw_profile_reset (profile);
  g_assert_cmpuint (lw_profile_n_samples (profile), ==, 0);
  g_assert_cmpuint (lw_profile_exact_stacks (profile)->len, ==, 0);
  lw_profile_free (profile);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  spinning_here ();
  spinning_there ();
  g_test_add_func ("/profile/groups-by-function", test_groups_by_function);
  g_test_add_func ("/profile/exact-then-capped", test_exact_then_capped);
  g_test_add_func ("/profile/call-sites-of-one-caller-are-one-stack", test_call_sites_of_one_caller_are_one_stack);
  g_test_add_func ("/profile/unnamed-frames-count-exactly", test_unnamed_frames_count_exactly);
  g_test_add_func ("/profile/ties-go-to-the-latest", test_ties_go_to_the_latest);
  g_test_add_func ("/profile/ties-go-to-the-script", test_ties_go_to_the_script);
  g_test_add_func ("/profile/budget-and-thinning", test_budget_and_thinning);
  g_test_add_func ("/profile/python-missing-apart", test_python_missing_apart);
  return g_test_run ();
}
