/* lw-last-thread.h: the process ends when the program's last thread does
 *
 * glibc ends a process when its last thread exits (main() having called
 * pthread_exit(), the other threads returning): that thread calls exit (0).
 * lagwatch's threads are threads too, and they block every signal (the
 * program's process-wide signals must never land there): without more,
 * they would keep such a process alive for ever, deaf even to SIGTERM (the
 * kernel keeps a signal pending while every live thread blocks it).
 *
 * So lagwatch notes the threads it knows to be the program's (a thread that
 * attaches, a thread that runs a watched context). When one of them exits,
 * a reaper thread starts: it waits, with no timeout, for the program's
 * threads still alive to exit (a pidfd per thread, Linux 6.9 and later;
 * for the process's first thread, the word the kernel clears when it
 * exits), and when none is left it calls exit (0), as the last one would
 * have. Nothing wakes while the program's threads live on.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Any thread of the program, normal context. The calling thread is the
 * program's: when it exits, lagwatch looks whether it was the last.
 * Cheap after the first call on a thread (one thread-local load). */
void lw_last_thread_track_self (void);

G_END_DECLS
