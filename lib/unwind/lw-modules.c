/* lw-modules.c: the table of loaded ELF modules
 *
 * One process-wide array of modules sorted by start address, rebuilt from
 * dl_iterate_phdr() whenever the loader's load/unload counters move. Every
 * value is read from the mapped image (program headers, notes, dynamic
 * section) while dl_iterate_phdr() holds the loader lock, so nothing is read
 * from an object being unmapped. Modules that survive a rescan are kept, with
 * the symbol table lw-symbols.c attached to them. A module's path comes from
 * lw-module-path.c; reading memory through the kernel is lw-memory.c's.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-modules.h"
#include "lw-module-path.h"
#include "lw-say.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct
{
  uintptr_t start; /* runtime address of the segment */
  uintptr_t end;   /* start + p_memsz */
  guint32   flags; /* p_flags: PF_R, PF_W, PF_X */
} LwSegment;

struct _LwModule
{
  gatomicrefcount   ref_count;
  const char       *path;          /* interned: reports keep it past dlclose */
  gboolean          is_vdso;
  uintptr_t         bias;
  /* Where the loader keeps the program headers: with the bias, what
   * identifies the object again in a later dl_iterate_phdr(). */
  const ElfW(Phdr) *phdr;
  LwSegment        *segments;
  guint             n_segments;
  uintptr_t         start;
  uintptr_t         end;
  uintptr_t         eh_frame_hdr;
  uintptr_t         eh_frame_hdr_len;
  uintptr_t         dynamic;
  uintptr_t         dynamic_len;
  uintptr_t         dt_pltgot;
  guint8           *build_id;
  gsize             build_id_len;
  const char       *build_id_hex;  /* interned, or NULL */
  /* Written under lw_modules_lock, read with g_atomic_pointer_get(). */
  gpointer          symbols;
  GDestroyNotify    symbols_free;
};

static GMutex     lw_modules_lock;
/* HOLDS: lw_modules_lock. (owned) LwModule*, sorted by start; NULL before
 * the first scan. */
static GPtrArray *lw_modules_table;
/* The loader's counters seen by the last scan, written under
 * lw_modules_lock and read without it by lw_modules_get_generation(), as a
 * sequence lock: lw_modules_seq is odd while a scan publishes, and its even
 * values (2 after the first scan) are the table's generations. */
static atomic_bool          lw_modules_have_counters;
static atomic_uint_fast64_t lw_modules_adds;
static atomic_uint_fast64_t lw_modules_subs;
static atomic_uint_fast64_t lw_modules_seq;

/* Any thread. */
static void
lw_module_free (LwModule *module)
{
  if (module->symbols_free != NULL)
    module->symbols_free (module->symbols);
  g_free (module->segments);
  g_free (module->build_id);
  g_free (module);
}

/* Any thread. */
void
lw_module_unref (LwModule *module)
{
  g_return_if_fail (module != NULL);

  if (g_atomic_ref_count_dec (&module->ref_count))
    lw_module_free (module);
}

/* Any thread. */
LwModule *
lw_module_ref (LwModule *module)
{
  g_return_val_if_fail (module != NULL, NULL);

  g_atomic_ref_count_inc (&module->ref_count);
  return module;
}

/* Inside dl_iterate_phdr(). Reads the NT_GNU_BUILD_ID note of one PT_NOTE
 * segment, if it has one, into @module. */
