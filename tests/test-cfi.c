/* test-cfi: lw-cfi's rows on synthetic .eh_frame_hdr + .eh_frame bytes
 *
 * Each test builds one CIE and one FDE (covering PC_OFFSET .. + PC_RANGE
 * from the sections' start) and a one-entry search table, places them at
 * the very end of a page followed by an inaccessible page, and asks for the
 * row of an address: known answers for well-formed rules, LW_CFI_UNSUPPORTED
 * (the frame goes to libunwind) for rules whose numbers overflow or that
 * DWARF does not allow, and never a read past the sections. Every row is
 * asked twice: read in place, and from the FDE copied whole
 * (lw_cfi_fde_row, after the sections are unmapped): the same answer.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lw-cfi.h"

#define PC_OFFSET 0x10000  /* code is never read: the pcs only need to be distinct */
#define PC_RANGE  0x100
#define HDR_LEN   20       /* .eh_frame_hdr with one table entry */

/* DWARF constants, spelled out here so that the test does not share the
 * parser's own tables. */
enum
{
  PE_UDATA4 = 0x03, PE_PCREL_SDATA4 = 0x1b, PE_DATAREL_SDATA4 = 0x3b,
  PE_ALIGNED = 0x50,
  CFA_ADVANCE_LOC = 0x40, CFA_OFFSET = 0x80, CFA_RESTORE = 0xc0,
  CFA_DEF_CFA = 0x0c, CFA_DEF_CFA_REGISTER = 0x0d, CFA_DEF_CFA_OFFSET = 0x0e,
  CFA_OFFSET_EXTENDED_SF = 0x11, CFA_DEF_CFA_SF = 0x12, CFA_DEF_CFA_OFFSET_SF = 0x13,
  CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f, CFA_NOP = 0x00,
};

/* What the synthetic CIE and FDE say. */
typedef struct
{
  guint64       code_align;
  gint64        data_align;
  guint8        fde_encoding;
  const guint8 *cie_ops;
  gsize         cie_ops_len;
  const guint8 *fde_ops;
  gsize         fde_ops_len;
  gboolean      fde_cut_after_cie_pointer;  /* an FDE record that ends there */
} Spec;

/* The CIE's instructions most tests use: CFA = rsp + 8, return address at CFA - 8. */
static const guint8 default_cie_ops[] = { CFA_DEF_CFA, LW_REG_RSP, 8, CFA_OFFSET | LW_REG_RIP, 1 };

/* The sections in place: [start, start + len) ends 4 bytes before an
 * inaccessible page; the table's CFI segment runs to that page. */
typedef struct
{
  guint8       *mapping;
  gsize         len;         /* mapped bytes, the last page inaccessible */
  LwUnwindTable table;
} Sections;

static void
put_u8 (GByteArray *b, guint8 v)
{
  g_byte_array_append (b, &v, 1);
}

static void
put_u32 (GByteArray *b, guint32 v)
{
  g_byte_array_append (b, (const guint8 *) &v, 4);  /* x86-64: little-endian, like the format */
}

static void
put_uleb (GByteArray *b, guint64 v)
{
  do
    {
      guint8 byte = v & 0x7f;

      v >>= 7;
      put_u8 (b, byte | (v != 0 ? 0x80 : 0));
    }
  while (v != 0);
}

static void
put_sleb (GByteArray *b, gint64 v)
{
  gboolean more = TRUE;

  while (more)
    {
      guint8 byte = v & 0x7f;

      v >>= 7;  /* arithmetic on every compiler lagwatch supports */
      more = !((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40)));
      put_u8 (b, byte | (more ? 0x80 : 0));
    }
}

static void
set_u32 (GByteArray *b, gsize at, guint32 v)
{
  memcpy (b->data + at, &v, 4);
}

/* Pads a record with DW_CFA_nop to a multiple of 4 and writes its length. */
static void
close_record (GByteArray *b, gsize start)
{
  while ((b->len - start) % 4 != 0)
    put_u8 (b, 0);
  set_u32 (b, start, b->len - start - 4);
}

