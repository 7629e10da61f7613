/* test-symbols.c: known-answer tests for the module table, symbolizer and
 * line info
 *
 * Every name the symbolizer returns is checked against what nm lists at
 * the same module offset in the file that holds the symbols (the module,
 * or its debug file), so the tests check the offsets as well as the names;
 * every file:line against what addr2line says at the same offset.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-build-config.h"
#include "lw-lines.h"
#include "lw-modules.h"
#include "lw-symbols.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <gnu/libc-version.h>
#include <glib/gstdio.h>
#include <link.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LW_FIXTURE_SYMTAB      LW_FIXTURE_DIR "/libsymbols-fixture.so"
#define LW_FIXTURE_STRIPPED    LW_FIXTURE_DIR "/libsymbols-fixture-stripped.so"
#define LW_FIXTURE_SPLIT       LW_FIXTURE_DIR "/libsymbols-fixture-split.so"
#define LW_FIXTURE_NO_BUILD_ID LW_FIXTURE_DIR "/libsymbols-fixture-no-build-id.so"
#define LW_FIXTURE_DEBUGLINK   LW_FIXTURE_DIR "/libsymbols-fixture-debuglink.so"
#define LW_FIXTURE_BAD_CRC     LW_FIXTURE_DIR "/libsymbols-fixture-bad-crc.so"
#define LW_DEBUGLINK_FILE      LW_FIXTURE_DIR "/.debug/libsymbols-fixture-debuglink.so.debug"

/* How far into a function the tests point: inside every function below. */
#define LW_INSIDE 4

typedef int       (*LwFixtureExported) (int n);
typedef uintptr_t (*LwFixtureAddress)  (void);

int lw_test_exported_function (int n);

/* volatile keeps the loops, so each function is many bytes long. */
static volatile int lw_test_sink;

__attribute__((noipa)) static int
lw_test_static_function (int n)
{
  for (int i = 0; i < n; i++)
    lw_test_sink += i * n;
  return lw_test_sink;
}

__attribute__((noipa)) int
lw_test_exported_function (int n)
{
  for (int i = 0; i < n; i++)
    lw_test_sink -= i;
  return lw_test_static_function (n) + 1;
}

/* Symbols with exactly known extents and aliases (never called):
 * - lw_test_sized_symbol: 1 byte, then 63 bytes no symbol covers;
 * - lw_test_sizeless_symbol: size 0, so only its exact address matches;
 * - three aliases of different bindings, and three LOCAL aliases, to check
 *   which name wins. Symbols without .globl or .weak are LOCAL. */
__asm__ (
  ".pushsection .text\n"
  ".p2align 6\n"
  ".type lw_test_sized_symbol, @function\n"
  "lw_test_sized_symbol:\n"
  "  ret\n"
  ".size lw_test_sized_symbol, 1\n"
  "  .skip 63, 0xcc\n"
  ".type lw_test_sizeless_symbol, @function\n"
  "lw_test_sizeless_symbol:\n"
  "  ret\n"
  "  .skip 63, 0xcc\n"
  ".type lw_test_binding_aliases, @function\n"
  ".globl _lw_test_global_alias\n"
  ".type _lw_test_global_alias, @function\n"
  ".weak lw_test_weak_alias\n"
  ".type lw_test_weak_alias, @function\n"
  "lw_test_binding_aliases:\n"
  "_lw_test_global_alias:\n"
  "lw_test_weak_alias:\n"
  "  ret\n"
  ".size lw_test_binding_aliases, 16\n"
  ".size _lw_test_global_alias, 16\n"
  ".size lw_test_weak_alias, 16\n"
  "  .skip 15, 0xcc\n"
  ".type lw_test_name_aliases, @function\n"
  ".type _lw_n, @function\n"
  ".type lw_name, @function\n"
  "lw_test_name_aliases:\n"
  "_lw_n:\n"
  "lw_name:\n"
  "  ret\n"
  ".size lw_test_name_aliases, 16\n"
  ".size _lw_n, 16\n"
  ".size lw_name, 16\n"
  "  .skip 15, 0xcc\n"
  ".popsection\n");

extern const char lw_test_sized_symbol[] G_GNUC_INTERNAL;
extern const char lw_test_sizeless_symbol[] G_GNUC_INTERNAL;
extern const char lw_test_binding_aliases[] G_GNUC_INTERNAL;
extern const char lw_test_name_aliases[] G_GNUC_INTERNAL;

typedef struct
{
  guint64 value;
  guint64 size;
  char   *name; /* without nm -D's "@VERSION" */
} LwNmSymbol;

static void
lw_nm_symbol_free (gpointer data)
{
  LwNmSymbol *symbol = data;

  g_free (symbol->name);
  g_free (symbol);
}

/* Parses "VALUE [SIZE] TYPE NAME" lines, keeping functions only. */
static void
lw_nm_parse (const char *output,
             GPtrArray  *symbols)
{
  char **lines = g_strsplit (output, "\n", -1);

  for (guint i = 0; lines[i] != NULL; i++)
    {
      char **fields = g_strsplit_set (lines[i], " ", -1);
      guint n = g_strv_length (fields);
      LwNmSymbol *symbol;
      const char *type;

      if (n != 3 && n != 4)
        {
          g_strfreev (fields);
          continue;
        }
      type = fields[n - 2];
      if (strlen (type) == 1 && strchr ("tTwWi", type[0]) != NULL)
        {
          symbol = g_new0 (LwNmSymbol, 1);
          symbol->value = g_ascii_strtoull (fields[0], NULL, 16);
          symbol->size = n == 4 ? g_ascii_strtoull (fields[1], NULL, 16) : 0;
          symbol->name = g_strndup (fields[n - 1], strcspn (fields[n - 1], "@"));
          g_ptr_array_add (symbols, symbol);
        }
      g_strfreev (fields);
    }
  g_strfreev (lines);
}

static void
lw_nm_run (const char *file,
           gboolean    dynamic,
           GPtrArray  *symbols)
{
  const char *argv[] = { "nm", "--defined-only", "-S", "-D", file, NULL };
  GError *error = NULL;
  char *out = NULL;
  int status;

  if (!dynamic)
    {
      argv[3] = file;
      argv[4] = NULL;
    }
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                NULL, NULL, &out, NULL, &status, &error);
  g_assert_no_error (error);
  g_spawn_check_wait_status (status, &error);
  g_assert_no_error (error);
  lw_nm_parse (out, symbols);
  g_free (out);
}

/* The function symbols nm lists for @file: its .symtab, or its .dynsym
 * when it has no .symtab. Cached: the libc debug file has thousands. */
static GPtrArray *
lw_nm_symbols (const char *file)
{
  static GHashTable *cache;
  GPtrArray *symbols;

  if (cache == NULL)
    cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify) g_ptr_array_unref);
  symbols = g_hash_table_lookup (cache, file);
  if (symbols != NULL)
    return symbols;

  symbols = g_ptr_array_new_with_free_func (lw_nm_symbol_free);
  lw_nm_run (file, FALSE, symbols);
  if (symbols->len == 0)
    lw_nm_run (file, TRUE, symbols);
  g_hash_table_insert (cache, g_strdup (file), symbols);
  return symbols;
}

/* The nm entry of @file named @name, or NULL. */
static const LwNmSymbol *
lw_nm_find (const char *file,
            const char *name)
{
  GPtrArray *symbols = lw_nm_symbols (file);

  for (guint i = 0; i < symbols->len; i++)
    {
      const LwNmSymbol *symbol = g_ptr_array_index (symbols, i);

      if (strcmp (symbol->name, name) == 0)
        return symbol;
    }
  return NULL;
}

/* Asserts that nm lists frame->symbol at the frame's symbol start in @file
 * (among the aliases there), and that the frame's offset lies in it. */
static void
lw_assert_frame_matches_nm (const LwFrame *frame,
                            const char    *file)
{
  GPtrArray *symbols = lw_nm_symbols (file);
  guint64 start = frame->module_offset - frame->symbol_offset;
  GString *aliases = g_string_new (NULL);
  const LwNmSymbol *match = NULL;

  g_assert_nonnull (frame->symbol);
  for (guint i = 0; i < symbols->len; i++)
    {
      const LwNmSymbol *symbol = g_ptr_array_index (symbols, i);

      if (symbol->value != start)
        continue;
      g_string_append_printf (aliases, "%s%s", aliases->len > 0 ? " " : "", symbol->name);
      if (strcmp (symbol->name, frame->symbol) == 0)
        match = symbol;
    }

  /* On failure, prints what nm has at that offset. */
  g_assert_cmpstr (frame->symbol, ==, match != NULL ? match->name : aliases->str);
  if (match->size > 0)
    g_assert_cmpuint (frame->symbol_offset, <=, match->size);
  g_string_free (aliases, TRUE);
}

/* What nm says lies at @offset: @resolved if it is one of the symbols
 * covering @offset, else the first of them, else NULL. Read-only on
 * @symbols, so any thread may call it. */
static const char *
lw_nm_expected (GPtrArray  *symbols,
                guint64     offset,
                const char *resolved)
{
  const char *expected = NULL;

  for (guint i = 0; i < symbols->len; i++)
    {
      const LwNmSymbol *symbol = g_ptr_array_index (symbols, i);

      if (offset < symbol->value ||
          (symbol->size == 0 ? offset != symbol->value : offset - symbol->value >= symbol->size))
        continue;
      if (g_strcmp0 (symbol->name, resolved) == 0)
        return resolved;
      if (expected == NULL)
        expected = symbol->name;
    }
  return expected;
}

/* The build-id debug file of @frame's module under @root, if it exists. */
static char *
lw_debug_file (const LwFrame *frame,
               const char    *root)
{
  char *path;

  if (frame->build_id == NULL)
    return NULL;
  path = g_strdup_printf ("%s/.build-id/%.2s/%s.debug", root, frame->build_id,
                          frame->build_id + 2);
  if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return path;
  g_free (path);
  return NULL;
}

/* Resolves an address inside @function (named @name in @module), as an
 * exact PC and as a return address, and checks both against @nm_file;
 * the module has a build-id if @has_build_id. */
static void
lw_assert_resolves_to_full (uintptr_t   function,
                            const char *module,
                            gboolean    has_build_id,
                            const char *name,
                            const char *nm_file)
{
  LwFrame pc;
  LwFrame ret;

  lw_symbols_resolve (function + LW_INSIDE, FALSE, &pc);
  g_assert_cmpstr (pc.module, ==, module);
  g_assert_true ((pc.build_id != NULL) == has_build_id);
  g_assert_cmpstr (pc.symbol, ==, name);
  g_assert_cmpuint (pc.symbol_offset, ==, LW_INSIDE);
  g_assert_cmpuint (pc.ip, ==, function + LW_INSIDE);
  lw_assert_frame_matches_nm (&pc, nm_file);

  lw_symbols_resolve (function + LW_INSIDE, TRUE, &ret);
  g_assert_cmpstr (ret.module, ==, module);
  g_assert_cmpstr (ret.build_id, ==, pc.build_id);
  g_assert_cmpuint (ret.module_offset, ==, pc.module_offset);
  g_assert_cmpstr (ret.symbol, ==, name);
  g_assert_cmpuint (ret.symbol_offset, ==, LW_INSIDE);
  lw_assert_frame_matches_nm (&ret, nm_file);

  lw_frame_clear (&pc);
  lw_frame_clear (&ret);
}

