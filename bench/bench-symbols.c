/* bench-symbols.c: lagwatch's symbolizer against dladdr and libdwfl
 *
 * The addresses are real return addresses: each executable segment of
 * libgtk-4, libglib, libc and this executable is scanned for "call rel32"
 * instructions (opcode E8) whose target is the start of a function nm
 * lists for the module; the address after the call (call + 5) is a return
 * address. An E8 byte inside another instruction rarely lands exactly on a
 * function start, so nearly all are real calls; each module's call sites
 * are sampled evenly, at most 4000 per module.
 *
 * Every method resolves the same addresses, as return addresses (so at
 * address - 1): lagwatch in a fresh process (cold: module table, symbol
 * tables and lookups), lagwatch again (warm: tables built; far more
 * addresses than the 1024-entry cache), lagwatch on one stack's worth of
 * addresses over and over (the cache answers, as when sampling), dladdr,
 * and libdwfl's dwfl_module_addrinfo (modules from /proc/PID/maps, debug
 * files by build-id under /usr/lib/debug, never debuginfod). lagwatch's
 * names are checked against what nm lists at the same address in the file
 * lagwatch read (the build-id debug file when installed, else the module's
 * .symtab, else its .dynsym): any disagreement fails the run.
 *
 *   bench-symbols            full run
 *   bench-symbols --short    fewer repetitions, dladdr and libdwfl on one
 *                            address in ten; still checks every name
 *
 * The last line is "speedup over dladdr: N.Nx" (warm lagwatch vs dladdr).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LW_BENCH_MAX_PER_MODULE 4000
/* One deep stack: what the cache row resolves again and again. */
#define LW_BENCH_STACK_DEPTH    128

typedef struct
{
  guint64 value; /* module offset */
  guint64 size;
  char   *name;  /* without "@VERSION" */
} LwNmSymbol;

typedef struct
{
  const char *label;       /* how the module is shown */
  const char *name_part;   /* found in dlpi_name; NULL for the executable */
  char       *path;
  uintptr_t   bias;
  GArray     *exec;        /* uintptr_t pairs: runtime [start, end) of PF_X segments */
  char       *build_id;    /* lowercase hex, or NULL */
  char       *nm_file;
  const char *nm_source;
  GArray     *nm;          /* LwNmSymbol, sorted by value */
  guint       n_call_sites;
  guint       n_used;
} LwBenchModule;

typedef struct
{
  uintptr_t      address; /* runtime return address */
  LwBenchModule *module;
} LwBenchAddress;

static LwBenchModule lw_bench_modules[] = {
  { "libgtk-4.so.1", "/libgtk-4.so.1" },
  { "libglib-2.0.so.0", "/libglib-2.0.so.0" },
  { "libc.so.6", "/libc.so.6" },
  { "bench-symbols", NULL },
};

/* Where results go so that the compiler keeps the calls. */
static volatile uintptr_t lw_bench_sink;

static gint64
lw_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

static int
lw_nm_symbol_compare (gconstpointer a,
                      gconstpointer b)
{
  const LwNmSymbol *sa = a;
  const LwNmSymbol *sb = b;

  return sa->value < sb->value ? -1 : sa->value > sb->value;
}

/* Runs nm on @file (-D: its .dynsym) and appends its function symbols to
 * @symbols. */
static void
lw_nm_run (const char *file,
           gboolean    dynamic,
           GArray     *symbols)
{
  const char *argv[] = { "nm", "--defined-only", "-S", dynamic ? "-D" : file,
                         dynamic ? file : NULL, NULL };
  GError *error = NULL;
  char *out = NULL;
  char **lines;
  int status;

  if (!g_spawn_sync (NULL, (char **) argv, NULL,
                     G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                     NULL, NULL, &out, NULL, &status, &error) ||
      !g_spawn_check_wait_status (status, &error))
    g_error ("nm %s: %s", file, error->message);

  lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char **fields = g_strsplit (lines[i], " ", -1);
      guint n = g_strv_length (fields);

      /* "VALUE [SIZE] TYPE NAME"; functions are t, T, w, W and i (ifunc). */
      if ((n == 3 || n == 4) && strlen (fields[n - 2]) == 1 &&
          strchr ("tTwWi", fields[n - 2][0]) != NULL)
        {
          LwNmSymbol symbol = {
            g_ascii_strtoull (fields[0], NULL, 16),
            n == 4 ? g_ascii_strtoull (fields[1], NULL, 16) : 0,
            g_strndup (fields[n - 1], strcspn (fields[n - 1], "@")),
          };

          g_array_append_val (symbols, symbol);
        }
      g_strfreev (fields);
    }
  g_strfreev (lines);
  g_free (out);
}

