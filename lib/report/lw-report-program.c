/* lw-report-program.c: which frames are the program's
 *
 * The rule (docs/names.md says it for users). The program is its
 * executable and the libraries it ships itself; everything else a lag
 * passes through is the platform:
 *
 * - native code is the program's when its module is the executable, or
 *   lies under one of the program's own directories: the executable's
 *   directory (unless it is a system directory such as /usr/bin), each
 *   directory of the executable's DT_RUNPATH/DT_RPATH ($ORIGIN being the
 *   executable's directory; a system library directory there counts for
 *   nothing), and a directory named after the executable in a system
 *   library directory (/usr/lib/APP/, /usr/lib/x86_64-linux-gnu/APP/,
 *   /usr/libexec/APP/, ...: where Debian puts a program's private
 *   libraries and plugins). Every other library is the platform: GTK, GDK,
 *   cairo, pixman, libgtop, libsystemd, glibmm, libz, whatever a program
 *   links from the system library directories;
 * - whatever their directory, the modules every lag passes through (libc,
 *   the loader, GLib, lagwatch, the vDSO, sanitizer runtimes, JIT code:
 *   lw_report_frame_is_platform()), the C++ runtime (libstdc++, libc++,
 *   libgcc_s; and std::, __gnu_cxx::, __cxxabiv1:: functions inlined into
 *   the program) and interpreter or binding machinery (libpython, libmozjs,
 *   libgjs, libffi, libgirepository, PyGObject's _gi, CPython's _Py and
 *   Py C API functions) are never the program's: a program may ship its
 *   own copy of libstdc++, it does not write it;
 * - an interpreter's executable (python*, pypy*, gjs*) is no program of
 *   its own: the program it runs is its script, so no native module is
 *   the program's there;
 * - a Python frame is the program's unless its file is the interpreter's
 *   standard library (under lib/pythonX.Y/ but not in its site-packages or
 *   dist-packages, or a frozen module "<frozen ...>") or a binding of the
 *   platform installed as a package (gi, cairo, dbus: PyGObject,
 *   pycairo, dbus-python). Other packages count as the program's: Debian
 *   installs an application's own Python package (meld, gtweak) in the
 *   same dist-packages directory as the libraries, so the directory cannot
 *   tell them apart;
 * - a JavaScript frame is the program's unless its file is one of GJS's
 *   own modules (resource:///org/gnome/gjs/, /usr/share/gjs-1.0/) or
 *   SpiderMonkey's self-hosted code;
 * - in a stack that holds Python or JavaScript frames only those can be
 *   the program's (lw_report_frame_is_program_in()).
 *
 * Deciding costs string compares only: the executable's path and
 * RUNPATH are read once per process (one ELF file opened, its dynamic
 * section read), the first time a frame is judged.
 */
#include "lw-report.h"
#include "lw-report-program.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lw-elf-file.h"
#include "lw-proc.h"
#include "lw-say.h"

/* Where the program's own code is. Immutable once published. */
typedef struct
{
  char      *exe;          /* normalized absolute path, or NULL when unknown */
  char      *app;          /* its basename */
  gboolean   interpreter;  /* python*, pypy*, gjs*: its script is the program */
  GPtrArray *dirs;         /* of char *: normalized directories, each ending in '/' */
  GMutex     lock;
  GHashTable *verdicts;    /* module path -> 1 + is the program's; HOLDS: lock */
} LwProgramPlaces;

/* What /proc's link to a file removed or replaced since it was opened
 * ends with. */
#define LW_DELETED " (deleted)"

/* The most modules whose verdict is kept: a process maps a few hundred. */
#define LW_PROGRAM_VERDICTS_MAX 4096

/* Published once, replaced only by lw_report_program_set_executable()
 * (tests): a replaced one is kept, never freed, as another thread may
 * still read it. */
static LwProgramPlaces *lw_program_places;  /* (atomic) */

/* The places without the RUNPATH, used while the executable cannot be
 * read (every descriptor taken: EMFILE), made once, never freed. The
 * read is tried again at each question until it succeeds; only then are
 * the places published. */
static LwProgramPlaces *lw_program_places_partial;  /* (atomic) */