static void
lw_assert_resolves_to (uintptr_t   function,
                       const char *module,
                       const char *name,
                       const char *nm_file)
{
  lw_assert_resolves_to_full (function, module, TRUE, name, nm_file);
}

static char *
lw_self_path (void)
{
  char *path = realpath ("/proc/self/exe", NULL);
  char *copy;

  g_assert_nonnull (path);
  copy = g_strdup (path);
  free (path);
  return copy;
}

static void
test_static_function (void)
{
  char *self = lw_self_path ();

  lw_assert_resolves_to ((uintptr_t) lw_test_static_function, self,
                         "lw_test_static_function", self);
  g_free (self);
}

static void
test_exported_function (void)
{
  char *self = lw_self_path ();

  lw_assert_resolves_to ((uintptr_t) lw_test_exported_function, self,
                         "lw_test_exported_function", self);
  g_free (self);
}

/* A call that is the last instruction of a function returns to the first
 * byte after it: as a return address it still belongs to the caller. */
static void
test_return_address_at_end (void)
{
  char *self = lw_self_path ();
  uintptr_t end = (uintptr_t) lw_test_sized_symbol + 1;
  LwFrame frame;

  lw_symbols_resolve (end, TRUE, &frame);
  g_assert_cmpstr (frame.symbol, ==, "lw_test_sized_symbol");
  g_assert_cmpuint (frame.symbol_offset, ==, 1);
  lw_assert_frame_matches_nm (&frame, self);
  lw_frame_clear (&frame);

  lw_symbols_resolve (end, FALSE, &frame);
  g_assert_cmpstr (frame.module, ==, self);
  g_assert_null (frame.symbol);
  lw_frame_clear (&frame);
  g_free (self);
}

static void
test_past_symbol_size (void)
{
  char *self = lw_self_path ();
  uintptr_t sized = (uintptr_t) lw_test_sized_symbol;
  LwFrame frame;
  LwFrame start;

  lw_symbols_resolve (sized, FALSE, &start);
  g_assert_cmpstr (start.symbol, ==, "lw_test_sized_symbol");
  lw_assert_frame_matches_nm (&start, self);

  for (uintptr_t offset = 1; offset < 64; offset += 31)
    {
      lw_symbols_resolve (sized + offset, FALSE, &frame);
      g_assert_cmpstr (frame.module, ==, self);
      g_assert_cmpstr (frame.build_id, ==, start.build_id);
      g_assert_cmpuint (frame.module_offset, ==, start.module_offset + offset);
      g_assert_null (frame.symbol);
      g_assert_cmpuint (frame.symbol_offset, ==, 0);
      lw_frame_clear (&frame);
    }
  lw_frame_clear (&start);
  g_free (self);
}

static void
test_sizeless_symbol (void)
{
  char *self = lw_self_path ();
  uintptr_t sizeless = (uintptr_t) lw_test_sizeless_symbol;
  LwFrame frame;

  lw_symbols_resolve (sizeless, FALSE, &frame);
  g_assert_cmpstr (frame.symbol, ==, "lw_test_sizeless_symbol");
  g_assert_cmpuint (frame.symbol_offset, ==, 0);
  lw_assert_frame_matches_nm (&frame, self);
  lw_frame_clear (&frame);

  lw_symbols_resolve (sizeless + 1, FALSE, &frame);
  g_assert_cmpstr (frame.module, ==, self);
  g_assert_null (frame.symbol);
  lw_frame_clear (&frame);
  g_free (self);
}

static void
test_alias_preference (void)
{
  char *self = lw_self_path ();
  LwFrame frame;

  /* GLOBAL beats WEAK and LOCAL, whatever the name. */
  lw_symbols_resolve ((uintptr_t) lw_test_binding_aliases, FALSE, &frame);
  g_assert_cmpstr (frame.symbol, ==, "_lw_test_global_alias");
  lw_assert_frame_matches_nm (&frame, self);
  lw_frame_clear (&frame);

  /* Same binding: no leading '_', then the shortest. */
  lw_symbols_resolve ((uintptr_t) lw_test_name_aliases + 3, FALSE, &frame);
  g_assert_cmpstr (frame.symbol, ==, "lw_name");
  g_assert_cmpuint (frame.symbol_offset, ==, 3);
  lw_assert_frame_matches_nm (&frame, self);
  lw_frame_clear (&frame);
  g_free (self);
}

static void
test_no_module (void)
{
  LwFrame frame;

  lw_symbols_resolve (0x10, TRUE, &frame);
  g_assert_cmpuint (frame.ip, ==, 0x10);
  g_assert_null (frame.module);
  g_assert_null (frame.build_id);
  g_assert_null (frame.symbol);
  g_assert_cmpuint (frame.module_offset, ==, 0);
  lw_frame_clear (&frame);
}

typedef struct
{
  void             *handle;
  LwFixtureExported exported;
  LwFixtureAddress  static_address;
  LwFixtureAddress  versioned_address;
} LwFixture;

static void
lw_fixture_open (LwFixture  *fixture,
                 const char *path)
{
  fixture->handle = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  if (fixture->handle == NULL)
    g_error ("dlopen: %s", dlerror ());
  fixture->exported = (LwFixtureExported) dlsym (fixture->handle, "lw_fixture_exported_function");
  fixture->static_address = (LwFixtureAddress) dlsym (fixture->handle, "lw_fixture_static_function_address");
  fixture->versioned_address = (LwFixtureAddress) dlsym (fixture->handle, "lw_fixture_versioned_address");
  g_assert_nonnull (fixture->exported);
  g_assert_nonnull (fixture->static_address);
  g_assert_nonnull (fixture->versioned_address);
}

static void
lw_fixture_close (LwFixture *fixture)
{
  g_assert_cmpint (dlclose (fixture->handle), ==, 0);
  *fixture = (LwFixture) { NULL };
}

static void
test_fixture_symtab (void)
{
  LwFixture fixture;

  lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
  lw_assert_resolves_to (fixture.static_address (), LW_FIXTURE_SYMTAB,
                         "lw_fixture_static_function", LW_FIXTURE_SYMTAB);
  lw_assert_resolves_to ((uintptr_t) fixture.exported, LW_FIXTURE_SYMTAB,
                         "lw_fixture_exported_function", LW_FIXTURE_SYMTAB);
  lw_fixture_close (&fixture);
}

/* Asserts that the static function of a fixture loaded from @path has no
 * name but a module offset at which the unstripped variant has it. */
static void
lw_assert_static_unnamed (LwFixture  *fixture,
                          const char *path)
{
  LwFrame frame;
  const LwNmSymbol *symbol;

  lw_symbols_resolve (fixture->static_address () + LW_INSIDE, TRUE, &frame);
  g_assert_cmpstr (frame.module, ==, path);
  g_assert_nonnull (frame.build_id);
  g_assert_null (frame.symbol);
  g_assert_cmpuint (frame.symbol_offset, ==, 0);
  symbol = lw_nm_find (LW_FIXTURE_SYMTAB, "lw_fixture_static_function");
  g_assert_nonnull (symbol);
  g_assert_cmpuint (frame.module_offset, ==, symbol->value + LW_INSIDE);
  lw_frame_clear (&frame);
}

static void
test_fixture_dynsym_only (void)
{
  LwFixture fixture;

  lw_fixture_open (&fixture, LW_FIXTURE_STRIPPED);
  lw_assert_static_unnamed (&fixture, LW_FIXTURE_STRIPPED);
  lw_assert_resolves_to ((uintptr_t) fixture.exported, LW_FIXTURE_STRIPPED,
                         "lw_fixture_exported_function", LW_FIXTURE_STRIPPED);
  lw_fixture_close (&fixture);
}

static void
test_fixture_debug_file (void)
{
  const char * const roots[] = { "/nonexistent-debug-root", LW_DEBUG_ROOT, NULL };
  LwFixture fixture;
  LwFrame frame;
  char *debug_file;

  lw_symbols_set_debug_roots (roots);
  lw_fixture_open (&fixture, LW_FIXTURE_SPLIT);

  /* The build-id in memory names the file split-debug.sh laid out. */
  lw_symbols_resolve ((uintptr_t) fixture.exported, FALSE, &frame);
  debug_file = lw_debug_file (&frame, LW_DEBUG_ROOT);
  g_assert_nonnull (debug_file);
  lw_frame_clear (&frame);

  lw_assert_resolves_to (fixture.static_address (), LW_FIXTURE_SPLIT,
                         "lw_fixture_static_function", debug_file);
  lw_assert_resolves_to ((uintptr_t) fixture.exported, LW_FIXTURE_SPLIT,
                         "lw_fixture_exported_function", debug_file);

  lw_fixture_close (&fixture);
  lw_symbols_set_debug_roots (NULL);
  g_free (debug_file);
}

typedef enum
{
  LW_REPLACE_BY_OTHER_ELF,
  LW_REPLACE_BY_GARBAGE,
  LW_REPLACE_BY_NO_SECTIONS,
  LW_REPLACE_BY_NOTHING,
  LW_REPLACE_BY_FIFO,
} LwReplacement;

/* Replaces @path by a FIFO that nobody opens for writing: opening it for
 * reading without O_NONBLOCK waits forever. */
static void
lw_replace_by_fifo (const char *path)
{
  char *fifo = g_strconcat (path, ".fifo", NULL);

  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (g_rename (fifo, path), ==, 0);
  g_free (fifo);
}

/* Runs the calling test again in a subprocess that must pass within a
 * generous deadline: for tests of files that could block the symbolizer
 * forever. Its debug messages are on its stdout, for
 * g_test_trap_assert_stdout(). */
static void
lw_trap_must_not_block (void)
{
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  if (!g_test_trap_has_passed () && g_test_trap_reached_timeout ())
    g_test_message ("the subprocess was still blocked after 60 s");
  g_test_trap_assert_passed ();
}

/* The file of a loaded library changes under it (a package upgrade, a
 * broken disk): names come from the mapped image's .dynsym, never from
 * the file now at that path. */