/* The hex build-id of the NT_GNU_BUILD_ID note in @info's PT_NOTE
 * segments, or NULL. */
static char *
lw_info_build_id (const struct dl_phdr_info *info)
{
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
      const guint8 *notes = (const guint8 *) (info->dlpi_addr + phdr->p_vaddr);
      gsize align = phdr->p_align == 8 ? 8 : 4;
      gsize offset = 0;

      if (phdr->p_type != PT_NOTE)
        continue;
      while (offset + sizeof (ElfW(Nhdr)) <= phdr->p_memsz)
        {
          const ElfW(Nhdr) *note = (const ElfW(Nhdr) *) (notes + offset);
          gsize desc = offset + sizeof (ElfW(Nhdr)) + ((note->n_namesz + align - 1) & ~(align - 1));

          if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
              memcmp (notes + offset + sizeof (ElfW(Nhdr)), "GNU", 4) == 0)
            {
              GString *hex = g_string_new (NULL);

              for (gsize k = 0; k < note->n_descsz; k++)
                g_string_append_printf (hex, "%02x", notes[desc + k]);
              return g_string_free (hex, FALSE);
            }
          offset = desc + ((note->n_descsz + align - 1) & ~(align - 1));
        }
    }
  return NULL;
}

static int
lw_find_modules_cb (struct dl_phdr_info *info,
                    size_t               size,
                    void                *user_data)
{
  gboolean *first = user_data;
  gboolean is_exe = *first;

  *first = FALSE;
  for (guint m = 0; m < G_N_ELEMENTS (lw_bench_modules); m++)
    {
      LwBenchModule *module = &lw_bench_modules[m];

      if (module->path != NULL ||
          (module->name_part == NULL ? !is_exe : strstr (info->dlpi_name, module->name_part) == NULL))
        continue;

      module->path = module->name_part == NULL ? realpath ("/proc/self/exe", NULL)
                                               : strdup (info->dlpi_name);
      module->bias = info->dlpi_addr;
      module->build_id = lw_info_build_id (info);
      module->exec = g_array_new (FALSE, FALSE, sizeof (uintptr_t));
      for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
          {
            uintptr_t range[2] = {
              info->dlpi_addr + info->dlpi_phdr[i].p_vaddr,
              info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz,
            };

            g_array_append_vals (module->exec, range, 2);
          }
    }
  return 0;
}

/* Finds the modules and what nm says of each, reading the file lagwatch
 * reads. */
static void
lw_bench_find_modules (void)
{
  gboolean first = TRUE;

  dl_iterate_phdr (lw_find_modules_cb, &first);
  for (guint m = 0; m < G_N_ELEMENTS (lw_bench_modules); m++)
    {
      LwBenchModule *module = &lw_bench_modules[m];
      char *debug_file = NULL;

      if (module->path == NULL)
        g_error ("%s is not loaded", module->label);
      if (module->build_id != NULL && strlen (module->build_id) > 2)
        debug_file = g_strdup_printf ("/usr/lib/debug/.build-id/%.2s/%s.debug",
                                      module->build_id, module->build_id + 2);

      module->nm = g_array_new (FALSE, FALSE, sizeof (LwNmSymbol));
      if (debug_file != NULL && g_file_test (debug_file, G_FILE_TEST_IS_REGULAR))
        {
          module->nm_file = debug_file;
          module->nm_source = "build-id debug file";
          lw_nm_run (debug_file, FALSE, module->nm);
        }
      else
        {
          g_free (debug_file);
          module->nm_file = g_strdup (module->path);
          module->nm_source = ".symtab";
          lw_nm_run (module->path, FALSE, module->nm);
          if (module->nm->len == 0)
            {
              module->nm_source = ".dynsym";
              lw_nm_run (module->path, TRUE, module->nm);
            }
        }
      g_array_sort (module->nm, lw_nm_symbol_compare);
    }
}

/* The index of the last nm symbol of @module at or below @offset, or -1. */
static gssize
lw_nm_floor (const LwBenchModule *module,
             guint64              offset)
{
  gsize lo = 0;
  gsize hi = module->nm->len;

  while (lo < hi)
    {
      gsize mid = lo + (hi - lo) / 2;

      if (g_array_index (module->nm, LwNmSymbol, mid).value <= offset)
        lo = mid + 1;
      else
        hi = mid;
    }
  return (gssize) lo - 1;
}

