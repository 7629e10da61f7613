/* lw-cfi.c: the unwind rules of one code address, read from .eh_frame
 *
 * The format is the one of the LSB ("Exception Frames") and DWARF 4 §6.4:
 * .eh_frame_hdr holds a table sorted by initial location that leads to the
 * FDE; the FDE names its CIE; CIE and FDE hold call-frame instructions that
 * build the row of each address. The rows are computed here so that the
 * unwinder can cache them: libunwind's own cache takes a lock that blocks
 * every signal twice per frame (two system calls), which cost more than
 * the rest of an unwind.
 */
#include "lw-cfi.h"

#include <string.h>

/* DWARF pointer encodings (DW_EH_PE_*). */
enum
{
  LW_PE_OMIT = 0xff,
  LW_PE_FORMAT_MASK = 0x0f,
  LW_PE_ABSPTR = 0x00, LW_PE_ULEB128 = 0x01, LW_PE_UDATA2 = 0x02, LW_PE_UDATA4 = 0x03,
  LW_PE_UDATA8 = 0x04, LW_PE_SLEB128 = 0x09, LW_PE_SDATA2 = 0x0a, LW_PE_SDATA4 = 0x0b,
  LW_PE_SDATA8 = 0x0c,
  LW_PE_APPL_MASK = 0x70,
  LW_PE_PCREL = 0x10, LW_PE_DATAREL = 0x30, LW_PE_ALIGNED = 0x50,
  LW_PE_INDIRECT = 0x80,
  LW_PE_TABLE = LW_PE_DATAREL | LW_PE_SDATA4,  /* the search table's entries */
};

/* Call-frame instructions (DW_CFA_*). */
enum
{
  LW_CFA_ADVANCE_LOC = 0x40, LW_CFA_OFFSET = 0x80, LW_CFA_RESTORE = 0xc0,
  LW_CFA_NOP = 0x00, LW_CFA_SET_LOC = 0x01, LW_CFA_ADVANCE_LOC1 = 0x02,
  LW_CFA_ADVANCE_LOC2 = 0x03, LW_CFA_ADVANCE_LOC4 = 0x04, LW_CFA_OFFSET_EXTENDED = 0x05,
  LW_CFA_RESTORE_EXTENDED = 0x06, LW_CFA_UNDEFINED = 0x07, LW_CFA_SAME_VALUE = 0x08,
  LW_CFA_REGISTER = 0x09, LW_CFA_REMEMBER_STATE = 0x0a, LW_CFA_RESTORE_STATE = 0x0b,
  LW_CFA_DEF_CFA = 0x0c, LW_CFA_DEF_CFA_REGISTER = 0x0d, LW_CFA_DEF_CFA_OFFSET = 0x0e,
  LW_CFA_DEF_CFA_EXPRESSION = 0x0f, LW_CFA_EXPRESSION = 0x10,
  LW_CFA_OFFSET_EXTENDED_SF = 0x11, LW_CFA_DEF_CFA_SF = 0x12, LW_CFA_DEF_CFA_OFFSET_SF = 0x13,
  LW_CFA_VAL_OFFSET = 0x14, LW_CFA_VAL_OFFSET_SF = 0x15, LW_CFA_VAL_EXPRESSION = 0x16,
  LW_CFA_GNU_ARGS_SIZE = 0x2e, LW_CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f,
};

#define LW_CFI_NO_REG       0xff
#define LW_CFI_STATE_DEPTH  8   /* remember_state nesting; GCC uses 1 or 2 */
#define LW_CFI_SEARCH_CHUNK 256 /* search-table entries copied at once: 2 KiB */

/* A bounded cursor over module memory: a read past @end, or of memory no
 * longer mapped (the module was unloaded meanwhile), clears @ok and reads
 * zeroes, so a parser checks once at the end of a step. The bytes are
 * copied by the kernel (lw_modules_read_memory()), a window at a time, or,
 * for a reader over a copy (@local, holding [local_at, end)), from it. */
typedef struct
{
  uintptr_t      p;
  uintptr_t      end;
  gboolean       ok;
  const uint8_t *local;
  uintptr_t      local_at;
  LwMemoryWindow window;
} LwReader;

