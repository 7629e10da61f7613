/* lw-profile.h: the samples of one lag, grouped into stacks
 *
 * Two samples are the same stack when their frames are in the same
 * functions, one by one: a frame counts by the function it is in rather
 * than by its exact address (a spinning loop is one stack, not one per
 * instruction; a function called from two lines of its caller is one
 * stack, not two), a frame no symbol covers by its address. This is how
 * lagwatch-report merges stacks (by function name), so that the heaviest
 * stack and its share (lw_report_heaviest_share()) are one notion in the
 * text report, the JSON record and lagwatch-report. The stack a group
 * shows is its most recent member's, exact addresses and lines. The
 * heaviest stack is the one with the most samples; ties go to the one seen
 * most recently.
 *
 * This takes two steps on two threads. The watcher adds samples and lists
 * the stacks by exact addresses (no symbol lookup: the watcher must be
 * ready for the next lag at all times). The reporting thread groups them
 * by function (lw_profile_group()), which looks up symbols and may build a
 * module's symbol table.
 *
 * A profile holds at most `budget` samples. When full, lw_profile_thin()
 * drops every other sample (the older of each pair) and the watcher doubles
 * its sampling interval: a long hang keeps an even picture of its whole
 * length in bounded memory.
 *
 * LwProfile: watcher thread only.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-lang-frames.h"
#include "lw-report.h"

G_BEGIN_DECLS

typedef struct
{
  guint      count;        /* samples in this stack */
  guint64    last_serial;  /* serial of its most recent sample */
  gboolean   truncated;
  LwLangMissing lang_missing;  /* why it holds no interpreted frame though it ran some:
                                * a sample of another reason is another stack */
  guint      n_ips;
  uintptr_t  ips[];        /* innermost first, as captured */
} LwProfileStack;

typedef struct _LwProfile LwProfile;

LwProfile *lw_profile_new        (guint            budget);
void       lw_profile_free       (LwProfile       *profile);
void       lw_profile_reset      (LwProfile       *profile);

/* Adds one sample, taken at @taken_ns (CLOCK_MONOTONIC); @asleep: taken
 * while the thread slept (through /proc), not while it ran; @missing: why
 * it ran interpreted code but holds none of its frames (lw-lang-frames.h).
 * Returns TRUE when the profile is now full. */
gboolean   lw_profile_add        (LwProfile       *profile,
                                  const uintptr_t *ips,
                                  guint            n_ips,
                                  gboolean         truncated,
                                  int64_t          taken_ns,
                                  gboolean         asleep,
                                  LwLangMissing    missing);

/* Drops every other sample, keeping the later of each pair. */
void       lw_profile_thin       (LwProfile       *profile);

guint      lw_profile_n_samples  (LwProfile       *profile);

/* Watcher thread. The stacks by exact addresses, most recent first. The
 * array and the stacks belong to the profile, valid until the next add,
 * thin or reset. Looks up no symbol. */
GPtrArray *lw_profile_exact_stacks (LwProfile     *profile);

/* Reporting thread. Groups @stacks (exact, most recent first, frames with
 * addresses only, as the watcher hands them over) by function: each group
 * keeps the frames of its most recent stack and the samples of all.
 * Rewrites @stacks heaviest first (ties: most recent first), keeps at most
 * @max_kept groups, clears the rest and returns how many it kept. */
guint      lw_profile_group      (LwReportStack   *stacks,
                                  guint            n_stacks,
                                  guint            max_kept);

/* Sample @index in time order (oldest first, < lw_profile_n_samples()):
 * its exact stack, which belongs to the profile (valid until the next
 * add, thin or reset; the same pointer for every sample of that stack),
 * when it was taken and (@asleep, nullable) whether the thread slept. */
const LwProfileStack *lw_profile_sample (LwProfile *profile,
                                         guint      index,
                                         int64_t   *taken_ns,
                                         gboolean  *asleep);

G_END_DECLS
