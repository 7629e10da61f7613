/* lw-cfi.h: the unwind rules of one code address, read from .eh_frame
 *
 * A small DWARF call-frame-information interpreter for x86-64: it finds the
 * FDE of an address through the module's .eh_frame_hdr search table and
 * runs the CIE's and FDE's instructions up to that address, giving one row
 * of the CFI table: how to compute the CFA and where each register of the
 * caller was saved. It handles the rules compilers emit for ordinary code
 * (CFA = register + offset, registers saved at CFA + offset, remember and
 * restore state); a frame that needs anything else (DWARF expressions,
 * registers saved in other registers) is reported as such, and the
 * unwinder hands that one frame to libunwind.
 *
 * Every read of module memory is bounded by the readable PT_LOAD segment
 * that holds .eh_frame_hdr (.eh_frame lies in the same one in every
 * linker's layout) and copied by the kernel: corrupt CFI gives
 * LW_CFI_UNSUPPORTED, and memory unmapped meanwhile (a module unloaded by
 * another thread) LW_CFI_NO_FDE or LW_CFI_UNSUPPORTED, never a fault.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-modules.h"
#include "lw-snapshot.h"

G_BEGIN_DECLS

/* A register's rule besides "saved at CFA + n". */
#define LW_CFI_SAME      INT32_MIN        /* the caller's value is this frame's */
#define LW_CFI_UNDEFINED (INT32_MIN + 1)  /* unrecoverable: for the return address, the outermost frame */

typedef enum
{
  LW_CFI_FOUND,        /* @row holds the rules */
  LW_CFI_NO_FDE,       /* no module, no .eh_frame_hdr, or no FDE covers the address */
  LW_CFI_UNSUPPORTED,  /* an FDE covers it, with rules this interpreter leaves to libunwind */
} LwCfiStatus;

/* One row of the CFI table, registers numbered as in lw-snapshot.h (which
 * is DWARF's x86-64 numbering; column LW_REG_RIP is the return address). */
typedef struct
{
  int32_t   cfa_offset;
  uint8_t   cfa_reg;
  uint8_t   signal_frame;       /* the CIE says 'S': a signal trampoline */
  int32_t   saved[LW_N_REGS];   /* CFA-relative offset, LW_CFI_SAME or LW_CFI_UNDEFINED */
  uintptr_t pc_begin;           /* where the FDE's range starts: the function's entry (of its part, when split) */
} LwCfiRow;

/* The rules of one whole FDE, copied out of the module: the row of any
 * address in [pc_begin, pc_end) is computed from them without reading
 * module memory again (lw_cfi_fde_row). Kept by the unwinder for the
 * innermost frame, whose pc moves from one sample to the next within one
 * function: an interpreter's loop has an FDE of a few KiB (Debian's CPython
 * 3.14: 3.7 KiB of instructions for the 84 KB of its loop), which a lookup
 * otherwise reads a window of 128 bytes at a time, each a system call.
 * Addresses of the instructions are kept so that position-relative
 * operands read the same as in place. */
#define LW_CFI_FDE_BYTES 8192

typedef struct
{
  uintptr_t pc_begin;
  uintptr_t pc_end;             /* pc_begin: holds nothing */
  uint64_t  code_align;
  int64_t   data_align;
  uint8_t   fde_encoding;
  uint8_t   signal_frame;
  uintptr_t cie_at;             /* the CIE's instructions: address, bytes[0, cie_len) */
  uint32_t  cie_len;
  uintptr_t fde_at;             /* the FDE's: address, bytes[cie_len, cie_len + fde_len) */
  uint32_t  fde_len;
  uint8_t   bytes[LW_CFI_FDE_BYTES];
} LwCfiFde;

/* Any thread, normal context. The rules in effect at @pc. signal_frame is
 * filled for LW_CFI_UNSUPPORTED too (the CIE is read before the rules). */
LwCfiStatus lw_cfi_find_row (uintptr_t pc,
                             LwCfiRow *row);

/* Any thread, normal context. lw_cfi_find_row() in @table, which need
 * not be a loaded module's: every read stays within [cfi_lo, cfi_hi), so
 * tests and the fuzzer hand it sections of their own. */
LwCfiStatus lw_cfi_find_row_in_table (const LwUnwindTable *table,
                                      uintptr_t            pc,
                                      LwCfiRow            *row);

/* Any thread, normal context. lw_cfi_find_row_in_table(), which also
 * copies the FDE that covers @pc into @fde when its instructions and its
 * CIE's fit in it (LW_CFI_FDE_BYTES), whatever the row's status; else
 * @fde holds nothing (pc_end == pc_begin). @fde may be NULL. */
LwCfiStatus lw_cfi_find_row_and_fde_in_table (const LwUnwindTable *table,
                                              uintptr_t            pc,
                                              LwCfiRow            *row,
                                              LwCfiFde            *fde);

/* Any thread, normal context. lw_cfi_find_row_and_fde_in_table() in the
 * loaded module that holds @pc. */
LwCfiStatus lw_cfi_find_row_and_fde (uintptr_t  pc,
                                     LwCfiRow  *row,
                                     LwCfiFde  *fde);

/* Any thread, normal context. The row at @pc from @fde alone, the same
 * answer lw_cfi_find_row_in_table() gives, reading no module memory;
 * LW_CFI_NO_FDE when @pc lies outside @fde's range. */
LwCfiStatus lw_cfi_fde_row (const LwCfiFde *fde,
                            uintptr_t       pc,
                            LwCfiRow       *row);

/* Any thread, normal context. The binary-search table of @table's
 * .eh_frame_hdr: its address in @data and its number of entries in @count
 * (each entry: two 4-byte values, initial location and FDE address,
 * relative to the header). FALSE when the header is missing or has a
 * layout other than the one every linker writes (sdata4, datarel). */
gboolean    lw_cfi_search_table (const LwUnwindTable *table,
                                 uintptr_t           *data,
                                 uint64_t            *count);

G_END_DECLS
