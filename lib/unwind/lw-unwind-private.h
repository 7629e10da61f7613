/* lw-unwind-private.h: what the unwinder's two files share
 *
 *   lw-unwind     the unwinder: its row cache, a frame stepped with its
 *                 CFI row or by libunwind, the walk over a stack copy
 *   lw-unwind-fp  the steps without CFI: a frame of generated code (by its
 *                 frame pointer or a scan), a frame pointer recovered
 * Only these files include this header.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-cfi.h"
#include "lw-memory.h"
#include "lw-snapshot.h"

G_BEGIN_DECLS

/* lw-unwind.h's handle, named here too: this header does not include it. */
typedef struct _LwUnwinder LwUnwinder;

/* A cached lw_cfi_find_row() answer for one lookup address. */
typedef struct
{
  uintptr_t   pc;      /* 0: empty */
  LwCfiStatus status;
  LwCfiRow    row;
} LwCachedRow;

/* The registers of the frame being stepped from. */
typedef struct
{
  uint64_t regs[LW_N_REGS];
  uint32_t valid;              /* bit LW_REG_x: regs[x] is known */
} LwRegState;

/* What the accessors see through their `arg`. */
typedef struct
{
  const LwSnapshot *snapshot;
  const LwRegState *state;        /* registers of the frame libunwind starts from */
  uintptr_t         readable_lo;  /* the last readable segment found: most */
  uintptr_t         readable_hi;  /* reads of a step fall in the same one */
  LwMemoryWindow    window;       /* the last bytes of module memory copied */
} LwWalk;

/* How one step ended. */
typedef enum
{
  LW_STEP_OK,
  LW_STEP_END,   /* the outermost frame */
  LW_STEP_FAIL,  /* no rules, or the walk left the stack copy */
} LwStep;

/* lw-unwind.c */

/* Watcher thread. The row for lookup address @pc, from the cache. */
const LwCachedRow *lw_unwinder_row               (LwUnwinder       *unwinder,
                                                  uintptr_t         pc);
/* Watcher thread. Steps @state to the caller's frame with @row. */
LwStep             lw_unwind_apply_row           (const LwCfiRow   *row,
                                                  LwWalk           *walk,
                                                  LwRegState       *state);
/* Watcher thread. FALSE when @addr, outside every module, is known not to be code. */
gboolean           lw_unwinder_in_generated_code (LwUnwinder       *unwinder,
                                                  uintptr_t         addr);

/* lw-unwind-fp.c */

/* Watcher thread. Steps a frame of code that lies in no loaded module. */
LwStep             lw_unwind_step_generated      (LwUnwinder       *unwinder,
                                                  const LwSnapshot *snap,
                                                  LwRegState       *state);
/* Watcher thread. Recovers the frame pointer of a frame whose CFA is rbp-based. */
gboolean           lw_unwind_recover_fp          (LwUnwinder       *unwinder,
                                                  LwWalk           *walk,
                                                  const LwCfiRow   *row,
                                                  LwRegState       *state);

G_END_DECLS
