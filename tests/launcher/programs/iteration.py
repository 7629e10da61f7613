# A PyGObject program that iterates the default context by hand:
# GLib.MainContext.default().iteration(True). Its idle handler spins 300 ms.
import time
from gi.repository import GLib

done = []


def python_slow_handler():
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    GLib.timeout_add(100, lambda: done.append(True) or False)
    return False


GLib.timeout_add(200, python_slow_handler)
context = GLib.MainContext.default()
while not done:
    context.iteration(True)
