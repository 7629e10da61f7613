/* lw-demangle.c: C++ names, demangled by the process's own libstdc++;
 * Rust names, by libiberty's Rust demangler linked in
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-demangle.h"

#include "lw-module-symbols.h"
#include "lw-modules.h"
#include "lw-symtab.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*LwCxaDemangle) (const char *mangled,
                                char       *buffer,
                                size_t     *length,
                                int        *status);

static GMutex    lw_demangle_lock;
/* HOLDS: lw_demangle_lock. libstdc++'s module (owned) and the runtime
 * address of its __cxa_demangle, found in its symbol table; the module is
 * kept to tell whether the libstdc++ loaded now is still that one. Also
 * guards every table's demangled names. */
static LwModule *lw_demangler_module;
static uintptr_t lw_demangler_address;

typedef struct
{
  LwCxaDemangle func;
  const char   *mangled;
  char         *demangled; /* (nullable) malloc'd */
} LwDemangleCall;

/* Inside dl_iterate_phdr() (lw_module_with_image): libstdc++ cannot be
 * unloaded while its demangler runs. */
static void
lw_demangle_call (LwModule *module,
                  gpointer  user_data)
{
  LwDemangleCall *call = user_data;
  int status = -1;

  call->demangled = call->func (call->mangled, NULL, NULL, &status);
  if (status != 0)
    g_clear_pointer (&call->demangled, free);
}

/* Any thread, normal context. @mangled demangled by the __cxa_demangle of
 * the libstdc++ already loaded in the process (malloc'd, free() it), or
 * NULL when libstdc++ is not loaded or the name is not a valid C++ name.
 * The function is found in libstdc++'s own symbol table: dlsym() would
 * take the loader lock, which the stopped thread may hold. */
static char *
lw_demangle (const char *mangled)
{
  LwModule *stdcxx = lw_modules_ref_module_by_name ("libstdc++.so.6");
  LwDemangleCall call = { NULL, mangled, NULL };
  gboolean known;

  if (stdcxx == NULL)
    return NULL;

  g_mutex_lock (&lw_demangle_lock);
  known = stdcxx == lw_demangler_module;
  if (known)
    call.func = (LwCxaDemangle) lw_demangler_address;
  g_mutex_unlock (&lw_demangle_lock);

  if (!known)
    {
      const LwSymbolTable *table = lw_module_symbols_get (stdcxx);
      const LwSymbol *symbol = lw_symbol_table_find_name (table, "__cxa_demangle");
      uintptr_t address = symbol != NULL ? lw_module_get_bias (stdcxx) + symbol->value : 0;

      g_mutex_lock (&lw_demangle_lock);
      g_clear_pointer (&lw_demangler_module, lw_module_unref);
      lw_demangler_module = lw_module_ref (stdcxx);
      lw_demangler_address = address;
      g_mutex_unlock (&lw_demangle_lock);
      call.func = (LwCxaDemangle) address;
    }

  if (call.func != NULL)
    lw_module_with_image (stdcxx, lw_demangle_call, &call);
  lw_module_unref (stdcxx);
  return call.demangled;
}

/* Any thread, normal context: libiberty's callback, which appends @len
 * bytes of the demangled name. */
static void
lw_demangle_rust_append (const char *text,
                         size_t      len,
                         void       *user_data)
{
  g_string_append_len (user_data, text, (gssize) len);
}

/* Any thread, normal context. @mangled as a Rust developer reads it
 * (g_free() it), or NULL when it is not a Rust name. A legacy Rust name
 * is also a valid C++ name ("_ZN3app4main17h0123456789abcdefE" would
 * read "app::main::h0123456789abcdef"): it is tried first. libiberty
 * drops the hash without DMGL_VERBOSE, and bounds its own recursion. */
static char *
lw_demangle_rust (const char *mangled)
{
  GString *out;

  /* "_ZN" (legacy, ends in a 17h<16 hex> hash) or "_R" (v0). */
  if (!g_str_has_prefix (mangled, "_ZN") && !g_str_has_prefix (mangled, "_R"))
    return NULL;
  out = g_string_new (NULL);
  if (!rust_demangle_callback (mangled, DMGL_PARAMS | DMGL_ANSI, lw_demangle_rust_append, out) ||
      out->len == 0)
    {
      g_string_free (out, TRUE);
      return NULL;
    }
  return g_string_free (out, FALSE);
}

/* Any thread, normal context. */
char *
lw_demangle_name (const char *name)
{
  char *shown;
  char *demangled;

  g_return_val_if_fail (name != NULL, NULL);

  if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
    return NULL;
  shown = lw_demangle_rust (name);
  if (shown != NULL || name[1] != 'Z')
    return shown;
  demangled = lw_demangle (name);
  shown = g_strdup (demangled);
  free (demangled);
  return shown;
}

/* Any thread, normal context. */
const char *
lw_demangle_display_name (LwSymbolTable  *table,
                          const LwSymbol *symbol)
{
  const char *name = table->names + symbol->name;
  const char *shown = NULL;
  char *demangled;

  if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
    return name;

  g_mutex_lock (&lw_demangle_lock);
  if (table->demangled != NULL)
    shown = g_hash_table_lookup (table->demangled, GUINT_TO_POINTER (symbol->name));
  g_mutex_unlock (&lw_demangle_lock);
  if (shown != NULL)
    return shown;

  demangled = lw_demangle_name (name);
  if (demangled == NULL)
    return name;

  g_mutex_lock (&lw_demangle_lock);
  if (table->demangled == NULL)
    table->demangled = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  shown = g_hash_table_lookup (table->demangled, GUINT_TO_POINTER (symbol->name));
  if (shown == NULL)
    {
      g_hash_table_insert (table->demangled, GUINT_TO_POINTER (symbol->name), demangled);
      lw_symbol_table_account (table, 0, strlen (demangled) + 1);
      shown = demangled;
      demangled = NULL;
    }
  g_mutex_unlock (&lw_demangle_lock);
  g_free (demangled);

  return shown;
}