/* Any thread. @path with "//", "/./" and "dir/.." resolved, without
 * reading the file system (a loader's name can read
 * "/opt/app/bin/../lib/libx.so"). */
static char *
lw_path_normalize (const char *path)
{
  g_auto(GStrv) parts = g_strsplit (path, "/", -1);
  g_autoptr(GPtrArray) kept = g_ptr_array_new ();
  GString *out = g_string_new (NULL);

  for (guint i = 0; parts[i] != NULL; i++)
    {
      if (parts[i][0] == '\0' || g_str_equal (parts[i], "."))
        continue;
      if (g_str_equal (parts[i], ".."))
        {
          if (kept->len > 0)
            g_ptr_array_remove_index (kept, kept->len - 1);
          continue;
        }
      g_ptr_array_add (kept, parts[i]);
    }
  for (guint i = 0; i < kept->len; i++)
    g_string_append_printf (out, "/%s", (const char *) kept->pdata[i]);
  if (out->len == 0)
    g_string_append_c (out, '/');
  return g_string_free (out, FALSE);
}

/* Any thread. TRUE for a component like "x86_64-linux-gnu", a multiarch
 * library directory's name. */
static gboolean
lw_is_multiarch (const char *name, gsize len)
{
  g_autofree char *copy = g_strndup (name, len);

  return strstr (copy, "-linux-") != NULL;
}

/* Any thread. The length of the system library directory @path starts
 * with ("/usr/lib/", "/usr/lib/x86_64-linux-gnu/", "/lib64/", ...,
 * counting the last '/'), or 0. */
static gsize
lw_system_lib_prefix (const char *path)
{
  static const char *const roots[] = {
    "/usr/local/lib64/", "/usr/local/lib/", "/usr/local/libexec/",
    "/usr/lib32/", "/usr/lib64/", "/usr/libx32/", "/usr/libexec/", "/usr/lib/",
    "/lib32/", "/lib64/", "/libx32/", "/lib/",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (roots); i++)
    if (g_str_has_prefix (path, roots[i]))
      {
        gsize len = strlen (roots[i]);
        const char *slash = strchr (path + len, '/');

        /* The multiarch directory below it is a system directory too. */
        if (slash != NULL && lw_is_multiarch (path + len, (gsize) (slash - (path + len))))
          len = (gsize) (slash - path) + 1;
        return len;
      }
  return 0;
}

/* Any thread. TRUE when @dir (normalized, no trailing '/') is a directory
 * of the system, shared by every program: its subtree is no program's. */
static gboolean
lw_is_system_dir (const char *dir)
{
  static const char *const system[] = {
    "/", "/bin", "/sbin", "/usr", "/usr/bin", "/usr/sbin", "/usr/games", "/usr/share",
    "/usr/local", "/usr/local/bin", "/usr/local/sbin", "/usr/local/share", "/opt",
    "/usr/local/lib", "/usr/local/lib64", "/usr/local/libexec",
    "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec",
    "/lib", "/lib32", "/lib64", "/libx32",
  };
  g_autofree char *with_slash = g_strconcat (dir, "/", NULL);

  for (gsize i = 0; i < G_N_ELEMENTS (system); i++)
    if (g_str_equal (dir, system[i]))
      return TRUE;
  /* "/usr/lib/x86_64-linux-gnu": the whole of it is a system prefix. */
  return lw_system_lib_prefix (with_slash) == strlen (with_slash);
}

/* Any thread. Adds @dir (absolute, not yet normalized) to @places' own
 * directories unless it is a system directory. */
static void
lw_places_add_dir (LwProgramPlaces *places, const char *dir)
{
  g_autofree char *normal = NULL;

  if (!g_path_is_absolute (dir))
    return;
  normal = lw_path_normalize (dir);
  if (lw_is_system_dir (normal))
    return;
  g_ptr_array_add (places->dirs, g_strconcat (normal, "/", NULL));
}

/* Any thread, normal context. The DT_RUNPATH and DT_RPATH strings of the
 * ELF file at @path, joined by ':', or NULL: none, no such file, or the
 * file could not be read, and then *@why (required) says why. */
