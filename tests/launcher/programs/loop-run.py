# A PyGObject program that runs GLib's loop itself: GLib.MainLoop().run().
# Its timeout handler spins for 300 ms; the loop quits once the report is
# written (a lag that ends just before exit may not be reported yet).
import os
import time
from gi.repository import GLib

loop = GLib.MainLoop()


def python_slow_handler():
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    GLib.timeout_add(50, quit_when_reported)
    return False


def quit_when_reported(deadline=[time.monotonic() + 30]):
    path = os.environ.get("LW_TEST_REPORT_FILE", "")
    if (path and os.path.exists(path) and os.path.getsize(path) > 0) or time.monotonic() > deadline[0]:
        loop.quit()
        return False
    return True


GLib.timeout_add(200, python_slow_handler)
loop.run()