/* The bytes of .eh_frame_hdr followed by .eh_frame, laid out as a linker
 * does; every pointer in them is relative, so they work at any address. */
static GByteArray *
build (const Spec *spec)
{
  GByteArray *b = g_byte_array_new ();
  const gsize eh_frame = HDR_LEN, table_fde = 16;
  gsize cie, fde;

  put_u8 (b, 1);                   /* version */
  put_u8 (b, PE_PCREL_SDATA4);     /* eh_frame_ptr */
  put_u8 (b, PE_UDATA4);           /* fde_count */
  put_u8 (b, PE_DATAREL_SDATA4);   /* table entries */
  put_u32 (b, eh_frame - 4);
  put_u32 (b, 1);
  put_u32 (b, PC_OFFSET);          /* initial location, relative to the header */
  put_u32 (b, 0);                  /* FDE address: set below */
  g_assert_cmpuint (b->len, ==, eh_frame);

  cie = b->len;
  put_u32 (b, 0);
  put_u32 (b, 0);                  /* CIE id */
  put_u8 (b, 1);                   /* version */
  g_byte_array_append (b, (const guint8 *) "zR", 3);
  put_uleb (b, spec->code_align);
  put_sleb (b, spec->data_align);
  put_u8 (b, LW_REG_RIP);          /* return address column */
  put_uleb (b, 1);                 /* augmentation data: the FDE encoding */
  put_u8 (b, spec->fde_encoding);
  g_byte_array_append (b, spec->cie_ops, spec->cie_ops_len);
  close_record (b, cie);

  fde = b->len;
  set_u32 (b, table_fde, fde);
  put_u32 (b, 0);
  put_u32 (b, fde + 4 - cie);      /* CIE pointer */
  if (spec->fde_cut_after_cie_pointer)
    {
      set_u32 (b, fde, 4);
      return b;
    }
  switch (spec->fde_encoding)
    {
    case PE_PCREL_SDATA4:
      put_u32 (b, PC_OFFSET - b->len);
      put_u32 (b, PC_RANGE);
      break;
    default:
      g_assert_not_reached ();
    }
  put_uleb (b, 0);                 /* augmentation data */
  g_byte_array_append (b, spec->fde_ops, spec->fde_ops_len);
  close_record (b, fde);
  return b;
}

