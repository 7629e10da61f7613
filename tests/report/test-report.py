#!/usr/bin/python3
"""test-report: lagwatch-report against inputs whose answers are known.

  test-report.py TOOL LAG_EXAMPLE

Prints TAP. Each case writes its inputs in a temporary directory, runs the
tool as a user would, and checks its output: grouping and numbers, every
format's structure, gzip and journal inputs, malformed lines, offline names
from a split debug file, and the HTML page in headless Chromium.
"""

import gzip
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

TOOL = sys.argv[1]
LAG_EXAMPLE = sys.argv[2]
CC = os.environ.get("CC", "cc")

PROGRAM = "/opt/app/bin/editor"
PROGRAM_ID = "05ad68a60ae4446def2e09dbe427faca909cd846"
LIBC = ("/lib/x86_64-linux-gnu/libc.so.6", "93ac61ec5a8eb1396f9fbd350e3169a558528a40")
GLIB = ("/lib/x86_64-linux-gnu/libglib-2.0.so.0", "edd2644598e8e0c7656687c30a7daede5f4b6e6d")


def frame(module, build_id, offset, symbol, file=None, line=None):
    """A frame as the library writes it; is_program is the library's verdict
    (the platform's libc and GLib are not the program)."""
    return {"ip": "0x%x" % (0x7f0000000000 + offset), "module": module, "build_id": build_id,
            "module_offset": "0x%x" % offset, "symbol": symbol, "symbol_offset": 4 if symbol else 0,
            "file": file, "line": line, "inlined": False, "is_program": module not in (LIBC[0], GLIB[0])}


def stack(*inner, program=PROGRAM, program_id=PROGRAM_ID):
    """A main-thread stack: the given innermost frames, then GLib's loop,
    main and _start as the library writes them."""
    return list(inner) + [
        frame(GLIB[0], GLIB[1], 0x5517a, None),
        frame(GLIB[0], GLIB[1], 0x5465f, "g_main_context_dispatch"),
        frame(GLIB[0], GLIB[1], 0x54ccf, "g_main_loop_run"),
        frame(program, program_id, 0x11b2, "main", "main.c", 85),
        frame(LIBC[0], LIBC[1], 0x2724a, "__libc_start_call_main"),
        frame(program, program_id, 0x1000, "_start"),
    ]


def cause_stack(name, program=PROGRAM):
    """Three program frames named after the cause, under a libc leaf."""
    return stack(frame(LIBC[0], LIBC[1], 0xcf545, "clock_nanosleep"),
                 frame(program, PROGRAM_ID, 0x1300, name + "_leaf", name + ".c", 20),
                 frame(program, PROGRAM_ID, 0x1340, name + "_middle", name + ".c", 30),
                 frame(program, PROGRAM_ID, 0x1380, name + "_handler", name + ".c", 40),
                 program=program)


def record(fingerprint, duration, when, frames, pid=100, event="lag", lag_id=None, stacks=None, tid=None):
    """A record with the library's fields (lib/report/lw-report-json.c)."""
    if stacks is None:
        stacks = [{"samples": 10, "truncated": False, "stack": frames}]
    return {"event": event, "id": lag_id or "%d-1" % pid, "time": when, "duration_ms": duration,
            "threshold_ms": 100, "complete": event == "lag", "pid": pid, "thread_id": tid or pid,
            "thread_name": "editor", "caught_ms": 100.2, "source": "timeout", "priority": 0,
            "phase": "dispatch", "cpu_ms": 1.0, "thread_state": "sleeping", "syscall": "clock_nanosleep",
            "wchan": "hrtimer_nanosleep", "fingerprint": fingerprint, "fingerprint2": fingerprint[::-1],
            "occurrence": 1, "samples": sum(s["samples"] for s in stacks), "stack_method": "proc",
            "stack_error": None, "stack_truncated": False, "stack": frames, "stacks": stacks}


def jsonl(records):
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


# Cause A: 4 lags (100, 200, 300, 400 ms) over two files and two programs.
# Cause B: 2 lags (150, 1000 ms) in one file. Known answers below.
CAUSE_A = "aaaaaaaaaaaaaaaa"
CAUSE_B = "bbbbbbbbbbbbbbbb"


def call(name, start, duration, *children):
    return {"name": name, "start_ms": start, "duration_ms": duration, "children": list(children)}


# The call tree of cause B's longest lag (100-2): two calls of render_middle,
# the first calling render_leaf. Its shorter lag (200-2) has another tree.
CALLS_B = [call("render_handler", 0.0, 1000.0,
                call("render_middle", 100.0, 400.0, call("render_leaf", 120.0, 300.0)),
                call("render_middle", 500.0, 480.0))]
CALLS_B_SHORT = [call("render_handler", 0.0, 150.0)]
CALLS_B_TEXT = ("  calls of its longest lag (100-2, 1000.0 ms, from the samples; time taken, from the lag's start), in order:\n"
                "    render_handler  1000.0 ms, from +0.0 ms\n"
                "      render_middle  400.0 ms, from +100.0 ms\n"
                "        render_leaf  300.0 ms, from +120.0 ms\n"
                "      render_middle  480.0 ms, from +500.0 ms\n")


