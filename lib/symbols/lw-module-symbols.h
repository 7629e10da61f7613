/* lw-module-symbols.h: a module's symbol table, from its best source
 *
 * Built on the module's first lookup and attached to the module, so that
 * it lives exactly as long as the module stays loaded. Sources, best
 * first: the .symtab of the module's build-id debug file, of its
 * .gnu_debuglink file (lw-debug-file.h), the module file's .symtab, its
 * .dynsym. The module's own file is used only when its build-id equals
 * the one in memory; otherwise (replaced by an upgrade, deleted,
 * unreadable, not a regular file, corrupt) the .dynsym of the mapped
 * image is read (lw-image-symbols.h), so no name ever comes from the wrong
 * file.
 * The vDSO is read from memory.
 *
 * Thread safety: any thread, normal context (never a signal handler).
 */
#pragma once

#include "lw-modules.h"
#include "lw-symbols-private.h"

G_BEGIN_DECLS

/* Any thread, normal context. @module's table, built on first use (an
 * empty one when no source has symbols, so that the work is not redone).
 * Two threads may build it at once; the first attached wins. Valid while
 * the caller holds a reference on @module. */
LwSymbolTable *lw_module_symbols_get (LwModule *module);

G_END_DECLS
