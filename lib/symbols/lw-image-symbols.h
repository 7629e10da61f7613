/* lw-image-symbols.h: symbols read from a module's memory, not its file
 *
 * Two cases: a module whose file cannot be trusted (replaced by an upgrade,
 * deleted, unreadable, corrupt) is named from the .dynsym of its mapped
 * image, found through its dynamic section; the vDSO has no file at all,
 * and its whole image is copied from memory and read with libelf. Every
 * read of the image is bounded by the module's readable segments and done
 * while the loader cannot unmap it (lw_module_with_image()).
 *
 * Thread safety: any thread, normal context (takes the loader lock
 * briefly).
 */
#pragma once

#include <glib.h>

#include "lw-modules.h"
#include "lw-symbols-private.h"

G_BEGIN_DECLS

/* Any thread, normal context. The table of the .dynsym of @module's mapped
 * image, or NULL when it has none or the module is gone. */
LwSymbolTable *lw_image_symbols_read_dynsym (LwModule *module);

/* Any thread, normal context. The vDSO's table (@module is the vDSO), or
 * NULL with the reason in @why. */
LwSymbolTable *lw_image_symbols_read_vdso   (LwModule *module,
                                             char    **why);

G_END_DECLS
