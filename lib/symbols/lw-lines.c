/* lw-lines.c: source file and line of code addresses, from DWARF
 *
 * Answers lookups; lw-lines-dwarf.c keeps the modules' DWARF open. A
 * lookup finds the compile unit through .debug_aranges (lw_lines_cu_die(),
 * lw-lines-image.c), then dwarf_getsrc_die() in that unit's line table,
 * the row at or before the address, as addr2line does. Inlined calls are
 * the DW_TAG_inlined_subroutine scopes around the address
 * (dwarf_getscopes()), each called from its DW_AT_call_file:call_line.
 *
 * Each address's answer is kept per module (LwLinesAnswer), so the DWARF
 * is needed only for addresses not seen yet: lw_lines_release() closes
 * every open DWARF once a report is named, and a later report reopens a
 * module's only for a new address.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "lw-lines.h"

#include "lw-build-config.h"
#include "lw-demangle.h"
#include "lw-lines-private.h"
#include "lw-modules.h"

#ifdef LW_HAVE_LIBDW

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

/* Logical frames expanded from one physical frame: bounds a report built
 * from corrupt DWARF. */
#define LW_LINES_MAX_INLINED 16
/* Answers kept (LwLinesAnswer), all modules together: every module's are
 * dropped when there would be more (about 1 MiB at most, with their file
 * names). A report's stacks hold a few hundred distinct addresses at most;
 * a recursion repeats one. */
#define LW_LINES_MAX_ANSWERS 4096

/* One logical frame inlined at an address (see lw_lines_expand_inlined). */
typedef struct
{
  char  *symbol;
  char  *file;
  guint  line;
} LwLinesInlined;

/* What an address of a module resolved to, kept so that an address is
 * looked up in DWARF once: libdw costs about 0.1 ms per lookup, and a
 * recursion of 1000 frames repeats one return address 1000 times, a long
 * lag's samples the same few hundred. */
typedef struct
{
  char           *file;      /* NULL: no line for the address */
  guint           line;
  guint           n_inlined;
  LwLinesInlined *inlined;   /* innermost first */
} LwLinesAnswer;

/* HOLDS: lw_lines_lock. How many answers all entries keep. */
static guint lw_lines_n_answers;

/* HOLDS: lw_lines_lock. */
static void
lw_lines_answer_free (gpointer data)
{
  LwLinesAnswer *answer = data;

  for (guint i = 0; i < answer->n_inlined; i++)
    {
      g_free (answer->inlined[i].symbol);
      g_free (answer->inlined[i].file);
    }
  g_free (answer->inlined);
  g_free (answer->file);
  g_free (answer);
  lw_lines_n_answers--;
}

/* HOLDS: lw_lines_lock. @file, a path from @cu's line table, made absolute
 * with the compile unit's directory when it is relative (GCC writes paths
 * relative to the build directory). */
static char *
lw_lines_absolute_path (Dwarf_Die  *cu,
                        const char *file)
{
  Dwarf_Attribute attribute;
  const char *comp_dir;

  if (g_path_is_absolute (file) ||
      (comp_dir = dwarf_formstring (dwarf_attr (cu, DW_AT_comp_dir, &attribute))) == NULL ||
      !g_path_is_absolute (comp_dir))
    return g_strdup (file);
  return g_canonicalize_filename (file, comp_dir);
}

/* HOLDS: lw_lines_lock. The name of the function @die is an instance of,
 * as the symbol table would show it: its linkage name demangled, else its
 * DWARF name (a C function's), else NULL. */
static char *
lw_lines_die_name (Dwarf_Die *die)
{
  Dwarf_Attribute attribute;
  const char *linkage = dwarf_formstring (dwarf_attr_integrate (die, DW_AT_linkage_name, &attribute));
  const char *name;
  char *shown;

  if (linkage == NULL)
    linkage = dwarf_formstring (dwarf_attr_integrate (die, DW_AT_MIPS_linkage_name, &attribute));
  if (linkage != NULL)
    {
      shown = lw_demangle_name (linkage);
      return shown != NULL ? shown : g_strdup (linkage);
    }
  name = dwarf_diename (die);
  return g_strdup (name);
}