static void
lw_module_read_build_id (LwModule         *module,
                         const ElfW(Phdr) *note_phdr)
{
  const guint8 *notes = (const guint8 *) (module->bias + note_phdr->p_vaddr);
  /* Notes in an 8-aligned segment (.note.gnu.property) are padded to 8. */
  gsize align = note_phdr->p_align == 8 ? 8 : 4;
  gsize len = note_phdr->p_memsz;
  gsize offset = 0;

  while (len - offset >= sizeof (ElfW(Nhdr)))
    {
      const ElfW(Nhdr) *note = (const ElfW(Nhdr) *) (notes + offset);
      gsize name = offset + sizeof (ElfW(Nhdr));
      gsize desc = name + ((note->n_namesz + align - 1) & ~(align - 1));
      gsize next = desc + ((note->n_descsz + align - 1) & ~(align - 1));

      if (next > len)
        return;

      if (note->n_type == NT_GNU_BUILD_ID &&
          note->n_namesz == sizeof ELF_NOTE_GNU &&
          memcmp (notes + name, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU) == 0 &&
          note->n_descsz > 0)
        {
          GString *hex = g_string_sized_new (note->n_descsz * 2);

          module->build_id = g_memdup2 (notes + desc, note->n_descsz);
          module->build_id_len = note->n_descsz;
          for (gsize i = 0; i < module->build_id_len; i++)
            g_string_append_printf (hex, "%02x", module->build_id[i]);
          module->build_id_hex = g_intern_string (hex->str);
          g_string_free (hex, TRUE);
          return;
        }
      offset = next;
    }
}

/* Any thread. */
uintptr_t
lw_module_dynamic_address (LwModule *module,
                           uintptr_t d_ptr)
{
  g_return_val_if_fail (module != NULL, 0);

  /* An unrelocated d_ptr is a link-time address, below the module's runtime
   * range unless the bias is 0, in which case both forms are equal. */
  if (d_ptr >= module->start && d_ptr < module->end)
    return d_ptr;
  return d_ptr + module->bias;
}

/* Inside dl_iterate_phdr(). */
static uintptr_t
lw_module_read_pltgot (LwModule *module)
{
  const ElfW(Dyn) *dyn = (const ElfW(Dyn) *) module->dynamic;
  gsize n = module->dynamic_len / sizeof (ElfW(Dyn));

  for (gsize i = 0; i < n && dyn[i].d_tag != DT_NULL; i++)
    if (dyn[i].d_tag == DT_PLTGOT)
      return lw_module_dynamic_address (module, dyn[i].d_un.d_ptr);
  return 0;
}

/* Inside dl_iterate_phdr(). A new module describing @info, or NULL when it
 * maps nothing. */
static LwModule *
lw_module_new_from_info (const struct dl_phdr_info *info)
{
  LwModule *module;
  guint n_loads = 0;

  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_memsz > 0)
      n_loads++;
  if (n_loads == 0)
    return NULL;

  module = g_new0 (LwModule, 1);
  g_atomic_ref_count_init (&module->ref_count);
  module->is_vdso = lw_module_info_is_vdso (info);
  {
    char *path = lw_module_info_path (info);

    module->path = g_intern_string (path);
    g_free (path);
  }
  module->bias = info->dlpi_addr;
  module->phdr = info->dlpi_phdr;
  module->segments = g_new (LwSegment, n_loads);
  module->start = UINTPTR_MAX;

  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
      uintptr_t start = module->bias + phdr->p_vaddr;

      switch (phdr->p_type)
        {
        case PT_LOAD:
          if (phdr->p_memsz == 0)
            break;
          module->segments[module->n_segments++] = (LwSegment) {
            .start = start,
            .end = start + phdr->p_memsz,
            .flags = phdr->p_flags,
          };
          module->start = MIN (module->start, start);
          module->end = MAX (module->end, start + phdr->p_memsz);
          break;
        case PT_GNU_EH_FRAME:
          module->eh_frame_hdr = start;
          module->eh_frame_hdr_len = phdr->p_memsz;
          break;
        case PT_DYNAMIC:
          module->dynamic = start;
          module->dynamic_len = phdr->p_memsz;
          break;
        default:
          break;
        }
    }
  /* Notes and the dynamic section are read only where a PT_LOAD maps them:
   * nothing says a malformed object's do. */
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && module->build_id == NULL; i++)
    if (info->dlpi_phdr[i].p_type == PT_NOTE &&
        lw_module_contains (module, module->bias + info->dlpi_phdr[i].p_vaddr,
                            info->dlpi_phdr[i].p_memsz))
      lw_module_read_build_id (module, &info->dlpi_phdr[i]);

  if (module->dynamic != 0 &&
      lw_module_contains (module, module->dynamic, module->dynamic_len))
    module->dt_pltgot = lw_module_read_pltgot (module);

  return module;
}

