/* fuzz-proc.c: the /proc line parsers of lw-threadinfo.c
 *
 * /proc/self/task/TID/syscall ("NR ARGS.. SP PC", "-1 SP PC", "running"),
 * stat ("TID (comm) S ..."; comm is the thread's own name, any bytes), and
 * the masks of status and of a signalfd's fdinfo ("SigBlk:\t%016llx").
 * The input is one file's text, of any length, without a terminator.
 */
#include <stddef.h>
#include <stdint.h>

#include "lw-threadinfo.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *text = (const char *) data;
  LwProcSyscall call;
  guint64 mask;

  lw_threadinfo_parse_syscall (text, size, &call);
  (void) lw_threadinfo_parse_state (text, size);
  g_free (lw_threadinfo_parse_name (text, size));
  (void) lw_threadinfo_parse_mask (text, size, "SigBlk", &mask);
  (void) lw_threadinfo_parse_mask (text, size, "ShdPnd", &mask);
  (void) lw_threadinfo_parse_mask (text, size, "sigmask", &mask);
  return 0;
}
