/* lw-profile.c: grouping samples into stacks */
#include "lw-profile.h"

#include <string.h>

#include "lw-lang-frames.h"
#include "lw-symbols.h"

struct _LwProfile
{
  guint           budget;
  GHashTable     *exact;      /* LwProfileStack* (key) -> itself, by exact addresses; owns them */
  GPtrArray      *samples;    /* LwProfileStack* of exact, per sample, oldest first */
  GArray         *times;      /* LwProfileTime, when each of samples was taken */
  guint64         serial;
  LwProfileStack *probe;      /* lookup key of lw_profile_add(), reused */
  guint           probe_room; /* addresses the probe holds */
  GPtrArray      *sorted;     /* cache for lw_profile_exact_stacks(), of stacks in exact */
};

/* When one sample was taken, and whether the thread was asleep then. */
typedef struct
{
  int64_t  taken_ns;
  gboolean asleep;
} LwProfileTime;

/* Samples are grouped in two steps. lw_profile_add() runs at every sample,
 * on a watcher that has just woken on a cold CPU: it only matches exact
 * addresses (no symbol lookup, no allocation once a stack is known).
 * lw_profile_group(), once per report on the reporting thread, merges the
 * stacks whose frames are in the same functions. */

/* Any thread. FNV-1a, one address at a time. */
#define LW_PROFILE_HASH_SEED 1469598103934665603ULL

static guint64
lw_profile_mix (guint64 h, uintptr_t value)
{
  return (h ^ value) * 1099511628211ULL;
}

static guint
lw_profile_exact_hash (gconstpointer key)
{
  const LwProfileStack *stack = key;
  guint64 h = LW_PROFILE_HASH_SEED ^ stack->n_ips ^ ((guint64) stack->lang_missing << 32);

  for (guint i = 0; i < stack->n_ips; i++)
    h = lw_profile_mix (h, stack->ips[i]);
  return (guint) (h ^ (h >> 32));
}

