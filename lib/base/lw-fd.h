/* lw-fd.h: descriptors lagwatch keeps, checked before each use
 *
 * lagwatch keeps a few descriptors open in a program it does not own (its
 * JSON Lines file, its state directory, the loop thread's /proc files, the
 * ELF files it names frames from, the pidfds and wake-up pipe of the thread
 * that ends the process with the program's last). The program may close every descriptor
 * it does not know (close_range (3, ~0U, 0), as daemons do) and open its
 * own files, which take the same numbers, or dup2() one of its files over
 * lagwatch's number. From then on the number is the program's: lagwatch
 * must neither write to it, nor read it as its own, nor close it. So each
 * kept descriptor is remembered with the device and inode fstat() saw
 * right after open, and compared before each use (one fstat(): 1.1 µs on
 * the test machine, beside 3.6 µs for the pread() of a /proc file it
 * guards). On a mismatch the caller forgets the number (never closes it)
 * and reopens its file by path where that is safe.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef struct
{
  dev_t dev;
  ino_t ino;
} LwFdId;

/* Any thread. Records in @id what @fd is now; FALSE (and @id zeroed) when
 * fstat() fails. */
gboolean lw_fd_id_take (int          fd,
                        LwFdId      *id);

/* Any thread. TRUE when @fd is still the file @id recorded: open, same
 * st_dev and st_ino. */
gboolean lw_fd_is      (int          fd,
                        const LwFdId *id);

/* Any thread. Closes @fd if it is still the file @id recorded; otherwise
 * leaves it to the program that now owns the number. */
void     lw_fd_close   (int          fd,
                        const LwFdId *id);

G_END_DECLS
