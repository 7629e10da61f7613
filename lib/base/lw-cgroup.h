/* lw-cgroup.h: what the process's cgroup says about its CPU quota
 *
 * A cgroup with a CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us) stops
 * running its threads once the quota of the period is used, until the next
 * period: the program is held back by its own limit, not by a busy
 * machine. The kernel counts that time in the cgroup's cpu.stat
 * (v2 "throttled_usec", v1 "throttled_time" in ns), per level of the
 * hierarchy: a quota set on a parent (a systemd slice) is counted there.
 * Part of it also shows as the threads' run-queue delay, the rest as
 * neither run nor wait time.
 *
 * Every function: the watcher thread (one LwCgroup per watch).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _LwCgroup LwCgroup;

/* Finds the cgroup mounts (from /proc/self/mountinfo); never fails: a
 * process without them reads as unknown. */
LwCgroup *lw_cgroup_new          (void);
void      lw_cgroup_free         (LwCgroup *cgroup);

/* The time the process's cgroup and its ancestors have been throttled, in
 * ns, summed over the levels (a counter: compare two readings); -1 when no
 * level has a count (no cpu controller, no cgroup file system). Follows
 * the process into another cgroup (re-reads /proc/self/cgroup each time;
 * the counter then restarts, so a difference across a move is not
 * meaningful: callers keep only differences >= 0). */
int64_t   lw_cgroup_throttled_ns (LwCgroup *cgroup);

/* Any thread. The throttled time in the text of a cpu.stat file, in ns:
 * "throttled_usec N" (v2) or "throttled_time N" (v1, ns); -1 when absent. */
int64_t   lw_cgroup_parse_throttled (const char *text);

G_END_DECLS
