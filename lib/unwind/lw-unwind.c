/* lw-unwind.c: DWARF unwinding of a stack copy
 *
 * Each frame is stepped with the CFI row of its address (lw-cfi.c), kept in
 * a cache of rows: a long lag samples the same return addresses over and
 * over. A frame whose rules need more than lw-cfi handles (DWARF
 * expressions: PLT entries, signal trampolines; or no CFI at all, where
 * libunwind tries its frame-pointer and trampoline heuristics) is stepped by
 * libunwind's remote API, that one frame only. A frame in no module at all
 * (JIT code) is stepped by its frame pointer or a scan, and a frame pointer
 * the walk lost is recovered, in lw-unwind-fp.c.
 *
 * libunwind is not used for every frame because its row cache takes a lock
 * that blocks all signals around each step: two rt_sigprocmask system calls
 * per frame, measured at three quarters of a 30-frame unwind.
 *
 * The "remote" process is our own, seen through a snapshot: nothing here
 * runs on the watched thread nor in a signal handler, so none of libunwind's
 * signal-safety caveats (first-use initialisation, dl_iterate_phdr under the
 * loader lock, sigprocmask around its caches) can touch the program.
 */
#include "lw-unwind.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <stdatomic.h>
#include <string.h>

#include "lw-build-config.h"
#include "lw-cfi.h"
#include "lw-exec-ranges.h"
#include "lw-modules.h"
#include "lw-private.h"
#include "lw-unwind-private.h"

/* The few entry points we use, looked up by name in the privately loaded
 * libunwind (the generic, remote-capable build: libunwind-x86_64.so). */
typedef struct
{
  unw_addr_space_t (*create_addr_space) (unw_accessors_t *, int);
  void (*destroy_addr_space) (unw_addr_space_t);
  int (*set_caching_policy) (unw_addr_space_t, unw_caching_policy_t);
  int (*init_remote) (unw_cursor_t *, unw_addr_space_t, void *);
  int (*step) (unw_cursor_t *);
  int (*get_reg) (unw_cursor_t *, unw_regnum_t, unw_word_t *);
  int (*search_unwind_table) (unw_addr_space_t, unw_word_t, unw_dyn_info_t *,
                              unw_proc_info_t *, int, void *);
} LwLibunwind;

static LwLibunwind lw_unw;
static gboolean    lw_unw_loaded;
static GError     *lw_unw_error;
static atomic_bool lw_unw_forgone;  /* never load nor use libunwind (lw_unwind_forgo) */

#define LW_ROW_CACHE_SIZE 1024  /* rows, a power of two: 88 KiB, allocated at the first walk */

/* Whole FDEs kept (lw-cfi's LwCfiFde, 8 KiB each, allocated when first
 * used), the least recently used replaced. The row cache holds answers
 * per address; these answer a new address in a function already seen
 * without reading its CFI again: the innermost frame of a thread stuck
 * in a loop is at a different pc in each sample, and an interpreter's
 * loop is one function with a large FDE (Debian's CPython 3.14: 40
 * system calls to read, about 50 us, at every sample). The other frames'
 * return addresses stay put and are served by the row cache. */
#define LW_FDE_CACHE_SIZE 4

struct _LwUnwinder
{
  unw_addr_space_t as;
  gboolean         reference;   /* every frame through libunwind (lw_unwinder_new_reference) */
  guint64          generation;  /* lw-modules' table the rows were read under */
  LwCachedRow     *rows;
  LwCfiFde        *fdes[LW_FDE_CACHE_SIZE];
  guint64          fde_used[LW_FDE_CACHE_SIZE];  /* when last used, by fde_clock */
  guint64          fde_clock;
  uintptr_t       *sps;         /* the last walk's stack pointer of each frame */
  guint            sps_len;
  LwExecRanges    *exec_ranges; /* where generated code may lie; NULL: maps unreadable */
  gint64           exec_read_at;  /* when they were read (monotonic, us); 0: never */
};

/* Watcher thread (libunwind accessor). Finds the FDE for @ip through the
 * module's .eh_frame_hdr binary-search table. */
