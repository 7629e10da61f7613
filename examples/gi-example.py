#!/usr/bin/python3
"""gi-example.py: lagwatch from Python, through GObject Introspection.

Watches this program's main loop, freezes it once for 300 ms in a Python
function (slow_handler), prints the report it gets back on the main thread,
then quits. Run from a build tree with the typelib and library on the paths:

  GI_TYPELIB_PATH=build/lib LD_LIBRARY_PATH=build/lib examples/gi-example.py
"""
import sys
import threading
import time

import gi
gi.require_version("LagWatch", "0.1")
from gi.repository import GLib, LagWatch  # noqa: E402

FREEZE_S = 0.3


def slow_handler():
    """Stands for a handler that takes too long: 300 ms of computation."""
    end = time.monotonic() + FREEZE_S
    n = 0
    while time.monotonic() < end:
        n += 1
    return GLib.SOURCE_REMOVE


def main():
    config = LagWatch.Config.new()
    config.set_threshold_ms(100)
    config.set_output("none")
    config.set_signal("SIGRTMIN+7")  # as LAGWATCH_SIGNAL names it
    try:
        config.set_threshold_ms(0)  # every bad value raises, in LagWatch's error domain
    except GLib.Error as error:
        print("a threshold of 0 is refused: %s" % error.message)
    # LagWatch.Monitor() would raise a TypeError: a monitor is only made
    # attached, or not at all (a GLib.Error says why).
    monitor = LagWatch.Monitor.new(None, config)
    loop = GLib.MainLoop()
    got = []

    def on_report(monitor, report):
        # Emitted on the thread that created the monitor: here, the main one.
        got.append(report)
        frames = [report.get_frame_info(i) for i in range(report.get_n_frames())]
        print("report %s: %.1f ms (threshold %u ms), %u frames, on the loop's thread: %s"
              % (report.get_id(), report.get_duration_ms(), report.get_threshold_ms(), len(frames),
                 "yes" if threading.current_thread() is threading.main_thread()
                 and GLib.MainContext.default().is_owner() else "no"))
        for i, frame in enumerate(frames):
            # language: "python" for a frame of this script's Python code,
            # "native" for machine code; is_program: the program's own code,
            # not the interpreter's or a library's.
            print("  #%-2d %s (%s +0x%x) [%s%s%s]"
                  % (i, frame.symbol or "??", frame.module, frame.module_offset, frame.language,
                     ", inlined" if frame.inlined else "", ", program" if frame.is_program else ""))
        where = next((f.symbol for f in frames if f.is_program and f.symbol), None)
        print("innermost program frame: %s" % where)
        # Where the loop was: the callback of an unnamed source (the
        # function given to GLib.timeout_add), the source's priority.
        has_priority, priority = report.get_priority()
        print("%s in %s callback %s, priority %s, caught after %.0f ms, occurrence %u"
              % ("hang" if report.get_kind() == LagWatch.ReportKind.HANG else "lag",
                 report.get_source_callback_kind(),
                 report.get_source_callback(), priority if has_priority else "unknown",
                 report.get_caught_ms(), report.get_occurrence()))
        loop.quit()

    try:
        LagWatch.Monitor.new(None, None)
        print("a second monitor on the same context was attached")
        return 1
    except GLib.Error as error:  # one context, one watch
        print("a second monitor is refused: %s" % error.message)
        if not error.matches(LagWatch.error_quark(), LagWatch.Error.ALREADY_WATCHED):
            return 1

    monitor.connect("report", on_report)
    GLib.timeout_add(10, slow_handler)
    deadline = GLib.timeout_add_seconds(60, lambda: (print("no report within 60 s"), loop.quit()))
    loop.run()
    GLib.source_remove(deadline) if got else None
    monitor.detach()
    try:
        LagWatch.Monitor.new(None, None)  # the default context is free again
        print("attached again after detach")
    except GLib.Error as error:
        print("attach after detach failed: %s" % error.message)
        return 1
    return 0 if got else 1


if __name__ == "__main__":
    sys.exit(main())
