/* journal-dropped: writes one "dropped" record (3 reports lost: sink
 * stalled) to the journal sink, through lagwatch's own writer of that
 * record, for run-journal-test.sh: a drop is not a lag and has a
 * MESSAGE_ID of its own. */
#include "lagwatch.h"
#include "lw-sink.h"

int
main (void)
{
  LwSinks *sinks = lw_sinks_open ("journal");
  g_autofree char *json = NULL;
  g_autofree char *text = NULL;

  lw_sink_dropped_record (3, "sink stalled", "sink stalled (a reader of the output stopped reading)",
                          &json, &text);
  lw_sinks_write_raw (sinks, json, text);
  lw_sinks_free (sinks);
  return 0;
}
