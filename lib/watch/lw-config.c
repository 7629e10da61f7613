/* lw-config.c: LagWatchConfig and the LAGWATCH_* environment variables */
#include "lw-config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lw-private.h"
#include "lw-sink.h"
#include "lw-symbols.h"
#include "lw-unwind.h"
#include "lw-say.h"

int
lw_config_default_signal (void)
{
  return SIGRTMIN + 7;
}

LagWatchConfig *
lagwatch_config_new (void)
{
  LagWatchConfig *config = g_new0 (LagWatchConfig, 1);

  config->threshold_ms = LW_DEFAULT_THRESHOLD_MS;
  config->hang_ms = LW_DEFAULT_HANG_MS;
  config->max_frames = LW_DEFAULT_MAX_FRAMES;
  config->output = g_strdup (LW_DEFAULT_OUTPUT);
  config->sample_ms = LW_DEFAULT_SAMPLE_MS;
  config->js_frames = TRUE;
  return config;
}

void
lagwatch_config_free (LagWatchConfig *config)
{
  if (config == NULL)
    return;
  g_free (config->output);
  g_free (config->state_dir);
  g_free (config);
}

LagWatchConfig *
lw_config_copy (const LagWatchConfig *config)
{
  LagWatchConfig *copy;

  if (config == NULL)
    return lagwatch_config_new ();
  copy = g_memdup2 (config, sizeof *config);
  copy->output = g_strdup (config->output);
  copy->state_dir = g_strdup (config->state_dir);
  return copy;
}

gboolean
lagwatch_config_set_threshold_ms (LagWatchConfig *config, guint threshold_ms)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (threshold_ms < 1 || threshold_ms > LW_MAX_DURATION_MS)
    return FALSE;
  config->threshold_ms = threshold_ms;
  return TRUE;
}

gboolean
lagwatch_config_set_hang_ms (LagWatchConfig *config, guint hang_ms)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (hang_ms < 1 || hang_ms > LW_MAX_DURATION_MS)
    return FALSE;
  config->hang_ms = hang_ms;
  return TRUE;
}

gboolean
lagwatch_config_set_max_frames (LagWatchConfig *config, guint max_frames)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (max_frames < 1 || max_frames > LW_MAX_FRAMES_LIMIT)
    return FALSE;
  config->max_frames = max_frames;
  return TRUE;
}

void
lagwatch_config_set_replaceable (LagWatchConfig *config, gboolean replaceable)
{
  g_return_if_fail (config != NULL);
  config->replaceable = replaceable;
}

gboolean
lagwatch_config_set_sample_ms (LagWatchConfig *config, guint sample_ms)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (sample_ms < 1 || sample_ms > 1000)
    return FALSE;
  config->sample_ms = sample_ms;
  return TRUE;
}

gboolean
lagwatch_config_set_state_dir (LagWatchConfig *config, const char *dir)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (dir != NULL && !g_path_is_absolute (dir))
    return FALSE;
  g_free (config->state_dir);
  config->state_dir = g_strdup (dir);
  return TRUE;
}

gboolean
lagwatch_config_set_signal (LagWatchConfig *config, int signo)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (signo < SIGRTMIN || signo > SIGRTMAX)
    return FALSE;
  config->signo = signo;
  config->signal_explicit = TRUE;
  return TRUE;
}

/* Any thread. The error of a value out of range, for the try setters. */
static gboolean
lw_config_refuse_uint (GError **error, const char *what, guint value, guint min, guint max,
                       const char *unit)
{
  g_set_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID,
               "%s %u is out of range: expected %u to %u %s", what, value, min, max, unit);
  return FALSE;
}

gboolean
lagwatch_config_try_set_threshold_ms (LagWatchConfig *config, guint threshold_ms, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (!lagwatch_config_set_threshold_ms (config, threshold_ms))
    return lw_config_refuse_uint (error, "threshold", threshold_ms, 1, LW_MAX_DURATION_MS, "milliseconds");
  return TRUE;
}