static int
lw_unwind_find_proc_info (unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                          int need_unwind_info, void *arg)
{
  LwUnwindTable table;
  unw_dyn_info_t di;
  uintptr_t data;
  uint64_t count;

  if (!lw_modules_find_unwind_table (ip, &table) || !lw_cfi_search_table (&table, &data, &count))
    return -UNW_ENOINFO;

  memset (&di, 0, sizeof di);
  di.start_ip = table.start;
  di.end_ip = table.end;
  di.gp = table.dt_pltgot;
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.u.rti.segbase = table.eh_frame_hdr;
  di.u.rti.table_data = data;
  di.u.rti.table_len = count * 8 / sizeof (unw_word_t);
  return lw_unw.search_unwind_table (as, ip, &di, pi, need_unwind_info, arg);
}

/* libunwind frees table-format unwind info itself; nothing else is handed out. */
static void
lw_unwind_put_unwind_info (unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
}

static int
lw_unwind_get_dyn_info_list_addr (unw_addr_space_t as, unw_word_t *addr, void *arg)
{
  return -UNW_ENOINFO;
}

/* Watcher thread. One word as the unwinder sees memory: stack words come
 * from the copy; anything else (CFI, code) from a readable segment of a
 * loaded module, copied by the kernel: the module may be unloaded by
 * another thread at any moment, and a garbage return address may lead
 * into a range that is no longer mapped. Either gives FALSE, not a fault.
 * (In an ASan build the word may also lie in the redzone of an
 * instrumented global: the kernel's copy is not checked.) */
static gboolean
lw_unwind_read_word (LwWalk *walk, uint64_t addr, uint64_t *value)
{
  const LwSnapshot *snap = walk->snapshot;

  if (addr + sizeof *value < addr)
    return FALSE;
  if (addr >= snap->stack_base && addr + sizeof *value <= snap->stack_base + snap->stack_len)
    {
      memcpy (value, snap->stack + (addr - snap->stack_base), sizeof *value);
      return TRUE;
    }
  if (!(addr >= walk->readable_lo && addr + sizeof *value <= walk->readable_hi)
      && !(lw_modules_readable_range (addr, &walk->readable_lo, &walk->readable_hi)
           && addr + sizeof *value <= walk->readable_hi))
    return FALSE;
  return lw_memory_window_read (&walk->window, addr, sizeof *value, walk->readable_hi, value);
}

/* Watcher thread (libunwind accessor). */
static int
lw_unwind_access_mem (unw_addr_space_t as, unw_word_t addr, unw_word_t *value,
                      int write, void *arg)
{
  uint64_t word;

  if (write)
    return -UNW_EREADONLYREG;
  if (!lw_unwind_read_word (arg, addr, &word))
    return -UNW_EINVAL;
  *value = word;
  return 0;
}

/* Watcher thread (libunwind accessor). Registers of the frame it starts from. */
static int
lw_unwind_access_reg (unw_addr_space_t as, unw_regnum_t reg, unw_word_t *value,
                      int write, void *arg)
{
  const LwRegState *state = ((LwWalk *) arg)->state;

  if (write)
    return -UNW_EREADONLYREG;
  if (reg < 0 || reg >= LW_N_REGS || !(state->valid & (1u << reg)))
    return -UNW_EBADREG;
  *value = state->regs[reg];
  return 0;
}

static int
lw_unwind_access_fpreg (unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *value,
                        int write, void *arg)
{
  return -UNW_EBADREG;
}

static int
lw_unwind_resume (unw_addr_space_t as, unw_cursor_t *cursor, void *arg)
{
  return -UNW_EINVAL;
}

static int
lw_unwind_get_proc_name (unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
                         unw_word_t *offset, void *arg)
{
  return -UNW_ENOINFO;  /* lw-symbols names frames, later and better */
}

static unw_accessors_t lw_unwind_accessors = {
  .find_proc_info = lw_unwind_find_proc_info,
  .put_unwind_info = lw_unwind_put_unwind_info,
  .get_dyn_info_list_addr = lw_unwind_get_dyn_info_list_addr,
  .access_mem = lw_unwind_access_mem,
  .access_reg = lw_unwind_access_reg,
  .access_fpreg = lw_unwind_access_fpreg,
  .resume = lw_unwind_resume,
  .get_proc_name = lw_unwind_get_proc_name,
};