/* TRUE when a function nm lists starts exactly at @offset. */
static gboolean
lw_nm_is_function_start (const LwBenchModule *module,
                         guint64              offset)
{
  gssize i = lw_nm_floor (module, offset);

  return i >= 0 && g_array_index (module->nm, LwNmSymbol, i).value == offset;
}

/* Scans @module's executable segments for calls to function starts and
 * appends an even sample of the return addresses to @addresses. */
static void
lw_bench_collect (LwBenchModule *module,
                  GArray        *addresses)
{
  GArray *found = g_array_new (FALSE, FALSE, sizeof (uintptr_t));

  for (guint s = 0; s + 1 < module->exec->len; s += 2)
    {
      uintptr_t start = g_array_index (module->exec, uintptr_t, s);
      uintptr_t end = g_array_index (module->exec, uintptr_t, s + 1);

      for (uintptr_t p = start; p + 5 <= end; p++)
        {
          gint32 rel;
          uintptr_t target;

          if (*(const guint8 *) p != 0xe8)
            continue;
          memcpy (&rel, (const void *) (p + 1), sizeof rel);
          target = p + 5 + (intptr_t) rel;
          if (target >= module->bias && lw_nm_is_function_start (module, target - module->bias))
            {
              uintptr_t return_address = p + 5;

              g_array_append_val (found, return_address);
            }
        }
    }

  module->n_call_sites = found->len;
  module->n_used = MIN (found->len, LW_BENCH_MAX_PER_MODULE);
  for (guint i = 0; i < module->n_used; i++)
    {
      LwBenchAddress address = {
        g_array_index (found, uintptr_t, (guint64) i * found->len / module->n_used),
        module,
      };

      g_array_append_val (addresses, address);
    }
  g_array_unref (found);
}

/* What nm says covers @offset of @module: the start of the covering
 * symbol (any alias at that start counts) in @start, FALSE when none. */
static gboolean
lw_nm_covering_start (const LwBenchModule *module,
                      guint64              offset,
                      guint64             *start)
{
  gssize i = lw_nm_floor (module, offset);

  if (i < 0)
    return FALSE;
  *start = g_array_index (module->nm, LwNmSymbol, i).value;
  for (; i >= 0 && g_array_index (module->nm, LwNmSymbol, i).value == *start; i--)
    {
      const LwNmSymbol *symbol = &g_array_index (module->nm, LwNmSymbol, i);

      if (symbol->size == 0 ? offset == symbol->value : offset - symbol->value < symbol->size)
        return TRUE;
    }
  return FALSE;
}

/* TRUE when nm lists @name at @start of @module. */
static gboolean
lw_nm_has_name_at (const LwBenchModule *module,
                   guint64              start,
                   const char          *name)
{
  for (gssize i = lw_nm_floor (module, start);
       i >= 0 && g_array_index (module->nm, LwNmSymbol, i).value == start; i--)
    if (strcmp (g_array_index (module->nm, LwNmSymbol, i).name, name) == 0)
      return TRUE;
  return FALSE;
}

typedef struct
{
  guint both;          /* named by lagwatch and nm */
  guint disagreements; /* of those, a different function or name */
  guint lagwatch_only;
  guint nm_only;
} LwCheck;

/* Compares lagwatch's name of every address with nm's. */
static void
lw_bench_check (GArray  *addresses,
                LwCheck *check)
{
  for (guint i = 0; i < addresses->len; i++)
    {
      const LwBenchAddress *address = &g_array_index (addresses, LwBenchAddress, i);
      const LwBenchModule *module = address->module;
      guint64 offset = address->address - 1 - module->bias;
      guint64 nm_start;
      gboolean nm_named = lw_nm_covering_start (module, offset, &nm_start);
      LwFrame frame;

      lw_symbols_resolve (address->address, TRUE, &frame);
      if (g_strcmp0 (frame.module, module->path) != 0)
        g_error ("%#" G_GINT64_MODIFIER "x: module %s, expected %s",
                 (guint64) address->address, frame.module, module->path);
      if (frame.symbol != NULL && nm_named)
        {
          guint64 start = frame.module_offset - frame.symbol_offset;

          check->both++;
          if (start != nm_start || !lw_nm_has_name_at (module, nm_start, frame.symbol))
            {
              if (check->disagreements++ < 10)
                g_printerr ("disagreement: %s+%#" G_GINT64_MODIFIER "x: lagwatch %s at %#"
                            G_GINT64_MODIFIER "x, nm has another name at %#" G_GINT64_MODIFIER "x\n",
                            module->label, offset, frame.symbol, start, nm_start);
            }
        }
      else if (frame.symbol != NULL)
        check->lagwatch_only++;
      else if (nm_named)
        check->nm_only++;
      lw_frame_clear (&frame);
    }
}

