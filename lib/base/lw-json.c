/* lw-json.c: JSON strings as lagwatch writes them, and JSON read back from
 * a file anyone may have written */
#include "lw-json.h"

#include <string.h>
#include <time.h>

#define LW_JSON_MAX_DEPTH   64
#define LW_JSON_MAX_NUMBER  40        /* characters of one number */

/* Every lw_json_* function: any thread, on a reader of its own. */
typedef struct
{
  const char        *p;
  const char        *end;
  GString           *out;
  guint              depth;
  LwJsonMemberCheck  check;       /* the top-level object's members */
  gpointer           check_data;
} LwJsonReader;

static gboolean lw_json_value (LwJsonReader *r);

static void
lw_json_skip_space (LwJsonReader *r)
{
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static gboolean
lw_json_literal (LwJsonReader *r, const char *word)
{
  gsize n = strlen (word);

  if ((gsize) (r->end - r->p) < n || memcmp (r->p, word, n) != 0)
    return FALSE;
  g_string_append (r->out, word);
  r->p += n;
  return TRUE;
}

/* Four hex digits at @p (bounded by the caller) as a number, or -1. */
static int
lw_json_hex4 (const char *p)
{
  int v = 0;

  for (int i = 0; i < 4; i++)
    {
      int d = g_ascii_xdigit_value (p[i]);

      if (d < 0)
        return -1;
      v = v * 16 + d;
    }
  return v;
}

/* Any thread. @c as the inside of a JSON string: the quote and the
 * backslash escaped, newline and tab as \n and \t, every other C0
 * control, DEL and the C1 controls U+0080..U+009F as \u00XX (a terminal
 * acts on them: a record shown with cat or less must not). */
static void
lw_json_append_char (GString *out, gunichar c)
{
  if (c == '"' || c == '\\')
    {
      g_string_append_c (out, '\\');
      g_string_append_c (out, (char) c);
    }
  else if (c == '\n')
    g_string_append (out, "\\n");
  else if (c == '\t')
    g_string_append (out, "\\t");
  else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0))
    g_string_append_printf (out, "\\u%04x", c);
  else if (c < 0x80)
    g_string_append_c (out, (char) c);
  else
    g_string_append_unichar (out, c);
}

void
lw_json_append_string (GString *out, const char *text)
{
  g_autofree char *valid = NULL;

  if (text == NULL)
    {
      g_string_append (out, "null");
      return;
    }
  valid = g_utf8_make_valid (text, -1);
  g_string_append_c (out, '"');
  for (const char *p = valid; *p != '\0'; p = g_utf8_next_char (p))
    lw_json_append_char (out, g_utf8_get_char (p));
  g_string_append_c (out, '"');
}

static gboolean
lw_json_string (LwJsonReader *r)
{
  r->p++;  /* the opening quote */
  g_string_append_c (r->out, '"');
  while (r->p < r->end)
    {
      unsigned char c = (unsigned char) *r->p;
      gunichar u;

      if (c == '"')
        {
          r->p++;
          g_string_append_c (r->out, '"');
          return TRUE;
        }
      if (c < 0x20)
        return FALSE;
      if (c == '\\')
        {
          const char *simple = "\"\\/bfnrt";
          const char *decoded = "\"\\/\b\f\n\r\t";
          const char *hit;
          int high, low;

          if (r->end - r->p < 2)
            return FALSE;
          hit = strchr (simple, r->p[1]);
          if (r->p[1] != '\0' && hit != NULL)
            {
              lw_json_append_char (r->out, (guchar) decoded[hit - simple]);
              r->p += 2;
              continue;
            }
          if (r->p[1] != 'u' || r->end - r->p < 6 || (high = lw_json_hex4 (r->p + 2)) < 0)
            return FALSE;
          r->p += 6;
          if (high >= 0xdc00 && high <= 0xdfff)
            return FALSE;  /* a low surrogate alone */
          if (high >= 0xd800 && high <= 0xdbff)
            {
              if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u'
                  || (low = lw_json_hex4 (r->p + 2)) < 0xdc00 || low > 0xdfff)
                return FALSE;
              r->p += 6;
              u = 0x10000 + (((gunichar) high - 0xd800) << 10) + ((gunichar) low - 0xdc00);
            }
          else
            u = (gunichar) high;
          if (u == 0)
            return FALSE;  /* NUL: no C consumer reads past it */
          lw_json_append_char (r->out, u);
          continue;
        }
      u = g_utf8_get_char_validated (r->p, r->end - r->p);
      if (u == (gunichar) -1 || u == (gunichar) -2)
        return FALSE;
      lw_json_append_char (r->out, u);
      r->p = g_utf8_next_char (r->p);
    }
  return FALSE;
}

