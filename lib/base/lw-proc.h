/* lw-proc.h: where the process reads its own /proc files
 *
 * /proc/self is the view of the process's first thread. Once that thread
 * has exited (main() calling pthread_exit() while other threads go on), its
 * maps and cmdline read empty and its fd, fdinfo and exe are gone, although
 * the process and its memory live on. /proc/thread-self (Linux 3.17 and
 * later) is the calling thread's view of the same process: alive, since it
 * is the one reading.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Any thread, normal context. "/proc/thread-self", or "/proc/self" on a
 * kernel without it: the directory to read the process's maps,
 * descriptors, executable and command line from. */
const char *lw_proc_self (void);

G_END_DECLS
