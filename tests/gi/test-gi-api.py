#!/usr/bin/python3
"""test-gi-api.py: lagwatch's introspected API as a Python program meets it.

Run by meson test (through run-gi-test.sh, which puts the build's typelib
and library on the paths); prints TAP. Each check is a way a PyGObject user
would be misled: a constructor that gives a monitor watching nothing, a
setter that answers False or a property that ignores a bad value instead
of raising, a getter that logs a critical warning, a field of the report
with no getter, a message that blames LAGWATCH_OUTPUT for the program's own
configuration. A check that needs a lag of its own, or stderr, runs in a
child (this script with an argument).
"""
import json
import os
import subprocess
import sys
import time

import gi
gi.require_version("LagWatch", "0.1")
from gi.repository import GLib, LagWatch  # noqa: E402

results = []


def check(ok, name, detail=""):
    """One TAP line, printed at once: a crash later keeps what came before."""
    results.append(bool(ok))
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), name))
    if detail:
        print("# %s" % str(detail).replace("\n", " | "))
    sys.stdout.flush()


def error_of(call):
    """The GLib.Error that call() raised, or a description of what it did."""
    try:
        return "returned %r" % (call(),)
    except GLib.Error as error:
        return error
    except Exception as error:  # noqa: BLE001: any other exception is the answer
        return "raised %s: %s" % (type(error).__name__, error)


def is_lagwatch_error(error, code):
    return isinstance(error, GLib.Error) and error.matches(LagWatch.error_quark(), code)


