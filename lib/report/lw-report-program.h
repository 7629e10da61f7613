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

/* Any thread, normal context. Makes @exe (an absolute path) the program
 * whose code the rule looks for, with @runpath its DT_RUNPATH (entries
 * separated by ':', "$ORIGIN" standing for @exe's directory; NULL: read
 * from @exe's file, if it is one). NULL @exe: this process's executable
 * again (the default). For tests and for reading another program's
 * stacks; call it before the reports it should judge. */
void lw_report_program_set_executable (const char *exe,
                                       const char *runpath);

/* Any thread. TRUE for a frame of libc, GLib, lagwatch or the vDSO: the
 * platform every lag passes through, whatever the program. */
gboolean lw_report_frame_is_platform (const LwFrame *frame);

/* Any thread. TRUE for a native frame of the C++ runtime and standard
 * library (libstdc++, libc++, libgcc_s; std::, __gnu_cxx::, __cxxabiv1::
 * functions even inlined into the program) or of an interpreter's or a
 * binding's machinery (libpython, python3, _Py and Py C-API functions,
 * libmozjs, libgjs, libffi, libgirepository, PyGObject's _gi): never the
 * program's, and, in an interpreted stack, the frames between the
 * language's own. */
gboolean lw_report_frame_is_machinery (const LwFrame *frame);

/* Any thread, normal context (the first call reads the executable's
 * RUNPATH). TRUE for a frame of the program's own code: native code of
 * its executable and of the libraries it ships itself (in its own
 * directories: the executable's directory, its RUNPATH, a directory named
 * after it in a system library directory), never the platform
 * (lw_report_frame_is_platform()), the C++ runtime and standard library
 * (libstdc++, libc++, libgcc_s; std::, __gnu_cxx::, __cxxabiv1:: functions
 * even inlined into the program) nor an interpreter's or a binding's
 * machinery (libpython, _Py and Py C-API functions, libmozjs, libgjs,
 * libffi, libgirepository, PyGObject's _gi); no native code at all when
 * the executable is an interpreter (python*, pypy*, gjs*). A Python or
 * JavaScript frame is the program's unless its file is the interpreter's
 * standard library, a platform binding (gi, cairo, dbus) or GJS's own
 * modules. The one rule behind "the innermost program frame" of the
 * summary, the fingerprint, the text report, JSON's "is_program" and
 * lagwatch_report_get_frame_is_program(); lw-report-program.c states it
 * in full. */
gboolean lw_report_frame_is_program (const LwFrame *frame);

/* Any thread. TRUE when @frames hold a frame of an interpreted language
 * (Python, JavaScript): such a stack is that language's program, and its
 * native frames (the interpreter, its extension modules, the C libraries
 * they call) are not the program's. */
gboolean lw_report_frames_interpreted (const LwFrame *frames,
                                       guint          n_frames);

/* Any thread. lw_report_frame_is_program() for a frame of a stack that is
 * @interpreted (lw_report_frames_interpreted()) or not: in an interpreted
 * stack, only the language's frames can be the program's. */
gboolean lw_report_frame_is_program_in (const LwFrame *frame,
                                        gboolean       interpreted);

/* Any thread. The innermost frame of @frames that has a name and is the
 * program's, or NULL: the frame the summary and the text report name, the
 * journal's CODE_FUNC. */
const LwFrame *lw_report_program_frame (const LwFrame *frames,
                                        guint          n_frames);

/* Reporting thread, once the stacks are named. Makes the report's stack
 * (and the first of its stacks) the one that names the lag's cause: the
 * heaviest stack of the program function that holds the most samples,
 * the stacks summed by their innermost program frame's function. So a
 * Python loop whose samples fall on many lines, or a program function
 * whose samples fall in many platform leaves, is named and fingerprinted
 * after that function, not after whichever single stack got one sample
 * more. Leaves the report alone when the heaviest stack is that one. */
void lw_report_choose_cause_stack (LagWatchReport *report);

/* Reporting thread. Computes the fingerprints from the report's stack
 * and callback: fingerprint2 keys on the innermost program frame's
 * function ("module-basename!function", never an address or a line);
 * fingerprint on that and the callback that ran it (the outermost program
 * frame inside GLib's, else the source's callback). Without a program
 * frame, on the innermost four named frames. */
void lw_report_compute_fingerprints (LagWatchReport *report);

G_END_DECLS