static void
test_fixture_replaced (gconstpointer data)
{
  LwReplacement replacement = GPOINTER_TO_INT (data);
  GError *error = NULL;
  LwFixture fixture;
  char *dir;
  char *path;
  char *contents;
  gsize len;

  if (replacement == LW_REPLACE_BY_FIFO && !g_test_subprocess ())
    {
      lw_trap_must_not_block ();
      g_test_trap_assert_stdout ("*libsymbols-fixture-copy.so: a FIFO, skipped*");
      return;
    }
  /* The FIFO case's subprocess shows its debug message to the trap; in
   * the test process itself, messages would break the TAP stream. */
  if (g_test_subprocess ())
    g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);

  dir = g_dir_make_tmp ("lw-symbols-XXXXXX", &error);
  g_assert_no_error (error);
  path = g_build_filename (dir, "libsymbols-fixture-copy.so", NULL);
  g_file_get_contents (LW_FIXTURE_SYMTAB, &contents, &len, &error);
  g_assert_no_error (error);
  g_file_set_contents (path, contents, len, &error);
  g_assert_no_error (error);
  lw_fixture_open (&fixture, path);

  /* g_file_set_contents() renames a new file over the old one, as package
   * managers do: the mapped pages stay those of the old file. */
  switch (replacement)
    {
    case LW_REPLACE_BY_OTHER_ELF:
      {
        char *self = lw_self_path ();
        char *other;
        gsize other_len;

        /* An ELF file with a .symtab, names at every offset, another
         * build-id. */
        g_file_get_contents (self, &other, &other_len, &error);
        g_assert_no_error (error);
        g_file_set_contents (path, other, other_len, &error);
        g_assert_no_error (error);
        g_free (other);
        g_free (self);
        break;
      }
    case LW_REPLACE_BY_GARBAGE:
      g_file_set_contents (path, "not an ELF file at all", -1, &error);
      g_assert_no_error (error);
      break;
    case LW_REPLACE_BY_NO_SECTIONS:
      {
        Elf64_Ehdr ehdr;

        memcpy (&ehdr, contents, sizeof ehdr);
        ehdr.e_shoff = 0;
        ehdr.e_shnum = 0;
        ehdr.e_shstrndx = 0;
        g_file_set_contents (path, (const char *) &ehdr, sizeof ehdr, &error);
        g_assert_no_error (error);
        break;
      }
    case LW_REPLACE_BY_NOTHING:
      g_assert_cmpint (g_unlink (path), ==, 0);
      break;
    case LW_REPLACE_BY_FIFO:
      lw_replace_by_fifo (path);
      break;
    default:
      g_assert_not_reached ();
    }

  lw_assert_static_unnamed (&fixture, path);
  lw_assert_resolves_to ((uintptr_t) fixture.exported, path,
                         "lw_fixture_exported_function", LW_FIXTURE_SYMTAB);

  lw_fixture_close (&fixture);
  g_unlink (path);
  g_rmdir (dir);
  g_free (contents);
  g_free (path);
  g_free (dir);
}

/* A function's address in libc, from libc itself (in a non-PIE executable
 * the address of qsort could be a PLT entry). */