/* Any thread. Modules with the same path, bias and build-id are the same
 * file mapped at the same place: their symbol tables are interchangeable. */
static gboolean
lw_module_same_object (const LwModule *a,
                       const LwModule *b)
{
  return a->bias == b->bias &&
         a->build_id_len == b->build_id_len &&
         (a->build_id_len == 0 ||
          memcmp (a->build_id, b->build_id, a->build_id_len) == 0) &&
         g_strcmp0 (a->path, b->path) == 0;
}

/* HOLDS: lw_modules_lock (or owns @table). The module of @table
 * containing @addr, or NULL. */
static LwModule *
lw_modules_bsearch (GPtrArray *table,
                    uintptr_t  addr)
{
  LwModule *module;
  guint lo = 0;
  guint hi = table->len;

  /* Find the last module starting at or below @addr. */
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;

      module = g_ptr_array_index (table, mid);
      if (module->start <= addr)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo == 0)
    return NULL;

  module = g_ptr_array_index (table, lo - 1);
  return addr < module->end ? module : NULL;
}

static gboolean
lw_info_has_counters (size_t size)
{
  return size >= offsetof (struct dl_phdr_info, dlpi_subs) +
                 sizeof (((struct dl_phdr_info *) NULL)->dlpi_subs);
}

typedef struct
{
  GPtrArray *old_table; /* (nullable) */
  GPtrArray *new_table;
  gboolean   have_counters;
  guint64    adds;
  guint64    subs;
} LwScan;

/* Inside dl_iterate_phdr(), HOLDS: lw_modules_lock. */
static int
lw_modules_scan_cb (struct dl_phdr_info *info,
                    size_t               size,
                    void                *user_data)
{
  LwScan *scan = user_data;
  LwModule *module;
  LwModule *old;

  if (lw_info_has_counters (size))
    {
      scan->have_counters = TRUE;
      scan->adds = info->dlpi_adds;
      scan->subs = info->dlpi_subs;
    }

  module = lw_module_new_from_info (info);
  if (module == NULL)
    return 0;

  old = scan->old_table != NULL ? lw_modules_bsearch (scan->old_table, module->start) : NULL;
  if (old != NULL && old->start == module->start && lw_module_same_object (old, module))
    {
      lw_module_free (module);
      module = lw_module_ref (old);
    }
  g_ptr_array_add (scan->new_table, module);
  return 0;
}

static int
lw_module_compare_start (gconstpointer a,
                         gconstpointer b)
{
  const LwModule *ma = *(LwModule * const *) a;
  const LwModule *mb = *(LwModule * const *) b;

  return ma->start < mb->start ? -1 : ma->start > mb->start;
}

/* HOLDS: lw_modules_lock. Replaces the table by a fresh scan, keeping the
 * modules (and their symbol tables) that are still loaded. */
static void
lw_modules_rescan_unlocked (void)
{
  LwScan scan = {
    .old_table = lw_modules_table,
    .new_table = g_ptr_array_new_with_free_func ((GDestroyNotify) lw_module_unref),
  };

  dl_iterate_phdr (lw_modules_scan_cb, &scan);
  g_ptr_array_sort (scan.new_table, lw_module_compare_start);

  atomic_fetch_add (&lw_modules_seq, 1);
  if (lw_modules_table != NULL)
    g_ptr_array_unref (lw_modules_table);
  lw_modules_table = scan.new_table;
  atomic_store (&lw_modules_have_counters, scan.have_counters);
  atomic_store (&lw_modules_adds, scan.adds);
  atomic_store (&lw_modules_subs, scan.subs);
  atomic_fetch_add (&lw_modules_seq, 1);
}