def known_records():
    a = cause_stack("save")
    a_other = cause_stack("save", program="/usr/bin/viewer")
    b = cause_stack("render")
    first = [record(CAUSE_A, 300.0, "2026-11-21T10:00:03.000Z", a, pid=100, lag_id="100-1"),
             record(CAUSE_B, 1000.0, "2026-11-21T10:00:05.000Z", b, pid=100, lag_id="100-2"),
             record(CAUSE_A, 100.0, "2026-11-21T10:00:01.000Z", a, pid=100, lag_id="100-3")]
    second = [record(CAUSE_A, 400.0, "2026-11-22T09:00:00.000Z", a_other, pid=200, lag_id="200-1"),
              record(CAUSE_B, 150.0, "2026-11-21T11:00:00.000Z", b, pid=200, lag_id="200-2"),
              record(CAUSE_A, 200.0, "2026-11-21T12:00:00.000Z", a, pid=200, lag_id="200-3")]
    first[1].update(calls=CALLS_B, calls_exact=False)
    second[1].update(calls=CALLS_B_SHORT, calls_exact=False)
    return first, second


def run(args, ok_status=(0,), **kwargs):
    done = subprocess.run([TOOL] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, **kwargs)
    if done.returncode not in ok_status:
        raise AssertionError("lagwatch-report %s: exit %d\nstderr: %s"
                             % (" ".join(args), done.returncode, done.stderr.decode()))
    return done.stdout.decode(), done.stderr.decode(), done.returncode


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def check_equal(actual, expected, what):
    if actual != expected:
        raise AssertionError("%s: expected %r, got %r" % (what, expected, actual))