static uintptr_t
lw_libc_function (const char *name)
{
  void *libc = dlopen ("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *function;

  g_assert_nonnull (libc);
  function = dlsym (libc, name);
  g_assert_nonnull (function);
  dlclose (libc);
  return (uintptr_t) function;
}

static void
test_libc (void)
{
  uintptr_t qsort_address = lw_libc_function ("qsort");
  LwFrame frame;
  char *debug_file;
  const char *nm_file;

  lw_symbols_resolve (qsort_address, FALSE, &frame);
  g_assert_nonnull (frame.module);
  g_assert_true (g_str_has_suffix (frame.module, "/libc.so.6"));
  g_assert_nonnull (frame.build_id);
  g_assert_cmpstr (frame.symbol, ==, "qsort");
  g_assert_cmpuint (frame.symbol_offset, ==, 0);

  debug_file = lw_debug_file (&frame, "/usr/lib/debug");
  nm_file = debug_file != NULL ? debug_file : frame.module;
  lw_assert_frame_matches_nm (&frame, nm_file);

  /* With libc6-dbg, a LOCAL function (no .dynsym name anywhere at its
   * address) is named too. */
  if (debug_file != NULL)
    {
      GPtrArray *symbols = lw_nm_symbols (frame.module);
      GPtrArray *debug_symbols = lw_nm_symbols (debug_file);
      uintptr_t bias = qsort_address - frame.module_offset;
      const LwNmSymbol *local = NULL;
      LwFrame local_frame;

      for (guint i = 0; i < debug_symbols->len && local == NULL; i++)
        {
          const LwNmSymbol *candidate = g_ptr_array_index (debug_symbols, i);
          gboolean exported = FALSE;

          if (candidate->size < 2)
            continue;
          for (guint j = 0; j < symbols->len && !exported; j++)
            exported = ((const LwNmSymbol *) g_ptr_array_index (symbols, j))->value == candidate->value;
          if (!exported)
            local = candidate;
        }
      g_assert_nonnull (local);

      lw_symbols_resolve (bias + local->value + 1, TRUE, &local_frame);
      g_assert_cmpstr (local_frame.module, ==, frame.module);
      g_assert_cmpuint (local_frame.symbol_offset, ==, 1);
      lw_assert_frame_matches_nm (&local_frame, debug_file);
      g_test_message ("libc local function: %s", local_frame.symbol);
      lw_frame_clear (&local_frame);
    }
  else
    g_test_message ("no libc debug file under /usr/lib/debug (libc6-dbg)");

  g_free (debug_file);
  lw_frame_clear (&frame);
}

static void
test_vdso (void)
{
  uintptr_t ehdr_address = getauxval (AT_SYSINFO_EHDR);
  const Elf64_Ehdr *ehdr = (const Elf64_Ehdr *) ehdr_address;
  void *vdso;
  uintptr_t function;
  LwFrame frame;
  GError *error = NULL;
  char *image_path;
  int fd;

  if (ehdr_address == 0)
    {
      g_test_skip ("no vDSO");
      return;
    }

  /* glibc lists the vDSO under this name; dlsym is fine in a test. */
  vdso = dlopen ("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  g_assert_nonnull (vdso);
  function = (uintptr_t) dlsym (vdso, "__vdso_clock_gettime");
  g_assert_cmpuint (function, !=, 0);

  lw_symbols_resolve (function + LW_INSIDE, TRUE, &frame);
  g_assert_cmpstr (frame.module, ==, "[vdso]");
  g_assert_cmpuint (frame.module_offset, ==, function + LW_INSIDE - ehdr_address);
  /* GLOBAL __vdso_clock_gettime wins over its WEAK alias clock_gettime. */
  g_assert_cmpstr (frame.symbol, ==, "__vdso_clock_gettime");
  g_assert_cmpuint (frame.symbol_offset, ==, LW_INSIDE);

  /* nm needs a file: write the image, section headers included. */
  fd = g_file_open_tmp ("lw-vdso-XXXXXX.so", &image_path, &error);
  g_assert_no_error (error);
  close (fd);
  g_file_set_contents (image_path, (const char *) ehdr,
                       ehdr->e_shoff + (gsize) ehdr->e_shnum * ehdr->e_shentsize, &error);
  g_assert_no_error (error);
  lw_assert_frame_matches_nm (&frame, image_path);

  g_unlink (image_path);
  g_free (image_path);
  lw_frame_clear (&frame);
  dlclose (vdso);
}

static void
test_unwind_table (void)
{
  uintptr_t qsort_address = lw_libc_function ("qsort");
  LwUnwindTable table;

  g_assert_true (lw_modules_find_unwind_table (qsort_address, &table));
  g_assert_cmpuint (table.start, <=, qsort_address);
  g_assert_cmpuint (qsort_address, <, table.end);
  g_assert_cmpuint (table.eh_frame_hdr, >=, table.start);
  g_assert_cmpuint (table.eh_frame_hdr_len, >, 0);
  g_assert_cmpuint (table.eh_frame_hdr + table.eh_frame_hdr_len, <=, table.end);
  /* .eh_frame_hdr starts with its version, 1. */
  g_assert_cmpuint (*(const guint8 *) table.eh_frame_hdr, ==, 1);
  g_assert_cmpuint (table.dt_pltgot, >=, table.start);
  g_assert_cmpuint (table.dt_pltgot, <, table.end);

  g_assert_false (lw_modules_find_unwind_table (0x10, &table));
}

static void
test_is_readable (void)
{
  uintptr_t qsort_address = lw_libc_function ("qsort");
  LwUnwindTable table;

  g_assert_true (lw_modules_is_readable (qsort_address, 8));
  g_assert_true (lw_modules_find_unwind_table (qsort_address, &table));
  g_assert_true (lw_modules_is_readable (table.eh_frame_hdr, table.eh_frame_hdr_len));
  g_assert_false (lw_modules_is_readable (table.end - 1, 2));
  g_assert_false (lw_modules_is_readable (0x10, 1));
  g_assert_false (lw_modules_is_readable (UINTPTR_MAX, 2));
}

/* A library loaded after the table was built is found; once unloaded, its
 * addresses name it no more. */
static void
test_dlopen_dlclose (void)
{
  LwFixture fixture;
  LwUnwindTable table;
  LwFrame frame;
  uintptr_t exported;

  lw_modules_init ();
  lw_symbols_resolve ((uintptr_t) lw_test_static_function, FALSE, &frame);
  lw_frame_clear (&frame);

  lw_fixture_open (&fixture, LW_FIXTURE_STRIPPED);
  exported = (uintptr_t) fixture.exported;
  g_assert_true (lw_modules_find_unwind_table (exported, &table));
  g_assert_cmpuint (table.start, <=, exported);
  g_assert_true (lw_modules_is_readable (exported, 16));
  lw_assert_resolves_to (exported, LW_FIXTURE_STRIPPED,
                         "lw_fixture_exported_function", LW_FIXTURE_STRIPPED);
  lw_fixture_close (&fixture);

  if (dlopen (LW_FIXTURE_STRIPPED, RTLD_NOW | RTLD_NOLOAD) != NULL)
    {
      g_test_skip ("the fixture stays loaded after dlclose");
      return;
    }
  lw_symbols_resolve (exported, FALSE, &frame);
  g_assert_cmpstr (frame.module, !=, LW_FIXTURE_STRIPPED);
  g_assert_cmpstr (frame.symbol, !=, "lw_fixture_exported_function");
  lw_frame_clear (&frame);
}

typedef struct
{
  uintptr_t  libc_qsort;
  uintptr_t  fixture_exported; /* loaded and unloaded while threads run */
  GPtrArray *fixture_symbols;  /* what nm lists in LW_FIXTURE_SYMTAB */
} LwConcurrentAddresses;

static gpointer
lw_resolve_thread (gpointer data)
{
  const LwConcurrentAddresses *addresses = data;

  for (guint round = 0; round < 2000; round++)
    {
      LwFrame frame;

      lw_symbols_resolve (addresses->libc_qsort, FALSE, &frame);
      g_assert_cmpstr (frame.symbol, ==, "qsort");
      lw_frame_clear (&frame);

      lw_symbols_resolve ((uintptr_t) lw_test_static_function + LW_INSIDE, TRUE, &frame);
      g_assert_cmpstr (frame.symbol, ==, "lw_test_static_function");
      lw_frame_clear (&frame);

      /* The fixture may be mapped elsewhere by now, with another of its
       * functions (or none) at this address, or not at all. */
      lw_symbols_resolve (addresses->fixture_exported, FALSE, &frame);
      if (g_strcmp0 (frame.module, LW_FIXTURE_SYMTAB) == 0)
        g_assert_cmpstr (frame.symbol, ==,
                         lw_nm_expected (addresses->fixture_symbols,
                                         frame.module_offset, frame.symbol));
      else
        g_assert_cmpstr (frame.symbol, !=, "lw_fixture_exported_function");
      lw_frame_clear (&frame);
    }
  return NULL;
}

/* Threads resolve while another loads and unloads a library: rescans,
 * racing table builds and modules dropped under a reader. */
static void
test_concurrent (void)
{
  LwConcurrentAddresses addresses = {
    lw_libc_function ("qsort"), 0, lw_nm_symbols (LW_FIXTURE_SYMTAB),
  };
  GThread *threads[4];
  LwFixture fixture;

  lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
  addresses.fixture_exported = (uintptr_t) fixture.exported;
  lw_fixture_close (&fixture);

  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("resolve", lw_resolve_thread, &addresses);
  for (guint i = 0; i < 200; i++)
    {
      LwFrame frame;

      lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
      lw_symbols_resolve (fixture.static_address (), FALSE, &frame);
      g_assert_cmpstr (frame.symbol, ==, "lw_fixture_static_function");
      lw_frame_clear (&frame);
      lw_fixture_close (&fixture);
    }
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
}

/* ELF version suffixes are not part of the names shown: the fixture's
 * .symtab (and so its debug file) and libc's debug file carry
 * "name@@VERSION" symbols. */
static void
test_version_suffix (void)
{
  const char * const roots[] = { LW_DEBUG_ROOT, NULL };
  uintptr_t clock_gettime_address = lw_libc_function ("clock_gettime");
  LwFixture fixture;
  LwFrame frame;
  char *debug_file;

  lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
  lw_assert_resolves_to (fixture.versioned_address (), LW_FIXTURE_SYMTAB,
                         "lw_fixture_versioned", LW_FIXTURE_SYMTAB);
  lw_fixture_close (&fixture);

  lw_symbols_set_debug_roots (roots);
  lw_fixture_open (&fixture, LW_FIXTURE_SPLIT);
  lw_symbols_resolve (fixture.versioned_address (), FALSE, &frame);
  debug_file = lw_debug_file (&frame, LW_DEBUG_ROOT);
  g_assert_nonnull (debug_file);
  lw_assert_resolves_to (fixture.versioned_address (), LW_FIXTURE_SPLIT,
                         "lw_fixture_versioned", debug_file);
  lw_frame_clear (&frame);
  g_free (debug_file);
  lw_fixture_close (&fixture);
  lw_symbols_set_debug_roots (NULL);

  /* Named from libc6-dbg's "clock_gettime@@GLIBC_2.17" when installed,
   * else from the .dynsym. */
  lw_symbols_resolve (clock_gettime_address, FALSE, &frame);
  g_assert_cmpstr (frame.symbol, ==, "clock_gettime");
  debug_file = lw_debug_file (&frame, "/usr/lib/debug");
  lw_assert_frame_matches_nm (&frame, debug_file != NULL ? debug_file : frame.module);
  lw_frame_clear (&frame);
  g_free (debug_file);
}

/* The separate debug file @module_address's module was named from, or
 * NULL. */
static char *
lw_module_debug_file (uintptr_t module_address)
{
  LwModule *module = lw_modules_ref_module (module_address);
  char *debug_file;

  g_assert_nonnull (module);
  debug_file = g_strdup (lw_symbols_get_debug_file (module));
  lw_module_unref (module);
  return debug_file;
}

/* No build-id: the debug file is found through the .gnu_debuglink, in
 * .debug/ next to the library. */
static void
test_fixture_debuglink (void)
{
  LwFixture fixture;
  char *debug_file;

  lw_fixture_open (&fixture, LW_FIXTURE_DEBUGLINK);
  lw_assert_resolves_to_full (fixture.static_address (), LW_FIXTURE_DEBUGLINK, FALSE,
                              "lw_fixture_static_function", LW_DEBUGLINK_FILE);
  lw_assert_resolves_to_full ((uintptr_t) fixture.exported, LW_FIXTURE_DEBUGLINK, FALSE,
                              "lw_fixture_exported_function", LW_DEBUGLINK_FILE);
  lw_assert_resolves_to_full (fixture.versioned_address (), LW_FIXTURE_DEBUGLINK, FALSE,
                              "lw_fixture_versioned", LW_DEBUGLINK_FILE);
  debug_file = lw_module_debug_file ((uintptr_t) fixture.exported);
  g_assert_cmpstr (debug_file, ==, LW_DEBUGLINK_FILE);
  g_free (debug_file);
  lw_fixture_close (&fixture);
}

/* A debug file whose CRC is not the one the .gnu_debuglink states is not
 * used, though it is a valid ELF file with the right names. */
static void
test_fixture_debuglink_bad_crc (void)
{
  LwFixture fixture;
  LwFrame frame;
  const LwNmSymbol *symbol;
  char *debug_file;

  g_assert_true (g_file_test (LW_FIXTURE_DIR "/.debug/libsymbols-fixture-bad-crc.so.debug",
                              G_FILE_TEST_IS_REGULAR));
  lw_fixture_open (&fixture, LW_FIXTURE_BAD_CRC);

  lw_symbols_resolve (fixture.static_address () + LW_INSIDE, TRUE, &frame);
  g_assert_cmpstr (frame.module, ==, LW_FIXTURE_BAD_CRC);
  g_assert_null (frame.build_id);
  g_assert_null (frame.symbol);
  symbol = lw_nm_find (LW_FIXTURE_NO_BUILD_ID, "lw_fixture_static_function");
  g_assert_nonnull (symbol);
  g_assert_cmpuint (frame.module_offset, ==, symbol->value + LW_INSIDE);
  lw_frame_clear (&frame);

  lw_assert_resolves_to_full ((uintptr_t) fixture.exported, LW_FIXTURE_BAD_CRC, FALSE,
                              "lw_fixture_exported_function", LW_FIXTURE_BAD_CRC);
  debug_file = lw_module_debug_file ((uintptr_t) fixture.exported);
  g_assert_null (debug_file);
  lw_fixture_close (&fixture);
}

/* A FIFO planted where the build-id debug file of a module is looked
 * for: skipped at once (opening it would wait for a writer forever, and
 * with it every report), and the module is named from its own .dynsym. */
static void
test_fifo_build_id_debug_file (void)
{
  GError *error = NULL;
  LwFixture fixture;
  char *build_id;
  char *root;
  char *dir;
  char *fifo;
  const char *roots[2] = { NULL, NULL };

  if (!g_test_subprocess ())
    {
      lw_trap_must_not_block ();
      g_test_trap_assert_stdout ("*/.build-id/*.debug: a FIFO, skipped*");
      return;
    }
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);

  g_file_get_contents (LW_FIXTURE_DIR "/symbols-fixture-split.build-id", &build_id, NULL, &error);
  g_assert_no_error (error);
  g_strstrip (build_id);
  root = g_dir_make_tmp ("lw-fifo-root-XXXXXX", &error);
  g_assert_no_error (error);
  dir = g_strdup_printf ("%s/.build-id/%.2s", root, build_id);
  fifo = g_strdup_printf ("%s/%s.debug", dir, build_id + 2);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  roots[0] = root;
  lw_symbols_set_debug_roots (roots);

  lw_fixture_open (&fixture, LW_FIXTURE_SPLIT);
  lw_assert_static_unnamed (&fixture, LW_FIXTURE_SPLIT);
  lw_assert_resolves_to ((uintptr_t) fixture.exported, LW_FIXTURE_SPLIT,
                         "lw_fixture_exported_function", LW_FIXTURE_STRIPPED);
  g_assert_null (lw_module_debug_file ((uintptr_t) fixture.exported));
  lw_fixture_close (&fixture);

  lw_symbols_set_debug_roots (NULL);
  g_unlink (fifo);
  g_rmdir (dir);
  g_free (fifo);
  g_free (dir);
  dir = g_build_filename (root, ".build-id", NULL);
  g_rmdir (dir);
  g_rmdir (root);
  g_free (dir);
  g_free (root);
  g_free (build_id);
}

/* FIFOs planted at every place the .gnu_debuglink's name is looked for:
 * next to the module, in its .debug/, and under a debug root. */
static void
test_fifo_debuglink_debug_file (void)
{
  GError *error = NULL;
  LwFixture fixture;
  const char *name = "libsymbols-fixture-debuglink.so";
  char *dir;
  char *root;
  char *module;
  char *fifos[3];
  char *contents;
  gsize len;
  const char *roots[2] = { NULL, NULL };

  if (!g_test_subprocess ())
    {
      lw_trap_must_not_block ();
      g_test_trap_assert_stdout ("*libsymbols-fixture-debuglink.so.debug: a FIFO, skipped*");
      return;
    }
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);

  /* A copy of the module in a directory of FIFOs (the fixture's own
   * directory holds its real debug file). */
  dir = g_dir_make_tmp ("lw-fifo-module-XXXXXX", &error);
  g_assert_no_error (error);
  root = g_dir_make_tmp ("lw-fifo-root-XXXXXX", &error);
  g_assert_no_error (error);
  module = g_build_filename (dir, name, NULL);
  g_file_get_contents (LW_FIXTURE_DEBUGLINK, &contents, &len, &error);
  g_assert_no_error (error);
  g_file_set_contents (module, contents, len, &error);
  g_assert_no_error (error);
  fifos[0] = g_strdup_printf ("%s/%s.debug", dir, name);
  fifos[1] = g_strdup_printf ("%s/.debug/%s.debug", dir, name);
  fifos[2] = g_strdup_printf ("%s%s/%s.debug", root, dir, name);
  for (guint i = 0; i < G_N_ELEMENTS (fifos); i++)
    {
      char *parent = g_path_get_dirname (fifos[i]);

      g_assert_cmpint (g_mkdir_with_parents (parent, 0700), ==, 0);
      g_assert_cmpint (mkfifo (fifos[i], 0600), ==, 0);
      g_free (parent);
    }
  roots[0] = root;
  lw_symbols_set_debug_roots (roots);

  lw_fixture_open (&fixture, module);
  lw_assert_resolves_to_full ((uintptr_t) fixture.exported, module, FALSE,
                              "lw_fixture_exported_function", LW_FIXTURE_DEBUGLINK);
  g_assert_null (lw_module_debug_file ((uintptr_t) fixture.exported));
  lw_fixture_close (&fixture);

  lw_symbols_set_debug_roots (NULL);
  {
    const char *argv[] = { "rm", "-rf", dir, root, NULL };

    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                  NULL, NULL, NULL, &error);
    g_assert_no_error (error);
  }
  for (guint i = 0; i < G_N_ELEMENTS (fifos); i++)
    g_free (fifos[i]);
  g_free (contents);
  g_free (module);
  g_free (root);
  g_free (dir);
}

/* Repeated lookups come from the cache and agree with the first; a
 * dlclose() and a dlopen() (another library, likely mapped at the same
 * place) invalidate it. */