/* ns per address of one lagwatch pass over @addresses. */
static double
lw_bench_lagwatch_pass (const LwBenchAddress *addresses,
                        guint                 n)
{
  gint64 start = lw_now_ns ();

  for (guint i = 0; i < n; i++)
    {
      LwFrame frame;

      lw_symbols_resolve (addresses[i].address, TRUE, &frame);
      lw_frame_clear (&frame);
    }
  return (double) (lw_now_ns () - start) / n;
}

/* ns per address of one lw_symbols_function_start() pass. */
static double
lw_bench_function_start_pass (const LwBenchAddress *addresses,
                              guint                 n)
{
  gint64 start = lw_now_ns ();

  for (guint i = 0; i < n; i++)
    {
      uintptr_t function;

      if (lw_symbols_function_start (addresses[i].address, TRUE, &function))
        lw_bench_sink = function;
    }
  return (double) (lw_now_ns () - start) / n;
}

/* ns per address of dladdr() on every @stride-th address. */
static double
lw_bench_dladdr_pass (GArray *addresses,
                      guint   stride)
{
  gint64 start = lw_now_ns ();
  guint n = 0;

  for (guint i = 0; i < addresses->len; i += stride, n++)
    {
      Dl_info info;

      if (dladdr ((void *) (g_array_index (addresses, LwBenchAddress, i).address - 1), &info))
        lw_bench_sink = (uintptr_t) info.dli_saddr;
    }
  return (double) (lw_now_ns () - start) / n;
}

/* find_debuginfo for libdwfl: the build-id debug file under
 * /usr/lib/debug, and nothing else (dwfl_standard_find_debuginfo would ask
 * debuginfod when DEBUGINFOD_URLS is set). */
static int
lw_dwfl_find_debuginfo (Dwfl_Module *mod,
                        void       **userdata,
                        const char  *modname,
                        Dwarf_Addr   base,
                        const char  *file_name,
                        const char  *debuglink_file,
                        GElf_Word    debuglink_crc,
                        char       **debuginfo_file_name)
{
  const unsigned char *bits;
  GElf_Addr vaddr;
  int len = dwfl_module_build_id (mod, &bits, &vaddr);
  GString *path;
  int fd;

  if (len < 2)
    return -1;
  path = g_string_new ("/usr/lib/debug/.build-id/");
  g_string_append_printf (path, "%02x/", bits[0]);
  for (int i = 1; i < len; i++)
    g_string_append_printf (path, "%02x", bits[i]);
  g_string_append (path, ".debug");
  fd = open (path->str, O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    *debuginfo_file_name = strdup (path->str);
  g_string_free (path, TRUE);
  return fd;
}

/* ns per address of libdwfl's dwfl_addrmodule + dwfl_module_addrinfo on
 * every @stride-th address, after a first pass that loads its tables. */
static double
lw_bench_dwfl (GArray *addresses,
               guint   stride)
{
  const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = lw_dwfl_find_debuginfo,
  };
  Dwfl *dwfl = dwfl_begin (&callbacks);
  gint64 start = 0;
  guint n = 0;

  if (dwfl == NULL || dwfl_linux_proc_report (dwfl, getpid ()) != 0 ||
      dwfl_report_end (dwfl, NULL, NULL) != 0)
    g_error ("libdwfl: %s", dwfl_errmsg (-1));

  for (guint pass = 0; pass < 2; pass++)
    {
      start = lw_now_ns ();
      n = 0;
      for (guint i = 0; i < addresses->len; i += stride, n++)
        {
          Dwarf_Addr address = g_array_index (addresses, LwBenchAddress, i).address - 1;
          Dwfl_Module *module = dwfl_addrmodule (dwfl, address);
          GElf_Off offset;
          GElf_Sym sym;

          if (module != NULL)
            lw_bench_sink = (uintptr_t) dwfl_module_addrinfo (module, address, &offset, &sym,
                                                              NULL, NULL, NULL);
        }
    }
  start = lw_now_ns () - start;
  dwfl_end (dwfl);
  return (double) start / n;
}