static gpointer
lw_unwind_load (gpointer data)
{
  void *handle;
  struct { const char *name; void **slot; } entries[] = {
    { "_Ux86_64_create_addr_space", (void **) &lw_unw.create_addr_space },
    { "_Ux86_64_destroy_addr_space", (void **) &lw_unw.destroy_addr_space },
    { "_Ux86_64_set_caching_policy", (void **) &lw_unw.set_caching_policy },
    { "_Ux86_64_init_remote", (void **) &lw_unw.init_remote },
    { "_Ux86_64_step", (void **) &lw_unw.step },
    { "_Ux86_64_get_reg", (void **) &lw_unw.get_reg },
    { "_Ux86_64_dwarf_search_unwind_table", (void **) &lw_unw.search_unwind_table },
  };

  handle = dlopen (LW_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL)
    {
      lw_unw_error = g_error_new (LW_ERROR, LW_ERROR_INVALID,
                                  "cannot load %s (%s); install the libunwind8 package",
                                  LW_LIBUNWIND_SONAME, dlerror ());
      return NULL;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (entries); i++)
    {
      *entries[i].slot = dlsym (handle, entries[i].name);
      if (*entries[i].slot == NULL)
        {
          lw_unw_error = g_error_new (LW_ERROR, LW_ERROR_INVALID, "%s lacks %s",
                                      LW_LIBUNWIND_SONAME, entries[i].name);
          dlclose (handle);
          return NULL;
        }
    }
  lw_unw_loaded = TRUE;
  return NULL;
}

void
lw_unwind_forgo (void)
{
  atomic_store (&lw_unw_forgone, TRUE);
}

gboolean
lw_unwind_init (GError **error)
{
  static GOnce once = G_ONCE_INIT;

  if (atomic_load (&lw_unw_forgone))
    return TRUE;
  g_once (&once, lw_unwind_load, NULL);
  if (!lw_unw_loaded && error != NULL)
    *error = g_error_copy (lw_unw_error);
  return lw_unw_loaded;
}

/* Any thread. @cache_rows keeps libunwind's cache of rows (UNW_CACHE_GLOBAL).
 * That cache is keyed by the pc alone, whether the pc was the interrupted
 * one (rules at pc) or a return address (rules at pc - 1): lagwatch's own
 * steps hand libunwind every pc as exact (the lookup pc, already minus
 * one), so the two never meet there; a whole-stack reference walk meets
 * them, and once a walk has started at a pc another reaching it as a
 * return address is given the rules at the pc (the caller's words read
 * 8 bytes off). */
static LwUnwinder *
lw_unwinder_create (gboolean reference, gboolean cache_rows)
{
  LwUnwinder *unwinder;
  gboolean forgone = atomic_load (&lw_unw_forgone);

  if ((forgone && reference) || !lw_unwind_init (NULL))
    return NULL;
  unwinder = g_new0 (LwUnwinder, 1);
  if (forgone)
    return unwinder;  /* lw-cfi's rows only */
  unwinder->as = lw_unw.create_addr_space (&lw_unwind_accessors, 0);
  if (unwinder->as == NULL)
    {
      g_free (unwinder);
      return NULL;
    }
  lw_unw.set_caching_policy (unwinder->as, cache_rows ? UNW_CACHE_GLOBAL : UNW_CACHE_NONE);
  unwinder->reference = reference;
  return unwinder;
}

LwUnwinder *
lw_unwinder_new (void)
{
  return lw_unwinder_create (FALSE, TRUE);
}

LwUnwinder *
lw_unwinder_new_reference (void)
{
  return lw_unwinder_create (TRUE, FALSE);
}

LwUnwinder *
lw_unwinder_new_reference_cached (void)
{
  return lw_unwinder_create (TRUE, TRUE);
}

void
lw_unwinder_free (LwUnwinder *unwinder)
{
  if (unwinder == NULL)
    return;
  if (unwinder->as != NULL)
    lw_unw.destroy_addr_space (unwinder->as);
  g_free (unwinder->rows);
  for (guint i = 0; i < LW_FDE_CACHE_SIZE; i++)
    g_free (unwinder->fdes[i]);
  g_free (unwinder->sps);
  lw_exec_ranges_free (unwinder->exec_ranges);
  g_free (unwinder);
}

