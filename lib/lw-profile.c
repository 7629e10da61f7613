/* lw-profile.c: grouping samples into stacks */
#include "lw-profile.h"

#include <string.h>

#include "lw-symbols.h"

struct _LwProfile
{
  guint       budget;
  GHashTable *stacks;      /* LwProfileStack* (key) -> itself; owns them */
  GPtrArray  *samples;     /* LwProfileStack* per sample, oldest first */
  guint64     serial;
  GPtrArray  *sorted;      /* cache for lw_profile_stacks() */
};

/* The innermost frame counts by its function's start when a symbol covers
 * it. */
static uintptr_t
lw_profile_key_ip (const LwProfileStack *stack, guint i)
{
  uintptr_t start;

  if (i == 0 && lw_symbols_function_start (stack->ips[0], FALSE, &start))
    return start;
  return stack->ips[i];
}

static guint
lw_profile_stack_hash (gconstpointer key)
{
  const LwProfileStack *stack = key;
  guint64 h = 1469598103934665603ULL ^ stack->n_ips;

  for (guint i = 0; i < stack->n_ips; i++)
    h = (h ^ lw_profile_key_ip (stack, i)) * 1099511628211ULL;
  return (guint) (h ^ (h >> 32));
}

static gboolean
lw_profile_stack_equal (gconstpointer a, gconstpointer b)
{
  const LwProfileStack *x = a, *y = b;

  if (x->n_ips != y->n_ips)
    return FALSE;
  for (guint i = 0; i < x->n_ips; i++)
    if (lw_profile_key_ip (x, i) != lw_profile_key_ip (y, i))
      return FALSE;
  return TRUE;
}

LwProfile *
lw_profile_new (guint budget)
{
  LwProfile *profile = g_new0 (LwProfile, 1);

  profile->budget = MAX (budget, 2);
  profile->stacks = g_hash_table_new_full (lw_profile_stack_hash, lw_profile_stack_equal,
                                           g_free, NULL);
  profile->samples = g_ptr_array_sized_new (profile->budget);
  return profile;
}

void
lw_profile_free (LwProfile *profile)
{
  if (profile == NULL)
    return;
  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  g_ptr_array_unref (profile->samples);
  g_hash_table_unref (profile->stacks);
  g_free (profile);
}

void
lw_profile_reset (LwProfile *profile)
{
  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  g_ptr_array_set_size (profile->samples, 0);
  g_hash_table_remove_all (profile->stacks);
  profile->serial = 0;
}

gboolean
lw_profile_add (LwProfile *profile, const uintptr_t *ips, guint n_ips, gboolean truncated)
{
  LwProfileStack *probe = g_malloc (sizeof (LwProfileStack) + n_ips * sizeof (uintptr_t));
  LwProfileStack *stack;

  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  probe->count = 0;
  probe->truncated = truncated;
  probe->n_ips = n_ips;
  memcpy (probe->ips, ips, n_ips * sizeof (uintptr_t));
  stack = g_hash_table_lookup (profile->stacks, probe);
  if (stack == NULL)
    {
      g_hash_table_add (profile->stacks, probe);
      stack = probe;
    }
  else
    {
      /* Keep the latest exact addresses of frame 0, for the report. */
      memcpy (stack->ips, ips, n_ips * sizeof (uintptr_t));
      g_free (probe);
    }
  stack->count++;
  stack->last_serial = ++profile->serial;
  g_ptr_array_add (profile->samples, stack);
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
            g_hash_table_remove (profile->stacks, stack);
          continue;
        }
      profile->samples->pdata[kept++] = stack;
    }
  g_ptr_array_set_size (profile->samples, kept);
}

guint
lw_profile_n_samples (LwProfile *profile)
{
  return profile->samples->len;
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
  if (profile->sorted == NULL)
    {
      GHashTableIter iter;
      gpointer stack;

      profile->sorted = g_ptr_array_sized_new (g_hash_table_size (profile->stacks));
      g_hash_table_iter_init (&iter, profile->stacks);
      while (g_hash_table_iter_next (&iter, &stack, NULL))
        g_ptr_array_add (profile->sorted, stack);
      g_ptr_array_sort (profile->sorted, lw_profile_compare);
    }
  return profile->sorted;
}
