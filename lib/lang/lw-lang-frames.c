/* lw-lang-frames.c: the process-wide table behind interpreted frames' tags */
#include "lw-lang-frames.h"
#include "lw-say.h"

#define LW_LANG_TAG      ((uintptr_t) 0xffffff0000000000ULL)
#define LW_LANG_TAG_MASK ((uintptr_t) 0xffffff0000000000ULL)

typedef struct
{
  const char *lang;      /* static */
  char       *function;
  const char *file;      /* interned */
  guint       line;
} LwLangEntry;

static GMutex lw_lang_lock;
static GHashTable *lw_lang_index;  /* "lang\nfile\nfunction\nline" -> index + 1; HOLDS: lw_lang_lock */
static LwLangEntry lw_lang_table[LW_LANG_FRAMES_MAX];
static guint lw_lang_len;          /* HOLDS: lw_lang_lock */
static gboolean lw_lang_full_said; /* HOLDS: lw_lang_lock */

uintptr_t
lw_lang_frame_intern (const char *lang, const char *function, const char *file, guint line)
{
  g_autofree char *key = g_strdup_printf ("%s\n%s\n%s\n%u", lang, file, function, line);
  uintptr_t tag = 0;
  gpointer found;

  g_mutex_lock (&lw_lang_lock);
  if (lw_lang_index == NULL)
    lw_lang_index = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  found = g_hash_table_lookup (lw_lang_index, key);
  if (found != NULL)
    tag = LW_LANG_TAG | (GPOINTER_TO_UINT (found) - 1);
  else if (lw_lang_len < LW_LANG_FRAMES_MAX)
    {
      LwLangEntry *entry = &lw_lang_table[lw_lang_len];

      entry->lang = lang;
      entry->function = g_strdup (function);
      entry->file = g_intern_string (file);
      entry->line = line;
      tag = LW_LANG_TAG | lw_lang_len;
      lw_lang_len++;
      g_hash_table_insert (lw_lang_index, g_steal_pointer (&key), GUINT_TO_POINTER (lw_lang_len));
    }
  else if (!lw_lang_full_said)
    {
      lw_say ("more than %d distinct Python or JavaScript frames seen: new ones are no longer shown",
              LW_LANG_FRAMES_MAX);
      lw_lang_full_said = TRUE;
    }
  g_mutex_unlock (&lw_lang_lock);
  return tag;
}

gboolean
lw_lang_frame_is (uintptr_t ip)
{
  return (ip & LW_LANG_TAG_MASK) == LW_LANG_TAG;
}

/* Any thread, normal context. A copy of the entry of tag @ip; lang NULL
 * when there is none. */
static LwLangEntry
lw_lang_frame_entry (uintptr_t ip)
{
  guint index = (guint) (ip & ~LW_LANG_TAG_MASK);
  LwLangEntry entry = { 0 };

  if (!lw_lang_frame_is (ip))
    return entry;
  g_mutex_lock (&lw_lang_lock);
  if (index < lw_lang_len)
    entry = lw_lang_table[index];
  g_mutex_unlock (&lw_lang_lock);
  return entry;
}

const char *
lw_lang_frame_language (uintptr_t ip)
{
  return lw_lang_frame_entry (ip).lang;
}

gboolean
lw_lang_frame_resolve (uintptr_t ip, LwFrame *frame)
{
  /* Entries are never changed nor freed once in the table. */
  LwLangEntry entry = lw_lang_frame_entry (ip);

  if (entry.lang == NULL)
    return FALSE;
  *frame = (LwFrame) { .ip = ip };
  frame->symbol = g_strdup (entry.function);
  frame->module = entry.file;
  frame->file = g_strdup (entry.file);
  frame->line = entry.line;
  frame->lang = entry.lang;
  return TRUE;
}

const char *
lw_lang_missing_name (LwLangMissing why)
{
  switch (why)
    {
    case LW_LANG_MISSING_MOVED:
      return "moved";
    case LW_LANG_MISSING_UNREADABLE:
      return "unreadable";
    case LW_LANG_MISSING_NONE:
    default:
      return NULL;
    }
}