/* HOLDS: lw_lines_lock. Appends to @inlined (LwFrame) a logical frame for
 * each call inlined at @offset of @cu, innermost first, each at the
 * location in *@file:*@line (that of @frame's address for the innermost),
 * and leaves in *@file and *@line the call site of the outermost: the
 * physical frame's own line. Same scopes as eu-addr2line -i: those of the
 * innermost DIE at the address, from dwarf_getscopes_die(). */
static void
lw_lines_expand_inlined (Dwarf_Die     *cu,
                         Dwarf_Addr     offset,
                         const LwFrame *frame,
                         GArray        *inlined,
                         char         **file,
                         guint         *line)
{
  Dwarf_Die *scopes = NULL;
  Dwarf_Die innermost;
  Dwarf_Files *files = NULL;
  int n_scopes = dwarf_getscopes (cu, offset, &scopes);
  guint added = 0;

  if (n_scopes <= 0)
    {
      free (scopes);
      return;
    }
  innermost = scopes[0];
  free (scopes);
  scopes = NULL;
  n_scopes = dwarf_getscopes_die (&innermost, &scopes);
  if (n_scopes > 1 && dwarf_getsrcfiles (cu, &files, NULL) == 0)
    for (int i = 0; i < n_scopes - 1 && added < LW_LINES_MAX_INLINED; i++)
      {
        Dwarf_Die *die = &scopes[i];
        Dwarf_Attribute attribute;
        Dwarf_Word call_file = 0, call_line = 0;
        const char *caller_file;
        LwFrame logical = { 0 };

        if (dwarf_tag (die) != DW_TAG_inlined_subroutine)
          continue;
        logical.ip = frame->ip;
        logical.module = frame->module;
        logical.build_id = frame->build_id;
        logical.module_offset = frame->module_offset;
        logical.symbol = lw_lines_die_name (die);
        logical.file = *file;
        logical.line = *line;
        logical.inlined = TRUE;
        g_array_append_val (inlined, logical);
        added++;

        /* The caller's location: where this call was inlined. */
        *file = NULL;
        *line = 0;
        if (dwarf_formudata (dwarf_attr (die, DW_AT_call_file, &attribute), &call_file) == 0 &&
            dwarf_formudata (dwarf_attr (die, DW_AT_call_line, &attribute), &call_line) == 0 &&
            call_line > 0 && call_line <= G_MAXUINT &&
            (caller_file = dwarf_filesrc (files, call_file, NULL, NULL)) != NULL)
          {
            *file = lw_lines_absolute_path (cu, caller_file);
            *line = (guint) call_line;
          }
      }
  free (scopes);
}

/* HOLDS: lw_lines_lock. What @offset of @entry's module (@module)
 * resolves to: from the entry's answers, else looked up in its DWARF
 * (reopened if closed) and kept there. NULL when the module has no DWARF.
 * @frame gives the logical frames their module fields while they are
 * looked up. */
static const LwLinesAnswer *
lw_lines_answer_for (LwDwarfEntry *entry, LwModule *module, uintptr_t offset, const LwFrame *frame)
{
  LwLinesAnswer *answer;
  Dwarf_Die cu;
  Dwarf_Line *line;
  const char *file;
  int line_number = 0;

  answer = entry->answers != NULL ? g_hash_table_lookup (entry->answers, GSIZE_TO_POINTER (offset)) : NULL;
  if (answer != NULL)
    return answer;
  if (!lw_dwarf_entry_reopen (entry, module))
    return NULL;
  if (entry->answers == NULL)
    entry->answers = g_hash_table_new_full (NULL, NULL, NULL, lw_lines_answer_free);

  answer = g_new0 (LwLinesAnswer, 1);
  if (lw_lines_cu_die (entry, offset, &cu) != NULL &&
      (line = dwarf_getsrc_die (&cu, offset)) != NULL &&
      (file = dwarf_linesrc (line, NULL, NULL)) != NULL &&
      dwarf_lineno (line, &line_number) == 0 && line_number > 0)
    {
      GArray *logical = g_array_new (FALSE, TRUE, sizeof (LwFrame));

      answer->file = lw_lines_absolute_path (&cu, file);
      answer->line = line_number;
      lw_lines_expand_inlined (&cu, offset, frame, logical, &answer->file, &answer->line);
      answer->n_inlined = logical->len;
      answer->inlined = g_new0 (LwLinesInlined, logical->len);
      for (guint i = 0; i < logical->len; i++)
        {
          LwFrame *each = &g_array_index (logical, LwFrame, i);

          /* Taken over, not copied: the logical frame owns nothing else. */
          answer->inlined[i].symbol = each->symbol;
          answer->inlined[i].file = each->file;
          answer->inlined[i].line = each->line;
        }
      g_array_free (logical, TRUE);
    }
  if (lw_lines_n_answers >= LW_LINES_MAX_ANSWERS)
    for (GList *link = lw_lines_lru.head; link != NULL; link = link->next)
      if (((LwDwarfEntry *) link->data)->answers != NULL)
        g_hash_table_remove_all (((LwDwarfEntry *) link->data)->answers);
  g_hash_table_insert (entry->answers, GSIZE_TO_POINTER (offset), answer);
  lw_lines_n_answers++;
  return answer;
}