/* The cold run, in a fresh process (run with --cold ADDRESS-FILE): reads
 * "MODULE-INDEX OFFSET" lines, resolves each address once, and prints
 * "COLD-NS-PER-ADDRESS GTK-TABLE-NS". */
static int
lw_bench_cold_child (const char *address_file)
{
  GArray *addresses = g_array_new (FALSE, FALSE, sizeof (LwBenchAddress));
  GError *error = NULL;
  gint64 gtk_first = 0;
  gint64 total = 0;
  char *contents;
  char **lines;

  if (!g_file_get_contents (address_file, &contents, NULL, &error))
    g_error ("%s", error->message);
  {
    gboolean first = TRUE;

    dl_iterate_phdr (lw_find_modules_cb, &first);
  }
  lines = g_strsplit (contents, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      guint m;
      guint64 offset;
      LwBenchAddress address;

      if (sscanf (lines[i], "%u %" G_GINT64_MODIFIER "x", &m, &offset) != 2 ||
          m >= G_N_ELEMENTS (lw_bench_modules) || lw_bench_modules[m].path == NULL)
        continue;
      address.module = &lw_bench_modules[m];
      address.address = lw_bench_modules[m].bias + offset;
      g_array_append_val (addresses, address);
    }

  /* The first lookup in each module builds its table: timed alone for
   * libgtk-4. */
  for (guint i = 0; i < addresses->len; i++)
    {
      const LwBenchAddress *address = &g_array_index (addresses, LwBenchAddress, i);
      gint64 start = lw_now_ns ();
      gint64 elapsed;
      LwFrame frame;

      lw_symbols_resolve (address->address, TRUE, &frame);
      lw_frame_clear (&frame);
      elapsed = lw_now_ns () - start;
      total += elapsed;
      if (address->module == &lw_bench_modules[0] && gtk_first == 0)
        gtk_first = elapsed;
    }

  printf ("%.1f %" G_GINT64_FORMAT "\n", (double) total / addresses->len, gtk_first);
  g_strfreev (lines);
  g_free (contents);
  g_array_unref (addresses);
  return 0;
}

/* Runs the cold measurement in a fresh copy of this program. */
static void
lw_bench_cold (GArray *addresses,
               double *cold_ns,
               double *gtk_table_ms)
{
  GError *error = NULL;
  GString *list = g_string_new (NULL);
  char *path;
  char *exe = realpath ("/proc/self/exe", NULL);
  char *out = NULL;
  const char *argv[] = { exe, "--cold", NULL, NULL };
  gint64 gtk_ns = 0;
  int status;
  int fd;

  for (guint i = 0; i < addresses->len; i++)
    {
      const LwBenchAddress *address = &g_array_index (addresses, LwBenchAddress, i);

      g_string_append_printf (list, "%u %" G_GINT64_MODIFIER "x\n",
                              (guint) (address->module - lw_bench_modules),
                              (guint64) (address->address - address->module->bias));
    }
  fd = g_file_open_tmp ("lw-bench-XXXXXX", &path, &error);
  if (fd < 0 || !g_file_set_contents (path, list->str, list->len, &error))
    g_error ("%s", error->message);
  close (fd);
  argv[2] = path;

  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                     &out, NULL, &status, &error) ||
      !g_spawn_check_wait_status (status, &error))
    g_error ("cold run: %s", error->message);
  if (sscanf (out, "%lf %" G_GINT64_FORMAT, cold_ns, &gtk_ns) != 2)
    g_error ("cold run: unexpected output \"%s\"", out);
  *gtk_table_ms = gtk_ns / 1e6;

  unlink (path);
  g_free (path);
  g_free (out);
  free (exe);
  g_string_free (list, TRUE);
}

static void
lw_print_row (const char *method,
              double      ns,
              double      dladdr_ns)
{
  printf ("  %-44s %12.1f %10.1fx\n", method, ns, dladdr_ns / ns);
}

