/* lw-launcher-process.h: the identity of the process the launcher starts
 *
 * The launcher execs the program, which keeps its process id and its pid
 * namespace; it writes this identity into LAGWATCH_LAUNCHER_PROCESS and
 * the preload library attaches only in the process whose own identity is
 * the same. A process id alone is not enough: a child started in a new pid
 * namespace (bwrap, flatpak, `unshare --pid`, a container's entry point)
 * counts from 1 again there, and the launcher itself may be pid 1 of its
 * own namespace. Two processes are in the same pid namespace exactly when
 * the device and inode of their /proc/self/ns/pid are the same
 * (namespaces(7)). Without /proc, or on a kernel without pid namespaces,
 * the namespace reads "none": the process id alone then decides.
 */
#pragma once

#include <glib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Any thread, normal context. "PID/DEV:INO", or "PID/none"; free it. */
static inline char *
lw_launcher_process_identity (void)
{
  struct stat ns;

  if (stat ("/proc/self/ns/pid", &ns) != 0)
    return g_strdup_printf ("%d/none", (int) getpid ());
  return g_strdup_printf ("%d/%ju:%ju", (int) getpid (), (uintmax_t) ns.st_dev, (uintmax_t) ns.st_ino);
}