def child_env():
    """The environment of a child: no LAGWATCH_* variable of the caller."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LAGWATCH_")}


def run_child(mode):
    return subprocess.run([sys.executable, __file__, mode], env=child_env(), capture_output=True,
                          text=True, timeout=120)


def one_lag(config, freeze):
    """Attaches a monitor with config to the default context, runs freeze()
    in a GLib.timeout_add callback, returns the report of that lag."""
    monitor = LagWatch.Monitor.new(None, config)
    loop = GLib.MainLoop()
    got = []

    def on_report(monitor, report):
        if report.get_duration_ms() >= 250:
            got.append(report)
            loop.quit()

    def slow_callback():
        freeze()
        return GLib.SOURCE_REMOVE

    monitor.connect("report", on_report)
    GLib.timeout_add(10, slow_callback)
    deadline = GLib.timeout_add_seconds(60, loop.quit)
    loop.run()
    if got:
        GLib.source_remove(deadline)
    monitor.detach()
    return got[0] if got else None


def sleep_300ms():
    time.sleep(0.3)


def quiet_config():
    config = LagWatch.Config.new()
    config.set_threshold_ms(100)
    config.set_output("none")
    return config


def child_frames_missed():
    """A report with no GTK window: window 0 is out of range."""
    report = one_lag(quiet_config(), sleep_300ms)
    if report is None:
        print("no report")
        return 1
    print("windows %d, window 0: %r" % (report.get_n_windows(), tuple(report.get_frames_missed(0))))
    return 0


def child_json_path_in_code():
    config = LagWatch.Config.new()
    config.set_output("json:/nonexistent/lagwatch-gi-test.jsonl")
    LagWatch.Monitor.new(None, config).detach()
    return 0


def section_constructor():
    # A monitor exists only attached.
    answer = error_of(LagWatch.Monitor)
    check(isinstance(answer, str) and "abstract" in answer and "TypeError" in answer,
          "LagWatch.Monitor() raises a TypeError", answer)


def section_config_setters():
    # Every setter of the configuration raises a GLib.Error of LagWatch's
    # domain for a value out of range.
    config = LagWatch.Config.new()
    for setter, bad in (("set_threshold_ms", 0), ("set_hang_ms", 0), ("set_sample_ms", 5000),
                        ("set_max_frames", 0), ("set_state_dir", "relative/dir"),
                        ("set_signal", "SIGRTMIN+99"), ("set_signal", "SIGUSR1"),
                        ("set_output", "bogus")):
        # (No value_nick: PyGObject 3.52 and later make such an enum an IntEnum.)
        code, nick = ((LagWatch.Error.OUTPUT, "output") if setter == "set_output"
                      else (LagWatch.Error.INVALID, "invalid"))
        answer = error_of(lambda: getattr(config, setter)(bad))
        check(is_lagwatch_error(answer, code),
              "Config.%s(%r) raises GLib.Error %s" % (setter, bad, nick), answer)


def section_signal_names():
    # The signal by name, as LAGWATCH_SIGNAL names it.
    config = LagWatch.Config.new()
    for name in ("SIGRTMIN+3", "RTMAX-2", "SIGRTMIN"):
        answer = error_of(lambda: config.set_signal(name))
        check(answer == "returned True", "Config.set_signal(%r) accepted" % name, answer)


def section_monitor_threshold():
    # The monitor's threshold: a read-only property, a method that raises.
    monitor = LagWatch.Monitor.new(None, quiet_config())
    notified = []
    monitor.connect("notify::threshold-ms", lambda *args: notified.append(monitor.props.threshold_ms))
    answer = error_of(lambda: setattr(monitor.props, "threshold_ms", 0))
    check("not writable" in str(answer) and monitor.props.threshold_ms == 100,
          "monitor.props.threshold_ms = 0 raises, the threshold stays 100", answer)
    answer = error_of(lambda: monitor.set_threshold_ms(0))
    check(is_lagwatch_error(answer, LagWatch.Error.INVALID) and monitor.props.threshold_ms == 100,
          "Monitor.set_threshold_ms(0) raises GLib.Error invalid", answer)
    answer = error_of(lambda: monitor.set_threshold_ms(150))
    check(answer == "returned True" and monitor.props.threshold_ms == 150 and notified == [150],
          "Monitor.set_threshold_ms(150) sets the property and notifies it",
          "%s, threshold %d, notified %r" % (answer, monitor.props.threshold_ms, notified))
    monitor.detach()
    answer = error_of(lambda: monitor.set_threshold_ms(150))
    check(is_lagwatch_error(answer, LagWatch.Error.DETACHED),
          "Monitor.set_threshold_ms() once detached raises GLib.Error detached", answer)


def section_report_getters():
    # Every field of the record has its getter, equal to the JSON's member;
    # the report is read after the ::report handler returned, as a program
    # that keeps its reports does.
    report = one_lag(quiet_config(), sleep_300ms)
    check(report is not None, "a lag of a sleeping timeout callback is reported")
    if report is not None:
        record = json.loads(report.to_json())
        kind = {"lag": LagWatch.ReportKind.LAG, "hang": LagWatch.ReportKind.HANG}.get(record["event"])
        has_priority, priority = report.get_priority()
        pairs = [
            ("get_kind", report.get_kind(), kind),
            ("get_source_callback", report.get_source_callback(), record.get("source_callback")),
            ("get_source_callback_kind", report.get_source_callback_kind(),
             record.get("source_callback_kind")),
            ("get_priority", priority if has_priority else None, record["priority"]),
            ("get_occurrence", report.get_occurrence(), record["occurrence"]),
            ("get_wchan", report.get_wchan(), record["wchan"]),
        ]
        for name, got, want in pairs:
            check(got == want, "Report.%s() is the record's value" % name, "%r, record %r" % (got, want))
        caught = report.get_caught_ms()  # the record rounds to 0.1 ms
        check(record["caught_ms"] is not None and abs(caught - record["caught_ms"]) <= 0.05,
              "Report.get_caught_ms() is the record's caught_ms",
              "%r, record %r" % (caught, record["caught_ms"]))
        check(has_priority and priority == GLib.PRIORITY_DEFAULT,
              "Report.get_priority() of a GLib.timeout_add callback: (True, PRIORITY_DEFAULT)",
              repr((has_priority, priority)))
        check((report.get_source_callback() or "").split(".")[-1] == "slow_callback"
              and report.get_source_callback_kind() == "g_timeout_add",
              "Report.get_source_callback() names the Python callback of GLib.timeout_add",
              "%r, %r" % (report.get_source_callback(), report.get_source_callback_kind()))
        check(report.get_occurrence() >= 1, "Report.get_occurrence() counts this lag",
              repr(report.get_occurrence()))


def section_frames_missed():
    # A window index out of range: an empty answer, no critical warning.
    child = run_child("--frames-missed")
    check(child.returncode == 0 and "window 0: (0, None, 0.0)" in child.stdout and "CRITICAL" not in child.stderr,
          "Report.get_frames_missed(0) with no window answers (0, None, 0.0), no critical",
          (child.stdout + child.stderr).strip().replace("\n", " | "))


def section_json_path_in_code():
    # A JSON path given in code is not blamed on LAGWATCH_OUTPUT.
    child = run_child("--json-path-in-code")
    check(child.returncode == 0 and "set in code" in child.stderr
          and "/nonexistent/lagwatch-gi-test.jsonl" in child.stderr and "LAGWATCH_OUTPUT" not in child.stderr,
          "a JSON path set in code that cannot be opened is named as set in code",
          child.stderr.strip().replace("\n", " | "))


SECTIONS = [section_constructor, section_config_setters, section_signal_names, section_monitor_threshold,
            section_frames_missed, section_json_path_in_code, section_report_getters]


def main():
    for section in SECTIONS:
        try:
            section()
        except Exception as error:  # noqa: BLE001: an API that is missing fails its section only
            check(False, "%s ran to its end" % section.__name__, "%s: %s" % (type(error).__name__, error))
    print("1..%d" % len(results))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit({"--frames-missed": child_frames_missed,
                  "--json-path-in-code": child_json_path_in_code}[sys.argv[1]]())
    sys.exit(main())