static void
test_cache (void)
{
  uintptr_t address = (uintptr_t) lw_test_static_function + LW_INSIDE;
  LwFixture fixture;
  LwFrame first;
  LwFrame frame;
  uintptr_t exported;

  lw_symbols_resolve (address, TRUE, &first);
  for (guint i = 0; i < 3; i++)
    {
      lw_symbols_resolve (address, TRUE, &frame);
      g_assert_cmpstr (frame.symbol, ==, "lw_test_static_function");
      g_assert_cmpstr (frame.symbol, ==, first.symbol);
      g_assert_cmpstr (frame.module, ==, first.module);
      g_assert_cmpstr (frame.build_id, ==, first.build_id);
      g_assert_cmpuint (frame.module_offset, ==, first.module_offset);
      g_assert_cmpuint (frame.symbol_offset, ==, first.symbol_offset);
      lw_frame_clear (&frame);

      /* The same ip as an exact PC is another entry. */
      lw_symbols_resolve ((uintptr_t) lw_test_sized_symbol + 1, i % 2 == 0, &frame);
      if (i % 2 == 0)
        g_assert_cmpstr (frame.symbol, ==, "lw_test_sized_symbol");
      else
        g_assert_null (frame.symbol);
      lw_frame_clear (&frame);
    }
  lw_frame_clear (&first);

  lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
  exported = (uintptr_t) fixture.exported + LW_INSIDE;
  lw_symbols_resolve (exported, TRUE, &frame);
  g_assert_cmpstr (frame.module, ==, LW_FIXTURE_SYMTAB);
  g_assert_cmpstr (frame.symbol, ==, "lw_fixture_exported_function");
  lw_frame_clear (&frame);
  lw_fixture_close (&fixture);

  lw_fixture_open (&fixture, LW_FIXTURE_STRIPPED);
  lw_symbols_resolve (exported, TRUE, &frame);
  g_assert_cmpstr (frame.module, !=, LW_FIXTURE_SYMTAB);
  if ((uintptr_t) fixture.exported + LW_INSIDE == exported)
    {
      g_assert_cmpstr (frame.module, ==, LW_FIXTURE_STRIPPED);
      g_assert_cmpstr (frame.symbol, ==, "lw_fixture_exported_function");
    }
  else
    g_test_message ("the stripped fixture was mapped elsewhere");
  lw_frame_clear (&frame);
  lw_fixture_close (&fixture);
}

static void
test_function_start (void)
{
  uintptr_t qsort_address = lw_libc_function ("qsort");
  uintptr_t sized = (uintptr_t) lw_test_sized_symbol;
  uintptr_t start = 0;

  for (guint round = 0; round < 2; round++)
    {
      g_assert_true (lw_symbols_function_start ((uintptr_t) lw_test_static_function + LW_INSIDE,
                                                FALSE, &start));
      g_assert_cmpuint (start, ==, (uintptr_t) lw_test_static_function);
      g_assert_true (lw_symbols_function_start ((uintptr_t) lw_test_static_function + LW_INSIDE,
                                                TRUE, &start));
      g_assert_cmpuint (start, ==, (uintptr_t) lw_test_static_function);

      /* One past a 1-byte symbol: its return address, nobody's PC. */
      g_assert_true (lw_symbols_function_start (sized + 1, TRUE, &start));
      g_assert_cmpuint (start, ==, sized);
      start = 0;
      g_assert_false (lw_symbols_function_start (sized + 1, FALSE, &start));
      g_assert_cmpuint (start, ==, 0);

      g_assert_true (lw_symbols_function_start (qsort_address + LW_INSIDE, TRUE, &start));
      g_assert_cmpuint (start, ==, qsort_address);

      g_assert_false (lw_symbols_function_start (0x10, TRUE, &start));
    }
}

static void
test_readable_range (void)
{
  uintptr_t qsort_address = lw_libc_function ("qsort");
  int on_stack = 0;
  uintptr_t lo = 0;
  uintptr_t hi = 0;

  g_assert_true (lw_modules_readable_range (qsort_address, &lo, &hi));
  g_assert_cmpuint (lo, <=, qsort_address);
  g_assert_cmpuint (qsort_address, <, hi);
  g_assert_true (lw_modules_is_readable (lo, hi - lo));
  /* One segment: the range does not run into the next one. */
  g_assert_false (lw_modules_is_readable (hi - 1, 2));
  g_assert_false (lw_modules_is_readable (lo - 1, 2));

  lo = hi = 1;
  g_assert_false (lw_modules_readable_range (0x10, &lo, &hi));
  g_assert_false (lw_modules_readable_range ((uintptr_t) &on_stack, &lo, &hi));
  g_assert_cmpuint (lo, ==, 1);
  g_assert_cmpuint (hi, ==, 1);
}

/* A C++ name is demangled by the libstdc++ the C++ library brought in. */
static void
test_cxx_demangle (void)
{
#ifdef LW_CXX_FIXTURE
  void *handle = dlopen (LW_CXX_FIXTURE, RTLD_NOW | RTLD_LOCAL);
  void *stdcxx;
  uintptr_t (*work_address) (void);
  const LwNmSymbol *symbol;
  uintptr_t function;

  if (handle == NULL)
    g_error ("dlopen: %s", dlerror ());
  stdcxx = dlopen ("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (stdcxx == NULL)
    {
      g_test_skip ("libstdc++.so.6 is not loaded with the C++ fixture");
      dlclose (handle);
      return;
    }
  *(void **) &work_address = dlsym (handle, "lw_cxx_fixture_work_address");
  g_assert_nonnull (work_address);
  function = work_address ();
  symbol = lw_nm_find (LW_CXX_FIXTURE, "_ZN5lwfix4deep4workEi");
  g_assert_nonnull (symbol);

  /* Twice: computed, then from the cache. */
  for (guint round = 0; round < 2; round++)
    {
      LwFrame frame;

      lw_symbols_resolve (function + LW_INSIDE, TRUE, &frame);
      g_assert_cmpstr (frame.module, ==, LW_CXX_FIXTURE);
      g_assert_cmpstr (frame.symbol, ==, "lwfix::deep::work(int)");
      g_assert_cmpuint (frame.symbol_offset, ==, LW_INSIDE);
      g_assert_cmpuint (frame.module_offset, ==, symbol->value + LW_INSIDE);
      lw_frame_clear (&frame);
    }

  /* C names are left alone. */
  {
    LwFrame frame;

    lw_symbols_resolve ((uintptr_t) lw_test_static_function, FALSE, &frame);
    g_assert_cmpstr (frame.symbol, ==, "lw_test_static_function");
    lw_frame_clear (&frame);
  }

  dlclose (stdcxx);
  dlclose (handle);
#else
  g_test_skip ("no C++ compiler: the C++ fixture was not built");
#endif
}

#ifdef LW_HAVE_LIBDW

/* What addr2line says of @offset in @file: the file's basename and the
 * line, or FALSE when it knows none. */
static gboolean
lw_addr2line (const char *file,
              guint64     offset,
              char      **basename,
              guint      *line)
{
  char *address = g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", offset);
  const char *argv[] = { "addr2line", "-e", file, address, NULL };
  GError *error = NULL;
  char *out = NULL;
  char *colon;
  int status;
  gboolean known;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                NULL, NULL, &out, NULL, &status, &error);
  g_assert_no_error (error);
  g_spawn_check_wait_status (status, &error);
  g_assert_no_error (error);

  /* "PATH:LINE", maybe followed by " (discriminator N)"; "??:0" or
   * "??:?" when unknown. */
  out[strcspn (out, " \n")] = '\0';
  colon = strrchr (out, ':');
  g_assert_nonnull (colon);
  *colon = '\0';
  *line = (guint) g_ascii_strtoull (colon + 1, NULL, 10);
  known = strcmp (out, "??") != 0 && *line > 0;
  *basename = known ? g_path_get_basename (out) : NULL;

  g_free (out);
  g_free (address);
  return known;
}

/* Resolves @ip with its file and line, and checks them against addr2line
 * on @dwarf_file at the offset looked up. */
static void
lw_assert_line_matches_addr2line (uintptr_t   ip,
                                  gboolean    is_return_address,
                                  const char *dwarf_file,
                                  const char *expected_basename)
{
  LwFrame frame;
  char *basename;
  char *expected;
  guint expected_line;

  lw_symbols_resolve (ip, is_return_address, &frame);
  lw_lines_resolve (&frame, is_return_address);
  g_assert_true (lw_addr2line (dwarf_file, frame.module_offset - (is_return_address ? 1 : 0),
                               &expected, &expected_line));
  g_assert_cmpstr (expected, ==, expected_basename);
  g_assert_nonnull (frame.file);
  basename = g_path_get_basename (frame.file);
  g_assert_cmpstr (basename, ==, expected);
  g_assert_cmpuint (frame.line, ==, expected_line);
  g_test_message ("%s+0x%" G_GINT64_MODIFIER "x: %s:%u", frame.symbol,
                  (guint64) frame.symbol_offset, frame.file, frame.line);

  g_free (basename);
  g_free (expected);
  lw_frame_clear (&frame);
}

__attribute__((noipa)) static uintptr_t
lw_test_return_address (void)
{
  return (uintptr_t) __builtin_return_address (0);
}

/* The test executable's own DWARF (it is built with -g). */
static void
test_lines_self (void)
{
  char *self = lw_self_path ();
  uintptr_t return_address;
  guint call_line;
  LwFrame frame;

  lw_assert_line_matches_addr2line ((uintptr_t) lw_test_static_function + LW_INSIDE, FALSE,
                                    self, "test-symbols.c");
  lw_assert_line_matches_addr2line ((uintptr_t) lw_test_exported_function + LW_INSIDE, TRUE,
                                    self, "test-symbols.c");

  /* A real return address belongs to the line of its call. */
  return_address = lw_test_return_address (); call_line = __LINE__;
  lw_assert_line_matches_addr2line (return_address, TRUE, self, "test-symbols.c");
  lw_symbols_resolve (return_address, TRUE, &frame);
  lw_lines_resolve (&frame, TRUE);
  g_assert_cmpstr (frame.symbol, ==, "test_lines_self");
  g_assert_cmpuint (frame.line, ==, call_line);
  lw_frame_clear (&frame);

  /* No module, no line; a frame is cleared of a previous line. */
  lw_symbols_resolve (0x10, FALSE, &frame);
  frame.file = g_strdup ("stale.c");
  frame.line = 7;
  lw_lines_resolve (&frame, FALSE);
  g_assert_null (frame.file);
  g_assert_cmpuint (frame.line, ==, 0);
  lw_frame_clear (&frame);
  g_free (self);
}

/* The DWARF of the build-id debug file and of the .gnu_debuglink file. */
static void
test_lines_debug_files (void)
{
  const char * const roots[] = { LW_DEBUG_ROOT, NULL };
  LwFixture fixture;
  LwFrame frame;
  char *debug_file;

  lw_symbols_set_debug_roots (roots);
  lw_fixture_open (&fixture, LW_FIXTURE_SPLIT);
  lw_symbols_resolve ((uintptr_t) fixture.exported, FALSE, &frame);
  debug_file = lw_debug_file (&frame, LW_DEBUG_ROOT);
  g_assert_nonnull (debug_file);
  lw_assert_line_matches_addr2line (fixture.static_address () + LW_INSIDE, FALSE,
                                    debug_file, "symbols-fixture.c");
  lw_assert_line_matches_addr2line ((uintptr_t) fixture.exported + LW_INSIDE, TRUE,
                                    debug_file, "symbols-fixture.c");
  lw_frame_clear (&frame);
  g_free (debug_file);
  lw_fixture_close (&fixture);
  lw_symbols_set_debug_roots (NULL);

  lw_fixture_open (&fixture, LW_FIXTURE_DEBUGLINK);
  lw_assert_line_matches_addr2line (fixture.static_address () + LW_INSIDE, TRUE,
                                    LW_DEBUGLINK_FILE, "symbols-fixture.c");
  lw_fixture_close (&fixture);

  /* The module's own .debug_info, when it has one. */
  lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
  lw_assert_line_matches_addr2line ((uintptr_t) fixture.exported + LW_INSIDE, FALSE,
                                    LW_FIXTURE_SYMTAB, "symbols-fixture.c");
  lw_fixture_close (&fixture);
}