typedef struct
{
  gboolean valid;
  guint64  adds;
  guint64  subs;
} LwCounters;

/* Inside dl_iterate_phdr(): the counters are in every entry, so one is
 * enough. */
static int
lw_modules_counters_cb (struct dl_phdr_info *info,
                        size_t               size,
                        void                *user_data)
{
  LwCounters *counters = user_data;

  if (lw_info_has_counters (size))
    {
      counters->valid = TRUE;
      counters->adds = info->dlpi_adds;
      counters->subs = info->dlpi_subs;
    }
  return 1;
}

/* HOLDS: lw_modules_lock. Rescans if objects were loaded or unloaded since
 * the last scan. */
static void
lw_modules_sync_unlocked (void)
{
  if (lw_modules_table == NULL)
    lw_modules_rescan_unlocked ();
  else if (lw_modules_have_counters)
    {
      LwCounters now = { FALSE, 0, 0 };

      dl_iterate_phdr (lw_modules_counters_cb, &now);
      if (!now.valid || now.adds != atomic_load (&lw_modules_adds) ||
          now.subs != atomic_load (&lw_modules_subs))
        lw_modules_rescan_unlocked ();
    }
}

/* HOLDS: lw_modules_lock. The module containing @addr, rescanning first if
 * objects were loaded or unloaded since the last scan. */
static LwModule *
lw_modules_find_unlocked (uintptr_t addr)
{
  LwModule *module;

  lw_modules_sync_unlocked ();
  module = lw_modules_bsearch (lw_modules_table, addr);
  if (module == NULL && !atomic_load (&lw_modules_have_counters))
    {
      lw_modules_rescan_unlocked ();
      module = lw_modules_bsearch (lw_modules_table, addr);
    }
  return module;
}

/* Any thread, normal context. */
void
lw_modules_init (void)
{
  g_mutex_lock (&lw_modules_lock);
  if (lw_modules_table == NULL)
    lw_modules_rescan_unlocked ();
  g_mutex_unlock (&lw_modules_lock);
}

/* Any thread. The readable PT_LOAD segment of @module holding @addr, or NULL. */
static const LwSegment *
lw_module_readable_segment (const LwModule *module,
                            uintptr_t       addr)
{
  for (guint i = 0; i < module->n_segments; i++)
    {
      const LwSegment *segment = &module->segments[i];

      if ((segment->flags & PF_R) && addr >= segment->start && addr < segment->end)
        return segment;
    }
  return NULL;
}

/* Any thread, normal context. */
gboolean
lw_modules_find_unwind_table (uintptr_t      addr,
                              LwUnwindTable *out)
{
  LwModule *module;

  g_return_val_if_fail (out != NULL, FALSE);

  g_mutex_lock (&lw_modules_lock);
  module = lw_modules_find_unlocked (addr);
  if (module != NULL)
    {
      const LwSegment *cfi = lw_module_readable_segment (module, module->eh_frame_hdr);

      *out = (LwUnwindTable) {
        .start = module->start,
        .end = module->end,
        .eh_frame_hdr = cfi != NULL ? module->eh_frame_hdr : 0,
        .eh_frame_hdr_len = module->eh_frame_hdr_len,
        .dt_pltgot = module->dt_pltgot,
        .cfi_lo = cfi != NULL ? cfi->start : 0,
        .cfi_hi = cfi != NULL ? cfi->end : 0,
      };
    }
  g_mutex_unlock (&lw_modules_lock);

  return module != NULL;
}

