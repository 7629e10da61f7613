/* lw-report-program.h: which frames of a stack are the program's
 *
 * One rule, used by every reader of a report: the summary's innermost
 * program frame, the cause and its fingerprint (lw-report-cause.h), the
 * text report, the journal's CODE_FUNC, the JSON frames' "is_program" and
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

G_END_DECLS