static gboolean
lw_json_number (LwJsonReader *r)
{
  const char *start = r->p;
  const char *p = r->p;
  gsize int_digits = 0, exp_digits = 0;

  if (p < r->end && *p == '-')
    p++;
  if (p < r->end && *p == '0')
    p++, int_digits = 1;
  else
    while (p < r->end && g_ascii_isdigit (*p))
      p++, int_digits++;
  if (int_digits == 0)
    return FALSE;
  if (p < r->end && *p == '.')
    {
      const char *frac = ++p;

      while (p < r->end && g_ascii_isdigit (*p))
        p++;
      if (p == frac)
        return FALSE;
    }
  if (p < r->end && (*p == 'e' || *p == 'E'))
    {
      p++;
      if (p < r->end && (*p == '+' || *p == '-'))
        p++;
      while (p < r->end && g_ascii_isdigit (*p))
        p++, exp_digits++;
      if (exp_digits == 0)
        return FALSE;
    }
  /* In range: an integer part that fits in 64 bits, an exponent that keeps
   * a double finite. */
  if (int_digits > 18 || exp_digits > 2 || p - start > LW_JSON_MAX_NUMBER)
    return FALSE;
  g_string_append_len (r->out, start, p - start);
  r->p = p;
  return TRUE;
}

static gboolean
lw_json_object (LwJsonReader *r)
{
  gboolean top = r->depth == 1;

  r->p++;
  g_string_append_c (r->out, '{');
  lw_json_skip_space (r);
  if (r->p < r->end && *r->p == '}')
    {
      r->p++;
      g_string_append_c (r->out, '}');
      return TRUE;
    }
  for (;;)
    {
      gsize key_at = r->out->len, value_at;
      g_autofree char *key = NULL;

      if (r->p >= r->end || *r->p != '"' || !lw_json_string (r))
        return FALSE;
      key = g_strndup (r->out->str + key_at, r->out->len - key_at);
      lw_json_skip_space (r);
      if (r->p >= r->end || *r->p != ':')
        return FALSE;
      r->p++;
      g_string_append_c (r->out, ':');
      value_at = r->out->len;
      if (!lw_json_value (r))
        return FALSE;
      if (top && !r->check (key, r->out->str + value_at, r->check_data))
        return FALSE;
      lw_json_skip_space (r);
      if (r->p < r->end && *r->p == ',')
        {
          r->p++;
          g_string_append_c (r->out, ',');
          lw_json_skip_space (r);
          continue;
        }
      if (r->p < r->end && *r->p == '}')
        {
          r->p++;
          g_string_append_c (r->out, '}');
          return TRUE;
        }
      return FALSE;
    }
}

static gboolean
lw_json_array (LwJsonReader *r)
{
  r->p++;
  g_string_append_c (r->out, '[');
  lw_json_skip_space (r);
  if (r->p < r->end && *r->p == ']')
    {
      r->p++;
      g_string_append_c (r->out, ']');
      return TRUE;
    }
  for (;;)
    {
      if (!lw_json_value (r))
        return FALSE;
      lw_json_skip_space (r);
      if (r->p < r->end && *r->p == ',')
        {
          r->p++;
          g_string_append_c (r->out, ',');
          continue;
        }
      if (r->p < r->end && *r->p == ']')
        {
          r->p++;
          g_string_append_c (r->out, ']');
          return TRUE;
        }
      return FALSE;
    }
}

static gboolean
lw_json_value (LwJsonReader *r)
{
  gboolean ok;

  lw_json_skip_space (r);
  if (r->p >= r->end || r->depth >= LW_JSON_MAX_DEPTH)
    return FALSE;
  switch (*r->p)
    {
    case '{':
      r->depth++;
      ok = lw_json_object (r);
      r->depth--;
      return ok;
    case '[':
      r->depth++;
      ok = lw_json_array (r);
      r->depth--;
      return ok;
    case '"':
      return lw_json_string (r);
    case 't':
      return lw_json_literal (r, "true");
    case 'f':
      return lw_json_literal (r, "false");
    case 'n':
      return lw_json_literal (r, "null");
    default:
      return lw_json_number (r);
    }
}

char *
lw_json_reencode_object (const char *json, gsize len, LwJsonMemberCheck check, gpointer data)
{
  GString *out = g_string_sized_new (len + 16);
  LwJsonReader r = { json, json + len, out, 0, check, data };

  lw_json_skip_space (&r);
  if (r.p < r.end && *r.p == '{' && lw_json_value (&r))
    {
      lw_json_skip_space (&r);
      if (r.p == r.end)
        return g_string_free (out, FALSE);
    }
  g_string_free (out, TRUE);
  return NULL;
}

/* Any thread. Formatted with gmtime_r(), not GDateTime: GLib 2.74's
 * shared UTC time zone is referenced with a plain read beside its atomic
 * count (ThreadSanitizer reports the watcher's stats record and the
 * reporting thread's records racing there), and no time zone is needed
 * for UTC. */
char *
lw_json_format_time (gint64 time_us)
{
  time_t seconds = (time_t) (time_us / G_USEC_PER_SEC);
  struct tm utc;

  if (time_us < 0 || gmtime_r (&seconds, &utc) == NULL || utc.tm_year + 1900 > 9999)
    return g_strdup ("1970-01-01T00:00:00.000Z");
  return g_strdup_printf ("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                          utc.tm_hour, utc.tm_min, utc.tm_sec, (int) (time_us % G_USEC_PER_SEC / 1000));
}
