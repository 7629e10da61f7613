/* lw-profile.c: grouping samples into stacks */
#include "lw-profile.h"

#include <string.h>

#include "lw-symbols.h"

struct _LwProfile
{
  guint           budget;
  GHashTable     *exact;      /* LwProfileStack* (key) -> itself, by exact addresses; owns them */
  GPtrArray      *samples;    /* LwProfileStack* of exact, per sample, oldest first */
  GArray         *times;      /* int64_t, when each of samples was taken */
  guint64         serial;
  LwProfileStack *probe;      /* lookup key of lw_profile_add(), reused */
  guint           probe_room; /* addresses the probe holds */
  GPtrArray      *sorted;     /* cache for lw_profile_stacks(): grouped copies, owned */
};

/* Samples are grouped in two steps. lw_profile_add() runs at every sample,
 * on a watcher that has just woken on a cold CPU: it only matches exact
 * addresses (no symbol lookup, no allocation once a stack is known).
 * lw_profile_stacks(), once per report, merges the stacks whose innermost
 * frames are in the same function. */

static guint
lw_profile_hash_frames (const LwProfileStack *stack, uintptr_t frame0)
{
  guint64 h = 1469598103934665603ULL ^ stack->n_ips;

  for (guint i = 0; i < stack->n_ips; i++)
    h = (h ^ (i == 0 ? frame0 : stack->ips[i])) * 1099511628211ULL;
  return (guint) (h ^ (h >> 32));
}

static gboolean
lw_profile_equal_frames (const LwProfileStack *x, uintptr_t x0, const LwProfileStack *y, uintptr_t y0)
{
  return x->n_ips == y->n_ips && (x->n_ips == 0 || x0 == y0)
         && memcmp (x->ips + 1, y->ips + 1, (MAX (x->n_ips, 1) - 1) * sizeof (uintptr_t)) == 0;
}

static guint
lw_profile_exact_hash (gconstpointer key)
{
  const LwProfileStack *stack = key;

  return lw_profile_hash_frames (stack, stack->n_ips > 0 ? stack->ips[0] : 0);
}

static gboolean
lw_profile_exact_equal (gconstpointer a, gconstpointer b)
{
  const LwProfileStack *x = a, *y = b;

  return lw_profile_equal_frames (x, x->n_ips > 0 ? x->ips[0] : 0, y, y->n_ips > 0 ? y->ips[0] : 0);
}

/* Grouping: the innermost frame counts by its function's start when a
 * symbol covers it (frame0_key, set by lw_profile_stacks()). */
static guint
lw_profile_group_hash (gconstpointer key)
{
  const LwProfileStack *stack = key;

  return lw_profile_hash_frames (stack, stack->frame0_key);
}

static gboolean
lw_profile_group_equal (gconstpointer a, gconstpointer b)
{
  const LwProfileStack *x = a, *y = b;

  return lw_profile_equal_frames (x, x->frame0_key, y, y->frame0_key);
}

/* Bytes of a stack of @n_ips addresses. */
static gsize
lw_profile_stack_size (guint n_ips)
{
  return sizeof (LwProfileStack) + n_ips * sizeof (uintptr_t);
}

static LwProfileStack *
lw_profile_stack_copy (const LwProfileStack *stack)
{
  return g_memdup2 (stack, lw_profile_stack_size (stack->n_ips));
}

LwProfile *
lw_profile_new (guint budget)
{
  LwProfile *profile = g_new0 (LwProfile, 1);

  profile->budget = MAX (budget, 2);
  profile->exact = g_hash_table_new_full (lw_profile_exact_hash, lw_profile_exact_equal,
                                          g_free, NULL);
  profile->samples = g_ptr_array_sized_new (profile->budget);
  profile->times = g_array_sized_new (FALSE, FALSE, sizeof (int64_t), profile->budget);
  return profile;
}

void
lw_profile_free (LwProfile *profile)
{
  if (profile == NULL)
    return;
  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  g_ptr_array_unref (profile->samples);
  g_array_unref (profile->times);
  g_hash_table_unref (profile->exact);
  g_free (profile->probe);
  g_free (profile);
}