static char *
lw_read_runpath (const char *path, char **why)
{
  LwElfFile file;
  GString *found = NULL;
  Elf_Scn *scn = NULL;

  lw_elf_init ();
  if (!lw_elf_file_open (&file, path, TRUE, why))
    return NULL;
  while ((scn = elf_nextscn (file.elf, scn)) != NULL)
    {
      GElf_Shdr shdr;
      Elf_Data *data;

      if (gelf_getshdr (scn, &shdr) == NULL || shdr.sh_type != SHT_DYNAMIC || shdr.sh_entsize == 0
          || (data = elf_getdata (scn, NULL)) == NULL)
        continue;
      for (gsize i = 0; i < shdr.sh_size / shdr.sh_entsize; i++)
        {
          GElf_Dyn dyn;
          const char *value;

          if (gelf_getdyn (data, (int) i, &dyn) == NULL || dyn.d_tag == DT_NULL)
            break;
          if (dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
            continue;
          value = elf_strptr (file.elf, shdr.sh_link, dyn.d_un.d_val);
          if (value == NULL)
            continue;
          if (found == NULL)
            found = g_string_new (value);
          else
            g_string_append_printf (found, ":%s", value);
        }
    }
  lw_elf_file_close (&file);
  return found != NULL ? g_string_free (found, FALSE) : NULL;
}

/* Any thread. The RUNPATH entry @entry with "$ORIGIN" and "${ORIGIN}"
 * replaced by @origin, a few times at most: an @origin holding "$ORIGIN"
 * would otherwise be replaced forever. */
static char *
lw_expand_origin (const char *entry, const char *origin)
{
  char *expanded = g_strdup (entry);

  for (guint tokens = 0; tokens < 8; tokens++)
    {
      const char *token = strstr (expanded, "$ORIGIN");
      gsize at, len;
      char *next;

      if (token == NULL)
        token = strstr (expanded, "${ORIGIN}");
      if (token == NULL)
        break;
      at = (gsize) (token - expanded);
      len = token[1] == '{' ? strlen ("${ORIGIN}") : strlen ("$ORIGIN");
      next = g_strdup_printf ("%.*s%s%s", (int) at, expanded, origin, expanded + at + len);
      g_free (expanded);
      expanded = next;
    }
  return expanded;
}

/* Any thread. The places of the program at @exe (absolute), whose
 * DT_RUNPATH/DT_RPATH is @runpath (NULL: none). */
static LwProgramPlaces *
lw_places_new (const char *exe, const char *runpath)
{
  static const char *const interpreters[] = { "python", "pypy", "gjs" };
  LwProgramPlaces *places = g_new0 (LwProgramPlaces, 1);
  g_autofree char *dir = NULL;

  places->dirs = g_ptr_array_new_with_free_func (g_free);
  g_mutex_init (&places->lock);
  places->verdicts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (exe == NULL || !g_path_is_absolute (exe))
    return places;
  places->exe = lw_path_normalize (exe);
  /* An executable replaced on disk while it runs (a package upgrade):
   * the loader's name for it keeps the suffix, its place is the same. */
  if (g_str_has_suffix (places->exe, LW_DELETED))
    places->exe[strlen (places->exe) - strlen (LW_DELETED)] = '\0';
  places->app = g_path_get_basename (places->exe);
  for (gsize i = 0; i < G_N_ELEMENTS (interpreters); i++)
    if (g_str_has_prefix (places->app, interpreters[i]))
      places->interpreter = TRUE;
  if (places->interpreter)
    return places;
  dir = g_path_get_dirname (places->exe);
  lw_places_add_dir (places, dir);
  if (runpath != NULL)
    {
      g_auto(GStrv) entries = g_strsplit (runpath, ":", -1);

      for (guint i = 0; entries[i] != NULL; i++)
        {
          g_autofree char *expanded = NULL;
          char *real;

          if (entries[i][0] == '\0')
            continue;
          expanded = lw_expand_origin (entries[i], dir);
          lw_places_add_dir (places, expanded);
          /* The loader names a library by the path it found it under; a
           * directory reached through a symbolic link is added both ways. */
          real = realpath (expanded, NULL);
          if (real != NULL)
            lw_places_add_dir (places, real);
          free (real);
        }
    }
  return places;
}

/* Any thread. Frees @places, never published. */
static void
lw_places_free (LwProgramPlaces *places)
{
  g_ptr_array_unref (places->dirs);
  g_hash_table_unref (places->verdicts);
  g_mutex_clear (&places->lock);
  g_free (places->exe);
  g_free (places->app);
  g_free (places);
}

/* Any thread. Publishes @places at *@at unless another thread did first:
 * then @places is freed and that thread's (the same answer) returned. */
static LwProgramPlaces *
lw_places_publish (LwProgramPlaces **at, LwProgramPlaces *places)
{
  if (g_atomic_pointer_compare_and_exchange (at, NULL, places))
    return places;
  lw_places_free (places);
  return g_atomic_pointer_get (at);
}

/* Any thread, normal context. This process's program places, read once:
 * the executable's real path and its RUNPATH. While the executable cannot
 * be read, the places without its RUNPATH, said once. */
static const LwProgramPlaces *
lw_places_get (void)
{
  static gint said;
  LwProgramPlaces *places = g_atomic_pointer_get (&lw_program_places);
  g_autofree char *link = NULL;
  g_autofree char *runpath = NULL;
  g_autofree char *why = NULL;
  g_autofree char *exe = NULL;
  char *real;

  if (places != NULL)
    return places;
  link = g_strconcat (lw_proc_self (), "/exe", NULL);
  runpath = lw_read_runpath (link, &why);
  if (why != NULL)
    {
      if (g_atomic_int_compare_and_exchange (&said, 0, 1))
        lw_say ("cannot read the program's executable (%s): until it can, libraries found through its "
                "RUNPATH count as the platform's, not the program's", why);
      places = g_atomic_pointer_get (&lw_program_places_partial);
      if (places != NULL)
        return places;
    }
  /* realpath() fails on a deleted executable; the link still names it.
   * Neither opens a descriptor. */
  real = realpath (link, NULL);
  exe = real != NULL ? g_strdup (real) : g_file_read_link (link, NULL);
  free (real);
  if (why == NULL)
    return lw_places_publish (&lw_program_places, lw_places_new (exe, runpath));
  return lw_places_publish (&lw_program_places_partial, lw_places_new (exe, NULL));
}

/* Places replaced by lw_report_program_set_executable(): never freed, as
 * another thread may still be judging a frame with them; kept here so
 * that they stay reachable (tests replace them a few times). */
static GPtrArray *lw_retired_places;
static GMutex     lw_retired_lock;

/* Any thread, normal context. */
void
lw_report_program_set_executable (const char *exe, const char *runpath)
{
  g_autofree char *from_file = NULL;
  g_autofree char *why = NULL;
  LwProgramPlaces *old;

  /* A test's executable: one that cannot be read has no RUNPATH. */
  if (exe != NULL && runpath == NULL)
    runpath = from_file = lw_read_runpath (exe, &why);
  old = g_atomic_pointer_exchange (&lw_program_places, exe != NULL ? lw_places_new (exe, runpath) : NULL);
  if (old == NULL)
    return;
  g_mutex_lock (&lw_retired_lock);
  if (lw_retired_places == NULL)
    lw_retired_places = g_ptr_array_new ();
  g_ptr_array_add (lw_retired_places, old);
  g_mutex_unlock (&lw_retired_lock);
}

/* Any thread. lw_report_module_is_program() without the cache. */
static gboolean
lw_report_module_is_program_uncached (const LwProgramPlaces *places,
                                      const char            *module)
{
  g_autofree char *path = lw_path_normalize (module);
  gsize prefix;

  if (g_str_has_suffix (path, LW_DELETED))
    path[strlen (path) - strlen (LW_DELETED)] = '\0';
  if (g_str_equal (path, places->exe))
    return TRUE;
  for (guint i = 0; i < places->dirs->len; i++)
    if (g_str_has_prefix (path, places->dirs->pdata[i]))
      return TRUE;
  /* A directory named after the program in a system library directory. */
  prefix = lw_system_lib_prefix (path);
  if (prefix > 0)
    {
      gsize len = strlen (places->app);

      return strncmp (path + prefix, places->app, len) == 0 && path[prefix + len] == '/';
    }
  return FALSE;
}

/* Any thread, normal context. TRUE when @module (an absolute path) is the
 * program's executable or lies in one of its own directories. The
 * verdict is kept per module: a report asks about the same few modules
 * hundreds of times. */
static gboolean
lw_report_module_is_program (const char *module)
{
  LwProgramPlaces *places;
  gpointer known;
  gboolean program;

  if (module == NULL || !g_path_is_absolute (module))
    return FALSE;
  places = (LwProgramPlaces *) lw_places_get ();
  if (places->exe == NULL || places->interpreter)
    return FALSE;
  g_mutex_lock (&places->lock);
  known = g_hash_table_lookup (places->verdicts, module);
  g_mutex_unlock (&places->lock);
  if (known != NULL)
    return GPOINTER_TO_INT (known) - 1;
  program = lw_report_module_is_program_uncached (places, module);
  g_mutex_lock (&places->lock);
  if (g_hash_table_size (places->verdicts) < LW_PROGRAM_VERDICTS_MAX)
    g_hash_table_insert (places->verdicts, g_strdup (module), GINT_TO_POINTER (1 + program));
  g_mutex_unlock (&places->lock);
  return program;
}

/* Any thread. TRUE when the interpreted frame @frame (lang set) runs the
 * program's code rather than the interpreter's own library. */
static gboolean
lw_report_script_is_program (const LwFrame *frame)
{
  static const char *const bindings[] = { "gi", "cairo", "dbus", "_dbus_bindings", "pygtkcompat" };
  const char *file = frame->file != NULL ? frame->file : frame->module;
  const char *lib;

  if (file == NULL)
    return TRUE;
  if (g_str_equal (frame->lang, "javascript"))
    return !g_str_has_prefix (file, "resource:///org/gnome/gjs/")
           && !g_str_has_prefix (file, "/usr/share/gjs-1.0/")
           && !g_str_equal (file, "self-hosted");
  if (g_str_has_prefix (file, "<frozen "))
    return FALSE;
  /* ".../lib/python3.11/x.py": the standard library, unless in the
   * site-packages or dist-packages below it. */
  for (lib = strstr (file, "/lib"); lib != NULL; lib = strstr (lib + 1, "/lib"))
    {
      const char *name = strchr (lib + 1, '/');
      const char *next;

      if (name == NULL || !(g_str_has_prefix (name, "/python") || g_str_has_prefix (name, "/pypy")))
        continue;
      next = strchr (name + 1, '/');
      if (next == NULL)
        continue;
      if (g_str_has_prefix (next, "/site-packages/") || g_str_has_prefix (next, "/dist-packages/"))
        {
          const char *package = strchr (next + 1, '/') + 1;

          for (gsize i = 0; i < G_N_ELEMENTS (bindings); i++)
            {
              gsize len = strlen (bindings[i]);

              if (strncmp (package, bindings[i], len) == 0
                  && (package[len] == '/' || package[len] == '.'))
                return FALSE;
            }
          return TRUE;
        }
      /* "lib/python3.11/", "lib/python3/" (Debian's own packages are in
       * dist-packages, handled above): the standard library. */
      return FALSE;
    }
  return TRUE;
}

/* Frames of these modules are the platform, not the program: a fingerprint
 * made of them would group unrelated lags (every lag passes through GLib). */
gboolean
lw_report_frame_is_platform (const LwFrame *frame)
{
  static const char *const platform[] = {
    "libc.so", "ld-linux", "libglib-2.0.so", "libgobject-2.0.so", "libgio-2.0.so",
    "libgmodule-2.0.so", "libgthread-2.0.so", "liblagwatch.so", "[vdso]", "libpthread.so",
    "libm.so", "libdl.so", "librt.so",
    /* Sanitizer runtimes interpose libc functions in instrumented builds. */
    "libasan.so", "libubsan.so", "libtsan.so", "liblsan.so",
    /* Generated code (lw-perfmap.h): its addresses change from run to run. */
    "[jit]",
  };
  const char *base;

  if (frame->module == NULL)
    return FALSE;
  base = strrchr (frame->module, '/');
  base = base != NULL ? base + 1 : frame->module;
  for (gsize i = 0; i < G_N_ELEMENTS (platform); i++)
    if (g_str_has_prefix (base, platform[i]))
      return TRUE;
  return FALSE;
}

/* Any thread. */
gboolean
lw_report_frames_interpreted (const LwFrame *frames,
                              guint          n_frames)
{
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].lang != NULL)
      return TRUE;
  return FALSE;
}

