"""Records as the library writes them (lib/report/lw-report.c), grouped the way
lagwatch-report groups them, for the unit tests of each module."""

import io
from typing import Any

from lagwatch_report.grouping import Grouping, Json
from lagwatch_report.symbolizer import Names

PROGRAM = "/opt/app/bin/editor"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
GLIB = "/lib/x86_64-linux-gnu/libglib-2.0.so.0"
BUILD_ID = "05ad68a60ae4446def2e09dbe427faca909cd846"
CAUSE_A = "aaaaaaaaaaaaaaaa"
CAUSE_B = "bbbbbbbbbbbbbbbb"


def frame(module: str, symbol: str | None, offset: int = 0x1300, is_program: bool | None = None,
          file: str | None = None, line: int | None = None) -> Json:
    """A frame; IS_PROGRAM None: what the library says of it (libc and
    GLib are the platform, not the program)."""
    result: Json = {"ip": "0x%x" % (0x7f0000000000 + offset), "module": module, "build_id": BUILD_ID,
                    "module_offset": "0x%x" % offset, "symbol": symbol, "symbol_offset": 4 if symbol else 0,
                    "file": file, "line": line, "inlined": False,
                    "is_program": module not in (LIBC, GLIB) if is_program is None else is_program}
    return result


def cause_stack(name: str) -> list[Json]:
    """A libc leaf, three program frames named after NAME, GLib's loop, main."""
    return [frame(LIBC, "clock_nanosleep", 0xcf545),
            frame(PROGRAM, name + "_leaf", 0x1300, file=name + ".c", line=20),
            frame(PROGRAM, name + "_middle", 0x1340, file=name + ".c", line=30),
            frame(PROGRAM, name + "_handler", 0x1380, file=name + ".c", line=40),
            frame(GLIB, "g_main_context_dispatch", 0x5465f),
            frame(PROGRAM, "main", 0x11b2, file="main.c", line=85)]


def record(fingerprint: str, duration: float, when: str, frames: list[Json], pid: int = 100,
           event: str = "lag", lag_id: str | None = None, samples: int = 10, **extra: Any) -> Json:
    result: Json = {"event": event, "id": lag_id or "%d-1" % pid, "time": when, "duration_ms": duration,
                    "pid": pid, "thread_id": pid, "thread_name": "editor", "source": "timeout",
                    "phase": "dispatch", "fingerprint": fingerprint, "stack": frames,
                    "stacks": [{"samples": samples, "truncated": False, "stack": frames}]}
    result.update(extra)
    return result


def known_records() -> list[Json]:
    """Cause A: three lags (100, 200, 300 ms); cause B: one (1000 ms)."""
    a = cause_stack("save")
    b = cause_stack("render")
    return [record(CAUSE_A, 300.0, "2026-11-21T10:00:03.000Z", a, lag_id="100-1"),
            record(CAUSE_B, 1000.0, "2026-11-21T10:00:05.000Z", b, lag_id="100-2"),
            record(CAUSE_A, 100.0, "2026-11-21T10:00:01.000Z", a, lag_id="100-3"),
            record(CAUSE_A, 200.0, "2026-11-21T12:00:00.000Z", a, pid=200, lag_id="200-1")]


def grouped(records: list[Json], keep_timeline: bool = False) -> Grouping:
    grouping = Grouping(keep_timeline=keep_timeline)
    grouping.files = 1
    for r in records:
        grouping.add_record(r, None, None)
    return grouping


def no_offline_names() -> Names:
    return Names([], None)


def output() -> io.StringIO:
    return io.StringIO()
