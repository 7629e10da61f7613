/* test-json.c: one escaper for every string lagwatch writes as JSON
 *
 * A record is read with cat, less or a terminal as often as with a JSON
 * parser: no string in it may hold a byte a terminal acts on (ESC, DEL,
 * the C1 controls, among them the one-byte CSI U+009B) or bytes that are
 * not UTF-8. The report writer and the reader that re-encodes a saved hang
 * record must escape alike.
 */
#include <glib.h>
#include <string.h>

#include "lw-json.h"
#include "lw-report.h"

typedef struct
{
  const char *name;
  const char *text;
  const char *json;      /* as lw_json_append_string() writes it */
} EscapeCase;

static const EscapeCase escape_cases[] = {
  { "plain", "idle_cb", "\"idle_cb\"" },
  { "quote-backslash", "a\"b\\c", "\"a\\\"b\\\\c\"" },
  { "newline-tab", "a\nb\tc", "\"a\\nb\\tc\"" },
  { "esc", "\x1b[31mred", "\"\\u001b[31mred\"" },
  { "c0", "\x01\x07\x08\x0c\r\x1f", "\"\\u0001\\u0007\\u0008\\u000c\\u000d\\u001f\"" },
  { "del", "a\x7f" "b", "\"a\\u007fb\"" },
  /* U+0080, U+0085 (NEL), U+009B (CSI), U+009F: two bytes each in UTF-8. */
  { "c1", "\xc2\x80\xc2\x85\xc2\x9b" "1m\xc2\x9f", "\"\\u0080\\u0085\\u009b1m\\u009f\"" },
  /* U+00A0 and beyond are text. */
  { "after-c1", "\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"" },
  /* Not UTF-8: each bad sequence becomes U+FFFD. */
  { "invalid-utf8", "a\xff" "b\xc2", "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\"" },
  { "overlong-c1", "\xc0\x9b", "\"\xef\xbf\xbd\xef\xbf\xbd\"" },
};

static void
test_escape (gconstpointer data)
{
  const EscapeCase *c = data;
  g_autoptr(GString) out = g_string_new (NULL);

  lw_json_append_string (out, c->text);
  g_assert_cmpstr (out->str, ==, c->json);
}

static void
test_escape_null (void)
{
  g_autoptr(GString) out = g_string_new (NULL);

  lw_json_append_string (out, NULL);
  g_assert_cmpstr (out->str, ==, "null");
}

static gboolean
accept_all (const char *key, const char *value, gpointer data)
{
  return TRUE;
}

/* What the reader re-encodes is what the writer wrote: the same bytes,
 * whether the string came escaped (\u001b) or, for text, as it is. */
static void
test_reader_agrees (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (escape_cases); i++)
    {
      const EscapeCase *c = &escape_cases[i];
      g_autofree char *written = g_strdup_printf ("{\"k\":%s}", c->json);
      g_autofree char *again = lw_json_reencode_object (written, strlen (written), accept_all, NULL);

      g_test_message ("%s", c->name);
      g_assert_cmpstr (again, ==, written);
    }
  {
    /* \u escapes and short escapes of the same characters come out as the
     * writer writes them. */
    const char *in = "{\"k\":\"\\u000a\\u0009\\u001B\\u007F\\u0085\\u009b\\/\\b\"}";
    g_autofree char *again = lw_json_reencode_object (in, strlen (in), accept_all, NULL);

    g_assert_cmpstr (again, ==, "{\"k\":\"\\n\\t\\u001b\\u007f\\u0085\\u009b/\\u0008\"}");
  }
}

/* A report's strings go through the same escaper. */
static void
test_report_escapes (void)
{
  LagWatchReport *report = lw_report_new ();
  g_autofree char *json = NULL;
  g_autoptr(GString) expected = g_string_new (",\"thread_name\":");

  report->id = g_strdup ("1-1");
  report->thread_name = g_strdup ("w\x1b[2J\x7f\xc2\x9b" "1m\xff");
  lw_json_append_string (expected, report->thread_name);
  json = lagwatch_report_to_json (report);
  g_assert_nonnull (strstr (json, expected->str));
  g_assert_nonnull (strstr (json, "\"thread_name\":\"w\\u001b[2J\\u007f\\u009b1m\xef\xbf\xbd\""));
  for (const char *p = json; *p != '\0'; p++)
    g_assert_cmpint ((guchar) *p, >=, 0x20);
  g_assert_null (strstr (json, "\x7f"));
  g_assert_null (strstr (json, "\xc2\x9b"));
  lagwatch_report_unref (report);
}

