/* fuzz-cfi: arbitrary bytes as .eh_frame_hdr + .eh_frame, through lw-cfi's
 * FDE lookup and row computation.
 *
 * Input: 2 bytes, the length of .eh_frame_hdr (little-endian); 4 bytes, a
 * signed pc offset from the start of .eh_frame_hdr; then the sections,
 * .eh_frame_hdr first, .eh_frame after it, as a linker lays them out (every
 * pointer in them is relative, so they work at any address). The seeds in
 * corpus/cfi/ are the sections of small shared objects built by gcc, cut
 * from the file with `readelf -S` offsets and dd, with the pc of one
 * function. Besides that pc, the row is asked at the first few addresses
 * the search table names, so that mutations of the FDEs are reached.
 */
#include <stdlib.h>
#include <string.h>

#include "lw-cfi.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define LW_FUZZ_HEADER 6
#define LW_FUZZ_TABLE_PCS 8

static LwCfiFde lw_fuzz_fde;

/* The row at @pc: a found one must name a register the unwinder has, and
 * the FDE copied whole must give the same answer at @pc. */
static void
lw_fuzz_row_at (const LwUnwindTable *table, uintptr_t pc)
{
  LwCfiRow row, copied, again;
  LwCfiStatus status = lw_cfi_find_row_in_table (table, pc, &row);
  LwCfiStatus copied_status = lw_cfi_find_row_and_fde_in_table (table, pc, &copied, &lw_fuzz_fde);

  if (status == LW_CFI_FOUND && row.cfa_reg >= LW_N_REGS)
    abort ();
  if (copied_status != status || (status == LW_CFI_FOUND && memcmp (&copied, &row, sizeof row) != 0))
    abort ();
  if (lw_fuzz_fde.pc_end != lw_fuzz_fde.pc_begin
      && (lw_cfi_fde_row (&lw_fuzz_fde, pc, &again) != status
          || (status == LW_CFI_FOUND && memcmp (&again, &row, sizeof row) != 0)))
    abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  LwUnwindTable table;
  uint16_t hdr_len;
  int32_t pc_offset;
  uintptr_t entries;
  uint64_t count;
  uint8_t *sections;

  if (size < LW_FUZZ_HEADER)
    return 0;
  memcpy (&hdr_len, data, sizeof hdr_len);
  memcpy (&pc_offset, data + 2, sizeof pc_offset);
  /* A buffer of the sections' exact size: ASan sees any read past it. */
  sections = malloc (MAX (size - LW_FUZZ_HEADER, 1));
  memcpy (sections, data + LW_FUZZ_HEADER, size - LW_FUZZ_HEADER);

  table = (LwUnwindTable) {
    .start = (uintptr_t) sections,
    .end = (uintptr_t) sections + size - LW_FUZZ_HEADER,
    .eh_frame_hdr = (uintptr_t) sections,
    .eh_frame_hdr_len = hdr_len,
    .cfi_lo = (uintptr_t) sections,
    .cfi_hi = (uintptr_t) sections + size - LW_FUZZ_HEADER,
  };
  lw_fuzz_row_at (&table, table.eh_frame_hdr + (intptr_t) pc_offset);

  if (lw_cfi_search_table (&table, &entries, &count))
    for (uint64_t i = 0; i < MIN (count, LW_FUZZ_TABLE_PCS); i++)
      {
        int32_t initial;

        memcpy (&initial, (const void *) (entries + i * 8), sizeof initial);
        lw_fuzz_row_at (&table, table.eh_frame_hdr + (intptr_t) initial);
        lw_fuzz_row_at (&table, table.eh_frame_hdr + (intptr_t) initial + 4);
      }

  free (sections);
  return 0;
}
