"""python-lags.py REPORT_FILE: a PyGObject program that freezes its main loop twice.

Run under the lagwatch launcher by run-sysprof-test.sh on /usr/bin/python3.
First compress_handler spends 300 ms of CPU in zlib's deflate(), called from
Python; then sleep_handler sleeps 300 ms in time.sleep(). The loop quits once
the launcher wrote the sleeping lag to REPORT_FILE (JSON Lines), or after a
minute.
"""
import json
import os
import sys
import time
import zlib

from gi.repository import GLib

# CPU time of the thread, not wall time: the same work and about as many
# samples however loaded the machine is.
FREEZE_S = 0.3
DATA = os.urandom(1 << 18) * 4


def compress_handler():
    end = time.thread_time() + FREEZE_S
    while time.thread_time() < end:
        zlib.compress(DATA, 9)
    GLib.timeout_add(50, sleep_handler)
    return GLib.SOURCE_REMOVE


def sleep_handler():
    time.sleep(FREEZE_S)
    return GLib.SOURCE_REMOVE


def sleep_reported(path):
    """True once a lag record of REPORT_FILE names sleep_handler."""
    try:
        with open(path) as records:
            lags = [json.loads(line) for line in records if line.strip()]
    except (OSError, ValueError):
        return False
    return any(lag.get("event") == "lag" and "sleep_handler" in json.dumps(lag) for lag in lags)


def main():
    loop = GLib.MainLoop()
    report_file = sys.argv[1]
    deadline = time.monotonic() + 60

    def quit_when_reported():
        if sleep_reported(report_file) or time.monotonic() > deadline:
            loop.quit()
            return GLib.SOURCE_REMOVE
        return GLib.SOURCE_CONTINUE

    GLib.timeout_add(10, compress_handler)
    GLib.timeout_add(50, quit_when_reported)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
