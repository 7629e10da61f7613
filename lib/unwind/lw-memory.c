/* lw-memory.c: this process's memory, read through the kernel
 *
 * lw_core_read_memory() (process_vm_readv() on our own pid, or /proc/self/mem
 * where a seccomp filter forbids it) copies what is mapped and readable and
 * stops at the first page that is not, so a module unmapped meanwhile or a
 * garbage address makes a read fail instead of faulting.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-memory.h"
#include "lw-capture-core.h"
#include "lw-say.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* Any thread, normal context. How many bytes of [@addr, @addr + @len) the
 * kernel copied into @buf: fewer than @len when a page is not readable (it
 * stops there), -1 when it copied none. */
static ssize_t
lw_modules_copy_memory (uintptr_t addr,
                        void     *buf,
                        size_t    len)
{
  static gsize refused;
  struct iovec local = { buf, len };
  struct iovec remote = { (void *) addr, len };
  ssize_t n;

  n = lw_core_read_memory (&local, 1, &remote, 1);
  if (n < 0 && errno != EFAULT && errno != EIO && g_once_init_enter (&refused))
    {
      lw_say ("reads of this process's memory through the kernel fail (%s); lagwatch reads no "
              "unwind tables, source names or interpreter frames, so stacks hold only "
              "their innermost frame",
              g_strerror (errno));
      g_once_init_leave (&refused, 1);
    }
  return n;
}

/* Any thread, normal context. */
gboolean
lw_modules_read_memory (uintptr_t addr,
                        void     *buf,
                        size_t    len)
{
  return lw_modules_copy_memory (addr, buf, len) == (ssize_t) len;
}

/* Any thread, normal context. */
gboolean
lw_modules_read_string (uintptr_t addr, char *buf, gsize size, gboolean *whole)
{
  gsize got = 0;

  g_return_val_if_fail (size > 0, FALSE);
  buf[size - 1] = '\0';
  while (got < size - 1)
    {
      uintptr_t at = addr + got;
      gsize chunk = MIN (size - 1 - got, 4096 - (at & 4095));

      if (!lw_modules_read_memory (at, buf + got, chunk))
        return FALSE;
      if (memchr (buf + got, '\0', chunk) != NULL)
        {
          if (whole != NULL)
            *whole = TRUE;
          return TRUE;
        }
      got += chunk;
    }
  if (whole != NULL)
    *whole = FALSE;
  return TRUE;
}

/* Any thread, normal context. */
gboolean
lw_memory_window_read (LwMemoryWindow *window,
                       uintptr_t       addr,
                       size_t          len,
                       uintptr_t       limit,
                       void           *out)
{
  g_return_val_if_fail (len <= 8, FALSE);

  if (addr > limit || limit - addr < len)
    return FALSE;
  if (addr < window->start || addr - window->start > window->len
      || window->len - (addr - window->start) < len)
    {
      /* The window may reach an unreadable page that the bytes asked for
       * do not: what was copied before it is enough. */
      ssize_t copied = lw_modules_copy_memory (addr, window->bytes,
                                               MIN (sizeof window->bytes, limit - addr));

      window->start = addr;
      window->len = MAX (copied, 0);
      if (window->len < len)
        return FALSE;
    }
  memcpy (out, window->bytes + (addr - window->start), len);
  return TRUE;
}