/* The source file of glibc's qsort(): msort.c up to glibc 2.36, qsort.c
 * from 2.37 on, where the merge sort moved into it. */
static const char *
lw_glibc_qsort_file (void)
{
  unsigned major = 0, minor = 0;

  g_assert_cmpint (sscanf (gnu_get_libc_version (), "%u.%u", &major, &minor), ==, 2);
  return major > 2 || (major == 2 && minor >= 37) ? "qsort.c" : "msort.c";
}

/* libc, through libc6-dbg's debug file (whose DWARF is partly in a dwz
 * file), when installed. */
static void
test_lines_libc (void)
{
  uintptr_t qsort_address = lw_libc_function ("qsort");
  LwFrame frame;
  char *debug_file;

  lw_symbols_resolve (qsort_address, FALSE, &frame);
  debug_file = lw_debug_file (&frame, "/usr/lib/debug");
  lw_frame_clear (&frame);
  if (debug_file == NULL)
    {
      g_test_skip ("no libc debug file under /usr/lib/debug (libc6-dbg)");
      return;
    }
  lw_assert_line_matches_addr2line (qsort_address + LW_INSIDE, TRUE, debug_file,
                                    lw_glibc_qsort_file ());
  g_free (debug_file);
}

/* The sizes of @path's .debug_ sections, as they are in the file. */
static gsize
lw_dwarf_section_bytes (const char *path)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  Elf *elf;
  size_t shstrndx;
  gsize bytes = 0;

  g_assert_cmpint (fd, >=, 0);
  elf_version (EV_CURRENT);
  elf = elf_begin (fd, ELF_C_READ, NULL);
  g_assert_nonnull (elf);
  g_assert_cmpint (elf_getshdrstrndx (elf, &shstrndx), ==, 0);
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn (elf, scn)) != NULL;)
    {
      GElf_Shdr shdr;
      const char *name;

      g_assert_nonnull (gelf_getshdr (scn, &shdr));
      name = elf_strptr (elf, shstrndx, shdr.sh_name);
      g_assert_cmpuint (shdr.sh_flags & SHF_COMPRESSED, ==, 0);
      if (name != NULL && g_str_has_prefix (name, ".debug_"))
        bytes += shdr.sh_size;
    }
  elf_end (elf);
  close (fd);
  return bytes;
}

/* One field ("Anonymous:", "Rss:") of /proc/self/smaps_rollup, in KiB. */
static guint64
lw_smaps_kib (const char *field)
{
  g_autofree char *contents = NULL;
  const char *at;

  g_assert_true (g_file_get_contents ("/proc/self/smaps_rollup", &contents, NULL, NULL));
  at = strstr (contents, field);
  g_assert_nonnull (at);
  return g_ascii_strtoull (at + strlen (field), NULL, 10);
}

/* What resolving libc's lines costs, with libc6-dbg's compressed DWARF
 * (about 10 MB once inflated, 4 MB on disk): in a fresh process, lines
 * for a stack of 12 libc functions, then released as the reporting thread
 * does after a report. The process grows by less than 4 MiB, anonymous or
 * resident, while the DWARF is open and after: libdw alone would inflate
 * every section into memory that stays with the process (12.6 MiB
 * anonymous and 4 MiB of the mapped file were measured). Each line still
 * matches addr2line's. */
static void
test_lines_libc_memory (void)
{
  static const char *const functions[] = {
    "qsort", "malloc", "free", "printf", "fopen", "getaddrinfo", "pthread_create",
    "poll", "memcpy", "strtod", "qsort_r", "setlocale",
  };
  uintptr_t address = lw_libc_function ("qsort");
  guint n_frames = G_N_ELEMENTS (functions);
  guint64 anon_before, rss_before, anon_open, rss_open, anon_after, rss_after;
  gint64 start;
  double elapsed_ms;
  LwLinesStats stats;
  LwFrame *frames;
  LwFrame frame;
  char *debug_file;

#if defined(__SANITIZE_ADDRESS__)
  /* Resident memory under ASan is its allocator's: freed blocks wait in its
   * quarantine and every block carries redzones. */
  g_test_skip ("memory figures mean nothing under AddressSanitizer (its quarantine keeps freed memory)");
  return;
#endif
#if defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer's allocator and shadow memory: +11 MiB anonymous seen. */
  g_test_skip ("memory figures mean nothing under ThreadSanitizer (its allocator and shadow memory)");
  return;
#endif
  lw_symbols_resolve (address, FALSE, &frame);
  debug_file = lw_debug_file (&frame, "/usr/lib/debug");
  lw_frame_clear (&frame);
  if (debug_file == NULL)
    {
      g_test_skip ("no libc debug file under /usr/lib/debug (libc6-dbg)");
      return;
    }
  if (!g_test_subprocess ())
    {
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDOUT | G_TEST_SUBPROCESS_INHERIT_STDERR);
      g_test_trap_assert_passed ();
      g_free (debug_file);
      return;
    }

  /* Symbols first: their tables are not what is measured. */
  frames = g_new0 (LwFrame, n_frames);
  for (guint i = 0; i < n_frames; i++)
    lw_symbols_resolve (lw_libc_function (functions[i]) + LW_INSIDE, i > 0, &frames[i]);
#ifdef __GLIBC__
  /* lw_lines_release() trims malloc's free memory: what was free before
   * is given back first, so it does not hide what lines keep. */
  malloc_trim (0);
#endif
  anon_before = lw_smaps_kib ("Anonymous:");
  rss_before = lw_smaps_kib ("Rss:");
  start = g_get_monotonic_time ();
  lw_lines_resolve_stack (&frames, &n_frames);
  elapsed_ms = (g_get_monotonic_time () - start) / 1000.0;
  lw_lines_get_stats (&stats);
  anon_open = lw_smaps_kib ("Anonymous:");
  rss_open = lw_smaps_kib ("Rss:");
  g_test_message ("libc's DWARF open: %.1f MiB inflated, %.1f ms (anonymous +%.1f MiB, RSS +%.1f MiB)",
                  stats.open_bytes / 1048576.0, elapsed_ms,
                  ((gint64) anon_open - (gint64) anon_before) / 1024.0,
                  ((gint64) rss_open - (gint64) rss_before) / 1024.0);
  /* While the report is named too: only the compile units of the stack. */
  g_assert_cmpint ((gint64) anon_open - (gint64) anon_before, <, 4 * 1024);
  g_assert_cmpint ((gint64) rss_open - (gint64) rss_before, <, 4 * 1024);
  lw_lines_release ();
  anon_after = lw_smaps_kib ("Anonymous:");
  rss_after = lw_smaps_kib ("Rss:");
  g_test_message ("after its release: anonymous +%.1f MiB, RSS +%.1f MiB",
                  ((gint64) anon_after - (gint64) anon_before) / 1024.0,
                  ((gint64) rss_after - (gint64) rss_before) / 1024.0);
  g_assert_cmpint ((gint64) anon_after - (gint64) anon_before, <, 4 * 1024);
  g_assert_cmpint ((gint64) rss_after - (gint64) rss_before, <, 4 * 1024);
  for (guint i = 0; i < n_frames; i++)
    if (!frames[i].inlined)
      {
        g_assert_nonnull (frames[i].file);
        g_test_message ("%s: %s:%u", frames[i].symbol, frames[i].file, frames[i].line);
      }
  for (guint i = 0; i < n_frames; i++)
    lw_frame_clear (&frames[i]);
  g_free (frames);
  /* The same lines, answered again without the DWARF, match addr2line's. */
  lw_assert_line_matches_addr2line (address + LW_INSIDE, TRUE, debug_file,
                                    lw_glibc_qsort_file ());
  g_free (debug_file);
}

/* Copies the fixture to @dir with its DWARF compressed by objcopy
 * (zlib); with @corrupt, the start of its compressed .debug_info
 * overwritten. The copy's path. */
static char *
lw_fixture_compressed_copy (const char *dir, gboolean corrupt)
{
  char *path = g_build_filename (dir, corrupt ? "libsymbols-fixture-bad.so" : "libsymbols-fixture-z.so", NULL);
  const char *argv[] = { "objcopy", "--compress-debug-sections=zlib", LW_FIXTURE_SYMTAB, path, NULL };
  GError *error = NULL;
  int status = -1;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                               NULL, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  if (corrupt)
    {
      int fd = open (path, O_RDWR | O_CLOEXEC);
      Elf *elf;
      size_t shstrndx;
      gboolean done = FALSE;

      g_assert_cmpint (fd, >=, 0);
      elf_version (EV_CURRENT);
      elf = elf_begin (fd, ELF_C_READ, NULL);
      g_assert_cmpint (elf_getshdrstrndx (elf, &shstrndx), ==, 0);
      for (Elf_Scn *scn = NULL; (scn = elf_nextscn (elf, scn)) != NULL;)
        {
          GElf_Shdr shdr;
          static const guint8 garbage[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

          g_assert_nonnull (gelf_getshdr (scn, &shdr));
          if (strcmp (elf_strptr (elf, shstrndx, shdr.sh_name), ".debug_info") != 0)
            continue;
          g_assert_cmpuint (shdr.sh_flags & SHF_COMPRESSED, !=, 0);
          g_assert_cmpuint (shdr.sh_size, >, sizeof (Elf64_Chdr) + sizeof garbage);
          g_assert_cmpint (pwrite (fd, garbage, sizeof garbage, shdr.sh_offset + sizeof (Elf64_Chdr)),
                           ==, sizeof garbage);
          done = TRUE;
        }
      g_assert_true (done);
      elf_end (elf);
      close (fd);
    }
  return path;
}

/* A module whose own DWARF is compressed (as debug files' are): its
 * sections are inflated by lagwatch into an image libdw reads, and the
 * lines are those of the same module uncompressed; the image is counted
 * in the budget. Corrupt compressed DWARF: no line, a debug message, no
 * crash. */
static void
test_lines_compressed (void)
{
  GError *error = NULL;
  LwFixture plain, copy;
  LwFrame expected, frame;
  LwLinesStats stats;
  char *dir, *path;

  if (!g_test_subprocess ())
    {
      char *objcopy = g_find_program_in_path ("objcopy");

      if (objcopy == NULL)
        {
          g_test_skip ("objcopy (binutils) is not installed");
          return;
        }
      g_free (objcopy);
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_passed ();
      g_test_trap_assert_stdout ("*libsymbols-fixture-bad.so not read: *truncated or corrupt*");
      return;
    }
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);
  dir = g_dir_make_tmp ("lw-lines-XXXXXX", &error);
  g_assert_no_error (error);
  path = lw_fixture_compressed_copy (dir, FALSE);
  g_assert_nonnull (path);
  lw_fixture_open (&plain, LW_FIXTURE_SYMTAB);
  lw_fixture_open (&copy, path);

  lw_symbols_resolve ((uintptr_t) plain.exported + LW_INSIDE, FALSE, &expected);
  lw_lines_resolve (&expected, FALSE);
  g_assert_nonnull (expected.file);
  lw_lines_release ();
  lw_symbols_resolve ((uintptr_t) copy.exported + LW_INSIDE, FALSE, &frame);
  g_assert_cmpstr (frame.module, ==, path);
  lw_lines_resolve (&frame, FALSE);
  g_assert_cmpstr (frame.file, ==, expected.file);
  g_assert_cmpuint (frame.line, ==, expected.line);
  lw_lines_get_stats (&stats);
  g_assert_cmpuint (stats.n_open, ==, 1);
  /* The image: the DWARF sections inflated, with a header and a table. */
  g_assert_cmpuint (stats.open_bytes, >, lw_dwarf_section_bytes (LW_FIXTURE_SYMTAB));
  g_assert_cmpuint (stats.open_bytes, <, lw_dwarf_section_bytes (LW_FIXTURE_SYMTAB) + 4096);
  lw_lines_release ();
  lw_frame_clear (&frame);
  lw_frame_clear (&expected);
  lw_fixture_close (&copy);
  g_unlink (path);
  g_free (path);

  path = lw_fixture_compressed_copy (dir, TRUE);
  lw_fixture_open (&copy, path);
  lw_symbols_resolve ((uintptr_t) copy.exported + LW_INSIDE, FALSE, &frame);
  g_assert_cmpstr (frame.module, ==, path);
  lw_lines_resolve (&frame, FALSE);
  g_assert_null (frame.file);
  g_assert_cmpuint (frame.line, ==, 0);
  lw_frame_clear (&frame);
  lw_lines_release ();

  lw_fixture_close (&copy);
  lw_fixture_close (&plain);
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
}