/* Any thread (as is every function of this file: none keeps state). */
static void
lw_reader_init (LwReader *r, uintptr_t p, uintptr_t end)
{
  r->p = p;
  r->end = end;
  r->ok = p <= end;
  r->local = NULL;
  r->local_at = 0;
  r->window.start = 0;
  r->window.len = 0;
}

/* Any thread. */
static uint64_t
lw_read_fixed (LwReader *r, size_t size)
{
  uint64_t v = 0;

  /* x86-64: little-endian, like the data. */
  if (r->ok && r->local != NULL && r->end - r->p >= size)
    {
      memcpy (&v, r->local + (r->p - r->local_at), size);
      r->p += size;
      return v;
    }
  if (!r->ok || r->end - r->p < size || !lw_memory_window_read (&r->window, r->p, size, r->end, &v))
    {
      r->ok = FALSE;
      return 0;
    }
  r->p += size;
  return v;
}

static uint8_t
lw_read_u8 (LwReader *r)
{
  return (uint8_t) lw_read_fixed (r, 1);
}

/* LEB128: seven bits a byte, low first; a signed one extends the sign bit
 * of its last byte. */
static uint64_t
lw_read_leb (LwReader *r, gboolean is_signed)
{
  uint64_t v = 0;
  guint shift = 0;
  uint8_t byte;

  do
    {
      byte = lw_read_u8 (r);
      if (shift < 64)
        v |= (uint64_t) (byte & 0x7f) << shift;
      shift += 7;
    }
  while ((byte & 0x80) && r->ok);
  if (is_signed && shift < 64 && (byte & 0x40))
    v |= ~(uint64_t) 0 << shift;
  return v;
}

static uint64_t
lw_read_uleb (LwReader *r)
{
  return lw_read_leb (r, FALSE);
}

static int64_t
lw_read_sleb (LwReader *r)
{
  return (int64_t) lw_read_leb (r, TRUE);
}

/* Any thread. One value in @encoding. @datarel is the base of
 * DW_EH_PE_datarel (the .eh_frame_hdr address; nothing in .eh_frame uses
 * it on x86-64). An indirect value is returned as the address it points at: only the
 * personality routine is encoded so, and it is skipped, not used. */
static uint64_t
lw_read_encoded (LwReader *r, uint8_t encoding, uintptr_t datarel)
{
  uintptr_t at;
  uint64_t v;

  if (encoding == LW_PE_OMIT)
    return 0;
  if ((encoding & LW_PE_APPL_MASK) == LW_PE_ALIGNED)
    {
      uintptr_t aligned = (r->p + 7) & ~(uintptr_t) 7;

      /* Past the end, the bounds check's end - p would wrap. */
      if (aligned < r->p || aligned > r->end)
        {
          r->ok = FALSE;
          return 0;
        }
      r->p = aligned;
      return lw_read_fixed (r, 8);
    }
  at = r->p;
  switch (encoding & LW_PE_FORMAT_MASK)
    {
    case LW_PE_ABSPTR: case LW_PE_UDATA8: case LW_PE_SDATA8: v = lw_read_fixed (r, 8); break;
    case LW_PE_UDATA4: v = lw_read_fixed (r, 4); break;
    case LW_PE_SDATA4: v = (uint64_t) (int64_t) (int32_t) lw_read_fixed (r, 4); break;
    case LW_PE_UDATA2: v = lw_read_fixed (r, 2); break;
    case LW_PE_SDATA2: v = (uint64_t) (int64_t) (int16_t) lw_read_fixed (r, 2); break;
    case LW_PE_ULEB128: v = lw_read_uleb (r); break;
    case LW_PE_SLEB128: v = (uint64_t) lw_read_sleb (r); break;
    default: r->ok = FALSE; return 0;
    }
  switch (encoding & LW_PE_APPL_MASK)
    {
    case 0: break;
    case LW_PE_PCREL: v += at; break;
    case LW_PE_DATAREL: v += datarel; break;
    default: r->ok = FALSE; return 0;
    }
  return v;
}

/* Any thread. A reader from @addr to the end of @table's CFI segment, or
 * FALSE when @addr lies outside it. */
static gboolean
lw_reader_in_table (LwReader *r, const LwUnwindTable *table, uintptr_t addr)
{
  if (addr < table->cfi_lo || addr >= table->cfi_hi)
    return FALSE;
  lw_reader_init (r, addr, table->cfi_hi);
  return TRUE;
}

/* Any thread. Copies [@from, @to) into @out: from @window when it holds
 * them (a small record read through it), else with one read. */
