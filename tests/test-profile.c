/* test-profile.c: grouping samples into stacks (lw-profile.c)
 *
 * Samples are matched by exact addresses when added and merged by the
 * innermost frame's function only when the stacks are listed. These tests
 * use addresses inside this program's own functions, which its symbol
 * table names.
 */
#include <glib.h>
#include <stdint.h>

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

  lw_profile_add (profile, ips, 2, FALSE, 0);
}

/* A spin loop samples many addresses of one function: one stack. Another
 * function, or another caller, is another stack. */
static void
test_groups_by_function (void)
{
  LwProfile *profile = lw_profile_new (256);
  GPtrArray *stacks;
  const LwProfileStack *top, *second, *third;

  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_here, 8), CALLER_A);
  add (profile, in_function (spinning_here, 12), CALLER_A);
  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_there, 4), CALLER_A);
  add (profile, in_function (spinning_there, 8), CALLER_A);
  add (profile, in_function (spinning_here, 4), CALLER_B);

  stacks = lw_profile_stacks (profile);
  g_assert_cmpuint (stacks->len, ==, 3);
  top = stacks->pdata[0];
  second = stacks->pdata[1];
  third = stacks->pdata[2];
  g_assert_cmpuint (top->count, ==, 4);
  g_assert_cmpuint (top->ips[1], ==, CALLER_A);
  /* The most recent sample's exact address is the one shown. */
  g_assert_cmpuint (top->ips[0], ==, in_function (spinning_here, 4));
  g_assert_cmpuint (second->count, ==, 2);
  g_assert_cmpuint (second->ips[0], ==, in_function (spinning_there, 8));
  g_assert_cmpuint (third->count, ==, 1);
  g_assert_cmpuint (third->ips[1], ==, CALLER_B);
  g_assert_cmpuint (lw_profile_n_samples (profile), ==, 7);
  lw_profile_free (profile);
}

/* Addresses no symbol covers count exactly. */
static void
test_unnamed_frames_count_exactly (void)
{
  LwProfile *profile = lw_profile_new (256);
  GPtrArray *stacks;

  add (profile, 0x10, CALLER_A);
  add (profile, 0x18, CALLER_A);
  add (profile, 0x18, CALLER_A);
  stacks = lw_profile_stacks (profile);
  g_assert_cmpuint (stacks->len, ==, 2);
  g_assert_cmpuint (((LwProfileStack *) stacks->pdata[0])->count, ==, 2);
  g_assert_cmpuint (((LwProfileStack *) stacks->pdata[0])->ips[0], ==, 0x18);
  lw_profile_free (profile);
}

/* Equal counts: the stack seen last comes first. */
static void
test_ties_go_to_the_latest (void)
{
  LwProfile *profile = lw_profile_new (256);
  GPtrArray *stacks;

  add (profile, in_function (spinning_there, 4), CALLER_A);
  add (profile, in_function (spinning_here, 4), CALLER_A);
  add (profile, in_function (spinning_there, 8), CALLER_A);
  add (profile, in_function (spinning_here, 8), CALLER_A);
  stacks = lw_profile_stacks (profile);
  g_assert_cmpuint (stacks->len, ==, 2);
  g_assert_cmpuint (((LwProfileStack *) stacks->pdata[0])->ips[0], ==, in_function (spinning_here, 8));
  lw_profile_free (profile);
}

/* A full profile says so; thinning keeps the later sample of each pair,
 * and the counts follow. */
static void
test_budget_and_thinning (void)
{
  LwProfile *profile = lw_profile_new (8);
  GPtrArray *stacks;
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
  stacks = lw_profile_stacks (profile);
  /* Samples alternate here, there: the later of each pair is "there". */
  g_assert_cmpuint (stacks->len, ==, 1);
  g_assert_cmpuint (((LwProfileStack *) stacks->pdata[0])->count, ==, 4);
  g_assert_cmpuint (((LwProfileStack *) stacks->pdata[0])->ips[0], ==, in_function (spinning_there, 4));

  lw_profile_reset (profile);
  g_assert_cmpuint (lw_profile_n_samples (profile), ==, 0);
  g_assert_cmpuint (lw_profile_stacks (profile)->len, ==, 0);
  lw_profile_free (profile);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  spinning_here ();
  spinning_there ();
  g_test_add_func ("/profile/groups-by-function", test_groups_by_function);
  g_test_add_func ("/profile/unnamed-frames-count-exactly", test_unnamed_frames_count_exactly);
  g_test_add_func ("/profile/ties-go-to-the-latest", test_ties_go_to_the_latest);
  g_test_add_func ("/profile/budget-and-thinning", test_budget_and_thinning);
  return g_test_run ();
}
