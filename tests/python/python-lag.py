"""python-lag.py [named:]HANDLER: a PyGObject program that freezes its main loop once.

Watches its default context with LagWatch.Monitor, runs HANDLER (one of the
functions below) from an unnamed GLib.timeout_add source (with "named:", from
a source it names with g_source_set_name()), and prints on
stdout one JSON object: the report's JSON, the language of each frame as
lagwatch_report_get_frame_language() gives it, and the lines of this file
each handler spins on (the line carrying its "spins here" comment).
Run by run-python-lags.py on /usr/bin/python3.
"""
import json
import sys
import time

import gi
gi.require_version("LagWatch", "0.1")
from gi.repository import GLib, LagWatch  # noqa: E402

FREEZE_S = 0.3
SPIN = (None,) * 20000
# Spun over in bytecode, allocating nothing: nearly every sample of a lag
# falls in the same place, so the stack a report shows (its heaviest)
# is a merged one, never a sample whose thread returned between its
# stack copy and the read of its Python frames (kept native).


def python_slow_handler():
    end = time.monotonic() + FREEZE_S
    while time.monotonic() < end:
        for _ in SPIN: pass  # spins here: python_slow_handler
    return GLib.SOURCE_REMOVE


def other_slow_handler():
    end = time.monotonic() + FREEZE_S
    while time.monotonic() < end:
        for _ in SPIN: pass  # spins here: other_slow_handler
    return GLib.SOURCE_REMOVE


def slow_été():
    end = time.monotonic() + FREEZE_S
    while time.monotonic() < end:
        for _ in SPIN: pass  # spins here: slow_été
    return GLib.SOURCE_REMOVE


class Window:
    def on_timeout(self):
        end = time.monotonic() + FREEZE_S
        while time.monotonic() < end:
            for _ in SPIN: pass  # spins here: Window.on_timeout
        return GLib.SOURCE_REMOVE


def spin_lines():
    lines = {}
    with open(__file__, encoding="utf-8") as source:
        for number, text in enumerate(source, 1):
            if "# spins here: " in text and "lines[" not in text:
                lines[text.split("# spins here: ")[1].strip()] = number
    return lines


def main():
    handlers = {"python_slow_handler": python_slow_handler,
                "other_slow_handler": other_slow_handler,
                "Window.on_timeout": Window().on_timeout,
                "slow_été": slow_été}
    config = LagWatch.Config.new()
    config.set_threshold_ms(100)
    config.set_output("none")
    monitor = LagWatch.Monitor.new(None, config)
    loop = GLib.MainLoop()
    result = {}

    def on_report(monitor, report):
        if "report" not in result:
            result["report"] = json.loads(report.to_json())
            language = getattr(report, "get_frame_language", None)  # None: a library without it
            result["languages"] = [language(i) for i in range(report.get_n_frames())] if language else None
        loop.quit()

    monitor.connect("report", on_report)
    if sys.argv[1].startswith("named:"):
        # A name the program gave its source wins over the callable's.
        source = GLib.timeout_source_new(10)
        handler = handlers[sys.argv[1][len("named:"):]]
        source.set_callback(lambda *_user_data: handler())  # PyGObject 3.54 passes none
        source.set_name("the program's own name")
        source.attach(None)
    else:
        GLib.timeout_add(10, handlers[sys.argv[1]])
    GLib.timeout_add_seconds(60, loop.quit)
    loop.run()
    result["spin_lines"] = spin_lines()
    print(json.dumps(result))
    return 0 if "report" in result else 1


if __name__ == "__main__":
    sys.exit(main())