/* Any thread. */
gboolean
lw_report_frame_is_program_in (const LwFrame *frame,
                               gboolean       interpreted)
{
  if (interpreted && frame->lang == NULL)
    return FALSE;
  return lw_report_frame_is_program (frame);
}

/* Any thread. Where the function's qualified name starts in @name, after
 * a template's return type ("void std::sort<...>(...)"): past the last
 * space outside <> and () before the parameter list. */
static const char *
lw_report_name_start (const char *name)
{
  const char *start = name;
  int depth = 0;

  for (const char *p = name; *p != '\0'; p++)
    {
      if (*p == '<' || *p == '(')
        {
          if (*p == '(' && depth == 0 && p > name)
            break;
          depth++;
        }
      else if ((*p == '>' || *p == ')') && depth > 0)
        depth--;
      else if (*p == ' ' && depth == 0)
        start = p + 1;
    }
  return start;
}

/* Any thread. */
gboolean
lw_report_frame_is_machinery (const LwFrame *frame)
{
  static const char *const modules[] = {
    "libstdc++.so", "libc++.so", "libc++abi.so", "libgcc_s.so",
    "libpython", "python3", "libmozjs", "libgjs.so", "libffi.so",
    /* GObject Introspection's machinery: GJS calls C through it, PyGObject
     * through its own extension modules. */
    "libgirepository-", "_gi.", "_gi_cairo.",
  };
  static const char *const functions[] = {
    "std::", "__gnu_cxx::", "__cxxabiv1::", "_Py", "Py",
  };
  const char *base;

  if (frame->lang != NULL)
    return FALSE;
  if (frame->module != NULL)
    {
      base = strrchr (frame->module, '/');
      base = base != NULL ? base + 1 : frame->module;
      for (gsize i = 0; i < G_N_ELEMENTS (modules); i++)
        if (g_str_has_prefix (base, modules[i]))
          return TRUE;
    }
  if (frame->symbol != NULL)
    {
      const char *name = lw_report_name_start (frame->symbol);

      for (gsize i = 0; i < G_N_ELEMENTS (functions); i++)
        if (g_str_has_prefix (name, functions[i]))
          {
            /* "Py" only as the C API's "PyObject_Call": not "Python_app". */
            if (g_str_equal (functions[i], "Py") && !g_ascii_isupper (name[2]))
              continue;
            return TRUE;
          }
    }
  return FALSE;
}