/* The budget closes the least recently used DWARF, never the one in use. */
static void
test_lines_budget (void)
{
  LwLinesStats stats;
  LwFixture fixture;
  LwFrame frame;

  lw_fixture_open (&fixture, LW_FIXTURE_SYMTAB);
  lw_lines_set_budget (1);

  lw_symbols_resolve ((uintptr_t) lw_test_static_function, FALSE, &frame);
  lw_lines_resolve (&frame, FALSE);
  g_assert_nonnull (frame.file);
  lw_frame_clear (&frame);

  lw_symbols_resolve ((uintptr_t) fixture.exported, FALSE, &frame);
  lw_lines_resolve (&frame, FALSE);
  g_assert_nonnull (frame.file);
  lw_frame_clear (&frame);

  lw_lines_get_stats (&stats);
  g_assert_cmpuint (stats.n_open, ==, 1);
  /* Not compressed: libdw maps the file, and may touch its DWARF. */
  g_assert_cmpuint (stats.open_bytes, ==, lw_dwarf_section_bytes (LW_FIXTURE_SYMTAB));

  lw_lines_release ();
  lw_lines_get_stats (&stats);
  g_assert_cmpuint (stats.n_open, ==, 0);
  g_assert_cmpuint (stats.open_bytes, ==, 0);
  /* Answered before: no DWARF opened again. */
  lw_symbols_resolve ((uintptr_t) fixture.exported, FALSE, &frame);
  lw_lines_resolve (&frame, FALSE);
  g_assert_nonnull (frame.file);
  lw_frame_clear (&frame);
  lw_lines_get_stats (&stats);
  g_assert_cmpuint (stats.n_open, ==, 0);
  /* An address of the module not looked up before: opened again. */
  lw_symbols_resolve ((uintptr_t) fixture.exported + 1, FALSE, &frame);
  lw_lines_resolve (&frame, FALSE);
  g_assert_nonnull (frame.file);
  lw_frame_clear (&frame);
  lw_lines_get_stats (&stats);
  g_assert_cmpuint (stats.n_open, ==, 1);

  lw_lines_set_budget (0);
  lw_fixture_close (&fixture);
}

/* The file of a loaded module replaced by a FIFO after its symbols were
 * read: the line lookup, which opens the module's file for its DWARF,
 * skips it instead of waiting for a writer. */
static void
test_lines_fifo_module_file (void)
{
  GError *error = NULL;
  LwFixture fixture;
  LwFrame frame;
  char *dir;
  char *path;
  char *contents;
  gsize len;

  if (!g_test_subprocess ())
    {
      lw_trap_must_not_block ();
      g_test_trap_assert_stdout ("*libsymbols-fixture-copy.so: a FIFO, skipped*");
      return;
    }
  g_setenv ("G_MESSAGES_DEBUG", "all", TRUE);

  dir = g_dir_make_tmp ("lw-lines-XXXXXX", &error);
  g_assert_no_error (error);
  path = g_build_filename (dir, "libsymbols-fixture-copy.so", NULL);
  g_file_get_contents (LW_FIXTURE_SYMTAB, &contents, &len, &error);
  g_assert_no_error (error);
  g_file_set_contents (path, contents, len, &error);
  g_assert_no_error (error);
  lw_fixture_open (&fixture, path);

  lw_symbols_resolve ((uintptr_t) fixture.exported + LW_INSIDE, FALSE, &frame);
  g_assert_cmpstr (frame.symbol, ==, "lw_fixture_exported_function");
  lw_replace_by_fifo (path);
  lw_lines_resolve (&frame, FALSE);
  g_assert_null (frame.file);
  g_assert_cmpuint (frame.line, ==, 0);
  lw_frame_clear (&frame);

  lw_fixture_close (&fixture);
  g_unlink (path);
  g_rmdir (dir);
  g_free (contents);
  g_free (path);
  g_free (dir);
}

/* A TCP listener on 127.0.0.1 standing in for a debuginfod server. */
static int
lw_listen_local (char **url)
{
  struct sockaddr_in address = { .sin_family = AF_INET };
  socklen_t len = sizeof address;
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

  g_assert_cmpint (fd, >=, 0);
  address.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &address, sizeof address), ==, 0);
  g_assert_cmpint (listen (fd, 16), ==, 0);
  g_assert_cmpint (getsockname (fd, (struct sockaddr *) &address, &len), ==, 0);
  *url = g_strdup_printf ("http://127.0.0.1:%u", ntohs (address.sin_port));
  return fd;
}

