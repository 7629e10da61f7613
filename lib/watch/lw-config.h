/* lw-config.h: settings of a watch, from the program and the environment
 *
 * Built-in defaults, then what the program set (LagWatchConfig setters),
 * then LAGWATCH_* environment variables on top, read at every attach. A bad
 * value is named in one warning, with what is accepted, and the previous
 * value is kept. A setuid or setgid process (AT_SECURE) ignores the
 * environment, and says so in one line.
 */
#pragma once

#include "lagwatch.h"

G_BEGIN_DECLS

#define LW_DEFAULT_THRESHOLD_MS 100
#define LW_DEFAULT_HANG_MS      2000
#define LW_DEFAULT_MAX_FRAMES   128
#define LW_DEFAULT_OUTPUT       "stderr"
#define LW_DEFAULT_SAMPLE_MS    10
#define LW_MAX_DURATION_MS      3600000

/* Where a configuration's output list came from, for the messages about it. */
typedef enum
{
  LW_OUTPUT_DEFAULT,            /* LW_DEFAULT_OUTPUT */
  LW_OUTPUT_FROM_CODE,          /* lagwatch_config_set_output() */
  LW_OUTPUT_FROM_ENVIRONMENT,   /* LAGWATCH_OUTPUT */
} LwOutputOrigin;

struct _LagWatchConfig
{
  guint     threshold_ms;
  guint     hang_ms;
  guint     max_frames;
  int       signo;            /* 0: the default, SIGRTMIN+7 */
  gboolean  signal_explicit;  /* chosen by the program or the user */
  char     *output;           /* a valid sink list (lw-sink.h) */
  LwOutputOrigin output_origin;
  guint     sample_ms;        /* interval between samples during a lag */
  char     *state_dir;        /* NULL: $XDG_STATE_HOME/lagwatch */
  gboolean  under_debugger;   /* report even while a debugger is attached */
  guint     calls_min_ms;     /* shortest call in the call tree; 0: two sampling intervals */
  guint     calls_depth;      /* deepest call in the call tree below dispatch; 0: all */
  gboolean  js_frames;        /* LAGWATCH_JS_FRAMES: GJS's profiling stack (lw-gjs.h) */
  gboolean  replaceable;      /* a later attach to its context detaches it (the launcher's) */
};

/* Any thread. */
LagWatchConfig *lw_config_copy              (const LagWatchConfig *config);

/* Any thread. Overrides @config with the LAGWATCH_* variables. */
void            lw_config_apply_environment (LagWatchConfig       *config);

/* Any thread. The debug roots of a LAGWATCH_DEBUG_DIRS value: its absolute
 * directories (a relative one is named in a warning and skipped), then
 * /usr/lib/debug. */
char          **lw_config_parse_debug_dirs  (const char           *text);

/* Any thread, normal context. LAGWATCH_DEBUG_DIRS: colon-separated
 * absolute directories searched for debug files before /usr/lib/debug
 * (a relative one is named in a warning and skipped). */
void            lw_config_apply_debug_dirs  (void);

/* Any thread. TRUE when LAGWATCH_DISABLE=1. */
gboolean        lw_config_disabled          (void);

/* Any thread. The default signal, SIGRTMIN+7. */
int             lw_config_default_signal    (void);

/* Any thread. Parses "SIGRTMIN+N", "SIGRTMAX-N", "SIGRTMIN", "SIGRTMAX"
 * (the "SIG" prefix optional) or a signal number, within SIGRTMIN..SIGRTMAX. */
gboolean        lw_config_parse_signal      (const char           *text,
                                             int                  *signo);

/* Any thread. Where @config's output came from, as the messages about a
 * sink that cannot be opened name it: "LAGWATCH_OUTPUT", or the program's
 * lagwatch_config_set_output(). */
const char     *lw_config_output_origin     (const LagWatchConfig *config);

/* Any thread. FALSE when LAGWATCH_STATS=0 turns the latency profile off. */
gboolean        lw_config_stats_enabled     (void);

G_END_DECLS