/* Watcher thread. The row at @pc from a kept FDE that covers it, else
 * from lw-cfi, keeping the FDE in place of the least recently used. */
static LwCfiStatus
lw_unwinder_find_row (LwUnwinder *unwinder, uintptr_t pc, LwCfiRow *row)
{
  guint oldest = 0;

  for (guint i = 0; i < LW_FDE_CACHE_SIZE; i++)
    {
      const LwCfiFde *fde = unwinder->fdes[i];

      if (fde != NULL && pc >= fde->pc_begin && pc < fde->pc_end)
        {
          unwinder->fde_used[i] = ++unwinder->fde_clock;
          return lw_cfi_fde_row (fde, pc, row);
        }
      if (unwinder->fde_used[i] < unwinder->fde_used[oldest])
        oldest = i;
    }
  if (unwinder->fdes[oldest] == NULL)
    unwinder->fdes[oldest] = g_new (LwCfiFde, 1);
  unwinder->fde_used[oldest] = ++unwinder->fde_clock;
  return lw_cfi_find_row_and_fde (pc, row, unwinder->fdes[oldest]);
}

/* Watcher thread. The row for lookup address @pc, from the cache. */
const LwCachedRow *
lw_unwinder_row (LwUnwinder *unwinder, uintptr_t pc)
{
  static const LwCachedRow no_row = { 0, LW_CFI_NO_FDE, { 0 } };
  LwCachedRow *entry = &unwinder->rows[((uint64_t) pc * UINT64_C (0x9e3779b97f4a7c15)) >> 54];

  G_STATIC_ASSERT (LW_ROW_CACHE_SIZE == 1 << (64 - 54));
  if (pc == 0)
    return &no_row;  /* 0 marks an empty entry */
  if (entry->pc != pc)
    {
      entry->status = lw_unwinder_find_row (unwinder, pc, &entry->row);
      entry->pc = pc;
    }
  return entry;
}

/* Watcher thread. Steps @state to the caller's frame with @row, as
 * libgcc's unwinder and libunwind 1.8's DWARF step do, checks in the same
 * order: the caller's stack pointer is the CFA unless the rules save it
 * (glibc's context-switching code restores rsp from a ucontext: CFA = rdx,
 * rsp at CFA+160), a register without a rule keeps its value, an
 * undefined return address marks the outermost frame, and so does an
 * undefined frame pointer (the x86-64 ABI's convention). A saved register
 * that cannot be read is only an error if it is the return address. */
LwStep
lw_unwind_apply_row (const LwCfiRow *row, LwWalk *walk, LwRegState *state)
{
  LwRegState caller = *state;
  uint64_t cfa;

  if (row->cfa_reg >= LW_N_REGS || !(state->valid & (1u << row->cfa_reg)))
    return LW_STEP_FAIL;
  if (row->saved[LW_REG_RIP] == LW_CFI_UNDEFINED)
    return LW_STEP_END;
  cfa = state->regs[row->cfa_reg] + (int64_t) row->cfa_offset;
  for (guint r = 0; r < LW_N_REGS; r++)
    {
      if (row->saved[r] == LW_CFI_SAME)
        continue;
      if (row->saved[r] == LW_CFI_UNDEFINED
          || !lw_unwind_read_word (walk, cfa + (int64_t) row->saved[r], &caller.regs[r]))
        caller.valid &= ~(1u << r);
      else
        caller.valid |= 1u << r;
    }
  if (row->saved[LW_REG_RSP] == LW_CFI_SAME || row->saved[LW_REG_RSP] == LW_CFI_UNDEFINED)
    {
      caller.regs[LW_REG_RSP] = cfa;
      caller.valid |= 1u << LW_REG_RSP;
    }
  if (!(caller.valid & (1u << LW_REG_RIP))
      || (caller.regs[LW_REG_RIP] == state->regs[LW_REG_RIP] && cfa == state->regs[LW_REG_RSP]))
    return LW_STEP_FAIL;  /* unreadable, or a frame that returns to itself */
  if (row->saved[LW_REG_RBP] == LW_CFI_UNDEFINED)
    return LW_STEP_END;
  *state = caller;
  return LW_STEP_OK;
}

