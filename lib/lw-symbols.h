/* lw-symbols.h: naming code addresses (module, build-id, offset, symbol)
 *
 * Per-module sorted symbol tables read with libelf, built lazily the first
 * time an address in the module is resolved, searched by bisection. Sources,
 * best first: the .symtab of the debug file found by build-id under the debug
 * roots, the file's own .symtab, its .dynsym; the vDSO is read from memory.
 * A file on disk whose build-id differs from the mapped image is not trusted
 * (its names would be wrong): such frames get module + offset only.
 *
 * Thread safety: any thread, normal context (the watcher thread in practice;
 * never the watched thread, never a signal handler). Internally locked.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* One symbolized frame. Every string is owned by the frame (g_free'd by
 * lw_frame_clear()), so a frame outlives the module it names. */
typedef struct
{
  uintptr_t ip;            /* the address as captured */
  char     *module;        /* absolute path of the module, "[vdso]", or NULL if none */
  char     *build_id;      /* lowercase hex, or NULL when the module has none */
  uintptr_t module_offset; /* ip - load bias: the ELF virtual address in the module */
  char     *symbol;        /* function name, or NULL when no symbol covers the address */
  uintptr_t symbol_offset; /* ip - symbol start (0 when symbol is NULL) */
} LwFrame;

/* Any thread, normal context. Resolves @ip into @frame. @is_return_address
 * is TRUE for every frame but the innermost one of a stack taken at an
 * interrupted PC: a return address is looked up at ip - 1 so that a call at
 * the very end of a function is not blamed on the next one. */
void  lw_symbols_resolve (uintptr_t ip,
                          gboolean  is_return_address,
                          LwFrame  *frame);

/* Any thread. Frees the strings of @frame and zeroes it. */
void  lw_frame_clear     (LwFrame  *frame);

/* Any thread, normal context. Replaces the list of debug roots searched for
 * ".build-id/xx/rest.debug" files. NULL restores the default
 * ("/usr/lib/debug"). Roots are absolute directories; a root that does not
 * exist is skipped silently. Takes effect for modules not yet loaded. */
void  lw_symbols_set_debug_roots (const char * const *roots);

G_END_DECLS