static gboolean
lw_profile_exact_equal (gconstpointer a, gconstpointer b)
{
  const LwProfileStack *x = a, *y = b;

  return x->n_ips == y->n_ips && x->lang_missing == y->lang_missing
         && memcmp (x->ips, y->ips, x->n_ips * sizeof (uintptr_t)) == 0;
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
  profile->times = g_array_sized_new (FALSE, FALSE, sizeof (LwProfileTime), profile->budget);
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
                int64_t taken_ns, gboolean asleep, LwLangMissing missing)
{
  LwProfileStack *stack;
  LwProfileTime when = { taken_ns, asleep };

  g_clear_pointer (&profile->sorted, g_ptr_array_unref);
  if (profile->probe == NULL || profile->probe_room < n_ips)
    {
      profile->probe_room = MAX (n_ips, 64);
      profile->probe = g_realloc (profile->probe, lw_profile_stack_size (profile->probe_room));
    }
  *profile->probe = (LwProfileStack) { .n_ips = n_ips, .truncated = truncated, .lang_missing = missing };
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
  g_array_append_val (profile->times, when);
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
      g_array_index (profile->times, LwProfileTime, kept) = g_array_index (profile->times, LwProfileTime, i);
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
lw_profile_sample (LwProfile *profile, guint index, int64_t *taken_ns, gboolean *asleep)
{
  const LwProfileTime *when;

  g_return_val_if_fail (index < profile->samples->len, NULL);
  when = &g_array_index (profile->times, LwProfileTime, index);
  *taken_ns = when->taken_ns;
  if (asleep != NULL)
    *asleep = when->asleep;
  return profile->samples->pdata[index];
}

/* Watcher thread. Most recent first. */
static gint
lw_profile_by_recency (gconstpointer a, gconstpointer b)
{
  const LwProfileStack *x = *(LwProfileStack * const *) a;
  const LwProfileStack *y = *(LwProfileStack * const *) b;

  return x->last_serial > y->last_serial ? -1 : x->last_serial < y->last_serial;
}

GPtrArray *
lw_profile_exact_stacks (LwProfile *profile)
{
  GHashTableIter iter;
  gpointer key;

  if (profile->sorted != NULL)
    return profile->sorted;
  profile->sorted = g_ptr_array_sized_new (g_hash_table_size (profile->exact));
  g_hash_table_iter_init (&iter, profile->exact);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    g_ptr_array_add (profile->sorted, key);
  g_ptr_array_sort (profile->sorted, lw_profile_by_recency);
  return profile->sorted;
}

/* One stack of lw_profile_group()'s input, and its group. */
typedef struct
{
  LwReportStack *stack;
  uintptr_t     *keys;        /* per frame: its function's start, or its address when no
                               * symbol covers it */
  guint          rank;        /* 0 = most recent */
  guint          samples;     /* a group's first member: the group's total */
  gboolean       scripted;    /* holds an interpreted (Python, JavaScript) frame */
} LwProfileMember;

/* Reporting thread. Every frame by its function. */
static guint
lw_profile_member_hash (gconstpointer key)
{
  const LwProfileMember *member = key;
  guint64 h = LW_PROFILE_HASH_SEED ^ member->stack->n_frames ^ ((guint64) member->stack->lang_missing << 32);

  for (guint i = 0; i < member->stack->n_frames; i++)
    h = lw_profile_mix (h, member->keys[i]);
  return (guint) (h ^ (h >> 32));
}

/* Reporting thread. */
static gboolean
lw_profile_member_equal (gconstpointer a, gconstpointer b)
{
  const LwProfileMember *x = a, *y = b;

  if (x->stack->n_frames != y->stack->n_frames || x->stack->lang_missing != y->stack->lang_missing)
    return FALSE;
  return x->stack->n_frames == 0 || memcmp (x->keys, y->keys, x->stack->n_frames * sizeof (uintptr_t)) == 0;
}

/* Reporting thread. TRUE when @stack holds an interpreted frame. */
static gboolean
lw_profile_stack_scripted (const LwReportStack *stack)
{
  for (guint i = 0; i < stack->n_frames; i++)
    if (lw_lang_frame_is (stack->frames[i].ip))
      return TRUE;
  return FALSE;
}

/* Reporting thread. Heaviest first. Ties: a stack with the script's own
 * frames before one without (a sample read as the handler returned keeps
 * its native frames only, and says less), then the most recent first. */
static gint
lw_profile_by_weight (gconstpointer a, gconstpointer b)
{
  const LwProfileMember *x = *(LwProfileMember * const *) a;
  const LwProfileMember *y = *(LwProfileMember * const *) b;

  if (x->samples != y->samples)
    return x->samples > y->samples ? -1 : 1;
  if (x->scripted != y->scripted)
    return x->scripted ? -1 : 1;
  return (gint) x->rank - (gint) y->rank;
}

guint
lw_profile_group (LwReportStack *stacks, guint n_stacks, guint max_kept)
{
  g_autofree LwProfileMember *members = g_new0 (LwProfileMember, MAX (n_stacks, 1));
  g_autofree LwReportStack *kept = NULL;
  g_autoptr(GHashTable) groups = g_hash_table_new (lw_profile_member_hash, lw_profile_member_equal);
  g_autoptr(GPtrArray) sorted = g_ptr_array_new ();
  guint n_kept;

  for (guint i = 0; i < n_stacks; i++)
    {
      LwProfileMember *member = &members[i], *group;
      uintptr_t start;

      member->stack = &stacks[i];
      member->rank = i;
      member->samples = stacks[i].samples;
      member->scripted = lw_profile_stack_scripted (&stacks[i]);
      member->keys = g_new (uintptr_t, MAX (stacks[i].n_frames, 1));
      for (guint f = 0; f < stacks[i].n_frames; f++)
        member->keys[f] = lw_symbols_function_start (stacks[i].frames[f].ip, f > 0, &start)
                          ? start : stacks[i].frames[f].ip;
      /* Most recent first: a group's first member is the one it shows. */
      group = g_hash_table_lookup (groups, member);
      if (group == NULL)
        {
          g_hash_table_add (groups, member);
          g_ptr_array_add (sorted, member);
          continue;
        }
      group->samples += member->samples;
      lw_report_stack_clear (member->stack);
    }
  g_ptr_array_sort (sorted, lw_profile_by_weight);

  n_kept = MIN (sorted->len, max_kept);
  kept = g_new0 (LwReportStack, MAX (n_kept, 1));
  for (guint i = 0; i < sorted->len; i++)
    {
      LwProfileMember *group = sorted->pdata[i];

      if (i < n_kept)
        {
          kept[i] = *group->stack;
          kept[i].samples = group->samples;
        }
      else
        lw_report_stack_clear (group->stack);
    }
  /* memset and memcpy take no NULL, even for 0 bytes (UBSan says so). */
  if (n_stacks > 0)
    memset (stacks, 0, n_stacks * sizeof (LwReportStack));
  if (n_kept > 0)
    memcpy (stacks, kept, n_kept * sizeof (LwReportStack));
  for (guint i = 0; i < n_stacks; i++)
    g_free (members[i].keys);
  return n_kept;
}