def table_rows(text):
    """The text report's table: {cause name: [count, total, p50, p95, max]}."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*\d+\s+(\d+)\s+([\d.]+ m?s)\s+([\d.]+ m?s)\s+([\d.]+ m?s)\s+([\d.]+ m?s)\s+(.*)$", line)
        if m:
            rows[m.group(6)] = [int(m.group(1))] + list(m.group(2, 3, 4, 5))
    return rows


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# -- cases --------------------------------------------------------------------

def test_grouping_and_numbers(tmp):
    first, second = known_records()
    paths = [write(tmp, "run1.jsonl", jsonl(first)), write(tmp, "run2.jsonl", jsonl(second))]
    out, err, _ = run(paths)
    rows = table_rows(out)
    a = "save_leaf \u2190 save_middle (save.c:20)"
    b = "render_leaf \u2190 render_middle (render.c:20)"
    check_equal(sorted(rows), sorted([a, b]), "causes")
    # p50 and p95 are nearest-rank: ceil(q * n)-th smallest.
    check_equal(rows[a], [4, "1000.0 ms", "200.0 ms", "400.0 ms", "400.0 ms"], "cause A")
    check_equal(rows[b], [2, "1150.0 ms", "150.0 ms", "1000.0 ms", "1000.0 ms"], "cause B")
    # Sorted by total time: B (1150 ms) before A (1000 ms).
    check(out.index(b) < out.index(a), "causes ordered by total time")
    section = out[out.index("#2 " + a):]
    check("first seen 2026-11-21 10:00:01.000, last seen 2026-11-22 09:00:00.000 UTC" in section,
          "first and last seen of cause A:\n" + section)
    check("programs: editor (3), viewer (1)" in section, "programs of cause A:\n" + section)
    check("fingerprint " + CAUSE_A in section, "fingerprint of cause A")
    check("4 lags (0 hangs, 0 killed)" in section, "counts of cause A")
    check("heaviest stack: 40 of 40 samples (100%)" in section, "samples of cause A:\n" + section)
    check(re.search(r"^lagwatch-report: 6 lags .* 2 causes, from 6 records in 2 inputs$", out, re.M),
          "summary line:\n" + out)
    check_equal(err, "", "stderr")


def test_calls(tmp):
    """The call tree of a cause's longest lag, in the text after its stack;
    a cause whose lags have none shows none; a malformed tree is a
    malformed line."""
    first, second = known_records()
    path = write(tmp, "in.jsonl", jsonl(first + second))
    out, _, _ = run([path])
    check(CALLS_B_TEXT in out, "cause B's calls in the text:\n" + out)
    check_equal(out.count("calls of its longest lag"), 1, "causes with a call tree")
    check(out.index(CALLS_B_TEXT) > out.index("render_leaf"), "the calls come after the heaviest stack")
    bad = dict(first[1], calls=[{"name": "x", "start_ms": "soon", "duration_ms": 1.0, "children": []}])
    path = write(tmp, "bad.jsonl", jsonl([first[0], bad]))
    out, err, _ = run([path], ok_status=(0, 1))
    check("1 malformed line\n" in out and "calls of its longest lag" not in out,
          "a malformed call tree is a malformed line:\n" + out + err)


def test_gzip_input(tmp):
    first, second = known_records()
    plain = [write(tmp, "run1.jsonl", jsonl(first)), write(tmp, "run2.jsonl", jsonl(second))]
    # Named without .gz: gzip is recognised by its magic.
    zipped = os.path.join(tmp, "run2.log")
    with gzip.open(zipped, "wt") as f:
        f.write(jsonl(second))
    expected, _, _ = run(plain)
    actual, err, _ = run([plain[0], zipped])
    check_equal(actual, expected, "report of a gzip'd input")
    check_equal(err, "", "stderr")
    # From stdin too ('-').
    with open(zipped, "rb") as f:
        actual, err, _ = run([plain[0], "-"], stdin=f)
    check_equal(actual, expected, "report of a gzip'd stdin")
    check_equal(err, "", "stderr")


def test_journal_export(tmp):
    first, second = known_records()
    entries = []
    for i, r in enumerate(first + second):
        entry = {"__CURSOR": "s=1;i=%d" % i, "_HOSTNAME": "alpha" if i < 3 else "beta",
                 "MESSAGE": "lagwatch: lag of %.1f ms" % r["duration_ms"], "PRIORITY": "4",
                 "_EXE": PROGRAM, "_PID": str(r["pid"])}
        text = json.dumps(r)
        # journalctl exports a field with bytes it cannot print as numbers.
        entry["LAGWATCH_RECORD"] = list(text.encode()) if i == 4 else text
        entries.append(entry)
    entries.insert(2, {"__CURSOR": "s=1;i=99", "_HOSTNAME": "alpha", "MESSAGE": "unrelated"})
    path = write(tmp, "journal.json", jsonl(entries))
    out, err, _ = run([path])
    rows = table_rows(out)
    check_equal(sorted(v[0] for v in rows.values()), [2, 4], "lags per cause from the journal")
    check("hosts: alpha (2), beta (2)" in out, "hosts of cause A:\n" + out)
    check("hosts: alpha (1), beta (1)" in out, "hosts of cause B:\n" + out)
    check("1 journal entry without LAGWATCH_RECORD skipped" in out, "the other entry counted:\n" + out)
    # _EXE names the program of every entry.
    check("programs: editor (4)" in out, "programs from _EXE:\n" + out)
    check_equal(err, "", "stderr")


def journal_remote_program():
    for path in ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote"):
        if os.access(path, os.X_OK):
            return path
    return None


def test_journal_file(tmp):
    """A journal file as systemd-journal-remote writes what it receives:
    read through journalctl. Exported without --all, a record (over 4096
    bytes) is null: named with the fix, not skipped in silence."""
    first, second = known_records()
    export = []
    for i, r in enumerate(first + second):
        export.append("__REALTIME_TIMESTAMP=%d\n__MONOTONIC_TIMESTAMP=%d\n_BOOT_ID=%s\n_HOSTNAME=%s\n"
                      "MESSAGE=lagwatch: lag\n_EXE=%s\nLAGWATCH_RECORD=%s\n\n"
                      % (1795255200000000 + i, 1000 + i, "0123456789abcdef" * 2, "alpha" if i < 3 else "beta",
                         PROGRAM, json.dumps(r)))
    source = write(tmp, "lags.export", "".join(export))
    journal = os.path.join(tmp, "remote.journal")
    subprocess.run([journal_remote_program(), "--output=" + journal, source], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    out, err, _ = run([journal])
    check_equal(sorted(v[0] for v in table_rows(out).values()), [2, 4], "lags per cause from the journal file")
    check("hosts: alpha (2), beta (2)" in out, "hosts from the journal file:\n" + out)
    check_equal(err, "", "stderr")
    exported = subprocess.run(["journalctl", "--output=json", "--file=" + journal], stdout=subprocess.PIPE,
                              check=True, timeout=120).stdout
    out, err, _ = run(["-"], input=exported)
    check("6 malformed lines" in out, "null records counted:\n" + out)
    check("LAGWATCH_RECORD is null: journalctl writes fields over 4096 bytes as null unless given --all" in err,
          "the fix named:\n" + err)


def test_malformed_lines(tmp):
    first, second = known_records()
    lines = jsonl(first).splitlines(True)
    lines.insert(1, "{not json\n")
    lines.insert(3, "[1, 2]\n")
    lines.insert(4, '{"event": "lag", "duration_ms": "long"}\n')
    text = "".join(lines) + json.dumps(second[0])[:40]
    path = write(tmp, "bad.jsonl", text)
    out, err, status = run([path])
    check_equal(status, 0, "exit status with malformed lines")
    for line_number in (2, 4, 5):
        check("%s:%d: malformed line" % (path, line_number) in err, "line %d named:\n%s" % (line_number, err))
    check("%s:7: incomplete last line" % path in err, "incomplete last line named:\n" + err)
    check("4 malformed lines skipped" in err, "malformed count:\n" + err)
    check_equal(sum(v[0] for v in table_rows(out).values()), 3, "the good records")
    check("; 4 malformed lines" in out, "the count in the report")
    # Named once each, not once per output.
    check_equal(err.count(":2: malformed line"), 1, "line 2 named once")


def test_hostile_lines(tmp):
    """Lines that are JSON but not records as the library writes them: each
    is counted and skipped, never a crash, in every format."""
    a = cause_stack("save")
    good = record(CAUSE_A, 250.0, "2026-11-21T10:00:00.000Z", a)
    hostile = [
        "[" * 100000 + "]" * 100000,
        json.dumps(dict(good, duration_ms=1e308)),
        json.dumps(dict(good, duration_ms=-1)),
        json.dumps(dict(good, duration_ms=True)),
        json.dumps(dict(good, pid=[1], thread_id={"a": 1})),
        json.dumps(dict(good, stacks=[{"samples": 1, "stack": None}])),
        json.dumps(dict(good, stacks=[{"samples": 1, "stack": [[1]]}])),
        json.dumps(dict(good, stacks=[{"samples": "many", "stack": a}])),
        json.dumps(dict(good, stack=[{"module": ["x"], "symbol": None, "module_offset": {}}], stacks=[])),
        json.dumps(dict(good, fingerprint=["x"])),
        json.dumps(dict(good, time=5, host=7, exe=[1])),
        json.dumps({"event": "hang-killed", "previous_pid": 1, "hang": "gone"}),
        json.dumps({"__CURSOR": "x", "LAGWATCH_RECORD": "{not json"}),
        json.dumps({"__CURSOR": "x", "LAGWATCH_RECORD": "[" * 100000}),
        json.dumps({"__CURSOR": "x", "LAGWATCH_RECORD": 5}),
        json.dumps({"event": "frame-drop", "duration_ms": 3}),
        "\xff\xfe garbage",
        # Readable: a lone surrogate in a name (JSON allows it, UTF-8 not).
        json.dumps(dict(good, fingerprint="dddddddddddddddd",
                        stacks=[{"samples": 1, "stack": [frame(PROGRAM, PROGRAM_ID, 0x1300, "bad\ud800name")]}],
                        stack=[frame(PROGRAM, PROGRAM_ID, 0x1300, "bad\ud800name")])),
    ]
    text = "\n".join(hostile) + "\n" + jsonl([good])
    path = os.path.join(tmp, "hostile.jsonl")
    with open(path, "w", encoding="latin-1") as f:
        f.write(text)
    for format in ("text", "folded", "speedscope", "chrome", "html"):
        out, err, status = run(["--format", format, path])
        check_equal(status, 0, "exit status (%s)" % format)
        check("Traceback" not in err, "a crash (%s):\n%s" % (format, err))
        if format in ("speedscope", "chrome"):
            json.loads(out)
    out, err, _ = run([path])
    # Two are readable records: pid/thread_id of the wrong type only lose
    # their track, and time/host/exe of the wrong type are "not recorded".
    check_equal(sorted(v[0] for v in table_rows(out).values()), [1, 3],
                "the good record, the two readable ones, and the one with a bad name")
    check_equal(len(re.findall(r"hostile.jsonl:\d+: malformed line", err)), 10, "lines named:\n" + err)
    check("hostile.jsonl: 4 more malformed lines not named" in err, "the rest counted:\n" + err)
    check("; 14 malformed lines" in out, "malformed count:\n" + out + err)
    check("1 record of other events skipped" in out, "the unknown event counted:\n" + out)


def test_terminal_escapes(tmp):
    """Names holding terminal escapes (a function's, a program's, a call's)
    are shown escaped in the text report: no control character but its own
    line ends."""
    evil = "evil\x1b]0;X\x07\x1b[2J\nname"
    frames = stack(frame(LIBC[0], LIBC[1], 0xcf545, "clock_nanosleep"),
                   frame(PROGRAM, PROGRAM_ID, 0x1300, evil, "evil.c", 20))
    lag = dict(record(CAUSE_A, 250.0, "2026-11-21T10:00:00.000Z", frames), exe=PROGRAM + "\x1b[31m")
    out, err, _ = run([write(tmp, "evil.jsonl", jsonl([lag]))])
    check("\x1b" not in out and "\x07" not in out and "\x9b" not in out, "a raw control character:\n%r" % out)
    check("evil\\x1b]0;X\\x07\\x1b[2J\\x0aname" in out, "the name, escaped:\n" + out)


def test_unreadable_input(tmp):
    first, _ = known_records()
    good = write(tmp, "good.jsonl", jsonl(first))
    out, err, status = run([os.path.join(tmp, "missing.jsonl"), good], ok_status=(1,))
    check_equal(status, 1, "exit status with a missing input")
    check("missing.jsonl: No such file or directory" in err, "the missing input named:\n" + err)
    check_equal(sum(v[0] for v in table_rows(out).values()), 3, "the readable input still counted")
    # A gzip'd file cut short: the records before the cut count, the cut is named.
    cut = os.path.join(tmp, "cut.jsonl.gz")
    with gzip.open(cut, "wt") as f:
        f.write(jsonl(first * 200))
    with open(cut, "r+b") as f:
        f.truncate(os.path.getsize(cut) // 2)
    out, err, status = run([cut], ok_status=(1,))
    check("cut.jsonl.gz: read error" in err, "the cut named:\n" + err)
    check(0 < sum(v[0] for v in table_rows(out).values()) < 600, "the records before the cut:\n" + out)
    check("Traceback" not in err, "a crash:\n" + err)


def test_decompression_bomb(tmp):
    """A small gzip file whose one line expands past the line limit (16 MiB):
    refused with one line and status 1, no traceback, the other inputs
    still counted."""
    first, _ = known_records()
    good = write(tmp, "good.jsonl", jsonl(first))
    bomb = os.path.join(tmp, "bomb.jsonl.gz")
    chunk = b"0" * (1 << 20)
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        for _ in range(64):
            f.write(chunk)
    check(os.path.getsize(bomb) < 1 << 20, "the bomb is small")
    out, err, status = run([bomb, good], ok_status=(1,))
    check_equal(status, 1, "exit status with a refused input")
    check_equal(err.splitlines(),
                ["lagwatch-report: %s:1: a line longer than 16 MiB: not lagwatch records "
                 "(a compressed file that expands without end?); the rest of this input is skipped" % bomb],
                "one line names the refusal")
    check_equal(sum(v[0] for v in table_rows(out).values()), 3, "the good input still counted")


def test_without_is_program(tmp):
    """Frames that do not say whether they are the program's (a record from
    another writer) count as the program's: the cause is named after the
    innermost named frames, and the report says why."""
    a = cause_stack("save")
    for f in a:
        del f["is_program"]
    out, _, _ = run([write(tmp, "old.jsonl", jsonl([record(CAUSE_A, 250.0, "2026-11-21T10:00:00.000Z", a)]))])
    check_equal(list(table_rows(out)), ["clock_nanosleep \u2190 save_leaf"], "the cause's name")
    check("1 record with frames that do not say is_program: those count as the program's\n" in out,
          "the report says why:\n" + out)


def test_hangs(tmp):
    a = cause_stack("save")
    hang = record(CAUSE_A, 5000.0, "2026-11-21T10:00:00.000Z", a, pid=300, event="hang", lag_id="300-1")
    ended = record(CAUSE_A, 7000.0, "2026-11-21T10:00:00.000Z", a, pid=300, lag_id="300-1")
    lost = record(CAUSE_A, 6000.0, "2026-11-21T11:00:00.000Z", a, pid=301, event="hang", lag_id="301-1")
    killed = {"event": "hang-killed", "previous_pid": 301, "hang": lost}
    # Killed, and its program never ran again: only its hang record.
    alone = record(CAUSE_A, 5000.0, "2026-11-21T12:00:00.000Z", a, pid=302, event="hang", lag_id="302-1")
    path = write(tmp, "hangs.jsonl", jsonl([hang, ended, lost, killed, alone]))
    out, _, _ = run([path])
    check("2 lags (3 hangs, 1 killed), total 13.0 s" in out, "hangs counted once:\n" + out)
    check_equal(list(table_rows(out).values()), [[2, "13.0 s", "6000.0 ms", "7000.0 ms", "7000.0 ms"]],
                "durations of an ended and a killed hang")
    # On the timeline, each hang once: as its lag, its hang-killed record,
    # or (neither) its hang record.
    out, _, _ = run(["--format", "chrome", path])
    spans = sorted((e["args"]["id"], e["args"]["kind"], e["dur"]) for e in json.loads(out)["traceEvents"]
                   if e.get("ph") == "X")
    check_equal(spans, [("300-1", "lag", 7000000), ("301-1", "killed", 6000000), ("302-1", "hang", 5000000)],
                "hangs on the timeline")
    # A hang-killed record is a killed hang whatever else it lacks.
    bare = write(tmp, "bare.jsonl", jsonl([{"event": "hang-killed", "hang": lost}]))
    out, _, _ = run(["--format", "chrome", bare])
    kinds = [e["args"]["kind"] for e in json.loads(out)["traceEvents"] if e.get("ph") == "X"]
    check_equal(kinds, ["killed"], "a hang-killed record without previous_pid")


def test_sketch_accuracy(tmp):
    """Past 1024 durations per cause, p50/p95 come from the sketch: within 1%."""
    frames = cause_stack("save")
    durations = [100.0 + (i * 7919) % 5000 / 3.0 for i in range(5000)]
    records = [record(CAUSE_A, d, "2026-11-21T10:00:00.000Z", frames, lag_id="1-%d" % i)
               for i, d in enumerate(durations)]
    out, _, _ = run([write(tmp, "many.jsonl", jsonl(records))])
    row = list(table_rows(out).values())[0]
    exact = sorted(durations)
    for value, q in ((row[2], 0.5), (row[3], 0.95)):
        rank = -(-int(q * 100) * len(exact) // 100)
        expected = exact[rank - 1]
        got = float(value.split()[0])
        check(abs(got - expected) <= 0.01 * expected + 0.05, "quantile %.2f: %s, exact %.1f" % (q, value, expected))
    check("(p50/p95 within 1%)" in out, "the report says the quantiles are approximate")


def test_folded(tmp):
    first, second = known_records()
    path = write(tmp, "in.jsonl", jsonl(first + second))
    out, _, _ = run(["--format", "folded", path])
    weights = {}
    for line in out.splitlines():
        m = re.match(r"^(.+) (\d+)$", line)
        check(m is not None, "folded line: %r" % line)
        frames = m.group(1).split(";")
        check(all(frames), "empty frame in %r" % line)
        root = frames[0]
        weights[root] = weights.get(root, 0) + int(m.group(2))
        # Root first: the cause, then _start ... down to the leaf.
        check_equal(frames[1], "_start", "outermost frame after the cause")
        check_equal(frames[-1], "clock_nanosleep", "leaf frame")
    check_equal(sorted(weights.values()), [20, 40], "samples per cause")
    check(any(CAUSE_A in root for root in weights), "the cause's fingerprint in its root frame")


def sampling_interval(r):
    """What one sample of record R weighs in ms: R has no summaries in its
    call tree, so its sampled time (from its catch) over its samples."""
    sampled = r["duration_ms"] - r["caught_ms"] if r["caught_ms"] < r["duration_ms"] else r["duration_ms"]
    return sampled / r["samples"]


def test_speedscope(tmp):
    first, second = known_records()
    path = write(tmp, "in.jsonl", jsonl(first + second))
    out, _, _ = run(["--format", "speedscope", path])
    doc = json.loads(out)
    check_equal(doc["$schema"], "https://www.speedscope.app/file-format-schema.json", "$schema")
    frames = doc["shared"]["frames"]
    check(all(isinstance(f.get("name"), str) and f["name"] for f in frames), "frames have names")
    check({"name": "save_leaf", "file": "save.c", "line": 20} in frames, "a frame with its file and line: %r" % frames)
    check({"name": "_start"} in frames, "a frame without: %r" % frames)
    profiles = doc["profiles"]
    merged = [p for p in profiles if p["type"] == "sampled" and "lags, " in p["name"]]
    check_equal(len(merged), 2, "one merged profile per cause")
    check_equal(len(profiles), 2 + 6, "and one profile per lag")
    for profile in profiles:
        check_equal(profile["unit"], "milliseconds", "unit")
        if profile["type"] == "sampled":
            check_equal(len(profile["samples"]), len(profile["weights"]), "samples and weights")
            check(all(0 <= i < len(frames) for s in profile["samples"] for i in s), "frame indices in range")
            check(abs(profile["endValue"] - profile["startValue"] - sum(profile["weights"])) < 0.01, "value range")
            check(all(frames[s[0]]["name"] == "_start" for s in profile["samples"]), "samples start at the root")
    # Each sample weighs its lag's interval.
    expected = {}
    for r in first + second:
        expected[r["fingerprint"]] = expected.get(r["fingerprint"], 0) + r["samples"] * sampling_interval(r)
    check_equal(sorted(round(sum(p["weights"]), 1) for p in merged),
                sorted(round(v, 1) for v in expected.values()), "weights in ms")
    # The lags with a call tree: evented, their calls in time order.
    evented = [p for p in profiles if p["type"] == "evented"]
    check_equal([p["name"] for p in evented],
                ['editor: 1000.0 ms lag in GSource "timeout", 2026-11-21 10:00:05.000 (id 100-2)',
                 'editor: 150.0 ms lag in GSource "timeout", 2026-11-21 11:00:00.000 (id 200-2)'],
                "one evented profile per lag with calls, named after it")
    events = evented[0]["events"]
    check_equal([(e["type"], frames[e["frame"]]["name"], e["at"]) for e in events],
                [("O", "render_handler", 0.0), ("O", "render_middle", 100.0), ("O", "render_leaf", 120.0),
                 ("C", "render_leaf", 420.0), ("C", "render_middle", 500.0), ("O", "render_middle", 500.0),
                 ("C", "render_middle", 980.0), ("C", "render_handler", 1000.0)], "events of lag 100-2")


def check_trace_events(events):
    """The Trace Event Format's shapes: every event a ph, pid and tid; B, E,
    X and i a ts (µs); X a dur >= 0 and a name; M a name and args.name;
    B/E balanced and properly nested per thread, X events too (each within
    the one it starts in). The slices per (pid, tid) as (start, end, name)."""
    slices = {}
    begins = {}
    for e in events:
        check(e.get("ph") in ("B", "E", "X", "i", "I", "M"), "unknown ph: %r" % e)
        check(isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), "pid, tid: %r" % e)
        track = (e["pid"], e["tid"])
        if e["ph"] == "M":
            check(e["name"] in ("process_name", "thread_name") and isinstance(e["args"]["name"], str), repr(e))
            continue
        check(isinstance(e.get("ts"), (int, float)) and not isinstance(e["ts"], bool), "ts: %r" % e)
        if e["ph"] == "X":
            check(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, "dur: %r" % e)
            check(isinstance(e.get("name"), str) and e["name"], "name: %r" % e)
            slices.setdefault(track, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e["ph"] == "B":
            begins.setdefault(track, []).append((e["ts"], e["name"]))
        elif e["ph"] == "E":
            check(begins.get(track), "E without its B: %r" % e)
            start, name = begins[track].pop()
            check(e["ts"] >= start, "E before its B: %r" % e)
            slices.setdefault(track, []).append((start, e["ts"], name))
        else:
            check(e.get("s", "t") in ("g", "p", "t"), "instant scope: %r" % e)
    check(not any(begins.values()), "B without its E: %r" % begins)
    for track, spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for span in spans:
            while stack and stack[-1][1] <= span[0]:
                stack.pop()
            if stack and span[1] > stack[-1][1]:
                raise AssertionError("track %r: %r partly overlaps %r" % (track, span, stack[-1]))
            stack.append(span)
    return slices


def test_chrome(tmp):
    first, second = known_records()
    a = cause_stack("save")
    # Start times are rounded to the millisecond: this lag "starts" 0.5 ms
    # before the previous one on its thread ended.
    tight = [record(CAUSE_A, 100.5, "2026-11-21T13:00:00.000Z", a, pid=400, lag_id="400-1"),
             record(CAUSE_A, 120.0, "2026-11-21T13:00:00.100Z", a, pid=400, lag_id="400-2"),
             # Another thread of the same process: its own track.
             record(CAUSE_A, 300.0, "2026-11-21T13:00:00.050Z", a, pid=400, tid=401, lag_id="400-3")]
    tight[1].update(source=None, source_callback="on_save", source_callback_kind="timeout",
                    calls=[call("save_handler", 0.0, 120.0, call("save_middle", 10.0, 100.0))], calls_exact=True)
    path = write(tmp, "in.jsonl", jsonl(first + second + tight))
    out, _, _ = run(["--format", "chrome", path])
    doc = json.loads(out)
    events = doc["traceEvents"]
    tracks = check_trace_events(events)
    complete = [e for e in events if e.get("ph") == "X" and e["cat"].startswith("lagwatch,lag")]
    check_equal(len(complete), 9, "one complete event per lag")
    check_equal(len(tracks), 4, "tracks (pid, tid)")
    lag = next(e for e in complete if e["args"]["id"] == "100-2")
    check_equal(lag["dur"], 1000000, "dur in microseconds")
    check_equal(lag["ts"], 1795255205000000, "ts in microseconds since the epoch")
    # Its calls nested inside it, in order.
    inside = [(name, start - lag["ts"], end - start) for start, end, name in tracks[(lag["pid"], lag["tid"])]
              if lag["ts"] <= start and end <= lag["ts"] + lag["dur"]]
    check_equal(inside, [(lag["name"], 0, 1000000), ("render_handler", 0, 1000000), ("render_middle", 100000, 400000),
                         ("render_leaf", 120000, 300000), ("render_middle", 500000, 480000)], "slices of lag 100-2")
    # The moved lag's calls: cut to it.
    moved = next(e for e in complete if e["args"]["id"] == "400-2")
    check_equal(moved["args"]["source"], "on_save", "an unnamed GSource's callback as its source")
    handler = next(e for e in events if e.get("name") == "save_handler")
    check_equal((handler["ts"], handler["ts"] + handler["dur"]), (moved["ts"], moved["ts"] + moved["dur"]),
                "the call of a moved lag within it")
    names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    check("editor" in names and not any("pid" in n for n in names), "process names, without the pid viewers add: %r"
          % names)
    stacks = [e for e in events if e.get("ph") == "i"]
    check_equal(len(stacks), 9, "each lag's stack as an instant event")
    check(stacks[0]["args"]["stack"][0] == "clock_nanosleep", "a stack, innermost first: %r" % stacks[0])


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.rows = []
        self.external = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "tr" and attrs.get("class") == "cause":
            self.rows.append(attrs.get("data-fingerprint"))
        for name in ("src", "href"):
            if attrs.get(name) and not attrs[name].startswith("#"):
                self.external.append(attrs[name])
        if tag == "link":
            self.external.append(attrs.get("href"))


def test_html_structure(tmp):
    first, second = known_records()
    path = write(tmp, "in.jsonl", jsonl(first + second))
    page = os.path.join(tmp, "report.html")
    run(["--format", "html", "-o", page, path])
    parser = Page()
    with open(page) as f:
        parser.feed(f.read())
    check_equal(parser.rows, [CAUSE_B, CAUSE_A], "causes in the table")
    check_equal(parser.external, [], "references outside the page")
    flames = [a for t, a in parser.tags if t == "svg" and a.get("class") == "flame"]
    check_equal(len(flames), 2, "one flame graph per cause")
    check(sum(1 for t, a in parser.tags if t == "g" and a.get("class") == "frame") >= 2 * 11,
          "frames drawn in the flame graphs")
    check(any(t == "svg" and a.get("class") == "histogram" for t, a in parser.tags), "histogram")
    check_equal(len([a for t, a in parser.tags if t == "svg" and a.get("class") == "calls"]), 1,
                "one call flame chart: cause B's")
    check_equal([(a["data-name"], a["data-depth"]) for t, a in parser.tags if t == "g" and a.get("class") == "call"],
                [("render_handler", "0"), ("render_middle", "1"), ("render_leaf", "2"), ("render_middle", "1")],
                "calls in the chart, in order")


def chromium_program():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_html_in_chromium(tmp):
    """The page in a real browser: its DOM after scripts ran, and a picture."""
    first, second = known_records()
    path = write(tmp, "in.jsonl", jsonl(first + second))
    page = os.path.join(tmp, "report.html")
    run(["--format", "html", "-o", page, path])
    browser = chromium_program()
    env = dict(os.environ, HOME=tmp)
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + tmp + "/profile",
              "--no-first-run", "--disable-extensions"]
    loaded = subprocess.run(common + ["--enable-logging=stderr", "--dump-dom", "file://" + page],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240, env=env)
    dom = loaded.stdout.decode()
    check("Uncaught" not in loaded.stderr.decode(), "the page's script failed:\n" + loaded.stderr.decode())
    parser = Page()
    parser.feed(dom)
    check_equal(parser.rows, [CAUSE_B, CAUSE_A], "causes in the browser's DOM")
    frames = [a for t, a in parser.tags if t == "g" and a.get("class") == "frame"]
    check(len(frames) >= 22, "flame graph frames in the DOM: %d" % len(frames))
    check(any(a.get("data-name") == "save_leaf" for a in frames), "a frame of cause A in the DOM")
    # The call chart: time on x (a later call further right, a longer one
    # wider), depth on y.
    boxes = []
    for i, (tag, attrs) in enumerate(parser.tags):
        if tag == "g" and attrs.get("class") == "call":
            rect = next(a for t, a in parser.tags[i:] if t == "rect")
            boxes.append((attrs["data-name"], float(rect["x"]), float(rect["width"]), float(rect["y"])))
    check_equal([b[0] for b in boxes], ["render_handler", "render_middle", "render_leaf", "render_middle"],
                "calls in the browser's DOM")
    handler, middle, leaf, middle2 = boxes
    check(handler[1] < middle[1] < leaf[1] < middle2[1], "later calls further right: %r" % boxes)
    check(abs(middle[2] / handler[2] - 0.4) < 0.01 and abs(leaf[2] / handler[2] - 0.3) < 0.01,
          "widths in proportion to durations: %r" % boxes)
    check(handler[3] < middle[3] < leaf[3] and middle[3] == middle2[3], "callers above callees: %r" % boxes)
    shot = os.path.join(tmp, "shot.png")
    subprocess.run(common + ["--screenshot=" + shot, "--window-size=1280,1000", "file://" + page],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240, env=env)
    with open(shot, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", "screenshot is a PNG")
    check_equal((int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")), (1280, 1000),
                "screenshot size")


def test_offline_symbolization(tmp):
    """A stripped program's static function, named from its split debug file
    found by build-id under --debug-dir."""
    source = write(tmp, "hidden.c", "__attribute__((noinline)) static int hidden_work(int x)\n"
                   "{ return x * 3 + 1; }\n"
                   "int main(int argc, char **argv) { return hidden_work(argc); }\n")
    binary = os.path.join(tmp, "hidden")
    subprocess.run([CC, "-g", "-O1", "-Wl,--build-id", "-o", binary, source], check=True)
    notes = subprocess.run(["readelf", "-n", binary], stdout=subprocess.PIPE, check=True).stdout.decode()
    build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    symbols = subprocess.run(["nm", binary], stdout=subprocess.PIPE, check=True).stdout.decode()
    offset = int(re.search(r"^([0-9a-f]+) t hidden_work$", symbols, re.M).group(1), 16)
    debug_dir = os.path.join(tmp, "debug")
    debug_file = os.path.join(debug_dir, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(debug_file))
    subprocess.run(["objcopy", "--only-keep-debug", binary, debug_file], check=True)
    subprocess.run(["strip", "--strip-all", binary], check=True)
    # In the field: no name for the leaf (exact address) nor for its caller
    # (a return address, 4 bytes into main).
    main_offset = int(re.search(r"^([0-9a-f]+) T main$", symbols, re.M).group(1), 16)
    frames = [frame(binary, build_id, offset + 2, None),
              frame(binary, build_id, main_offset + 4, None),
              frame(LIBC[0], LIBC[1], 0x2724a, "__libc_start_call_main")]
    path = write(tmp, "field.jsonl", jsonl([record("cccccccccccccccc", 250.0, "2026-11-21T10:00:00.000Z", frames)]))
    out, _, _ = run(["--debug-dir", debug_dir, path])
    check("hidden_work \u2190 main" in out, "offline names in the cause:\n" + out)
    check("2 frames named offline" in out, "count of offline names:\n" + out)
    folded, _, _ = run(["--format", "folded", "--debug-dir", debug_dir, path])
    check(folded.rstrip().endswith(";__libc_start_call_main;main;hidden_work 10"), "folded: " + folded)
    # Without eu-addr2line: the frames stay unnamed, and stderr says why.
    out, err, _ = run(["--debug-dir", debug_dir, path], env=dict(os.environ, PATH=tmp))
    check("hidden+0x%x" % (offset + 2) in out, "unnamed frame without eu-addr2line:\n" + out)
    check("eu-addr2line (elfutils) is not installed" in err, "the reason on stderr:\n" + err)
    # Without the debug file: the module and offset, as in the field.
    out, _, _ = run(["--debug-dir", os.path.join(tmp, "nowhere"), path])
    check("hidden+0x%x" % (offset + 2) in out, "unnamed frame without debug file:\n" + out)


def test_real_records(tmp):
    """Records written by the library itself (examples/lag-example: three
    lags of three causes) read back."""
    output = os.path.join(tmp, "real.jsonl")
    env = dict(os.environ, LAGWATCH_OUTPUT="json:" + output)
    subprocess.run([LAG_EXAMPLE], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120, check=True)
    with open(output) as f:
        records = [json.loads(line) for line in f]
    fingerprints = {r["fingerprint"] for r in records if r["event"] == "lag"}
    out, err, _ = run([output, output])
    rows = table_rows(out)
    check_equal(len(rows), len(fingerprints), "one cause per fingerprint")
    check(all(row[0] == 2 for row in rows.values()), "each lag counted once per copy:\n" + out)
    check(any(name.startswith("freeze_sleeping") for name in rows), "the sleeping lag's cause:\n" + out)
    check("programs: %s (2)" % os.path.basename(LAG_EXAMPLE) in out, "program from the stack's main:\n" + out)
    check_equal(err, "", "stderr")
    for format in ("folded", "speedscope", "chrome", "html"):
        run(["--format", format, output])


def test_progress(tmp):
    first, _ = known_records()
    path = write(tmp, "in.jsonl", jsonl(first))
    _, err, _ = run(["--progress", path])
    check(re.search(r"in\.jsonl: done, 3 lines, 3 records", err), "progress on stderr:\n" + err)
    _, err, _ = run([path])
    check_equal(err, "", "no progress when stderr is not a terminal")


CASES = [
    ("grouping and numbers", test_grouping_and_numbers, None),
    ("gzip input", test_gzip_input, None),
    ("journal export", test_journal_export, None),
    ("journal file", test_journal_file,
     lambda: None if journal_remote_program() and shutil.which("journalctl")
     else "systemd-journal-remote is not installed (Debian package systemd-journal-remote)"),
    ("calls", test_calls, None),
    ("malformed lines", test_malformed_lines, None),
    ("hostile lines", test_hostile_lines, None),
    ("unreadable input", test_unreadable_input, None),
    ("decompression bomb", test_decompression_bomb, None),
    ("without is_program", test_without_is_program, None),
    ("hangs", test_hangs, None),
    ("sketch accuracy", test_sketch_accuracy, None),
    ("folded", test_folded, None),
    ("speedscope", test_speedscope, None),
    ("chrome", test_chrome, None),
    ("html structure", test_html_structure, None),
    ("html in chromium", test_html_in_chromium,
     lambda: None if chromium_program() else "chromium is not installed (Debian package chromium)"),
    ("offline symbolization", test_offline_symbolization,
     lambda: None if shutil.which("eu-addr2line") else "eu-addr2line is not installed (Debian package elfutils)"),
    ("real records", test_real_records, None),
    ("terminal escapes", test_terminal_escapes, None),
    ("progress", test_progress, None),
]


def main():
    selected = [c for c in CASES if len(sys.argv) < 4 or c[0] in sys.argv[3:]]
    print("1..%d" % len(selected))
    failed = 0
    for number, (name, function, skip) in enumerate(selected, 1):
        reason = skip() if skip else None
        if reason:
            print("ok %d /report/%s # SKIP %s" % (number, name.replace(" ", "-"), reason))
            continue
        with tempfile.TemporaryDirectory(prefix="lw-report-") as tmp:
            try:
                function(tmp)
                print("ok %d /report/%s" % (number, name.replace(" ", "-")))
            except Exception:
                failed += 1
                print("not ok %d /report/%s" % (number, name.replace(" ", "-")))
                for line in traceback.format_exc().splitlines():
                    print("# " + line)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
