/* lw-capture-private.h: what lw-capture.c shares with the CPU-time
 * sampling of lw-capture-periodic.c; watcher thread unless said */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

#include "lw-slot.h"
#include "lw-snapshot.h"

G_BEGIN_DECLS

/* How long the watcher waits for a handler it found copying (WRITING) when
 * it wants to give the request up. The copy takes microseconds; a thread
 * preempted or stopped in the middle of it is left to finish later, and
 * the snapshot is not used again until it has. */
#define LW_CAPTURE_WRITING_WAIT_NS (100 * 1000 * 1000)

/* The signal installed, even while no watch holds it. */
int             lw_capture_signal_number     (void);
/* CPU-time timers never cut a call short on this kernel (decided once). */
gboolean        lw_capture_timers_usable     (void);
/* Any thread. The program took the signal over: no more of ours is sent. */
gboolean        lw_capture_signal_is_taken   (void);
/* TRUE while lagwatch's handler is still the signal's disposition. */
gboolean        lw_capture_signal_still_ours (void);
/* TRUE while a handler still copies for an earlier request. */
gboolean        lw_capture_handler_busy      (LwSlot     *slot);
/* Whether lagwatch's signal may go to thread @tid now. */
LwCaptureResult lw_capture_may_signal        (LwSlot     *slot,
                                              pid_t       tid);
/* A new request for @tid, not armed yet: its cookie. */
uintptr_t       lw_capture_prepare           (LwSlot     *slot,
                                              pid_t       tid,
                                              uint64_t    busy_seq,
                                              uintptr_t   lo,
                                              uintptr_t   hi,
                                              LwSnapshot *snap);
/* Signal @signo as thread @tid sees it, and the letter of its State
 * line in *@state ('\0' when not known): lw-capture-proc.c. */
gboolean        lw_capture_signal_state      (LwSlot     *slot,
                                              pid_t       tid,
                                              int         signo,
                                              gboolean   *blocked,
                                              gboolean   *pending,
                                              char       *state);
/* One look at thread @tid through /proc, no signal. */
LwCaptureResult lw_capture_look              (LwSlot     *slot,
                                              pid_t       tid,
                                              uint64_t    busy_seq,
                                              uintptr_t   stack_lo,
                                              uintptr_t   stack_hi,
                                              LwSnapshot *snap,
                                              gboolean   *running);

G_END_DECLS
