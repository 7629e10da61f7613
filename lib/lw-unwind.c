/* lw-unwind.c: DWARF unwinding of a stack copy with libunwind's remote API
 *
 * The "remote" process is our own, seen through a snapshot: libunwind never
 * runs on the watched thread nor in a signal handler, so none of its
 * signal-safety caveats (first-use initialisation, dl_iterate_phdr under the
 * loader lock, sigprocmask around its caches) can touch the program.
 */
#include "lw-unwind.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <string.h>

#include "lw-build-config.h"
#include "lw-modules.h"
#include "lw-private.h"

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

struct _LwUnwinder
{
  unw_addr_space_t as;
};

/* What the accessors see through their `arg`. */
typedef struct
{
  const LwSnapshot *snapshot;
  uintptr_t         readable_lo;  /* the last readable segment found: most */
  uintptr_t         readable_hi;  /* reads of a step fall in the same one */
} LwWalk;

/* DWARF pointer encodings used by .eh_frame_hdr (DW_EH_PE_*). */
enum
{
  LW_PE_OMIT = 0xff,
  LW_PE_FORMAT_MASK = 0x0f,
  LW_PE_ABSPTR = 0x00, LW_PE_UDATA2 = 0x02, LW_PE_UDATA4 = 0x03, LW_PE_UDATA8 = 0x04,
  LW_PE_SDATA2 = 0x0a, LW_PE_SDATA4 = 0x0b, LW_PE_SDATA8 = 0x0c,
  LW_PE_APPL_MASK = 0x70,
  LW_PE_PCREL = 0x10, LW_PE_DATAREL = 0x30,
  LW_PE_TABLE = LW_PE_DATAREL | LW_PE_SDATA4,  /* the only table libunwind searches */
};

/* Watcher thread. Reads one encoded value at *@p in mapped .eh_frame_hdr
 * memory, advancing *@p. @datarel is the .eh_frame_hdr address. */
static gboolean
lw_unwind_read_encoded (uintptr_t *p, guint8 encoding, uintptr_t datarel, uint64_t *value)
{
  uintptr_t at = *p;
  uint64_t v;

  switch (encoding & LW_PE_FORMAT_MASK)
    {
    case LW_PE_ABSPTR: case LW_PE_UDATA8: case LW_PE_SDATA8:
      memcpy (&v, (const void *) at, 8); *p += 8; break;
    case LW_PE_UDATA4:
      { guint32 u; memcpy (&u, (const void *) at, 4); v = u; *p += 4; break; }
    case LW_PE_SDATA4:
      { gint32 s; memcpy (&s, (const void *) at, 4); v = (uint64_t) (int64_t) s; *p += 4; break; }
    case LW_PE_UDATA2:
      { guint16 u; memcpy (&u, (const void *) at, 2); v = u; *p += 2; break; }
    case LW_PE_SDATA2:
      { gint16 s; memcpy (&s, (const void *) at, 2); v = (uint64_t) (int64_t) s; *p += 2; break; }
    default:
      return FALSE;
    }
  switch (encoding & LW_PE_APPL_MASK)
    {
    case 0: break;
    case LW_PE_PCREL: v += at; break;
    case LW_PE_DATAREL: v += datarel; break;
    default: return FALSE;
    }
  *value = v;
  return TRUE;
}

/* Watcher thread (libunwind accessor). Finds the FDE for @ip through the
 * module's .eh_frame_hdr binary-search table. */