static gboolean
lw_cfi_copy (const LwMemoryWindow *window, uintptr_t from, uintptr_t to, uint8_t *out)
{
  if (from >= window->start && to >= from && to - window->start <= window->len)
    {
      memcpy (out, window->bytes + (from - window->start), to - from);
      return TRUE;
    }
  return to == from || lw_modules_read_memory (from, out, to - from);
}

/* Any thread. A CIE or FDE record at @addr: its reader is bounded by the
 * record's end. @id_field is where the CIE id / CIE pointer field starts. */
static gboolean
lw_cfi_open_record (const LwUnwindTable *table, uintptr_t addr, LwReader *r, uintptr_t *id_field)
{
  uint64_t length;

  if (!lw_reader_in_table (r, table, addr))
    return FALSE;
  length = lw_read_fixed (r, 4);
  if (length == 0xffffffff)
    length = lw_read_fixed (r, 8);
  if (!r->ok || length == 0 || length > r->end - r->p)
    return FALSE;
  r->end = r->p + length;
  *id_field = r->p;
  return TRUE;
}

gboolean
lw_cfi_search_table (const LwUnwindTable *table, uintptr_t *data, uint64_t *count)
{
  LwReader r;
  uint8_t version, eh_frame_encoding, count_encoding, table_encoding;

  if (table->eh_frame_hdr == 0 || !lw_reader_in_table (&r, table, table->eh_frame_hdr))
    return FALSE;
  if (table->eh_frame_hdr_len < r.end - r.p)
    r.end = r.p + table->eh_frame_hdr_len;
  version = lw_read_u8 (&r);
  eh_frame_encoding = lw_read_u8 (&r);
  count_encoding = lw_read_u8 (&r);
  table_encoding = lw_read_u8 (&r);
  if (version != 1 || table_encoding != LW_PE_TABLE || count_encoding == LW_PE_OMIT)
    return FALSE;
  lw_read_encoded (&r, eh_frame_encoding, table->eh_frame_hdr);
  *count = lw_read_encoded (&r, count_encoding, table->eh_frame_hdr);
  *data = r.p;
  return r.ok && *count <= (r.end - r.p) / 8;
}

/* Any thread. The FDE whose table entry covers @pc (its range is checked
 * by the caller). */
static gboolean
lw_cfi_find_fde (const LwUnwindTable *table, uintptr_t pc, uintptr_t *fde)
{
  int32_t entries[LW_CFI_SEARCH_CHUNK][2];
  uintptr_t data;
  uint64_t count, lo = 0, hi, base;

  if (!lw_cfi_search_table (table, &data, &count) || count == 0)
    return FALSE;
  /* The last entry whose initial location is <= pc: probes one entry at a
   * time, then copies the remaining range at once (each copy is a system
   * call, whose fixed cost dwarfs that of the bytes). */
  hi = count;
  while (hi - lo > LW_CFI_SEARCH_CHUNK)
    {
      uint64_t mid = lo + (hi - lo) / 2;

      if (!lw_modules_read_memory (data + mid * 8, entries[0], sizeof entries[0]))
        return FALSE;
      if (table->eh_frame_hdr + (intptr_t) entries[0][0] <= pc)
        lo = mid;
      else
        hi = mid;
    }
  base = lo;
  if (!lw_modules_read_memory (data + base * 8, entries, (hi - base) * sizeof entries[0]))
    return FALSE;
  while (hi - lo > 1)
    {
      uint64_t mid = lo + (hi - lo) / 2;

      if (table->eh_frame_hdr + (intptr_t) entries[mid - base][0] <= pc)
        lo = mid;
      else
        hi = mid;
    }
  if (table->eh_frame_hdr + (intptr_t) entries[lo - base][0] > pc)
    return FALSE;
  *fde = table->eh_frame_hdr + (intptr_t) entries[lo - base][1];
  return TRUE;
}

/* What a CIE says about the FDEs that use it. */
typedef struct
{
  uint64_t  code_align;
  int64_t   data_align;
  uint8_t   fde_encoding;
  gboolean  has_augmentation_data;  /* 'z': FDEs carry an augmentation length */
  gboolean  signal_frame;
  uintptr_t instructions;
  uintptr_t end;
  LwMemoryWindow window;            /* the last bytes its reading copied */
} LwCie;

