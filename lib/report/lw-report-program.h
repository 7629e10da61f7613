/* lw-report-program.h: which frames of a stack are the program's, and its fingerprint
 *
 * One rule, used by every reader of a report: the summary's innermost
 * program frame, the fingerprint, the text report, the journal's
 * CODE_FUNC, the JSON frames' "is_program" and
 * lagwatch_report_get_frame_is_program().
 */
#pragma once

#include "lagwatch.h"
#include "lw-symbols.h"

G_BEGIN_DECLS

/* Any thread. TRUE for a frame of libc, GLib, lagwatch or the vDSO: the
 * platform every lag passes through, not the program. */
gboolean lw_report_frame_is_platform (const LwFrame *frame);

/* Any thread. TRUE for a frame of the program's own code: not the
 * platform (lw_report_frame_is_platform()), not the C++ standard library
 * (a function in std::, __gnu_cxx:: or __cxxabiv1::, even inlined into
 * the program; libstdc++, libc++, libgcc_s), not an interpreter's or a
 * binding's machinery (libpython, the python3 executable, _Py and Py C-API
 * functions, libmozjs, libgjs, libffi, libgirepository, PyGObject's _gi). The one rule behind "the innermost
 * program frame" of the summary, the fingerprint, the text report and
 * lagwatch_report_get_frame_is_program(). */
gboolean lw_report_frame_is_program (const LwFrame *frame);

/* Any thread. TRUE when @frames hold a frame of an interpreted language
 * (Python, JavaScript): such a stack is that language's program, and its
 * native frames (the interpreter, its extension modules, the C libraries
 * they call) are not the program's. */
gboolean lw_report_frames_interpreted (const LwFrame *frames,
                                       guint          n_frames);

/* Any thread. lw_report_frame_is_program() for a frame of a stack that is
 * @interpreted (lw_report_frames_interpreted()) or not: in an interpreted
 * stack, only the language's frames are the program's, as the fingerprint
 * counts them. */
gboolean lw_report_frame_is_program_in (const LwFrame *frame,
                                        gboolean       interpreted);

/* Any thread. The innermost frame of @frames that has a name and is the
 * program's, or NULL: the frame the summary and the text report name, the
 * journal's CODE_FUNC. */
const LwFrame *lw_report_program_frame (const LwFrame *frames,
                                        guint          n_frames);

/* Watcher thread. Computes fingerprint and fingerprint2 from the frames. */
void lw_report_compute_fingerprints (LagWatchReport *report);

G_END_DECLS