/* Any thread, normal context. Fills @frame's file and line; with
 * @inlined, appends the logical frames inlined at its address first (see
 * lw_lines_resolve_stack()). */
static void
lw_lines_resolve_frame (LwFrame  *frame,
                        gboolean  is_return_address,
                        GArray   *inlined)
{
  uintptr_t addr;
  LwModule *module;

  g_return_if_fail (frame != NULL);

  addr = is_return_address && frame->ip > 0 ? frame->ip - 1 : frame->ip;
  g_clear_pointer (&frame->file, g_free);
  frame->line = 0;
  if (frame->module == NULL)
    return;

  /* The module that named the frame, if it is still loaded. */
  module = lw_modules_ref_module (addr);
  if (module == NULL)
    return;
  if (!lw_module_is_vdso (module) &&
      lw_module_get_bias (module) == frame->ip - frame->module_offset &&
      strcmp (lw_module_get_path (module), frame->module) == 0)
    {
      uintptr_t offset = addr - lw_module_get_bias (module);
      const LwLinesAnswer *answer;

      g_mutex_lock (&lw_lines_lock);
      answer = lw_lines_answer_for (lw_lines_entry_for (module), module, offset, frame);
      if (answer != NULL)
        {
          frame->file = g_strdup (answer->file);
          frame->line = answer->line;
          for (guint i = 0; inlined != NULL && i < answer->n_inlined; i++)
            {
              LwFrame logical = { 0 };

              logical.ip = frame->ip;
              logical.module = frame->module;
              logical.build_id = frame->build_id;
              logical.module_offset = frame->module_offset;
              logical.symbol = g_strdup (answer->inlined[i].symbol);
              logical.file = g_strdup (answer->inlined[i].file);
              logical.line = answer->inlined[i].line;
              logical.inlined = TRUE;
              g_array_append_val (inlined, logical);
            }
        }
      g_mutex_unlock (&lw_lines_lock);
    }
  lw_module_unref (module);
}

/* Any thread, normal context. */
void
lw_lines_resolve (LwFrame  *frame,
                  gboolean  is_return_address)
{
  lw_lines_resolve_frame (frame, is_return_address, NULL);
}

/* Any thread, normal context. */
void
lw_lines_resolve_stack (LwFrame **frames,
                        guint    *n_frames)
{
  GArray *expanded;

  g_return_if_fail (frames != NULL && n_frames != NULL);

  expanded = g_array_sized_new (FALSE, TRUE, sizeof (LwFrame), *n_frames);
  for (guint i = 0; i < *n_frames; i++)
    {
      LwFrame frame = (*frames)[i];

      /* A frame of an interpreted language has its file and line already,
       * and no machine address to look up. */
      if (frame.lang == NULL)
        lw_lines_resolve_frame (&frame, i > 0, expanded);
      g_array_append_val (expanded, frame);
    }
  g_free (*frames);
  *n_frames = expanded->len;
  *frames = (LwFrame *) g_array_free (expanded, FALSE);
}

#else /* !LW_HAVE_LIBDW: built without line info. */

void
lw_lines_resolve (LwFrame  *frame,
                  gboolean  is_return_address)
{
  g_return_if_fail (frame != NULL);
}

void
lw_lines_resolve_stack (LwFrame **frames,
                        guint    *n_frames)
{
  g_return_if_fail (frames != NULL && n_frames != NULL);
}

#endif