/* Any thread. */
gboolean
lw_module_contains (LwModule *module,
                    uintptr_t addr,
                    size_t    len)
{
  g_return_val_if_fail (module != NULL, FALSE);

  if (addr + len < addr)
    return FALSE;
  for (guint i = 0; i < module->n_segments; i++)
    {
      const LwSegment *segment = &module->segments[i];

      if ((segment->flags & PF_R) && addr >= segment->start &&
          addr + len <= segment->end)
        return TRUE;
    }
  return FALSE;
}

/* Any thread, normal context. */
gboolean
lw_modules_is_readable (uintptr_t addr,
                        size_t    len)
{
  LwModule *module;
  gboolean readable;

  g_mutex_lock (&lw_modules_lock);
  module = lw_modules_find_unlocked (addr);
  readable = module != NULL && lw_module_contains (module, addr, len);
  g_mutex_unlock (&lw_modules_lock);

  return readable;
}

/* Any thread, normal context. */
gboolean
lw_modules_readable_range (uintptr_t  addr,
                           uintptr_t *lo,
                           uintptr_t *hi)
{
  const LwSegment *found = NULL;
  LwModule *module;

  g_return_val_if_fail (lo != NULL, FALSE);
  g_return_val_if_fail (hi != NULL, FALSE);

  g_mutex_lock (&lw_modules_lock);
  module = lw_modules_find_unlocked (addr);
  if (module != NULL)
    found = lw_module_readable_segment (module, addr);
  if (found != NULL)
    {
      *lo = found->start;
      *hi = found->end;
    }
  g_mutex_unlock (&lw_modules_lock);

  return found != NULL;
}

/* Any thread, normal context. */
guint64
lw_modules_get_generation (void)
{
  guint64 seq = atomic_load (&lw_modules_seq);

  /* The common case takes no lock of ours: the loader's counters still
   * equal those of a scan that was not being published meanwhile. */
  if (seq != 0 && !(seq & 1) && atomic_load (&lw_modules_have_counters))
    {
      LwCounters now = { FALSE, 0, 0 };

      dl_iterate_phdr (lw_modules_counters_cb, &now);
      if (now.valid && now.adds == atomic_load (&lw_modules_adds) &&
          now.subs == atomic_load (&lw_modules_subs) &&
          atomic_load (&lw_modules_seq) == seq)
        return seq;
    }

  g_mutex_lock (&lw_modules_lock);
  lw_modules_sync_unlocked ();
  seq = atomic_load (&lw_modules_seq);
  g_mutex_unlock (&lw_modules_lock);

  return seq;
}

/* Any thread, normal context. */
GPtrArray *
lw_modules_ref_all (guint64 *generation)
{
  GPtrArray *modules;

  g_return_val_if_fail (generation != NULL, NULL);

  g_mutex_lock (&lw_modules_lock);
  lw_modules_sync_unlocked ();
  modules = g_ptr_array_new_full (lw_modules_table->len, (GDestroyNotify) lw_module_unref);
  for (guint i = 0; i < lw_modules_table->len; i++)
    g_ptr_array_add (modules, lw_module_ref (g_ptr_array_index (lw_modules_table, i)));
  *generation = atomic_load (&lw_modules_seq);
  g_mutex_unlock (&lw_modules_lock);

  return modules;
}

/* Any thread, normal context. */
LwModule *
lw_modules_ref_module_by_name (const char *basename)
{
  LwModule *found = NULL;

  g_return_val_if_fail (basename != NULL, NULL);

  g_mutex_lock (&lw_modules_lock);
  lw_modules_sync_unlocked ();
  for (guint i = 0; i < lw_modules_table->len && found == NULL; i++)
    {
      LwModule *module = g_ptr_array_index (lw_modules_table, i);
      const char *slash = strrchr (module->path, '/');

      if (!module->is_vdso && strcmp (slash != NULL ? slash + 1 : module->path, basename) == 0)
        found = lw_module_ref (module);
    }
  g_mutex_unlock (&lw_modules_lock);

  return found;
}

