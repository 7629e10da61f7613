/* lw-memory.h: this process's memory, read through the kernel
 *
 * Any thread, normal context (never a signal handler): a read goes through
 * process_vm_readv() on our own pid, so memory unmapped meanwhile makes it
 * fail instead of faulting. The readers keep the lw_modules_ prefix: they
 * serve the module table's users (the unwinder, the interpreters' frames).
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Any thread, normal context. Copies @len bytes of this process's memory
 * at @addr into @buf through the kernel (process_vm_readv() on our own
 * pid), so that a page unmapped meanwhile (a module another thread
 * dlclose()d, a range a garbage address points into) makes it return
 * FALSE instead of faulting. Also FALSE, after one message, where a
 * sandbox refuses the system call. */
gboolean lw_modules_read_memory         (uintptr_t  addr,
                                         void      *buf,
                                         size_t     len);

/* Any thread, normal context. Copies the NUL-terminated string at @addr
 * into @buf (@size bytes, at least 1), through lw_modules_read_memory()
 * page by page, so that a string ending just before an unmapped page is
 * read. @buf is always terminated: a string longer than @size - 1 bytes is
 * cut there, and *@whole (when not NULL) says whether it was not. FALSE
 * when the memory before the terminator (or the cut) cannot be read. */
gboolean lw_modules_read_string         (uintptr_t  addr,
                                         char      *buf,
                                         gsize      size,
                                         gboolean  *whole);

/* A copy of a few bytes of module memory, refilled on a miss, so that a
 * parser reading a record a few bytes at a time makes one system call per
 * record rather than one per field. Zero-initialise it before use. */
typedef struct
{
  uintptr_t start;
  size_t    len;        /* bytes[] holds [start, start + len) */
  uint8_t   bytes[128];
} LwMemoryWindow;

/* Any thread, normal context. Copies [@addr, @addr + @len) (@len at most 8)
 * into @out from @window, refilling it with lw_modules_read_memory() from
 * @addr up to at most @limit when it does not hold them. FALSE when that
 * memory is not readable or @addr + @len passes @limit. */
gboolean lw_memory_window_read          (LwMemoryWindow *window,
                                         uintptr_t       addr,
                                         size_t          len,
                                         uintptr_t       limit,
                                         void           *out);

G_END_DECLS