static gboolean
lw_maps_contain (const char *name)
{
  char *maps = NULL;
  gboolean found;

  g_assert_true (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  found = strstr (maps, name) != NULL;
  g_free (maps);
  return found;
}

/* The stripped fixture has a build-id and no DWARF anywhere local: a line
 * lookup is where a download could happen. Returns how long the line
 * lookup took, in microseconds. */
static gint64
lw_resolve_stripped_fixture_line (LwFrame *frame)
{
  LwFixture fixture;
  gint64 start;
  gint64 elapsed;

  lw_fixture_open (&fixture, LW_FIXTURE_STRIPPED);
  lw_symbols_resolve ((uintptr_t) fixture.exported + LW_INSIDE, FALSE, frame);
  g_assert_nonnull (frame->build_id);
  start = g_get_monotonic_time ();
  lw_lines_resolve (frame, FALSE);
  elapsed = g_get_monotonic_time () - start;
  lw_fixture_close (&fixture);
  return elapsed;
}

/* DEBUGINFOD_URLS alone downloads nothing: no library loaded, no
 * connection made, no time lost. */
static void
test_lines_no_debuginfod (void)
{
  if (g_test_subprocess ())
    {
      char *url;
      int listener = lw_listen_local (&url);
      LwFrame frame;

      g_setenv ("DEBUGINFOD_URLS", url, TRUE);
      g_unsetenv ("LAGWATCH_DEBUGINFOD");
      lw_lines_init ();

      g_assert_cmpint (lw_resolve_stripped_fixture_line (&frame), <, 100 * G_TIME_SPAN_MILLISECOND);
      g_assert_null (frame.file);
      g_assert_cmpuint (frame.line, ==, 0);
      lw_frame_clear (&frame);

      g_assert_false (lw_maps_contain ("libdebuginfod"));
      /* A connection attempt would be waiting in the backlog. */
      {
        struct pollfd pending = { .fd = listener, .events = POLLIN };

        g_assert_cmpint (poll (&pending, 1, 0), ==, 0);
      }
      close (listener);
      g_free (url);
      return;
    }
  g_test_trap_subprocess (NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

typedef struct
{
  int   listener;
  guint connections; /* (atomic) */
} LwFakeServer;

/* The fake server's thread: every connection is accepted and closed at
 * once, so the client fails fast. Ends when the listener is shut down. */
static gpointer
lw_fake_server_thread (gpointer data)
{
  LwFakeServer *server = data;
  int fd;

  while ((fd = accept4 (server->listener, NULL, NULL, SOCK_CLOEXEC)) >= 0 || errno == EINTR)
    if (fd >= 0)
      {
        g_atomic_int_inc (&server->connections);
        close (fd);
      }
  return NULL;
}

/* LAGWATCH_DEBUGINFOD=1 asks the server, through libdebuginfod. */
static void
test_lines_debuginfod_opt_in (void)
{
  void *library = dlopen ("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

  if (library == NULL)
    {
      g_test_skip ("libdebuginfod.so.1 is not installed (libdebuginfod1)");
      return;
    }
  dlclose (library);

  if (g_test_subprocess ())
    {
      LwFakeServer server = { 0, 0 };
      GError *error = NULL;
      char *cache = g_dir_make_tmp ("lw-debuginfod-XXXXXX", &error);
      char *url;
      GThread *thread;
      LwFrame frame;
      guint connections;

      g_assert_no_error (error);
      server.listener = lw_listen_local (&url);
      thread = g_thread_new ("fake-debuginfod", lw_fake_server_thread, &server);
      g_setenv ("DEBUGINFOD_URLS", url, TRUE);
      g_setenv ("DEBUGINFOD_CACHE_PATH", cache, TRUE);
      g_setenv ("DEBUGINFOD_TIMEOUT", "5", TRUE);
      g_setenv ("LAGWATCH_DEBUGINFOD", "1", TRUE);
      lw_lines_init ();
      g_assert_true (lw_maps_contain ("libdebuginfod"));

      lw_resolve_stripped_fixture_line (&frame);
      g_assert_null (frame.file);
      lw_frame_clear (&frame);
      connections = g_atomic_int_get (&server.connections);
      g_assert_cmpuint (connections, >, 0);

      /* The failure is remembered: no second request. */
      lw_resolve_stripped_fixture_line (&frame);
      g_assert_null (frame.file);
      lw_frame_clear (&frame);
      g_assert_cmpuint (g_atomic_int_get (&server.connections), ==, connections);

      shutdown (server.listener, SHUT_RDWR);
      g_thread_join (thread);
      close (server.listener);
      {
        const char *argv[] = { "rm", "-rf", cache, NULL };

        g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                      NULL, NULL, NULL, &error);
        g_assert_no_error (error);
      }
      g_free (cache);
      g_free (url);
      return;
    }
  g_test_trap_subprocess (NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Lookups in DWARF: dwarf_addrdie() is wrapped (-Wl,--wrap, see
 * meson.build) to count them. Declared with plain types (Dwarf *, a
 * Dwarf_Addr, Dwarf_Die *): the test does not build against libdw's
 * headers. */
static guint lw_dwarf_lookups;

void *__real_dwarf_addrdie (void *dwarf, guint64 addr, void *result);
void *__wrap_dwarf_addrdie (void *dwarf, guint64 addr, void *result);

void *
__wrap_dwarf_addrdie (void *dwarf, guint64 addr, void *result)
{
  g_atomic_int_inc (&lw_dwarf_lookups);
  return __real_dwarf_addrdie (dwarf, addr, result);
}

#define LW_RECURSION_DEPTH 1000

static guint lw_recursion_call_line;

/* Fills @ips[0 .. @depth - 1] with the return addresses of a recursion
 * @depth calls deep, innermost first: all but the last the same address,
 * the line of the recursive call. */
__attribute__((noipa)) static void
lw_test_recurse (guint depth, uintptr_t *ips)
{
  ips[depth - 1] = (uintptr_t) __builtin_return_address (0);
  if (depth > 1)
    {
      lw_recursion_call_line = __LINE__; lw_test_recurse (depth - 1, ips);
    }
  __asm__ volatile ("" ::: "memory");  /* not a tail call: its return address stays */
}

/* A stack of a 1000-deep recursion is looked up in DWARF once per distinct
 * address (a few), not once per frame, and not at all the second time: the
 * answers are kept with the module's DWARF. Times both, for the record. */
static void
test_lines_each_address_once (void)
{
  uintptr_t *ips = g_new0 (uintptr_t, LW_RECURSION_DEPTH);
  LwFrame *frames;
  guint n_frames = LW_RECURSION_DEPTH;
  guint lookups;
  gint64 start;

  g_autoptr(GHashTable) distinct = g_hash_table_new (NULL, NULL);

  lw_test_recurse (LW_RECURSION_DEPTH, ips);
  /* The addresses looked up: the innermost frame's own (a stack's first pc
   * is where the thread was), the others' minus one (return addresses). */
  for (guint i = 0; i < LW_RECURSION_DEPTH; i++)
    g_hash_table_add (distinct, GSIZE_TO_POINTER (i == 0 ? ips[i] : ips[i] - 1));
  g_test_message ("%u distinct addresses to look up", g_hash_table_size (distinct));
  for (guint pass = 0; pass < 2; pass++)
    {
      frames = g_new0 (LwFrame, LW_RECURSION_DEPTH);
      n_frames = LW_RECURSION_DEPTH;
      for (guint i = 0; i < LW_RECURSION_DEPTH; i++)
        lw_symbols_resolve (ips[i], i > 0, &frames[i]);
      g_atomic_int_set (&lw_dwarf_lookups, 0);
      start = g_get_monotonic_time ();
      lw_lines_resolve_stack (&frames, &n_frames);
      lookups = (guint) g_atomic_int_get (&lw_dwarf_lookups);
      g_test_message ("pass %u: %u frames, %u DWARF lookups, %.2f ms", pass + 1, n_frames, lookups,
                      (g_get_monotonic_time () - start) / 1000.0);
      g_assert_cmpuint (n_frames, ==, LW_RECURSION_DEPTH);
      g_assert_cmpuint (lookups, <=, pass == 0 ? g_hash_table_size (distinct) : 0);
      for (guint i = 1; i + 1 < n_frames; i++)
        {
          g_assert_cmpstr (frames[i].symbol, ==, "lw_test_recurse");
          g_assert_cmpuint (frames[i].line, ==, lw_recursion_call_line);
        }
      for (guint i = 0; i < n_frames; i++)
        lw_frame_clear (&frames[i]);
      g_free (frames);
    }
  g_free (ips);
}

#else

static void
lw_skip_without_libdw (void)
{
  g_test_skip ("built without libdw (meson option libdw): no line info");
}

#define test_lines_self              lw_skip_without_libdw
#define test_lines_fifo_module_file  lw_skip_without_libdw
#define test_lines_debug_files       lw_skip_without_libdw
#define test_lines_libc              lw_skip_without_libdw
#define test_lines_budget            lw_skip_without_libdw
#define test_lines_libc_memory       lw_skip_without_libdw
#define test_lines_compressed        lw_skip_without_libdw
#define test_lines_no_debuginfod     lw_skip_without_libdw
#define test_lines_debuginfod_opt_in lw_skip_without_libdw
#define test_lines_each_address_once lw_skip_without_libdw

#endif

typedef struct
{
  const char *name_part;
  uintptr_t   start;
  uintptr_t   end;
} LwExecSegment;

static int
lw_find_exec_segment (struct dl_phdr_info *info,
                      size_t               size,
                      void                *user_data)
{
  LwExecSegment *segment = user_data;

  if (strstr (info->dlpi_name, segment->name_part) == NULL)
    return 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
      {
        segment->start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        segment->end = segment->start + info->dlpi_phdr[i].p_memsz;
        return 1;
      }
  return 0;
}

static gint64
lw_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* Only with -m perf: cold table builds, warm lookups (tables built, too
 * many addresses for the cache) and repeated ones (from the cache) in
 * libglib and libc. */
static void
test_perf (void)
{
  enum { N_PER_MODULE = 2000, N_REPEATED = 200 };
  LwExecSegment segments[] = { { "/libglib-2.0.so", 0, 0 }, { "/libc.so.6", 0, 0 } };
  uintptr_t addresses[2 * N_PER_MODULE];
  gint64 cold[2];
  gint64 scan;
  gint64 start;
  gint64 warm;
  gint64 repeated;
  guint named = 0;
  LwFrame frame;

  /* The module scan first, so that the first lookups time table builds. */
  start = lw_now_ns ();
  lw_modules_init ();
  scan = lw_now_ns () - start;

  for (guint m = 0; m < G_N_ELEMENTS (segments); m++)
    {
      dl_iterate_phdr (lw_find_exec_segment, &segments[m]);
      g_assert_cmpuint (segments[m].start, !=, 0);
      for (guint i = 0; i < N_PER_MODULE; i++)
        addresses[m * N_PER_MODULE + i] = segments[m].start + 1 +
          (segments[m].end - segments[m].start - 1) / N_PER_MODULE * i;

      start = lw_now_ns ();
      lw_symbols_resolve (addresses[m * N_PER_MODULE], TRUE, &frame);
      cold[m] = lw_now_ns () - start;
      lw_frame_clear (&frame);
    }

  for (guint i = 0; i < G_N_ELEMENTS (addresses); i++)
    {
      lw_symbols_resolve (addresses[i], TRUE, &frame);
      lw_frame_clear (&frame);
    }

  start = lw_now_ns ();
  for (guint i = 0; i < G_N_ELEMENTS (addresses); i++)
    {
      lw_symbols_resolve (addresses[i], TRUE, &frame);
      named += frame.symbol != NULL;
      lw_frame_clear (&frame);
    }
  warm = lw_now_ns () - start;

  /* The same few addresses again and again, as a sampler sees them: the
   * cache answers. */
  start = lw_now_ns ();
  for (guint round = 0; round < 100; round++)
    for (guint i = 0; i < N_REPEATED; i++)
      {
        lw_symbols_resolve (addresses[i * (G_N_ELEMENTS (addresses) / N_REPEATED)], TRUE, &frame);
        lw_frame_clear (&frame);
      }
  repeated = lw_now_ns () - start;

  g_test_message ("module table scan: %.3f ms", scan / 1e6);
  g_test_message ("first lookup in libglib (table build): %.3f ms", cold[0] / 1e6);
  g_test_message ("first lookup in libc (table build): %.3f ms", cold[1] / 1e6);
  g_test_message ("warm: %.1f ns per lookup (%u addresses, %u named)",
                  (double) warm / G_N_ELEMENTS (addresses),
                  (guint) G_N_ELEMENTS (addresses), named);
  g_test_message ("repeated: %.1f ns per lookup (%u addresses, 100 times)",
                  (double) repeated / (100 * N_REPEATED), (guint) N_REPEATED);
  g_test_minimized_result ((double) warm / G_N_ELEMENTS (addresses),
                           "%.1f ns per warm lookup",
                           (double) warm / G_N_ELEMENTS (addresses));
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/symbols/static-function", test_static_function);
  g_test_add_func ("/symbols/exported-function", test_exported_function);
  g_test_add_func ("/symbols/return-address-at-end", test_return_address_at_end);
  g_test_add_func ("/symbols/past-symbol-size", test_past_symbol_size);
  g_test_add_func ("/symbols/sizeless-symbol", test_sizeless_symbol);
  g_test_add_func ("/symbols/alias-preference", test_alias_preference);
  g_test_add_func ("/symbols/no-module", test_no_module);
  g_test_add_func ("/symbols/fixture/symtab", test_fixture_symtab);
  g_test_add_func ("/symbols/fixture/dynsym-only", test_fixture_dynsym_only);
  g_test_add_func ("/symbols/fixture/debug-file", test_fixture_debug_file);
  g_test_add_data_func ("/symbols/fixture/replaced-by-other-elf",
                        GINT_TO_POINTER (LW_REPLACE_BY_OTHER_ELF), test_fixture_replaced);
  g_test_add_data_func ("/symbols/fixture/replaced-by-garbage",
                        GINT_TO_POINTER (LW_REPLACE_BY_GARBAGE), test_fixture_replaced);
  g_test_add_data_func ("/symbols/fixture/replaced-by-no-sections",
                        GINT_TO_POINTER (LW_REPLACE_BY_NO_SECTIONS), test_fixture_replaced);
  g_test_add_data_func ("/symbols/fixture/deleted",
                        GINT_TO_POINTER (LW_REPLACE_BY_NOTHING), test_fixture_replaced);
  g_test_add_data_func ("/symbols/fixture/replaced-by-fifo",
                        GINT_TO_POINTER (LW_REPLACE_BY_FIFO), test_fixture_replaced);
  g_test_add_func ("/symbols/fifo/build-id-debug-file", test_fifo_build_id_debug_file);
  g_test_add_func ("/symbols/fifo/debuglink-debug-file", test_fifo_debuglink_debug_file);
  g_test_add_func ("/symbols/fixture/debuglink", test_fixture_debuglink);
  g_test_add_func ("/symbols/fixture/debuglink-bad-crc", test_fixture_debuglink_bad_crc);
  g_test_add_func ("/symbols/version-suffix", test_version_suffix);
  g_test_add_func ("/symbols/cache", test_cache);
  g_test_add_func ("/symbols/function-start", test_function_start);
  g_test_add_func ("/symbols/cxx-demangle", test_cxx_demangle);
  g_test_add_func ("/symbols/libc", test_libc);
  g_test_add_func ("/symbols/vdso", test_vdso);
  g_test_add_func ("/modules/unwind-table", test_unwind_table);
  g_test_add_func ("/modules/is-readable", test_is_readable);
  g_test_add_func ("/modules/readable-range", test_readable_range);
  g_test_add_func ("/modules/dlopen-dlclose", test_dlopen_dlclose);
  g_test_add_func ("/modules/concurrent", test_concurrent);
  g_test_add_func ("/lines/self", test_lines_self);
  g_test_add_func ("/lines/debug-files", test_lines_debug_files);
  g_test_add_func ("/lines/libc", test_lines_libc);
  g_test_add_func ("/lines/budget", test_lines_budget);
  g_test_add_func ("/lines/libc-memory", test_lines_libc_memory);
  g_test_add_func ("/lines/compressed", test_lines_compressed);
  g_test_add_func ("/lines/fifo-module-file", test_lines_fifo_module_file);
  g_test_add_func ("/lines/no-debuginfod", test_lines_no_debuginfod);
  g_test_add_func ("/lines/debuginfod-opt-in", test_lines_debuginfod_opt_in);
  g_test_add_func ("/lines/each-address-once", test_lines_each_address_once);
  if (g_test_perf ())
    g_test_add_func ("/symbols/perf/lookup", test_perf);

  return g_test_run ();
}