void
lw_profile_reset (LwProfile *profile)
{
  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  g_ptr_array_set_size (profile->samples, 0);
  g_array_set_size (profile->times, 0);
  g_hash_table_remove_all (profile->exact);
  profile->serial = 0;
}

gboolean
lw_profile_add (LwProfile *profile, const uintptr_t *ips, guint n_ips, gboolean truncated,
                int64_t taken_ns)
{
  LwProfileStack *stack;

  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  if (profile->probe == NULL || profile->probe_room < n_ips)
    {
      profile->probe_room = MAX (n_ips, 64);
      profile->probe = g_realloc (profile->probe, lw_profile_stack_size (profile->probe_room));
    }
  *profile->probe = (LwProfileStack) { .n_ips = n_ips, .truncated = truncated };
  memcpy (profile->probe->ips, ips, n_ips * sizeof (uintptr_t));
  stack = g_hash_table_lookup (profile->exact, profile->probe);
  if (stack == NULL)
    {
      stack = lw_profile_stack_copy (profile->probe);
      g_hash_table_add (profile->exact, stack);
    }
  stack->truncated = truncated;
  stack->count++;
  stack->last_serial = ++profile->serial;
  g_ptr_array_add (profile->samples, stack);
  g_array_append_val (profile->times, taken_ns);
  return profile->samples->len >= profile->budget;
}

void
lw_profile_thin (LwProfile *profile)
{
  guint kept = 0;

  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  for (guint i = 0; i < profile->samples->len; i++)
    {
      LwProfileStack *stack = profile->samples->pdata[i];

      if (i % 2 == 0 && i + 1 < profile->samples->len)
        {
          if (--stack->count == 0)
            g_hash_table_remove (profile->exact, stack);
          continue;
        }
      g_array_index (profile->times, int64_t, kept) = g_array_index (profile->times, int64_t, i);
      profile->samples->pdata[kept++] = stack;
    }
  g_ptr_array_set_size (profile->samples, kept);
  g_array_set_size (profile->times, kept);
}

guint
lw_profile_n_samples (LwProfile *profile)
{
  return profile->samples->len;
}

const LwProfileStack *
lw_profile_sample (LwProfile *profile, guint index, int64_t *taken_ns)
{
  g_return_val_if_fail (index < profile->samples->len, NULL);
  *taken_ns = g_array_index (profile->times, int64_t, index);
  return profile->samples->pdata[index];
}

static gint
lw_profile_compare (gconstpointer a, gconstpointer b)
{
  const LwProfileStack *x = *(LwProfileStack * const *) a;
  const LwProfileStack *y = *(LwProfileStack * const *) b;

  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->last_serial > y->last_serial ? -1 : x->last_serial < y->last_serial;
}

GPtrArray *
lw_profile_stacks (LwProfile *profile)
{
  GHashTable *groups;
  GHashTableIter iter;
  gpointer key;

  if (profile->sorted != NULL)
    return profile->sorted;

  /* Each group is a copy of its most recent exact stack (whose addresses
   * the report shows), counting the samples of all. */
  groups = g_hash_table_new (lw_profile_group_hash, lw_profile_group_equal);
  profile->sorted = g_ptr_array_new_with_free_func (g_free);
  g_hash_table_iter_init (&iter, profile->exact);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    {
      LwProfileStack *stack = key, *group;
      uintptr_t start;

      stack->frame0_key = stack->n_ips > 0 ? stack->ips[0] : 0;
      if (stack->n_ips > 0 && lw_symbols_function_start (stack->ips[0], FALSE, &start))
        stack->frame0_key = start;
      group = g_hash_table_lookup (groups, stack);
      if (group == NULL)
        {
          group = lw_profile_stack_copy (stack);
          g_hash_table_add (groups, group);
          g_ptr_array_add (profile->sorted, group);
        }
      else
        {
          guint count = group->count + stack->count;

          if (stack->last_serial > group->last_serial)
            {
              /* Same length, same key: the copy is overwritten in place. */
              memcpy (group, stack, lw_profile_stack_size (stack->n_ips));
            }
          group->count = count;
        }
    }
  g_hash_table_unref (groups);
  g_ptr_array_sort (profile->sorted, lw_profile_compare);
  return profile->sorted;
}
