/* fuzz-config.c: the parsers of LAGWATCH_* values on arbitrary bytes
 *
 * The input's lines, in order, become LAGWATCH_THRESHOLD_MS, _HANG_MS,
 * _MAX_FRAMES, _SAMPLE_MS, _STATE_DIR, _UNDER_DEBUGGER, _SIGNAL, _OUTPUT,
 * _DISABLE and _DEBUG_DIRS. Whatever they hold, the settings that come out
 * must be within their documented ranges: a bad value keeps the previous
 * one, never yields a half-parsed one.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

#include "lw-config.h"
#include "lw-sink.h"
#include "lw-unwind.h"

static const char *const fuzz_variables[] = {
  "LAGWATCH_THRESHOLD_MS", "LAGWATCH_HANG_MS", "LAGWATCH_MAX_FRAMES", "LAGWATCH_SAMPLE_MS",
  "LAGWATCH_STATE_DIR", "LAGWATCH_UNDER_DEBUGGER", "LAGWATCH_SIGNAL", "LAGWATCH_OUTPUT",
  "LAGWATCH_DISABLE", "LAGWATCH_DEBUG_DIRS",
};

/* The warnings about bad values are expected: not printed. */
static void
fuzz_quiet (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
}

static void
fuzz_check_config (const LagWatchConfig *config)
{
  g_autoptr(GError) error = NULL;

  if (config->threshold_ms < 1 || config->threshold_ms > LW_MAX_DURATION_MS
      || config->hang_ms < 1 || config->hang_ms > LW_MAX_DURATION_MS
      || config->max_frames < 1 || config->max_frames > LW_MAX_FRAMES_LIMIT
      || config->sample_ms < 1 || config->sample_ms > 1000
      || (config->signo != 0 && (config->signo < SIGRTMIN || config->signo > SIGRTMAX))
      || (config->state_dir != NULL && !g_path_is_absolute (config->state_dir))
      || (config->under_debugger != FALSE && config->under_debugger != TRUE)
      || !lw_sink_spec_validate (config->output, &error))
    abort ();
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autofree char *text = g_strndup ((const char *) data, size);  /* up to a NUL */
  g_auto(GStrv) lines = g_strsplit (text, "\n", G_N_ELEMENTS (fuzz_variables));
  g_autoptr(LagWatchConfig) config = lagwatch_config_new ();
  guint n = g_strv_length (lines);
  static gboolean quiet;
  int signo;

  if (!quiet)
    g_log_set_handler ("lagwatch", G_LOG_LEVEL_MASK, fuzz_quiet, NULL);
  quiet = TRUE;
  for (guint i = 0; i < G_N_ELEMENTS (fuzz_variables); i++)
    {
      if (i < n)
        g_setenv (fuzz_variables[i], lines[i], TRUE);
      else
        g_unsetenv (fuzz_variables[i]);
    }
  lw_config_apply_environment (config);
  fuzz_check_config (config);
  lw_config_disabled ();

  for (guint i = 0; i < n; i++)
    {
      g_auto(GStrv) roots = lw_config_parse_debug_dirs (lines[i]);
      guint n_roots = g_strv_length (roots);

      if (n_roots == 0 || !g_str_equal (roots[n_roots - 1], "/usr/lib/debug"))
        abort ();
      for (guint j = 0; j < n_roots; j++)
        if (!g_path_is_absolute (roots[j]))
          abort ();
      if (lw_config_parse_signal (lines[i], &signo) && (signo < SIGRTMIN || signo > SIGRTMAX))
        abort ();
    }
  return 0;
}