/* Maps the sections so that they end 4 bytes before an inaccessible page. */
static void
sections_place (Sections *s, const Spec *spec)
{
  GByteArray *bytes = build (spec);
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  gsize readable = (bytes->len + 4 + page - 1) / page * page;
  guint8 *start;

  s->len = readable + page;
  s->mapping = mmap (NULL, s->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true (s->mapping != MAP_FAILED);
  g_assert_cmpint (mprotect (s->mapping + readable, page, PROT_NONE), ==, 0);
  start = s->mapping + readable - 4 - bytes->len;
  memcpy (start, bytes->data, bytes->len);
  s->table = (LwUnwindTable) {
    .start = (uintptr_t) start + PC_OFFSET,
    .end = (uintptr_t) start + PC_OFFSET + PC_RANGE,
    .eh_frame_hdr = (uintptr_t) start,
    .eh_frame_hdr_len = HDR_LEN,
    .cfi_lo = (uintptr_t) start,
    .cfi_hi = (uintptr_t) (s->mapping + readable),
  };
  g_byte_array_unref (bytes);
}

static void
sections_clear (Sections *s)
{
  munmap (s->mapping, s->len);
}

/* The row at PC_OFFSET + @offset, read in place; the same row computed
 * from the FDE copied whole is checked against it, once the sections are
 * gone. @kept: whether the FDE was copied (may be NULL). */
static LwCfiStatus
find_row_kept (const Spec *spec, uintptr_t offset, LwCfiRow *row, gboolean *kept)
{
  g_autofree LwCfiFde *fde = g_new (LwCfiFde, 1);
  Sections s;
  LwCfiStatus status, copied_status, again_status;
  LwCfiRow copied, again;
  uintptr_t pc;

  memset (row, 0, sizeof *row);
  memset (&copied, 0, sizeof copied);
  memset (&again, 0, sizeof again);
  sections_place (&s, spec);
  pc = s.table.eh_frame_hdr + PC_OFFSET + offset;
  status = lw_cfi_find_row_in_table (&s.table, pc, row);
  copied_status = lw_cfi_find_row_and_fde_in_table (&s.table, pc, &copied, fde);
  sections_clear (&s);
  again_status = lw_cfi_fde_row (fde, pc, &again);

  g_assert_cmpint (copied_status, ==, status);
  g_assert_cmpint (copied.signal_frame, ==, row->signal_frame);
  if (status == LW_CFI_FOUND)
    g_assert_cmpmem (&copied, sizeof copied, row, sizeof *row);
  if (fde->pc_end != fde->pc_begin)
    {
      g_assert_cmpint (again_status, ==, status);
      if (status == LW_CFI_FOUND)
        g_assert_cmpmem (&again, sizeof again, row, sizeof *row);
    }
  else
    g_assert_cmpint (again_status, ==, LW_CFI_NO_FDE);
  if (kept != NULL)
    *kept = fde->pc_end != fde->pc_begin;
  return status;
}

static LwCfiStatus
find_row (const Spec *spec, uintptr_t offset, LwCfiRow *row)
{
  return find_row_kept (spec, offset, row, NULL);
}

/* A spec with the default CIE (code_align 1, data_align -8) and @fde_ops. */
static Spec
spec_with (const guint8 *fde_ops, gsize len)
{
  return (Spec) {
    .code_align = 1,
    .data_align = -8,
    .fde_encoding = PE_PCREL_SDATA4,
    .cie_ops = default_cie_ops,
    .cie_ops_len = sizeof default_cie_ops,
    .fde_ops = fde_ops,
    .fde_ops_len = len,
  };
}

/* A prologue as GCC writes it: push rbp; mov rbp, rsp. */
static void
test_prologue (void)
{
  static const guint8 ops[] = {
    CFA_ADVANCE_LOC | 1, CFA_DEF_CFA_OFFSET, 16, CFA_OFFSET | LW_REG_RBP, 2,
    CFA_ADVANCE_LOC | 3, CFA_DEF_CFA_REGISTER, LW_REG_RBP,
  };
  Spec spec = spec_with (ops, sizeof ops);
  LwCfiRow row;

  g_assert_cmpint (find_row (&spec, 0, &row), ==, LW_CFI_FOUND);
  g_assert_cmpuint (row.cfa_reg, ==, LW_REG_RSP);
  g_assert_cmpint (row.cfa_offset, ==, 8);
  g_assert_cmpint (row.saved[LW_REG_RIP], ==, -8);
  g_assert_cmpint (row.saved[LW_REG_RBP], ==, LW_CFI_SAME);

  g_assert_cmpint (find_row (&spec, 1, &row), ==, LW_CFI_FOUND);
  g_assert_cmpuint (row.cfa_reg, ==, LW_REG_RSP);
  g_assert_cmpint (row.cfa_offset, ==, 16);
  g_assert_cmpint (row.saved[LW_REG_RBP], ==, -16);

  g_assert_cmpint (find_row (&spec, 4, &row), ==, LW_CFI_FOUND);
  g_assert_cmpuint (row.cfa_reg, ==, LW_REG_RBP);
  g_assert_cmpint (row.cfa_offset, ==, 16);
  g_assert_cmpint (row.saved[LW_REG_RIP], ==, -8);

  g_assert_cmpint (find_row (&spec, PC_RANGE, &row), ==, LW_CFI_NO_FDE);
  g_assert_cmpint (find_row (&spec, (uintptr_t) -1, &row), ==, LW_CFI_NO_FDE);
}

/* Factored offsets whose product with data_align overflows 64 bits: their
 * wrapped value (here -8 or 0, a normal-looking rule) must not be used. */
static void
test_overflowing_offsets (void)
{
  /* 2^61 + 1: times -8 is -2^64 - 8, which wraps to -8. */
  static const guint8 offset[] = {
    CFA_OFFSET | LW_REG_RBX, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20,
  };
  static const guint8 offset_sf[] = {
    CFA_OFFSET_EXTENDED_SF, LW_REG_RBX, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20,
  };
  /* 2^63: its negation does not fit in 64 signed bits. */
  static const guint8 negative[] = {
    CFA_GNU_NEGATIVE_OFFSET_EXTENDED, LW_REG_RBX,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
  };
  /* 2^61 - 2: times -8 is -2^64 + 16, which wraps to 16. */
  static const guint8 def_cfa_sf[] = {
    CFA_DEF_CFA_SF, LW_REG_RSP, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f,
  };
  static const guint8 def_cfa_offset_sf[] = {
    CFA_DEF_CFA_OFFSET_SF, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f,
  };
  const struct { const char *name; const guint8 *ops; gsize len; } cases[] = {
    { "DW_CFA_offset", offset, sizeof offset },
    { "DW_CFA_offset_extended_sf", offset_sf, sizeof offset_sf },
    { "DW_CFA_GNU_negative_offset_extended", negative, sizeof negative },
    { "DW_CFA_def_cfa_sf", def_cfa_sf, sizeof def_cfa_sf },
    { "DW_CFA_def_cfa_offset_sf", def_cfa_offset_sf, sizeof def_cfa_offset_sf },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      Spec spec = spec_with (cases[i].ops, cases[i].len);
      LwCfiRow row;
      LwCfiStatus status = find_row (&spec, 0, &row);

      g_test_message ("%s: status %d, rbx rule %d, CFA offset %d", cases[i].name, status,
                      row.saved[LW_REG_RBX], row.cfa_offset);
      g_assert_cmpint (status, ==, LW_CFI_UNSUPPORTED);
    }
}

/* A code alignment factor so large that one advance wraps the location
 * back to where it was: the rules after it must not apply at the start. */
static void
test_overflowing_advance (void)
{
  static const guint8 ops[] = { CFA_ADVANCE_LOC | 2, CFA_DEF_CFA_OFFSET, 64 };
  Spec spec = spec_with (ops, sizeof ops);
  LwCfiRow row;
  LwCfiStatus status;

  spec.code_align = G_GUINT64_CONSTANT (1) << 63;
  status = find_row (&spec, 0, &row);
  g_test_message ("status %d, CFA offset %d", status, row.cfa_offset);
  g_assert_cmpint (status, ==, LW_CFI_FOUND);
  g_assert_cmpint (row.cfa_offset, ==, 8);
}

/* DW_CFA_restore means "the rule the CIE's instructions set": inside the
 * CIE itself it has no meaning (DWARF 4 §6.4.2.5 allows it only in FDEs). */
static void
test_restore_in_cie (void)
{
  static const guint8 cie_ops[] = {
    CFA_DEF_CFA, LW_REG_RSP, 8, CFA_OFFSET | LW_REG_RIP, 1, CFA_RESTORE | LW_REG_RBX,
  };
  Spec spec = spec_with (NULL, 0);
  LwCfiRow row;
  LwCfiStatus status;

  spec.cie_ops = cie_ops;
  spec.cie_ops_len = sizeof cie_ops;
  status = find_row (&spec, 0, &row);
  g_test_message ("status %d, rbx rule %d", status, row.saved[LW_REG_RBX]);
  g_assert_cmpint (status, ==, LW_CFI_UNSUPPORTED);
}

/* An FDE whose pointers are DW_EH_PE_aligned, in a record that ends 4
 * bytes before an 8-byte boundary (and before an inaccessible page): the
 * alignment step lands past the record's end; nothing may be read there. */
static void
test_aligned_past_end (void)
{
  if (g_test_subprocess ())
    {
      Spec spec = spec_with (NULL, 0);
      LwCfiRow row;

      spec.fde_encoding = PE_ALIGNED;
      spec.fde_cut_after_cie_pointer = TRUE;
      g_assert_cmpint (find_row (&spec, 0, &row), ==, LW_CFI_UNSUPPORTED);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Instructions that move the CFA at each of the first @steps addresses
 * (CFA = rsp + 16 + 8 * (address - 1) from address 1 on), padded with
 * DW_CFA_nop to @len bytes: an FDE larger than the bytes one read copies. */
static GByteArray *
growing_ops (guint steps, gsize len)
{
  GByteArray *b = g_byte_array_new ();

  for (guint i = 0; i < steps; i++)
    {
      put_u8 (b, CFA_ADVANCE_LOC | 1);
      put_u8 (b, CFA_DEF_CFA_OFFSET);
      put_uleb (b, 16 + 8 * i);
    }
  while (b->len < len)
    put_u8 (b, CFA_NOP);
  return b;
}

/* An FDE of 2000 bytes (an interpreter's loop has such): copied whole, and
 * each address's row computed from the copy is the one read in place. */
static void
test_large_fde (void)
{
  g_autoptr(GByteArray) ops = growing_ops (PC_RANGE - 1, 2000);
  Spec spec = spec_with (ops->data, ops->len);
  LwCfiRow row;
  gboolean kept;

  g_assert_cmpint (find_row_kept (&spec, 0, &row, &kept), ==, LW_CFI_FOUND);
  g_assert_true (kept);
  g_assert_cmpint (row.cfa_offset, ==, 8);
  for (guint offset = 1; offset < PC_RANGE; offset += 37)
    {
      g_assert_cmpint (find_row_kept (&spec, offset, &row, &kept), ==, LW_CFI_FOUND);
      g_assert_true (kept);
      g_assert_cmpuint (row.cfa_reg, ==, LW_REG_RSP);
      g_assert_cmpint (row.cfa_offset, ==, 16 + 8 * (offset - 1));
    }
}

/* An FDE larger than LwCfiFde holds: not copied, its rows still read in
 * place. */
static void
test_fde_too_large (void)
{
  g_autoptr(GByteArray) ops = growing_ops (8, LW_CFI_FDE_BYTES + 64);
  Spec spec = spec_with (ops->data, ops->len);
  LwCfiRow row;
  gboolean kept;

  g_assert_cmpint (find_row_kept (&spec, 5, &row, &kept), ==, LW_CFI_FOUND);
  g_assert_false (kept);
  g_assert_cmpint (row.cfa_offset, ==, 16 + 8 * 4);
}

/* One FDE copied, then asked for an address outside its range. */
static void
test_fde_outside (void)
{
  g_autofree LwCfiFde *fde = g_new (LwCfiFde, 1);
  Spec spec = spec_with (NULL, 0);
  Sections s;
  LwCfiRow row;
  uintptr_t start;

  sections_place (&s, &spec);
  start = s.table.eh_frame_hdr + PC_OFFSET;
  g_assert_cmpint (lw_cfi_find_row_and_fde_in_table (&s.table, start + 3, &row, fde), ==, LW_CFI_FOUND);
  sections_clear (&s);
  g_assert_cmpuint (fde->pc_begin, ==, start);
  g_assert_cmpuint (fde->pc_end, ==, start + PC_RANGE);
  g_assert_cmpint (lw_cfi_fde_row (fde, start - 1, &row), ==, LW_CFI_NO_FDE);
  g_assert_cmpint (lw_cfi_fde_row (fde, start + PC_RANGE, &row), ==, LW_CFI_NO_FDE);
  g_assert_cmpint (lw_cfi_fde_row (fde, start + PC_RANGE - 1, &row), ==, LW_CFI_FOUND);
  g_assert_cmpint (row.cfa_offset, ==, 8);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cfi/prologue", test_prologue);
  g_test_add_func ("/cfi/overflow/offsets", test_overflowing_offsets);
  g_test_add_func ("/cfi/overflow/advance", test_overflowing_advance);
  g_test_add_func ("/cfi/restore-in-cie", test_restore_in_cie);
  g_test_add_func ("/cfi/aligned-past-end", test_aligned_past_end);
  g_test_add_func ("/cfi/fde/large", test_large_fde);
  g_test_add_func ("/cfi/fde/too-large", test_fde_too_large);
  g_test_add_func ("/cfi/fde/outside", test_fde_outside);
  return g_test_run ();
}
