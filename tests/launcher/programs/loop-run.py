# A PyGObject program that runs GLib's loop itself: GLib.MainLoop().run().
# Its timeout handler spins for 300 ms, then the loop quits.
import time
from gi.repository import GLib

loop = GLib.MainLoop()


def python_slow_handler():
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    GLib.timeout_add(100, loop.quit)
    return False


GLib.timeout_add(200, python_slow_handler)
loop.run()