gboolean
lagwatch_config_try_set_hang_ms (LagWatchConfig *config, guint hang_ms, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (!lagwatch_config_set_hang_ms (config, hang_ms))
    return lw_config_refuse_uint (error, "hang threshold", hang_ms, 1, LW_MAX_DURATION_MS, "milliseconds");
  return TRUE;
}

gboolean
lagwatch_config_try_set_sample_ms (LagWatchConfig *config, guint sample_ms, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (!lagwatch_config_set_sample_ms (config, sample_ms))
    return lw_config_refuse_uint (error, "sampling interval", sample_ms, 1, 1000, "milliseconds");
  return TRUE;
}

gboolean
lagwatch_config_try_set_max_frames (LagWatchConfig *config, guint max_frames, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (!lagwatch_config_set_max_frames (config, max_frames))
    return lw_config_refuse_uint (error, "frame limit", max_frames, 1, LW_MAX_FRAMES_LIMIT, "frames");
  return TRUE;
}

gboolean
lagwatch_config_try_set_state_dir (LagWatchConfig *config, const char *dir, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (!lagwatch_config_set_state_dir (config, dir))
    {
      g_set_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID,
                   "state directory \"%s\" is not valid: expected an absolute path", dir);
      return FALSE;
    }
  return TRUE;
}