/* Samples that ran Python without their Python frames say why, on their
 * stack and counted in the record and the text report; a record with
 * none has neither. */
static void
test_python_frames_missing (void)
{
  static const LwLangMissing why[] = { LW_LANG_MISSING_NONE, LW_LANG_MISSING_MOVED, LW_LANG_MISSING_UNREADABLE };
  static const guint samples[] = { 10, 2, 1 };
  LagWatchReport *report = lw_report_new ();
  g_autofree char *json = NULL, *text = NULL, *json_none = NULL;

  report->id = g_strdup ("1-1");
  report->event = "lag";
  report->n_samples = 13;
  report->n_stacks = G_N_ELEMENTS (why);
  report->stacks = g_new0 (LwReportStack, report->n_stacks);
  for (guint i = 0; i < report->n_stacks; i++)
    {
      report->stacks[i].samples = samples[i];
      report->stacks[i].lang_missing = why[i];
    }
  json = lagwatch_report_to_json (report);
  g_assert_nonnull (strstr (json, "{\"samples\":10,\"truncated\":false,\"stack\":"));
  g_assert_nonnull (strstr (json, "{\"samples\":2,\"truncated\":false,\"python_frames_missing\":\"moved\","));
  g_assert_nonnull (strstr (json, "{\"samples\":1,\"truncated\":false,\"python_frames_missing\":\"unreadable\","));
  g_assert_nonnull (strstr (json, "\"samples_python_missing\":{\"moved\":2,\"unreadable\":1}"));
  text = lagwatch_report_to_text (report);
  g_assert_nonnull (strstr (text, "(3 samples ran Python without its Python frames: 2 read after the thread had "
                                  "returned or called on; 1 whose frames changed while read)"));

  report->stacks[1].lang_missing = LW_LANG_MISSING_NONE;
  report->stacks[2].lang_missing = LW_LANG_MISSING_NONE;
  json_none = lagwatch_report_to_json (report);
  g_assert_null (strstr (json_none, "python_frames_missing"));
  g_assert_null (strstr (json_none, "samples_python_missing"));
  lagwatch_report_unref (report);
}

/* Records' times: UTC, milliseconds, truncated; the same answer from any
 * thread (it runs on the watcher and the reporting thread at once). */
static gpointer
format_times (gpointer data)
{
  for (int i = 0; i < 1000; i++)
    g_free (lw_json_format_time (1763739612345678 + i));
  return NULL;
}

static void
test_format_time (void)
{
  struct
  {
    gint64      time_us;
    const char *text;
  } cases[] = {
    { 0, "1970-01-01T00:00:00.000Z" },
    { 1763739612345678, "2025-11-21T15:40:12.345Z" },
    { 1700000000999999, "2023-11-14T22:13:20.999Z" },
    { -5, "1970-01-01T00:00:00.000Z" },  /* before the epoch: the epoch */
  };
  GThread *threads[2];

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = lw_json_format_time (cases[i].time_us);

      g_assert_cmpstr (text, ==, cases[i].text);
    }
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("format", format_times, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (escape_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/json/escape/%s", escape_cases[i].name);

      g_test_add_data_func (path, &escape_cases[i], test_escape);
    }
  g_test_add_func ("/json/escape/null", test_escape_null);
  g_test_add_func ("/json/reader-agrees", test_reader_agrees);
  g_test_add_func ("/json/report-escapes", test_report_escapes);
  g_test_add_func ("/json/format-time", test_format_time);
  g_test_add_func ("/json/python-frames-missing", test_python_frames_missing);
  return g_test_run ();
}
