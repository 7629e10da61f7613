"""program-frame-lag.py HANDLER: a PyGObject program that freezes its main loop once.

Run under the lagwatch launcher by test-program-frame.py on /usr/bin/python3.
HANDLER is one of the functions below, run from an unnamed GLib.timeout_add
source: "spin_handler" spins in Python; "zlib_handler" spends its time in
zlib's deflate(), a named native function called from Python. The loop
quits once the launcher wrote the report (LW_TEST_REPORT_FILE is not empty),
so the summary printed at exit counts it.
"""
import os
import sys
import time
import zlib

from gi.repository import GLib

# 300 ms of the thread's CPU time, not of wall time: the same work, and
# about as many samples (a running thread is sampled per 10 ms of its CPU
# time), however loaded the machine is. A starved wall-clock spin gets a
# few samples, and which one is the report's stack is then chance.
FREEZE_S = 0.3
DATA = os.urandom(1 << 18) * 4


def spin_handler():
    end = time.thread_time() + FREEZE_S
    while time.thread_time() < end:
        pass
    return GLib.SOURCE_REMOVE


def zlib_handler():
    end = time.thread_time() + FREEZE_S
    while time.thread_time() < end:
        zlib.compress(DATA, 9)
    return GLib.SOURCE_REMOVE


def main():
    loop = GLib.MainLoop()
    report_file = os.environ["LW_TEST_REPORT_FILE"]
    deadline = time.monotonic() + 60

    def quit_when_reported():
        if (os.path.exists(report_file) and os.path.getsize(report_file) > 0) or time.monotonic() > deadline:
            loop.quit()
            return GLib.SOURCE_REMOVE
        return GLib.SOURCE_CONTINUE

    handler = {"spin_handler": spin_handler, "zlib_handler": zlib_handler}[sys.argv[1]]
    GLib.timeout_add(10, handler)
    GLib.timeout_add(50, quit_when_reported)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
