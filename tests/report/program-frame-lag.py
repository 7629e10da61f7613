"""program-frame-lag.py HANDLER: a PyGObject program that freezes its main loop once.

Run under the lagwatch launcher by test-program-frame.py on /usr/bin/python3.
HANDLER is one of the functions below, run from an unnamed GLib.timeout_add
source: "spin_handler" spins in Python; "zlib_handler" spends its time in
zlib's deflate(), a named native function called from Python;
"lines_handler" spins through a loop of many lines, each calling other
builtins, so that every run's samples fall on different lines. The loop
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


def lines_handler():
    end = time.thread_time() + FREEZE_S
    total = 0
    i = 0
    while time.thread_time() < end:
        i += 1
        total += len(str(i))
        total += sum(range(40))
        text = "%d-%x" % (i, i)
        total += len(text.split("-"))
        total += max(i % 7, 3)
        total += abs(-i) % 11
        words = [text] * 8
        total += len(",".join(words))
        total += sorted(words, key=len)[0].count("1")
        total += int(text.split("-")[0]) % 5
        total += hash(text) % 3
        total += len(repr(words))
        total += round(i / 7.0) % 2
        total += len(bytes(32))
        total += len({i: text, i + 1: text})
        total += min(i, 9)
        total += divmod(i, 13)[1]
        total += len(text.upper())
        total += text.find("f") + 1
        total += len(list(reversed(words)))
        total += bool(any(c == "9" for c in text))
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

    handler = {"spin_handler": spin_handler, "zlib_handler": zlib_handler,
               "lines_handler": lines_handler}[sys.argv[1]]
    GLib.timeout_add(10, handler)
    GLib.timeout_add(50, quit_when_reported)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
