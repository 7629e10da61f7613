"""ctypes-lag.py LIBLAGWATCH HANDLER [MAX_FRAMES]: a GLib main loop driven through ctypes, frozen once by Python.

Needs no PyGObject, so it runs on any CPython 3 with GLib on the system:
loads libglib-2.0 and LIBLAGWATCH with ctypes, watches the default main
context with lagwatch_attach_with_config(), adds a g_timeout_add() source
whose callback is HANDLER (one of the functions below, 300 ms of Python
each), runs g_main_loop_run() and prints on stdout one JSON object: the
first report's JSON, the interpreter's version, and the line of this file
each handler spins on (the line carrying its "spins here" comment).
MAX_FRAMES: lagwatch_config_set_max_frames(), to cut the stacks short.
Run by run-ctypes-lags.py, once per interpreter and handler.
"""
import ctypes
import json
import sys
import time

FREEZE_S = 0.3
SPIN = (None,) * 20000
# Spun over in bytecode, allocating nothing: nearly every sample of a lag
# falls in the same place, so the stack a report shows (its heaviest)
# is a merged one, never a sample whose thread returned between its
# stack copy and the read of its Python frames (kept native).

glib = ctypes.CDLL("libglib-2.0.so.0")
lagwatch = ctypes.CDLL(sys.argv[1])
SOURCE_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
REPORT_FUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
for name, restype, argtypes in (
        ("g_main_loop_new", ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_int)),
        ("g_main_loop_run", None, (ctypes.c_void_p,)),
        ("g_main_loop_quit", None, (ctypes.c_void_p,)),
        ("g_timeout_add", ctypes.c_uint, (ctypes.c_uint, SOURCE_FUNC, ctypes.c_void_p)),
        ("g_free", None, (ctypes.c_void_p,))):
    getattr(glib, name).restype = restype
    getattr(glib, name).argtypes = argtypes
for name, restype, argtypes in (
        ("lagwatch_config_new", ctypes.c_void_p, ()),
        ("lagwatch_config_set_threshold_ms", ctypes.c_int, (ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p)),
        ("lagwatch_config_set_output", ctypes.c_int, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)),
        ("lagwatch_config_set_max_frames", ctypes.c_int, (ctypes.c_void_p, ctypes.c_uint)),
        ("lagwatch_attach_with_config", ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_void_p)),
        ("lagwatch_set_report_func", None, (ctypes.c_void_p, REPORT_FUNC, ctypes.c_void_p, ctypes.c_void_p)),
        ("lagwatch_detach", None, (ctypes.c_void_p,)),
        ("lagwatch_report_to_json", ctypes.c_void_p, (ctypes.c_void_p,))):
    getattr(lagwatch, name).restype = restype
    getattr(lagwatch, name).argtypes = argtypes


def python_spin_handler(_data):
    end = time.monotonic() + FREEZE_S
    while time.monotonic() < end:
        for _ in SPIN: pass  # spins here: python_spin_handler
    return 0


def other_spin_handler(_data):
    end = time.monotonic() + FREEZE_S
    while time.monotonic() < end:
        for _ in SPIN: pass  # spins here: other_spin_handler
    return 0


class Spinner:
    def on_timeout(self, _data):
        end = time.monotonic() + FREEZE_S
        while time.monotonic() < end:
            for _ in SPIN: pass  # spins here: Spinner.on_timeout
        return 0


def spin_lines():
    lines = {}
    with open(__file__, encoding="utf-8") as source:
        for number, text in enumerate(source, 1):
            if "# spins here: " in text and "lines[" not in text:
                lines[text.split("# spins here: ")[1].strip()] = number
    return lines


def main():
    handlers = {"python_spin_handler": python_spin_handler,
                "other_spin_handler": other_spin_handler,
                "Spinner.on_timeout": Spinner().on_timeout}
    config = lagwatch.lagwatch_config_new()
    lagwatch.lagwatch_config_set_threshold_ms(config, 100, None)
    lagwatch.lagwatch_config_set_output(config, b"none", None)
    if len(sys.argv) > 3:
        lagwatch.lagwatch_config_set_max_frames(config, int(sys.argv[3]))
    watch = lagwatch.lagwatch_attach_with_config(None, config)
    if not watch:
        print("lagwatch_attach_with_config() failed", file=sys.stderr)
        return 1
    loop = glib.g_main_loop_new(None, 0)
    result = {"version": list(sys.version_info[:2])}

    def on_report(report, _user_data):
        # The reporting thread: ctypes takes the GIL for this call.
        if "report" not in result:
            text = lagwatch.lagwatch_report_to_json(report)
            result["report"] = json.loads(ctypes.string_at(text).decode())
            glib.g_free(text)
        glib.g_main_loop_quit(loop)

    report_func = REPORT_FUNC(on_report)
    source_func = SOURCE_FUNC(handlers[sys.argv[2]])
    lagwatch.lagwatch_set_report_func(watch, report_func, None, None)
    glib.g_timeout_add(10, source_func, None)
    give_up = SOURCE_FUNC(lambda _data: glib.g_main_loop_quit(loop) or 0)
    glib.g_timeout_add(60000, give_up, None)
    glib.g_main_loop_run(loop)
    lagwatch.lagwatch_detach(watch)
    result["spin_lines"] = spin_lines()
    print(json.dumps(result))
    return 0 if "report" in result else 1


if __name__ == "__main__":
    sys.exit(main())
