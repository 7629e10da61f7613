/* lw-python-code.c: a code object's name, file and line, read from the
 * interpreter's memory and kept in a cache (lw-python.h says what and why)
 *
 * The cache's entries are checked against the code object's first bytes
 * at each sample (3.11: and its name's), so a code object freed and
 * another made at its address is read afresh, never named from the old
 * one. A frame's tag (lw-lang-frames) is its code object's name, file and
 * the line of the code unit it executes.
 */
#include "lw-python-private.h"

#include <string.h>

#include "lw-lang-frames.h"
#include "lw-load.h"
#include "lw-python.h"

/* PyASCIIObject.state bits (3.11 to 3.15): interned:2, kind:3, compact:1, ascii:1, then
 * ready (3.11) or statically_allocated (3.12+). */
#define LW_PY_STATE_KIND(state) (((state) >> 2) & 7)
#define LW_PY_STATE_COMPACT (1u << 5)
#define LW_PY_STATE_ASCII   (1u << 6)

/* Bounds: every read of interpreter memory ends. */
#define LW_PY_MAX_STRING       512
#define LW_PY_MAX_LINETABLE    (64 * 1024)
/* 3.12+: a code object carries co_version (LW_PY_NAME_CHECK). */
#define LW_PY_HAS_CO_VERSION(o) ((o)->version >= 0x030c)

/* Watcher thread. Empties a cache entry. */
void
lw_python_code_clear (LwPyCode *code)
{
  g_free (code->qualname);
  g_free (code->filename);
  g_free (code->linetable);
  memset (code, 0, sizeof *code);
}

/* Any thread, normal context. The UTF-8 form of @length code units of
 * @kind bytes each (1: Latin-1, 2: UCS-2, 4: UCS-4) at @data; NULL when a
 * read fails or a code point is not one. */
static char *
lw_python_read_units (uintptr_t data, gsize length, guint kind)
{
  g_autofree guint8 *units = g_malloc (length * kind);
  GString *text;

  if (!lw_python_read (data, units, length * kind))
    return NULL;
  text = g_string_sized_new (length * 2);
  for (gsize i = 0; i < length; i++)
    {
      guint32 unit = kind == 1 ? units[i] : kind == 2 ? ((guint16 *) units)[i] : ((guint32 *) units)[i];

      if (unit == 0 || !g_unichar_validate (unit))
        {
          g_string_free (text, TRUE);
          return NULL;
        }
      g_string_append_unichar (text, unit);
    }
  return g_string_free (text, FALSE);
}

/* Any thread, normal context. A str object's text, when it is compact (as
 * names and file names are): ASCII, its cached UTF-8 form, or its code
 * units converted. NULL for anything else, or when a read fails. */
char *
lw_python_read_string (const LwPyInterpreter *interp, uintptr_t object)
{
  const LwPyOffsets *o = interp->offsets;
  guint8 head[LW_PY_STRING_HEAD];
  uintptr_t data, length;
  guint32 state;
  guint kind;
  char *text;

  g_assert (o->compact_utf8 + sizeof (uintptr_t) <= sizeof head);
  if (!lw_python_read (object, head, o->ascii_size)
      || lw_load_uptr (head, o->object_type) != interp->unicode_type)
    return NULL;
  length = lw_load_uptr (head, o->unicode_length);
  memcpy (&state, head + o->unicode_state, sizeof state);
  kind = LW_PY_STATE_KIND (state);
  if (!(state & LW_PY_STATE_COMPACT) || length == 0 || length > LW_PY_MAX_STRING)
    return NULL;
  if (state & LW_PY_STATE_ASCII)
    data = object + o->ascii_size;
  else
    {
      if (!lw_python_read (object + o->ascii_size, head + o->ascii_size,
                           o->compact_utf8 + sizeof (uintptr_t) - o->ascii_size))
        return NULL;
      data = lw_load_uptr (head, o->compact_utf8);
      if (data == 0)
        return kind == 1 || kind == 2 || kind == 4
               ? lw_python_read_units (object + o->compact_size, length, kind) : NULL;
      length = lw_load_uptr (head, o->compact_utf8_length);
      if (length == 0 || length > LW_PY_MAX_STRING * 4)
        return NULL;
    }
  text = g_malloc (length + 1);
  text[length] = '\0';
  if (!lw_python_read (data, text, length) || memchr (text, '\0', length) != NULL
      || !g_utf8_validate (text, (gssize) length, NULL))
    {
      g_free (text);
      return NULL;
    }
  return text;
}