/* Any thread, normal context. */
LwModule *
lw_modules_ref_module (uintptr_t addr)
{
  LwModule *module;

  g_mutex_lock (&lw_modules_lock);
  module = lw_modules_find_unlocked (addr);
  if (module != NULL)
    lw_module_ref (module);
  g_mutex_unlock (&lw_modules_lock);

  return module;
}

const char *
lw_module_get_path (LwModule *module)
{
  g_return_val_if_fail (module != NULL, NULL);
  return module->path;
}

gboolean
lw_module_is_vdso (LwModule *module)
{
  g_return_val_if_fail (module != NULL, FALSE);
  return module->is_vdso;
}

uintptr_t
lw_module_get_bias (LwModule *module)
{
  g_return_val_if_fail (module != NULL, 0);
  return module->bias;
}

uintptr_t
lw_module_get_start (LwModule *module)
{
  g_return_val_if_fail (module != NULL, 0);
  return module->start;
}

uintptr_t
lw_module_get_end (LwModule *module)
{
  g_return_val_if_fail (module != NULL, 0);
  return module->end;
}

const guint8 *
lw_module_get_build_id (LwModule *module,
                        gsize    *len)
{
  g_return_val_if_fail (module != NULL, NULL);
  g_return_val_if_fail (len != NULL, NULL);

  *len = module->build_id_len;
  return module->build_id;
}

const char *
lw_module_get_build_id_hex (LwModule *module)
{
  g_return_val_if_fail (module != NULL, NULL);
  return module->build_id_hex;
}

uintptr_t
lw_module_get_dynamic (LwModule  *module,
                       uintptr_t *len)
{
  g_return_val_if_fail (module != NULL, 0);
  g_return_val_if_fail (len != NULL, 0);

  *len = module->dynamic_len;
  return module->dynamic;
}

typedef struct
{
  LwModule         *module;
  LwModuleImageFunc func;
  gpointer          user_data;
  gboolean          found;
} LwWithImage;

/* Inside dl_iterate_phdr(). */
static int
lw_module_with_image_cb (struct dl_phdr_info *info,
                         size_t               size,
                         void                *user_data)
{
  LwWithImage *with = user_data;
  LwModule *current;

  /* Cheap filter first; then the full identity, since another object may
   * have been mapped where a dlclose()d one was. */
  if (info->dlpi_addr != with->module->bias || info->dlpi_phdr != with->module->phdr)
    return 0;

  current = lw_module_new_from_info (info);
  with->found = current != NULL && lw_module_same_object (current, with->module);
  if (current != NULL)
    lw_module_free (current);
  if (with->found)
    with->func (with->module, with->user_data);
  return 1;
}

/* Any thread, normal context. */
gboolean
lw_module_with_image (LwModule         *module,
                      LwModuleImageFunc func,
                      gpointer          user_data)
{
  LwWithImage with = { module, func, user_data, FALSE };

  g_return_val_if_fail (module != NULL, FALSE);
  g_return_val_if_fail (func != NULL, FALSE);

  dl_iterate_phdr (lw_module_with_image_cb, &with);

  return with.found;
}

/* Any thread. */
gpointer
lw_module_get_symbols (LwModule *module)
{
  g_return_val_if_fail (module != NULL, NULL);
  return g_atomic_pointer_get (&module->symbols);
}

/* Any thread. */
gpointer
lw_module_set_symbols (LwModule      *module,
                       gpointer       symbols,
                       GDestroyNotify destroy)
{
  gpointer attached;

  g_return_val_if_fail (module != NULL, NULL);
  g_return_val_if_fail (symbols != NULL, NULL);

  g_mutex_lock (&lw_modules_lock);
  attached = module->symbols;
  if (attached == NULL)
    {
      module->symbols_free = destroy;
      g_atomic_pointer_set (&module->symbols, symbols);
      attached = symbols;
    }
  g_mutex_unlock (&lw_modules_lock);

  if (attached != symbols && destroy != NULL)
    destroy (symbols);
  return attached;
}
