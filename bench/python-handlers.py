"""python-handlers.py one|two: a PyGObject program that freezes its loop three times.

one: a pure-Python busy handler (one function).
two: a handler whose time two methods of a class share, one calling the other.
Each lag lasts 400 ms; the loop quits after the third. Run under the
lagwatch launcher by bench-python-stable.
"""
import sys
import time

from gi.repository import GLib

FREEZE_S = 0.4
LAGS = 3


class Model:
    def __init__(self):
        self.rows = [dict(name="row%d" % i, size=i * 7) for i in range(2000)]

    def filter_rows(self, needle):
        out = []
        for row in self.rows:
            if needle in row["name"] and row["size"] % 3:
                out.append(self.describe(row))
        return out

    def describe(self, row):
        return "%s (%d)" % (row["name"], row["size"])


model = Model()
count = [0]


def one_function():
    end = time.monotonic() + FREEZE_S
    total = 0
    while time.monotonic() < end:
        for i in range(2000):
            total += i * i % 7
    return finish()


def two_methods():
    end = time.monotonic() + FREEZE_S
    while time.monotonic() < end:
        model.filter_rows("1")
    return finish()


def finish():
    count[0] += 1
    if count[0] == LAGS:
        loop.quit()
        return GLib.SOURCE_REMOVE
    return GLib.SOURCE_CONTINUE


loop = GLib.MainLoop()
GLib.timeout_add(50, one_function if sys.argv[1] == "one" else two_methods)
loop.run()