int
main (int    argc,
      char **argv)
{
  gboolean short_mode = argc > 1 && strcmp (argv[1], "--short") == 0;
  guint repetitions = short_mode ? 3 : 7;
  guint stride = short_mode ? 10 : 1;
  GArray *addresses = g_array_new (FALSE, FALSE, sizeof (LwBenchAddress));
  LwBenchAddress stack[LW_BENCH_STACK_DEPTH];
  LwSymbolsStats stats;
  LwCheck check = { 0 };
  double cold_ns, gtk_table_ms, warm_ns = G_MAXDOUBLE, stack_ns = G_MAXDOUBLE;
  double start_ns = G_MAXDOUBLE, dladdr_ns = G_MAXDOUBLE, dwfl_ns;
  gboolean failed;

  /* A benchmark, not the library: dlopen() is fine here. */
  if (dlopen ("libgtk-4.so.1", RTLD_NOW | RTLD_LOCAL) == NULL)
    g_error ("libgtk-4.so.1 (package libgtk-4-1): %s", dlerror ());

  if (argc == 3 && strcmp (argv[1], "--cold") == 0)
    return lw_bench_cold_child (argv[2]);
  if (argc > 1 && !short_mode)
    {
      g_printerr ("usage: %s [--short]\n", argv[0]);
      return 2;
    }

  lw_bench_find_modules ();
  for (guint m = 0; m < G_N_ELEMENTS (lw_bench_modules); m++)
    lw_bench_collect (&lw_bench_modules[m], addresses);

  lw_bench_cold (addresses, &cold_ns, &gtk_table_ms);

  /* One stack's worth, spread over the modules, for the cache rows. */
  for (guint i = 0; i < LW_BENCH_STACK_DEPTH; i++)
    stack[i] = g_array_index (addresses, LwBenchAddress,
                              (guint64) i * addresses->len / LW_BENCH_STACK_DEPTH);

  /* Warm: every table built by a first pass. The methods take turns and
   * each keeps its best pass, so that a busy moment of the machine does
   * not weigh on one of them only. */
  lw_bench_lagwatch_pass ((const LwBenchAddress *) addresses->data, addresses->len);
  for (guint r = 0; r < repetitions; r++)
    {
      dladdr_ns = MIN (dladdr_ns, lw_bench_dladdr_pass (addresses, stride));
      for (guint k = 0; k < 4; k++)
        warm_ns = MIN (warm_ns, lw_bench_lagwatch_pass ((const LwBenchAddress *) addresses->data,
                                                         addresses->len));
      for (guint k = 0; k < 20; k++)
        {
          stack_ns = MIN (stack_ns, lw_bench_lagwatch_pass (stack, LW_BENCH_STACK_DEPTH));
          start_ns = MIN (start_ns, lw_bench_function_start_pass (stack, LW_BENCH_STACK_DEPTH));
        }
    }
  dwfl_ns = lw_bench_dwfl (addresses, stride);

  lw_bench_check (addresses, &check);
  lw_symbols_get_stats (&stats);

  printf ("bench-symbols%s: %u return addresses (module: call sites found, used; names from)\n",
          short_mode ? " --short" : "", addresses->len);
  for (guint m = 0; m < G_N_ELEMENTS (lw_bench_modules); m++)
    printf ("  %-18s %8u %6u  %s\n", lw_bench_modules[m].label, lw_bench_modules[m].n_call_sites,
            lw_bench_modules[m].n_used, lw_bench_modules[m].nm_source);
  printf ("\n  %-44s %12s %11s\n", "method", "ns/address", "vs dladdr");
  lw_print_row ("lagwatch cold (fresh process, first use)", cold_ns, dladdr_ns);
  lw_print_row ("lagwatch warm (tables built)", warm_ns, dladdr_ns);
  lw_print_row ("lagwatch, one 128-frame stack repeated", stack_ns, dladdr_ns);
  lw_print_row ("lw_symbols_function_start, same stack", start_ns, dladdr_ns);
  lw_print_row ("dladdr", dladdr_ns, dladdr_ns);
  lw_print_row ("libdwfl dwfl_module_addrinfo", dwfl_ns, dladdr_ns);
  printf ("\n  libgtk-4 table build (first lookup): %.2f ms (target <= 20 ms)\n", gtk_table_ms);
  printf ("  lagwatch tables: %" G_GSIZE_FORMAT " tables, %" G_GSIZE_FORMAT " symbols, "
          "%.2f MiB; lookup cache %" G_GSIZE_FORMAT " KiB\n",
          stats.n_tables, stats.n_symbols, stats.table_bytes / 1048576.0, stats.cache_bytes / 1024);
  printf ("  names vs nm: %u named by both, %u disagreements; %u named by lagwatch only, "
          "%u by nm only\n", check.both, check.disagreements, check.lagwatch_only, check.nm_only);
  printf ("speedup over dladdr: %.1fx\n", dladdr_ns / warm_ns);

  failed = check.disagreements > 0 || addresses->len < 10000;
  g_array_unref (addresses);
  return failed ? 1 : 0;
}