/* Any thread. */
gboolean
lw_report_frame_is_program (const LwFrame *frame)
{
  /* Code in an interpreted language: by its file, whatever it is called
   * ("python3_tools.py") or its function ("PyLoader.run"). */
  if (frame->lang != NULL)
    return lw_report_script_is_program (frame);
  if (lw_report_frame_is_platform (frame) || lw_report_frame_is_machinery (frame))
    return FALSE;
  return lw_report_module_is_program (frame->module);
}

/* Any thread. */
const LwFrame *
lw_report_program_frame (const LwFrame *frames,
                         guint          n_frames)
{
  gboolean interpreted = lw_report_frames_interpreted (frames, n_frames);

  /* In a Python lag that runs zlib's deflate(), the Python function, not
   * deflate. */
  for (guint i = 0; i < n_frames; i++)
    if (frames[i].symbol != NULL && lw_report_frame_is_program_in (&frames[i], interpreted))
      return &frames[i];
  return NULL;
}

/* The public accessor of the rule, lagwatch.h. */
/* Any thread. */
gboolean
lagwatch_report_get_frame_is_program (LagWatchReport *report,
                                      guint           index)
{
  g_return_val_if_fail (report != NULL, FALSE);
  return index < report->n_frames
         && lw_report_frame_is_program_in (&report->frames[index],
                                           lw_report_frames_interpreted (report->frames, report->n_frames));
}