/* Watcher thread. Steps @state to the caller's frame with libunwind.
 * libunwind's remote cursor takes its first pc as exact; for a frame
 * reached through a return address it is handed @lookup_pc (the address
 * inside the call), which selects the right rules. */
static LwStep
lw_unwind_step_libunwind (LwUnwinder *unwinder, const LwSnapshot *snap, LwRegState *state,
                          uintptr_t lookup_pc)
{
  LwRegState start = *state;
  LwWalk walk = { snap, &start, 0, 0, { 0, 0, { 0 } } };
  unw_cursor_t cursor;
  int step;

  start.regs[LW_REG_RIP] = lookup_pc;
  if (unwinder->as == NULL)
    return LW_STEP_FAIL;
  if (lw_unw.init_remote (&cursor, unwinder->as, &walk) < 0)
    return LW_STEP_FAIL;
  step = lw_unw.step (&cursor);
  if (step <= 0)
    return step == 0 ? LW_STEP_END : LW_STEP_FAIL;
  state->valid = 0;
  for (int r = 0; r < LW_N_REGS; r++)
    {
      unw_word_t value;

      if (lw_unw.get_reg (&cursor, r, &value) == 0)
        {
          state->regs[r] = value;
          state->valid |= 1u << r;
        }
    }
  return state->valid & (1u << LW_REG_RIP) ? LW_STEP_OK : LW_STEP_FAIL;
}

/* How often, at most, the unwinder reads this process's maps again when
 * an address outside every module lies in none of the executable mappings
 * it knows: a runtime maps new code as it compiles, and a walk through a
 * frame whose saved words are no return address would otherwise read the
 * maps at every sample. */
#define LW_EXEC_RANGES_REFRESH_US (100 * 1000)

/* Watcher thread. FALSE when @addr, outside every module, is known not to
 * be code: it lies in no anonymous executable mapping (a heap or stack
 * pointer that a frame holds where a return address would be). TRUE when
 * it is in one, or when the maps cannot be read (nothing then says it is
 * not code). */
gboolean
lw_unwinder_in_generated_code (LwUnwinder *unwinder, uintptr_t addr)
{
  gint64 now;

  if (unwinder->exec_ranges != NULL && lw_exec_ranges_start (unwinder->exec_ranges, addr) != 0)
    return TRUE;
  now = g_get_monotonic_time ();
  if (unwinder->exec_read_at == 0 || now - unwinder->exec_read_at >= LW_EXEC_RANGES_REFRESH_US)
    {
      lw_exec_ranges_free (unwinder->exec_ranges);
      unwinder->exec_ranges = lw_exec_ranges_read ();
      unwinder->exec_read_at = now;
      if (unwinder->exec_ranges != NULL)
        return lw_exec_ranges_start (unwinder->exec_ranges, addr) != 0;
    }
  return unwinder->exec_ranges == NULL;
}

/* Any thread. The stack pointer in @regs, 0 when not known. */
static uintptr_t
lw_unwind_sp (const uint64_t *regs, uint32_t valid)
{
  return (valid & (1u << LW_REG_RSP)) ? (uintptr_t) regs[LW_REG_RSP] : 0;
}

/* Watcher thread. The reference walk: one libunwind cursor over the whole
 * stack, as lagwatch unwound before lw-cfi. */
static guint
lw_unwinder_walk_libunwind (LwUnwinder *unwinder, LwWalk *walk, uintptr_t *ips, guint n,
                            guint max_frames, gboolean *truncated)
{
  unw_cursor_t cursor;

  if (lw_unw.init_remote (&cursor, unwinder->as, walk) < 0)
    {
      *truncated = TRUE;
      return n;
    }
  while (n < max_frames)
    {
      unw_word_t ip = 0, sp = 0;
      int step = lw_unw.step (&cursor);

      if (step == 0)
        return n;  /* the outermost frame */
      if (step < 0 || lw_unw.get_reg (&cursor, UNW_REG_IP, &ip) < 0)
        break;  /* no CFI, or the walk left the stack copy */
      if (ip == 0)
        return n;
      unwinder->sps[n] = lw_unw.get_reg (&cursor, UNW_REG_SP, &sp) < 0 ? 0 : (uintptr_t) sp;
      ips[n++] = (uintptr_t) ip;
    }
  *truncated = TRUE;
  return n;
}