/* Any thread. */
static gboolean
lw_cfi_read_cie (const LwUnwindTable *table, uintptr_t addr, LwCie *cie)
{
  LwReader r;
  uintptr_t id_field;
  char augmentation[8];
  guint len = 0;
  uint8_t version;
  uint64_t return_column;

  if (!lw_cfi_open_record (table, addr, &r, &id_field) || lw_read_fixed (&r, 4) != 0)
    return FALSE;
  version = lw_read_u8 (&r);
  if (version != 1 && version != 3 && version != 4)
    return FALSE;
  for (;;)
    {
      char c = (char) lw_read_u8 (&r);

      if (!r.ok || len == sizeof augmentation)
        return FALSE;
      augmentation[len++] = c;
      if (c == '\0')
        break;
    }
  if (augmentation[0] != '\0' && augmentation[0] != 'z')
    return FALSE;  /* "eh" and other pre-'z' forms: not emitted for x86-64 */
  if (version == 4)
    {
      uint8_t address_size = lw_read_u8 (&r), segment_size = lw_read_u8 (&r);

      if (address_size != 8 || segment_size != 0)
        return FALSE;
    }
  cie->code_align = lw_read_uleb (&r);
  cie->data_align = lw_read_sleb (&r);
  return_column = version == 1 ? lw_read_u8 (&r) : lw_read_uleb (&r);
  if (return_column != LW_REG_RIP)
    return FALSE;
  cie->fde_encoding = LW_PE_ABSPTR;
  cie->signal_frame = FALSE;
  cie->has_augmentation_data = augmentation[0] == 'z';
  if (cie->has_augmentation_data)
    {
      uint64_t data_len = lw_read_uleb (&r);
      uintptr_t data_end = r.p + data_len;

      if (!r.ok || data_len > r.end - r.p)
        return FALSE;
      for (guint i = 1; augmentation[i] != '\0'; i++)
        {
          if (augmentation[i] == 'R')
            cie->fde_encoding = lw_read_u8 (&r);
          else if (augmentation[i] == 'L')
            lw_read_u8 (&r);
          else if (augmentation[i] == 'P')
            lw_read_encoded (&r, lw_read_u8 (&r), 0);
          else if (augmentation[i] == 'S')
            cie->signal_frame = TRUE;
          else if (augmentation[i] != 'B')
            break;  /* unknown, but 'z' tells where the data ends */
        }
      r.p = data_end;
    }
  cie->instructions = r.p;
  cie->end = r.end;
  cie->window = r.window;
  return r.ok && cie->code_align != 0;
}

/* The state the instructions build: the row, plus the remembered ones. */
typedef struct
{
  LwCfiRow  row;
  LwCfiRow  initial;                       /* after the CIE: what restore means */
  gboolean  has_initial;                   /* the CIE's instructions have run */
  LwCfiRow  stack[LW_CFI_STATE_DEPTH];
  guint     depth;
  gboolean  unsupported;
} LwCfiMachine;

/* Any thread. @value * @factor; a product that does not fit in 64 bits is
 * corrupt CFI (its wrapped value could look like a normal rule). */
static int64_t
lw_cfi_mul (LwCfiMachine *m, int64_t value, int64_t factor)
{
  int64_t product;

  if (__builtin_mul_overflow (value, factor, &product))
    {
      m->unsupported = TRUE;
      return 0;
    }
  return product;
}

/* Any thread. An unsigned operand used as a signed offset. */
static int64_t
lw_cfi_signed (LwCfiMachine *m, uint64_t value)
{
  if (value > INT64_MAX)
    {
      m->unsupported = TRUE;
      return 0;
    }
  return (int64_t) value;
}

/* A register rule that only libunwind handles: fine for registers the
 * unwinder never looks at (vector registers), not for the others. */
static void
lw_cfi_foreign_rule (LwCfiMachine *m, uint64_t reg)
{
  if (reg < LW_N_REGS)
    m->unsupported = TRUE;
}

static void
lw_cfi_set_offset (LwCfiMachine *m, uint64_t reg, int64_t offset)
{
  if (reg >= LW_N_REGS)
    return;
  if (offset <= LW_CFI_UNDEFINED || offset > INT32_MAX)
    m->unsupported = TRUE;
  else
    m->row.saved[reg] = (int32_t) offset;
}

