/* lw-module-path.h: the path a loaded object is reported and opened under
 *
 * The loader names the main program "" and keeps a relative dlopen() name
 * as it was given; the vDSO has no file. Both functions read a
 * dl_phdr_info, so they run inside dl_iterate_phdr(), in normal context.
 */
#pragma once

#include <glib.h>
#include <link.h>

G_BEGIN_DECLS

/* Inside dl_iterate_phdr(). TRUE when @info is the kernel's vDSO. */
gboolean lw_module_info_is_vdso (const struct dl_phdr_info *info);

/* Inside dl_iterate_phdr(). The path under which @info's object is
 * reported and its file opened (free it): "[vdso]", the main program's
 * real path, or the name the loader keeps, resolved when relative. */
char    *lw_module_info_path    (const struct dl_phdr_info *info);

G_END_DECLS