static int
lw_unwind_find_proc_info (unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                          int need_unwind_info, void *arg)
{
  LwUnwindTable table;
  unw_dyn_info_t di;
  uintptr_t p;
  guint8 header[4];
  uint64_t eh_frame, fde_count;

  if (!lw_modules_find_unwind_table (ip, &table) || table.eh_frame_hdr == 0
      || table.eh_frame_hdr_len < 4 + 8)
    return -UNW_ENOINFO;

  memcpy (header, (const void *) table.eh_frame_hdr, sizeof header);
  if (header[0] != 1 || header[3] != LW_PE_TABLE || header[1] == LW_PE_OMIT
      || header[2] == LW_PE_OMIT)
    return -UNW_ENOINFO;
  p = table.eh_frame_hdr + 4;
  if (!lw_unwind_read_encoded (&p, header[1], table.eh_frame_hdr, &eh_frame)
      || !lw_unwind_read_encoded (&p, header[2], table.eh_frame_hdr, &fde_count)
      || p + fde_count * 8 > table.eh_frame_hdr + table.eh_frame_hdr_len)
    return -UNW_ENOINFO;

  memset (&di, 0, sizeof di);
  di.start_ip = table.start;
  di.end_ip = table.end;
  di.gp = table.dt_pltgot;
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.u.rti.segbase = table.eh_frame_hdr;
  di.u.rti.table_data = p;
  di.u.rti.table_len = fde_count * 8 / sizeof (unw_word_t);
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

/* Watcher thread (libunwind accessor). Stack words come from the copy;
 * anything else (CFI, code) from a mapped segment of a loaded module. The
 * segment stays mapped while read: the unwinder only reads modules in the
 * stuck thread's active call chain. */
static int
lw_unwind_access_mem (unw_addr_space_t as, unw_word_t addr, unw_word_t *value,
                      int write, void *arg)
{
  LwWalk *walk = arg;
  const LwSnapshot *snap = walk->snapshot;

  if (write)
    return -UNW_EREADONLYREG;
  if (addr + sizeof *value < addr)
    return -UNW_EINVAL;
  if (addr >= snap->stack_base && addr + sizeof *value <= snap->stack_base + snap->stack_len)
    {
      memcpy (value, snap->stack + (addr - snap->stack_base), sizeof *value);
      return 0;
    }
  if (!(addr >= walk->readable_lo && addr + sizeof *value <= walk->readable_hi)
      && !(lw_modules_readable_range (addr, &walk->readable_lo, &walk->readable_hi)
           && addr + sizeof *value <= walk->readable_hi))
    return -UNW_EINVAL;
  memcpy (value, (const void *) addr, sizeof *value);
  return 0;
}

/* Watcher thread (libunwind accessor). Registers of the innermost frame. */
static int
lw_unwind_access_reg (unw_addr_space_t as, unw_regnum_t reg, unw_word_t *value,
                      int write, void *arg)
{
  const LwSnapshot *snap = ((LwWalk *) arg)->snapshot;

  if (write)
    return -UNW_EREADONLYREG;
  if (reg < 0 || reg >= LW_N_REGS || !(snap->regs_valid & (1u << reg)))
    return -UNW_EBADREG;
  *value = snap->regs[reg];
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

gboolean
lw_unwind_init (GError **error)
{
  static GOnce once = G_ONCE_INIT;

  g_once (&once, lw_unwind_load, NULL);
  if (!lw_unw_loaded && error != NULL)
    *error = g_error_copy (lw_unw_error);
  return lw_unw_loaded;
}

LwUnwinder *
lw_unwinder_new (void)
{
  LwUnwinder *unwinder;

  if (!lw_unwind_init (NULL))
    return NULL;
  unwinder = g_new0 (LwUnwinder, 1);
  unwinder->as = lw_unw.create_addr_space (&lw_unwind_accessors, 0);
  if (unwinder->as == NULL)
    {
      g_free (unwinder);
      return NULL;
    }
  lw_unw.set_caching_policy (unwinder->as, UNW_CACHE_GLOBAL);
  return unwinder;
}

void
lw_unwinder_free (LwUnwinder *unwinder)
{
  if (unwinder == NULL)
    return;
  lw_unw.destroy_addr_space (unwinder->as);
  g_free (unwinder);
}

/* Watcher thread. */
guint
lw_unwinder_walk (LwUnwinder       *unwinder,
                  const LwSnapshot *snapshot,
                  uintptr_t        *ips,
                  guint             max_frames,
                  gboolean         *truncated)
{
  LwWalk walk = { snapshot, 0, 0 };
  unw_cursor_t cursor;
  guint n = 0;

  *truncated = FALSE;
  if (max_frames == 0 || !(snapshot->regs_valid & (1u << LW_REG_RIP)))
    return 0;
  ips[n++] = (uintptr_t) snapshot->regs[LW_REG_RIP];
  if (unwinder == NULL || lw_unw.init_remote (&cursor, unwinder->as, &walk) < 0)
    {
      *truncated = TRUE;
      return n;
    }

  while (n < max_frames)
    {
      unw_word_t ip = 0;
      int step = lw_unw.step (&cursor);

      if (step == 0)
        return n;  /* the outermost frame */
      if (step < 0 || lw_unw.get_reg (&cursor, UNW_REG_IP, &ip) < 0)
        break;  /* no CFI, or the walk left the stack copy */
      if (ip == 0)
        return n;
      ips[n++] = (uintptr_t) ip;
    }
  *truncated = TRUE;
  return n;
}