/* Any thread, normal context. A bytes object's contents, at most
 * LW_PY_MAX_LINETABLE bytes. */
static guint8 *
lw_python_read_bytes (const LwPyInterpreter *interp, uintptr_t object, gsize *len)
{
  const LwPyOffsets *o = interp->offsets;
  guint8 head[LW_PY_BYTES_HEAD];
  uintptr_t size;
  guint8 *data;

  if (!lw_python_read (object, head, o->bytes_data)
      || lw_load_uptr (head, o->object_type) != interp->bytes_type)
    return NULL;
  size = lw_load_uptr (head, o->var_size);
  if (size == 0 || size > LW_PY_MAX_LINETABLE)
    return NULL;
  data = g_malloc (size);
  if (!lw_python_read (object + o->bytes_data, data, size))
    {
      g_free (data);
      return NULL;
    }
  *len = size;
  return data;
}

/* Watcher thread. Keeps in @slot the first bytes of the str at @object
 * (3.11's check that a code object's name is the one cached): its head
 * (length, hash, state) and, when it is compact ASCII, its characters,
 * at most LW_PY_NAME_CHECK bytes in all. */
static gboolean
lw_python_name_check (const LwPyInterpreter *interp, uintptr_t object, LwPyCode *slot)
{
  const LwPyOffsets *o = interp->offsets;
  uintptr_t length;
  guint32 state;

  if (o->ascii_size > LW_PY_NAME_CHECK || !lw_python_read (object, slot->name, o->ascii_size))
    return FALSE;
  length = lw_load_uptr (slot->name, o->unicode_length);
  memcpy (&state, slot->name + o->unicode_state, sizeof state);
  slot->name_len = o->ascii_size;
  if ((state & LW_PY_STATE_COMPACT) && (state & LW_PY_STATE_ASCII))
    slot->name_len = MIN (LW_PY_NAME_CHECK, o->ascii_size + MIN (length, LW_PY_MAX_STRING) + 1);
  return lw_python_read (object, slot->name, slot->name_len);
}

/* Watcher thread. The cached entry of the code object at @code_addr,
 * left as it is; NULL when there is none. */
static LwPyCode *
lw_python_code_cached (LwPython *python, uintptr_t code_addr)
{
  LwPyCode *set = &python->codes[((code_addr >> 4) % LW_PY_CODE_SETS) * LW_PY_CODE_WAYS];

  for (guint w = 0; w < LW_PY_CODE_WAYS; w++)
    if (set[w].code == code_addr)
      return &set[w];
  return NULL;
}

/* Watcher thread. 3.11: fills in @local and @remote the read of the
 * first bytes of the qualified name of code object @i of the stack
 * (@code_addr), at the address and length cached for it; FALSE when
 * there is none to read (no entry, or 3.12+). */
gboolean
lw_python_name_iovec (LwPython *python, const LwPyInterpreter *interp, guint i, uintptr_t code_addr,
                      struct iovec *local, struct iovec *remote)
{
  LwPyCode *slot = lw_python_code_cached (python, code_addr);

  python->name_lens[i] = 0;
  if (slot == NULL || slot->name_len == 0)
    return FALSE;
  python->name_lens[i] = slot->name_len;
  *local = (struct iovec) { python->names[i], slot->name_len };
  *remote = (struct iovec) { (void *) lw_load_uptr (slot->head, interp->offsets->code_qualname),
                             slot->name_len };
  return TRUE;
}