static void
lw_cfi_set_rule (LwCfiMachine *m, uint64_t reg, int32_t rule)
{
  if (reg < LW_N_REGS)
    m->row.saved[reg] = rule;
}

/* Any thread. DW_CFA_restore: back to the rule the CIE set; DWARF allows
 * it only in an FDE, so in the CIE there is no such rule yet. */
static void
lw_cfi_restore (LwCfiMachine *m, uint64_t reg)
{
  if (!m->has_initial)
    m->unsupported = TRUE;
  else if (reg < LW_N_REGS)
    m->row.saved[reg] = m->initial.saved[reg];
}

static void
lw_cfi_def_cfa (LwCfiMachine *m, uint64_t reg, int64_t offset)
{
  if (reg != UINT64_MAX)
    {
      if (reg >= LW_N_REGS)
        m->unsupported = TRUE;
      m->row.cfa_reg = (uint8_t) MIN (reg, LW_CFI_NO_REG);
    }
  if (offset < INT32_MIN || offset > INT32_MAX)
    m->unsupported = TRUE;
  m->row.cfa_offset = (int32_t) offset;
}

/* Any thread. Runs the instructions in [@r) for the address range
 * starting at @loc, stopping at the first one that applies past @pc. */
static void
lw_cfi_run (LwCfiMachine *m, LwReader *r, const LwCie *cie, uintptr_t loc, uintptr_t pc)
{
  while (r->p < r->end && r->ok && !m->unsupported)
    {
      uint8_t op = lw_read_u8 (r);
      uint64_t reg, delta = 0;
      gboolean advance = FALSE;

      switch (op & 0xc0)
        {
        case LW_CFA_ADVANCE_LOC:
          delta = op & 0x3f;
          advance = TRUE;
          break;
        case LW_CFA_OFFSET:
          lw_cfi_set_offset (m, op & 0x3f,
                             lw_cfi_mul (m, lw_cfi_signed (m, lw_read_uleb (r)), cie->data_align));
          break;
        case LW_CFA_RESTORE:
          lw_cfi_restore (m, op & 0x3f);
          break;
        default:
          switch (op)
            {
            case LW_CFA_NOP: break;
            case LW_CFA_SET_LOC:
              loc = lw_read_encoded (r, cie->fde_encoding, 0);
              if (loc > pc)
                return;
              break;
            case LW_CFA_ADVANCE_LOC1: delta = lw_read_fixed (r, 1); advance = TRUE; break;
            case LW_CFA_ADVANCE_LOC2: delta = lw_read_fixed (r, 2); advance = TRUE; break;
            case LW_CFA_ADVANCE_LOC4: delta = lw_read_fixed (r, 4); advance = TRUE; break;
            case LW_CFA_OFFSET_EXTENDED:
              reg = lw_read_uleb (r);
              lw_cfi_set_offset (m, reg, lw_cfi_mul (m, lw_cfi_signed (m, lw_read_uleb (r)),
                                                     cie->data_align));
              break;
            case LW_CFA_OFFSET_EXTENDED_SF:
              reg = lw_read_uleb (r);
              lw_cfi_set_offset (m, reg, lw_cfi_mul (m, lw_read_sleb (r), cie->data_align));
              break;
            case LW_CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
              reg = lw_read_uleb (r);
              lw_cfi_set_offset (m, reg, lw_cfi_mul (m, -lw_cfi_signed (m, lw_read_uleb (r)),
                                                     cie->data_align));
              break;
            case LW_CFA_RESTORE_EXTENDED: lw_cfi_restore (m, lw_read_uleb (r)); break;
            case LW_CFA_UNDEFINED: lw_cfi_set_rule (m, lw_read_uleb (r), LW_CFI_UNDEFINED); break;
            case LW_CFA_SAME_VALUE: lw_cfi_set_rule (m, lw_read_uleb (r), LW_CFI_SAME); break;
            case LW_CFA_REGISTER:
              reg = lw_read_uleb (r);
              lw_read_uleb (r);
              lw_cfi_foreign_rule (m, reg);
              break;
            case LW_CFA_REMEMBER_STATE:
              if (m->depth == LW_CFI_STATE_DEPTH)
                m->unsupported = TRUE;
              else
                m->stack[m->depth++] = m->row;
              break;
            case LW_CFA_RESTORE_STATE:
              if (m->depth == 0)
                m->unsupported = TRUE;
              else
                m->row = m->stack[--m->depth];
              break;
            case LW_CFA_DEF_CFA:
              reg = lw_read_uleb (r);
              lw_cfi_def_cfa (m, reg, lw_cfi_signed (m, lw_read_uleb (r)));
              break;
            case LW_CFA_DEF_CFA_SF:
              reg = lw_read_uleb (r);
              lw_cfi_def_cfa (m, reg, lw_cfi_mul (m, lw_read_sleb (r), cie->data_align));
              break;
            case LW_CFA_DEF_CFA_REGISTER:
              lw_cfi_def_cfa (m, lw_read_uleb (r), m->row.cfa_offset);
              break;
            case LW_CFA_DEF_CFA_OFFSET:
              lw_cfi_def_cfa (m, UINT64_MAX, lw_cfi_signed (m, lw_read_uleb (r)));
              break;
            case LW_CFA_DEF_CFA_OFFSET_SF:
              lw_cfi_def_cfa (m, UINT64_MAX, lw_cfi_mul (m, lw_read_sleb (r), cie->data_align));
              break;
            case LW_CFA_EXPRESSION:
            case LW_CFA_VAL_EXPRESSION:
              reg = lw_read_uleb (r);
              delta = lw_read_uleb (r);
              if (delta > r->end - r->p)
                r->ok = FALSE;
              else
                r->p += delta;
              lw_cfi_foreign_rule (m, reg);
              delta = 0;
              break;
            case LW_CFA_VAL_OFFSET:
            case LW_CFA_VAL_OFFSET_SF:
              reg = lw_read_uleb (r);
              if (op == LW_CFA_VAL_OFFSET)
                lw_read_uleb (r);
              else
                lw_read_sleb (r);
              lw_cfi_foreign_rule (m, reg);
              break;
            case LW_CFA_GNU_ARGS_SIZE: lw_read_uleb (r); break;
            default:  /* DW_CFA_def_cfa_expression, and anything unknown */
              m->unsupported = TRUE;
              break;
            }
        }
      /* A location past the end of the address space is past @pc too. */
      if (advance && (__builtin_mul_overflow (delta, cie->code_align, &delta)
                      || __builtin_add_overflow (loc, delta, &loc) || loc > pc))
        return;
    }
  if (!r->ok)
    m->unsupported = TRUE;
}