gboolean
lagwatch_config_try_set_signal (LagWatchConfig *config, const char *signal, GError **error)
{
  int signo;

  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (signal != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (!lw_config_parse_signal (signal, &signo) || !lagwatch_config_set_signal (config, signo))
    {
      g_set_error (error, LAGWATCH_ERROR, LAGWATCH_ERROR_INVALID,
                   "signal \"%s\" is not valid: expected SIGRTMIN+N, SIGRTMAX-N or a number "
                   "from %d to %d", signal, SIGRTMIN, SIGRTMAX);
      return FALSE;
    }
  return TRUE;
}

gboolean
lagwatch_config_set_output (LagWatchConfig *config, const char *spec, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (spec != NULL, FALSE);
  if (!lw_sink_spec_validate (spec, error))
    return FALSE;
  g_free (config->output);
  config->output = g_strdup (spec);
  config->output_origin = LW_OUTPUT_FROM_CODE;
  return TRUE;
}

/* Any thread. A whole decimal number in [min, max], nothing else: "abc",
 * "-5", "1e9", "12ms" and "" are all refused. */
static gboolean
lw_config_parse_uint (const char *text, guint min, guint max, guint *value)
{
  guint64 v;

  if (text[0] == '\0' || strspn (text, "0123456789") != strlen (text) || strlen (text) > 10)
    return FALSE;
  v = g_ascii_strtoull (text, NULL, 10);
  if (v < min || v > max)
    return FALSE;
  *value = (guint) v;
  return TRUE;
}

gboolean
lw_config_parse_signal (const char *text, int *signo)
{
  const char *rest = g_str_has_prefix (text, "SIG") ? text + 3 : text;
  int base, sign = 0;
  guint offset = 0;

  if (g_str_has_prefix (rest, "RTMIN"))
    base = SIGRTMIN, rest += 5, sign = +1;
  else if (g_str_has_prefix (rest, "RTMAX"))
    base = SIGRTMAX, rest += 5, sign = -1;
  else
    {
      guint number;

      if (!lw_config_parse_uint (text, (guint) SIGRTMIN, (guint) SIGRTMAX, &number))
        return FALSE;
      *signo = (int) number;
      return TRUE;
    }

  if (*rest != '\0')
    {
      if (*rest != (sign > 0 ? '+' : '-')
          || !lw_config_parse_uint (rest + 1, 0, (guint) (SIGRTMAX - SIGRTMIN), &offset))
        return FALSE;
    }
  *signo = base + sign * (int) offset;
  return *signo >= SIGRTMIN && *signo <= SIGRTMAX;
}

/* Any thread. One variable holding a duration or a count. */
static void
lw_config_env_uint (const char *name, guint min, guint max, const char *unit, guint *value)
{
  const char *text = g_getenv (name);

  if (text == NULL)
    return;
  if (!lw_config_parse_uint (text, min, max, value))
    lw_say ("%s=\"%s\" is not valid: expected a whole number of %s from %u to %u; using %u",
            name, text, unit, min, max, *value);
}

/* Any thread. One variable holding 1 or 0; @meaning says what 1 does. */
static void
lw_config_env_flag (const char *name, const char *meaning, gboolean *value)
{
  const char *text = g_getenv (name);

  if (text == NULL)
    return;
  if (g_str_equal (text, "1") || g_str_equal (text, "0"))
    *value = g_str_equal (text, "1");
  else
    lw_say ("%s=\"%s\" is not valid: expected 1 (%s) or 0; using %d", name, text, meaning, *value);
}

/* Any thread. The one line that says a setuid/setgid process ignores the
 * environment, once per process, when it holds LAGWATCH_* variables (with
 * none, nothing was ignored). */
static void
lw_config_say_secure (void)
{
  static gsize said;

  if (g_once_init_enter (&said))
    {
      g_auto(GStrv) names = g_listenv ();
      gboolean any = FALSE;

      for (guint i = 0; names[i] != NULL; i++)
        any |= g_str_has_prefix (names[i], "LAGWATCH_");
      if (any)
        lw_say ("this program runs setuid or setgid (AT_SECURE): the LAGWATCH_* variables and "
                "the state and debug directories from the environment are ignored");
      g_once_init_leave (&said, 1);
    }
}

void
lw_config_apply_environment (LagWatchConfig *config)
{
  const char *text;

  /* The environment belongs to the caller, not to the program: honouring
   * it would let any user choose the files a privileged program writes. */
  if (lw_process_secure ())
    {
      lw_config_say_secure ();
      return;
    }
  lw_config_env_uint ("LAGWATCH_THRESHOLD_MS", 1, LW_MAX_DURATION_MS, "milliseconds",
                      &config->threshold_ms);
  lw_config_env_uint ("LAGWATCH_HANG_MS", 1, LW_MAX_DURATION_MS, "milliseconds",
                      &config->hang_ms);
  lw_config_env_uint ("LAGWATCH_MAX_FRAMES", 1, LW_MAX_FRAMES_LIMIT, "frames",
                      &config->max_frames);
  lw_config_env_uint ("LAGWATCH_SAMPLE_MS", 1, 1000, "milliseconds", &config->sample_ms);
  /* 0 keeps the defaults: calls of two sampling intervals or more, at any depth. */
  lw_config_env_uint ("LAGWATCH_CALLS_MIN_MS", 0, LW_MAX_DURATION_MS, "milliseconds (0: two sampling intervals)",
                      &config->calls_min_ms);
  lw_config_env_uint ("LAGWATCH_CALLS_DEPTH", 0, LW_MAX_FRAMES_LIMIT, "frames (0: any depth)",
                      &config->calls_depth);

  text = g_getenv ("LAGWATCH_STATE_DIR");
  if (text != NULL)
    {
      if (g_path_is_absolute (text))
        {
          g_free (config->state_dir);
          config->state_dir = g_strdup (text);
        }
      else
        lw_say ("LAGWATCH_STATE_DIR=\"%s\" is not valid: expected an absolute directory path; "
                "using %s", text, config->state_dir ? config->state_dir : "$XDG_STATE_HOME/lagwatch");
    }

  lw_config_env_flag ("LAGWATCH_UNDER_DEBUGGER", "report while a debugger is attached",
                      &config->under_debugger);
  lw_config_env_flag ("LAGWATCH_JS_FRAMES", "name JavaScript functions in GJS programs",
                      &config->js_frames);

  text = g_getenv ("LAGWATCH_SIGNAL");
  if (text != NULL)
    {
      int signo;

      if (lw_config_parse_signal (text, &signo))
        {
          config->signo = signo;
          config->signal_explicit = TRUE;
        }
      else
        lw_say ("LAGWATCH_SIGNAL=\"%s\" is not valid: expected SIGRTMIN+N, SIGRTMAX-N or a "
                "number from %d to %d; using %s", text, SIGRTMIN, SIGRTMAX,
                config->signal_explicit ? "the program's choice" : "SIGRTMIN+7");
    }

  text = g_getenv ("LAGWATCH_OUTPUT");
  if (text != NULL)
    {
      g_autoptr(GError) error = NULL;

      if (lw_sink_spec_validate (text, &error))
        {
          g_free (config->output);
          config->output = g_strdup (text);
          config->output_origin = LW_OUTPUT_FROM_ENVIRONMENT;
        }
      else
        lw_say ("LAGWATCH_OUTPUT=\"%s\" is not valid: %s; expected a comma-separated list of "
                "stderr, json:PATH, journal or none; using \"%s\"", text, error->message, config->output);
    }
}

char **
lw_config_parse_debug_dirs (const char *text)
{
  GPtrArray *roots = g_ptr_array_new ();
  g_auto(GStrv) dirs = g_strsplit (text, ":", -1);

  for (guint i = 0; dirs[i] != NULL; i++)
    {
      if (dirs[i][0] == '\0')
        continue;
      if (!g_path_is_absolute (dirs[i]))
        {
          lw_say ("LAGWATCH_DEBUG_DIRS: \"%s\" is not an absolute directory; skipped", dirs[i]);
          continue;
        }
      g_ptr_array_add (roots, g_strdup (dirs[i]));
    }
  g_ptr_array_add (roots, g_strdup ("/usr/lib/debug"));
  g_ptr_array_add (roots, NULL);
  return (char **) g_ptr_array_free (roots, FALSE);
}

void
lw_config_apply_debug_dirs (void)
{
  const char *text = g_getenv ("LAGWATCH_DEBUG_DIRS");
  g_auto(GStrv) roots = NULL;

  /* A setuid/setgid process reads no file the caller names (said once by
   * lw_config_apply_environment). */
  if (text == NULL || lw_process_secure ())
    return;
  roots = lw_config_parse_debug_dirs (text);
  lw_symbols_set_debug_roots ((const char * const *) roots);
}

gboolean
lw_config_disabled (void)
{
  const char *text = g_getenv ("LAGWATCH_DISABLE");

  /* Turning lagwatch off grants the caller nothing: a setuid/setgid
   * process honours exactly "1", and says nothing about other values. */
  if (lw_process_secure ())
    return g_strcmp0 (text, "1") == 0;
  if (text == NULL || g_str_equal (text, "") || g_str_equal (text, "0"))
    return FALSE;
  if (g_str_equal (text, "1"))
    return TRUE;
  lw_say ("LAGWATCH_DISABLE=\"%s\" is not valid: expected 1 (disable) or 0; lagwatch stays on",
          text);
  return FALSE;
}

gboolean
lw_config_stats_enabled (void)
{
  const char *text = g_getenv ("LAGWATCH_STATS");

  /* Off only on request; a setuid/setgid process keeps the default. */
  if (lw_process_secure () || text == NULL || g_str_equal (text, "") || g_str_equal (text, "1"))
    return TRUE;
  if (g_str_equal (text, "0"))
    return FALSE;
  lw_say ("LAGWATCH_STATS=\"%s\" is not valid: expected 0 (no latency profile) or 1; the profile stays on",
          text);
  return TRUE;
}

const char *
lw_config_output_origin (const LagWatchConfig *config)
{
  switch (config->output_origin)
    {
    case LW_OUTPUT_FROM_CODE:
      return "the output set in code (lagwatch_config_set_output)";
    case LW_OUTPUT_DEFAULT:
    case LW_OUTPUT_FROM_ENVIRONMENT:
    default:
      return "LAGWATCH_OUTPUT";
    }
}
