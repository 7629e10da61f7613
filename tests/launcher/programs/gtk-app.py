# A GTK 4 PyGObject program run by Gtk.Application.run: once its window is
# mapped it freezes the loop three times for 300 ms, each time in a Python
# method of its own:
#   1. Window.python_slow_handler, run by an unnamed GLib.timeout_add source;
#   2. Window.other_slow_handler, the same way (the same native stack);
#   3. Window.on_button_clicked, the handler of a button's "clicked" signal,
#      emitted by Window.press_button (another unnamed timeout source).
# After each freeze it waits for lagwatch's JSON report of it (the file
# named by LW_TEST_REPORT_FILE), prints "freeze NAME REPORT-ID SPIN-MS" on
# stdout, then starts the next; it quits once all are reported. A report is
# this freeze's when its lag covers the freeze's midpoint: lags of one
# thread never overlap.
# The lines that spin are marked "# spin: NAME" for the test to find.
import datetime
import json
import os
import sys
import time

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import Gio, GLib, Gtk  # noqa: E402

FREEZE_S = 0.3
DEADLINE_S = 120
REPORT_FILE = os.environ.get("LW_TEST_REPORT_FILE", "")


def lag_covers(record, instant):
    """True if the JSON lag record's interval holds the wall-clock instant."""
    if record.get("event") != "lag" or not record.get("time"):
        return False
    begin = datetime.datetime.fromisoformat(record["time"]).timestamp()
    return begin <= instant <= begin + record["duration_ms"] / 1000.0


def complete_records():
    """The report file's complete (newline-terminated) JSON lines."""
    try:
        with open(REPORT_FILE, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1] if line]


class Window(Gtk.ApplicationWindow):
    def __init__(self, app):
        super().__init__(application=app, title="lagwatch gtk-app test")
        self.freeze = None
        # What starts each freeze, in turn.
        self.steps = [self.python_slow_handler, self.other_slow_handler, self.press_button]
        self.deadline = time.monotonic() + DEADLINE_S
        self.button = Gtk.Button(label="Freeze")
        self.button.connect("clicked", self.on_button_clicked)
        self.set_child(self.button)
        self.connect("map", self.on_map)

    def on_map(self, widget):
        self.disconnect_by_func(self.on_map)
        GLib.timeout_add(100, self.steps.pop(0))

    def python_slow_handler(self):
        begin = time.time()
        end = time.monotonic() + FREEZE_S
        while time.monotonic() < end: pass  # spin: python_slow_handler
        self.frozen("Window.python_slow_handler", begin)
        return GLib.SOURCE_REMOVE

    def other_slow_handler(self):
        begin = time.time()
        end = time.monotonic() + FREEZE_S
        while time.monotonic() < end: pass  # spin: other_slow_handler
        self.frozen("Window.other_slow_handler", begin)
        return GLib.SOURCE_REMOVE

    def press_button(self):
        self.button.emit("clicked")
        return GLib.SOURCE_REMOVE

    def on_button_clicked(self, button):
        begin = time.time()
        end = time.monotonic() + FREEZE_S
        while time.monotonic() < end: pass  # spin: on_button_clicked
        self.frozen("Window.on_button_clicked", begin)

    def frozen(self, name, begin):
        self.freeze = (name, begin, time.time())
        GLib.timeout_add(50, self.wait_for_report)

    def wait_for_report(self):
        name, begin, end = self.freeze
        middle = (begin + end) / 2
        record = next((r for r in complete_records() if lag_covers(r, middle)), None)
        if record is None:
            if time.monotonic() < self.deadline:
                return GLib.SOURCE_CONTINUE
            print("gtk-app: no report of the freeze in %s within %d s" % (name, DEADLINE_S), file=sys.stderr)
            self.get_application().exit_status = 1
            self.get_application().quit()
            return GLib.SOURCE_REMOVE
        print("freeze %s %s %.1f" % (name, record["id"], (end - begin) * 1000), flush=True)
        if self.steps:
            GLib.timeout_add(100, self.steps.pop(0))
        else:
            self.get_application().quit()
        return GLib.SOURCE_REMOVE


class App(Gtk.Application):
    exit_status = 0

    def __init__(self):
        # NON_UNIQUE: no name to own on a session bus the test may not have.
        super().__init__(application_id="org.lagwatch.TestGtkApp", flags=Gio.ApplicationFlags.NON_UNIQUE)

    def do_activate(self):
        Window(self).present()


def main():
    app = App()
    status = app.run([sys.argv[0]])
    return status or app.exit_status


sys.exit(main())