/* Any thread. The row at @pc from the CIE's instructions in @initial and
 * the FDE's in @insns, whose range starts at @pc_begin. */
static LwCfiStatus
lw_cfi_rows (const LwCie *cie, LwReader *initial, LwReader *insns, uintptr_t pc_begin, uintptr_t pc,
             LwCfiRow *row)
{
  LwCfiMachine m;

  memset (&m, 0, sizeof m);
  m.row.cfa_reg = LW_CFI_NO_REG;
  for (guint i = 0; i < LW_N_REGS; i++)
    m.row.saved[i] = LW_CFI_SAME;
  lw_cfi_run (&m, initial, cie, pc_begin, pc);
  m.initial = m.row;
  m.has_initial = TRUE;
  m.depth = 0;
  lw_cfi_run (&m, insns, cie, pc_begin, pc);
  row->signal_frame = cie->signal_frame;
  if (m.unsupported || m.row.cfa_reg == LW_CFI_NO_REG)
    return LW_CFI_UNSUPPORTED;
  m.row.signal_frame = cie->signal_frame;
  m.row.pc_begin = pc_begin;
  *row = m.row;
  return LW_CFI_FOUND;
}

/* Any thread. A reader over @len bytes of @fde's copy from @at, which
 * were at @addr in the module. */
static void
lw_reader_init_local (LwReader *r, const LwCfiFde *fde, guint at, uintptr_t addr, uint32_t len)
{
  lw_reader_init (r, addr, addr + len);
  r->local = fde->bytes + at;
  r->local_at = addr;
}