/* Watcher thread. The code object at @code_addr, whose first bytes are
 * @block (3.11: and @name_len first bytes of its qualified name, @name):
 * from the cache when those bytes are unchanged since its strings and
 * line table were read, else read afresh. NULL when it is not a code
 * object or cannot be read whole. */
LwPyCode *
lw_python_code (LwPython *python, const LwPyInterpreter *interp, uintptr_t code_addr,
                const guint8 *block, const guint8 *name, gsize name_len)
{
  const LwPyOffsets *o = interp->offsets;
  LwPyCode *set = &python->codes[((code_addr >> 4) % LW_PY_CODE_SETS) * LW_PY_CODE_WAYS];
  LwPyCode *slot = NULL;
  gssize n_units;
  int firstlineno;

  if (lw_load_uptr (block, o->object_type) != interp->code_type)
    return NULL;
  /* A code object freed and another made at its address: the cached
   * entry stands only if every byte of the head but the reference count
   * is the same (the objects it refers to, its sizes and first line, and
   * from 3.12 its co_version, unique to it). A field that changes while
   * the code object lives (3.11's warm-up counter, a weak reference
   * taken) costs one more read of its strings, never a stale name. */
  slot = lw_python_code_cached (python, code_addr);
  if (slot != NULL
      && memcmp (slot->head + sizeof (uintptr_t), block + sizeof (uintptr_t),
                 o->code_code_adaptive - sizeof (uintptr_t)) == 0
      && name_len == slot->name_len
      && (name_len == 0 || memcmp (slot->name + sizeof (uintptr_t), name + sizeof (uintptr_t),
                                   name_len - sizeof (uintptr_t)) == 0))
    {
      slot->used = python->merges;
      return slot;
    }
  if (slot == NULL)
    {
      slot = &set[0];
      for (guint w = 1; w < LW_PY_CODE_WAYS; w++)
        if (set[w].used < slot->used)
          slot = &set[w];
    }
  lw_python_code_clear (slot);
  n_units = (gssize) lw_load_uptr (block, o->var_size);
  memcpy (&firstlineno, block + o->code_firstlineno, sizeof firstlineno);
  slot->qualname = lw_python_read_string (interp, lw_load_uptr (block, o->code_qualname));
  slot->filename = lw_python_read_string (interp, lw_load_uptr (block, o->code_filename));
  slot->linetable = lw_python_read_bytes (interp, lw_load_uptr (block, o->code_linetable),
                                          &slot->linetable_len);
  if (slot->qualname == NULL || slot->filename == NULL || slot->linetable == NULL
      || n_units <= 0)
    {
      lw_python_code_clear (slot);
      return NULL;
    }
  if (!LW_PY_HAS_CO_VERSION (o)
      && !lw_python_name_check (interp, lw_load_uptr (block, o->code_qualname), slot))
    {
      lw_python_code_clear (slot);
      return NULL;
    }
  slot->code = code_addr;
  memcpy (slot->head, block, o->code_code_adaptive);
  slot->used = python->merges;
  slot->firstlineno = firstlineno;
  slot->n_units = n_units;
  return slot;
}

/* Watcher thread. The tag of @code's frame executing code unit @index
 * (-1: not started): from the code's last few, else its line found in its
 * line table and interned. 0 when the table of tags is full. */
uintptr_t
lw_python_code_tag (LwPyCode *code, gssize index)
{
  guint line;
  uintptr_t tag;

  for (guint k = 0; k < LW_PY_CODE_TAGS; k++)
    if (code->tag[k] != 0 && code->tag_index[k] == index)
      return code->tag[k];
  line = lw_python_layout_line (code->linetable, code->linetable_len, code->firstlineno, index);
  tag = lw_lang_frame_intern (LW_LANG_PYTHON, code->qualname, code->filename, line);
  if (tag != 0)
    {
      code->tag_index[code->next_tag] = index;
      code->tag[code->next_tag] = tag;
      code->next_tag = (code->next_tag + 1) % LW_PY_CODE_TAGS;
    }
  return tag;
}
