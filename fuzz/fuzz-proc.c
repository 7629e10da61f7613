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
  (void) lw_threadinfo_parse_status_state (text, size);
  /* The one-pass parse of the three masks says what the parse of each
   * line says. */
  for (int signo = 1; signo <= 64; signo += 21)
    {
      gboolean blocked, pending, has_blk;
      guint64 pnd = 0, shd = 0, blk = 0;
      gboolean by_line_pnd = lw_threadinfo_parse_mask (text, size, "SigPnd", &pnd)
                             && ((pnd >> (signo - 1)) & 1);
      gboolean by_line_shd = lw_threadinfo_parse_mask (text, size, "ShdPnd", &shd)
                             && ((shd >> (signo - 1)) & 1);
      gboolean by_line_blk = lw_threadinfo_parse_mask (text, size, "SigBlk", &blk)
                             && ((blk >> (signo - 1)) & 1);

      has_blk = lw_threadinfo_parse_signal_state (text, size, signo, &blocked, &pending);
      if (blocked != by_line_blk || pending != (by_line_pnd || by_line_shd)
          || (by_line_blk && !has_blk))
        __builtin_trap ();
    }
  return 0;
}
