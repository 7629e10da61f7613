# A PyGObject program that iterates the default context by hand:
# GLib.MainContext.default().iteration(True). Its timeout handler spins
# 300 ms; the program ends once the report is written.
import os
import time
from gi.repository import GLib

done = []


def python_slow_handler():
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    GLib.timeout_add(50, quit_when_reported)
    return False


def quit_when_reported(deadline=[time.monotonic() + 30]):
    path = os.environ.get("LW_TEST_REPORT_FILE", "")
    if (path and os.path.exists(path) and os.path.getsize(path) > 0) or time.monotonic() > deadline[0]:
        done.append(True)
        return False
    return True


GLib.timeout_add(200, python_slow_handler)
context = GLib.MainContext.default()
while not done:
    context.iteration(True)