LwCfiStatus
lw_cfi_find_row_and_fde_in_table (const LwUnwindTable *table, uintptr_t pc, LwCfiRow *row,
                                  LwCfiFde *fde)
{
  LwCie cie;
  LwReader r, initial;
  uintptr_t fde_at, id_field;
  uint64_t pc_begin, pc_range;
  uint32_t cie_pointer;

  row->signal_frame = FALSE;
  if (fde != NULL)
    fde->pc_begin = fde->pc_end = 0;
  if (!lw_cfi_find_fde (table, pc, &fde_at) || !lw_cfi_open_record (table, fde_at, &r, &id_field))
    return LW_CFI_NO_FDE;
  cie_pointer = (uint32_t) lw_read_fixed (&r, 4);
  if (cie_pointer == 0 || cie_pointer > id_field
      || !lw_cfi_read_cie (table, id_field - cie_pointer, &cie))
    return LW_CFI_UNSUPPORTED;
  pc_begin = lw_read_encoded (&r, cie.fde_encoding, 0);
  pc_range = lw_read_encoded (&r, cie.fde_encoding & LW_PE_FORMAT_MASK, 0);
  if (!r.ok)
    return LW_CFI_UNSUPPORTED;
  if (pc < pc_begin || pc - pc_begin >= pc_range)
    return LW_CFI_NO_FDE;  /* in a gap between functions */
  row->signal_frame = cie.signal_frame;
  if (cie.has_augmentation_data)
    {
      uint64_t skip = lw_read_uleb (&r);

      if (!r.ok || skip > r.end - r.p)
        return LW_CFI_UNSUPPORTED;
      r.p += skip;
    }

  /* Both lists of instructions copied whole when they fit, and the row
   * computed from the copy: the same instructions, read at once. */
  if (fde != NULL && cie.end - cie.instructions <= LW_CFI_FDE_BYTES
      && r.end - r.p <= LW_CFI_FDE_BYTES - (cie.end - cie.instructions)
      && pc_range <= UINTPTR_MAX - pc_begin
      && lw_cfi_copy (&cie.window, cie.instructions, cie.end, fde->bytes)
      && lw_cfi_copy (&r.window, r.p, r.end, fde->bytes + (cie.end - cie.instructions)))
    {
      fde->code_align = cie.code_align;
      fde->data_align = cie.data_align;
      fde->fde_encoding = cie.fde_encoding;
      fde->signal_frame = cie.signal_frame;
      fde->cie_at = cie.instructions;
      fde->cie_len = (uint32_t) (cie.end - cie.instructions);
      fde->fde_at = r.p;
      fde->fde_len = (uint32_t) (r.end - r.p);
      fde->pc_begin = pc_begin;
      fde->pc_end = pc_begin + pc_range;
      return lw_cfi_fde_row (fde, pc, row);
    }
  lw_reader_init (&initial, cie.instructions, cie.end);
  return lw_cfi_rows (&cie, &initial, &r, pc_begin, pc, row);
}

LwCfiStatus
lw_cfi_fde_row (const LwCfiFde *fde, uintptr_t pc, LwCfiRow *row)
{
  LwCie cie;
  LwReader initial, insns;

  row->signal_frame = FALSE;
  if (pc < fde->pc_begin || pc >= fde->pc_end)
    return LW_CFI_NO_FDE;
  memset (&cie, 0, sizeof cie);
  cie.code_align = fde->code_align;
  cie.data_align = fde->data_align;
  cie.fde_encoding = fde->fde_encoding;
  cie.signal_frame = fde->signal_frame;
  lw_reader_init_local (&initial, fde, 0, fde->cie_at, fde->cie_len);
  lw_reader_init_local (&insns, fde, fde->cie_len, fde->fde_at, fde->fde_len);
  return lw_cfi_rows (&cie, &initial, &insns, fde->pc_begin, pc, row);
}

LwCfiStatus
lw_cfi_find_row_in_table (const LwUnwindTable *table, uintptr_t pc, LwCfiRow *row)
{
  return lw_cfi_find_row_and_fde_in_table (table, pc, row, NULL);
}

LwCfiStatus
lw_cfi_find_row_and_fde (uintptr_t pc, LwCfiRow *row, LwCfiFde *fde)
{
  LwUnwindTable table;

  if (fde != NULL)
    fde->pc_begin = fde->pc_end = 0;
  if (!lw_modules_find_unwind_table (pc, &table))
    {
      row->signal_frame = FALSE;
      return LW_CFI_NO_FDE;
    }
  return lw_cfi_find_row_and_fde_in_table (&table, pc, row, fde);
}

LwCfiStatus
lw_cfi_find_row (uintptr_t pc, LwCfiRow *row)
{
  return lw_cfi_find_row_and_fde (pc, row, NULL);
}
