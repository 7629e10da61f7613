/* lw-fd.c: descriptors lagwatch keeps, checked before each use */
#include "lw-fd.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gboolean
lw_fd_id_take (int fd, LwFdId *id)
{
  struct stat st;

  memset (id, 0, sizeof *id);
  if (fd < 0 || fstat (fd, &st) != 0)
    return FALSE;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  return TRUE;
}

gboolean
lw_fd_is (int fd, const LwFdId *id)
{
  struct stat st;

  return fd >= 0 && fstat (fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

void
lw_fd_close (int fd, const LwFdId *id)
{
  if (lw_fd_is (fd, id))
    close (fd);
}