/* Watcher thread. */
const uintptr_t *
lw_unwinder_stack_pointers (LwUnwinder *unwinder)
{
  return unwinder->sps;
}

/* Watcher thread. */
guint
lw_unwinder_walk (LwUnwinder       *unwinder,
                  const LwSnapshot *snapshot,
                  uintptr_t        *ips,
                  guint             max_frames,
                  gboolean         *truncated)
{
  LwRegState state;
  LwWalk walk = { snapshot, &state, 0, 0, { 0, 0, { 0 } } };
  gboolean exact = TRUE;  /* the pc is the interrupted one, or follows a signal frame */
  guint64 generation;
  guint n = 0;

  *truncated = FALSE;
  if (max_frames == 0 || !(snapshot->regs_valid & (1u << LW_REG_RIP)))
    return 0;
  if (unwinder != NULL && unwinder->sps_len < max_frames)
    {
      unwinder->sps = g_renew (uintptr_t, unwinder->sps, max_frames);
      unwinder->sps_len = max_frames;
    }
  if (unwinder != NULL)
    unwinder->sps[0] = lw_unwind_sp (snapshot->regs, snapshot->regs_valid);
  ips[n++] = (uintptr_t) snapshot->regs[LW_REG_RIP];
  if (unwinder == NULL)
    {
      *truncated = TRUE;
      return n;
    }
  memcpy (state.regs, snapshot->regs, sizeof state.regs);
  state.valid = snapshot->regs_valid;
  if (unwinder->reference)
    return lw_unwinder_walk_libunwind (unwinder, &walk, ips, n, max_frames, truncated);

  /* Rows read from a module that has been unloaded since are stale. */
  generation = lw_modules_get_generation ();
  if (unwinder->rows == NULL)
    unwinder->rows = g_new0 (LwCachedRow, LW_ROW_CACHE_SIZE);
  else if (generation != unwinder->generation)
    {
      memset (unwinder->rows, 0, LW_ROW_CACHE_SIZE * sizeof *unwinder->rows);
      for (guint i = 0; i < LW_FDE_CACHE_SIZE; i++)
        if (unwinder->fdes[i] != NULL)
          unwinder->fdes[i]->pc_end = unwinder->fdes[i]->pc_begin;
    }
  unwinder->generation = generation;

  while (n < max_frames)
    {
      uintptr_t pc = (uintptr_t) state.regs[LW_REG_RIP];
      uintptr_t lookup_pc = exact ? pc : pc - 1;
      /* A copy: recovering a frame pointer looks up other rows, which may
       * take this one's place in the cache. */
      const LwCachedRow cached = *lw_unwinder_row (unwinder, lookup_pc);
      const LwCachedRow *entry = &cached;
      LwStep step;

      if (entry->status == LW_CFI_FOUND)
        {
          if (entry->row.cfa_reg == LW_REG_RBP && !(state.valid & (1u << LW_REG_RBP)))
            lw_unwind_recover_fp (unwinder, &walk, &entry->row, &state);
          step = lw_unwind_apply_row (&entry->row, &walk, &state);
        }
      else if (!lw_modules_is_readable (lookup_pc, 1))
        {
          /* A return address that is no code at all: the step that gave
           * it took another word for one (a scan through generated code
           * can find a stale return address, whose CFI then reads garbage).
           * The frame is dropped and the walk ends, cut. The first frame's
           * pc is the one the thread was running: code. */
          if (n > 1 && !lw_unwinder_in_generated_code (unwinder, lookup_pc))
            {
              n--;
              break;
            }
          step = lw_unwind_step_generated (unwinder, snapshot, &state);
        }
      else
        step = lw_unwind_step_libunwind (unwinder, snapshot, &state,
                                         entry->row.signal_frame ? pc : lookup_pc);
      if (step == LW_STEP_END)
        return n;
      if (step == LW_STEP_FAIL)
        break;
      exact = entry->row.signal_frame;
      if (state.regs[LW_REG_RIP] == 0)
        return n;
      unwinder->sps[n] = lw_unwind_sp (state.regs, state.valid);
      ips[n++] = (uintptr_t) state.regs[LW_REG_RIP];
    }
  *truncated = TRUE;
  return n;
}
