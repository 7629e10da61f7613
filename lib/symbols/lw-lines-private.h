/* lw-lines-private.h: what the three files of file:line lookups share
 *
 *   lw-lines-dwarf  which modules' DWARF is open: finding a module's
 *                   DWARF, opening and reopening it, the list of open
 *                   files and its memory budget, debuginfod
 *   lw-lines-image  a compressed debug file's line sections inflated
 *                   into one anonymous mapping, its compile units filled
 *                   one at a time as addresses are looked up
 *   lw-lines        answering lookups: address -> file:line and the
 *                   calls inlined there, each answer kept per module
 * Only these files include this header; built with libdw only.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "lw-build-config.h"
#include "lw-fd.h"
#include "lw-modules.h"

#ifdef LW_HAVE_LIBDW

#include <elfutils/libdw.h>
#include <gelf.h>

G_BEGIN_DECLS

/* One section of a file, as lw_lines_image_load() copies it. */
typedef struct
{
  const char *name;   /* in the file's section name table */
  GElf_Shdr   shdr;
  gboolean    zlib;   /* SHF_COMPRESSED with zlib: inflated */
  guint64     size;   /* in the image */
  guint64     align;
  gsize       offset; /* in the image */
  gsize       name_offset;
} LwLinesSection;

/* A range of bytes of a section, [start, end). */
typedef struct
{
  gsize start;
  gsize end;
} LwLinesRange;

/* A section of the image filled one unit at a time (lw_lines_fill_unit()):
 * the rest of its pages are never touched, so never resident. */
typedef struct
{
  gboolean       present;
  LwLinesSection section;  /* name NULL */
  GArray        *filled;   /* LwLinesRange, sorted */
} LwLinesSparse;

enum { LW_LINES_SPARSE_INFO, LW_LINES_SPARSE_LINE, LW_LINES_N_SPARSE };

/* What .debug_aranges says: the compile unit at unit of [lo, hi). */
typedef struct
{
  guint64 lo;
  guint64 hi;
  gsize   unit;
} LwLinesArange;

/* One module's DWARF, open or closed, and what it answered. */
typedef struct
{
  char  *key;   /* "path\nbuild-id" ("path\n" without build-id) */
  char  *path;  /* the file the DWARF was found in, to reopen it; NULL: the module has none */
  gboolean must_have_build_id; /* how path was accepted (see lw_dwarf_matches_module()) */
  int    fd;    /* open with dwarf when libdw reads the file itself, else -1 */
  LwFdId fd_id; /* what fd was when opened: closed only if it still is */
  Dwarf *dwarf; /* NULL: closed (see path) */
  Elf   *image_elf;  /* the image dwarf reads (lw_lines_image_load()), or NULL */
  void  *image;
  gsize  image_size;
  LwLinesSparse sparse[LW_LINES_N_SPARSE]; /* filled on demand: see lw_lines_cu_die() */
  GArray *aranges;   /* LwLinesArange by lo; NULL: dwarf_addrdie() finds compile units */
  gsize  cost;  /* resident bytes the open DWARF may take; 0 when closed */
  GHashTable *answers; /* module offset (looked-up address) -> LwLinesAnswer; NULL until the first */
} LwDwarfEntry;

/* Every LwDwarfEntry and the counters below (lw-lines-dwarf.c). */
extern GMutex lw_lines_lock;
/* HOLDS: lw_lines_lock. LwDwarfEntry*, most recently used first. */
extern GQueue lw_lines_lru;
/* HOLDS: lw_lines_lock. What the open entries cost (their cost summed):
 * what the budget bounds. */
extern gsize  lw_lines_bytes;

/* lw-lines-dwarf.c */

/* HOLDS: lw_lines_lock. @module's entry, at the head of the list. */
LwDwarfEntry *lw_lines_entry_for    (LwModule     *module);
/* HOLDS: lw_lines_lock. Opens @entry's DWARF again if it was closed. */
gboolean      lw_dwarf_entry_reopen (LwDwarfEntry *entry,
                                     LwModule     *module);

/* lw-lines-image.c */

/* HOLDS: lw_lines_lock. The inflated image of @fd's line sections, or NULL. */
Elf       *lw_lines_image_load        (int             fd,
                                       const char     *path,
                                       void          **image,
                                       gsize          *image_size,
                                       gsize          *dwarf_bytes,
                                       LwLinesSparse  *sparse);
/* HOLDS: lw_lines_lock. Inflates @section of @fd whole into @out. */
gboolean   lw_lines_inflate           (int                   fd,
                                       const LwLinesSection *section,
                                       gsize                 header_size,
                                       guint8               *out);
/* HOLDS: lw_lines_lock. Reads the image's .debug_aranges into entry->aranges. */
gboolean   lw_lines_read_aranges      (LwDwarfEntry   *entry,
                                       Elf            *elf);
/* HOLDS: lw_lines_lock. A placeholder unit over [@start, @end) of .debug_info. */
void       lw_lines_write_placeholder (LwDwarfEntry   *entry,
                                       gsize           start,
                                       gsize           end);
/* HOLDS: lw_lines_lock. The compile unit DIE holding @offset, filled first. */
Dwarf_Die *lw_lines_cu_die            (LwDwarfEntry   *entry,
                                       Dwarf_Addr      offset,
                                       Dwarf_Die      *cu);

G_END_DECLS

#endif /* LW_HAVE_LIBDW */
