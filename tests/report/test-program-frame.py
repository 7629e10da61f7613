#!/usr/bin/python3
"""test-program-frame: one innermost program frame, whoever names it.

  test-program-frame.py LAUNCHER PYTHON_PROGRAM

Prints TAP. Runs real programs under lagwatch and checks that the summary's
"innermost program frame" (printed at exit) names the code the program's
developer wrote, and agrees with the stack the report prints: a Python lag
is named by its innermost Python function, even when that function spends
its time in a named C library (zlib's deflate()).
"""

import json
import os
import re
import subprocess
import sys
import tempfile

LAUNCHER, PYTHON_PROGRAM = sys.argv[1:3]
PYTHON = "/usr/bin/python3"   # Debian's, with python3-gi
results = []


def check(ok, what):
    results.append((ok, what))


def child_env(report_file):
    env = dict(os.environ)
    env["LW_TEST_REPORT_FILE"] = report_file
    # An ASan build of the library in an uninstrumented interpreter needs
    # ASan's runtime first; the interpreter's own leaks are not ours.
    if env.get("LW_ASAN_RUNTIME"):
        env["LD_PRELOAD"] = env["LW_ASAN_RUNTIME"] + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def summary_labels(stderr):
    """fingerprint -> the summary's "innermost program frame" column."""
    labels = {}
    in_table = False
    for line in stderr.splitlines():
        if line.startswith("lagwatch: summary of this run's lags"):
            in_table = True
            continue
        row = re.match(r"^ +\d+ +[\d.]+ +[\d.]+ +([0-9a-f]{16}) +(.*)$", line) if in_table else None
        if row:
            labels[row.group(1)] = row.group(2)
    return labels


def run_launched(tmp, name, command):
    """Runs COMMAND under the launcher, JSON and stderr: (lag records, stderr)."""
    json_file = os.path.join(tmp, name + ".jsonl")
    proc = subprocess.run([LAUNCHER, "--threshold", "100", "--output", "stderr,json:" + json_file, "--"]
                          + command, env=child_env(json_file), capture_output=True, text=True, timeout=120)
    records = []
    if os.path.exists(json_file):
        with open(json_file, encoding="utf-8") as f:
            records = [r for r in map(json.loads, f) if r.get("event") == "lag" and r["duration_ms"] >= 250]
    if proc.returncode != 0 or len(records) != 1:
        for line in proc.stderr.splitlines()[-30:]:
            print("# " + line)
        print("# %s: exit %d, %d lag records" % (name, proc.returncode, len(records)))
    return records, proc.stderr


def python_case(tmp, handler):
    records, stderr = run_launched(tmp, handler, [PYTHON, PYTHON_PROGRAM, handler])
    if len(records) != 1:
        check(False, "python %s: one report of the freeze" % handler)
        return
    record = records[0]
    label = summary_labels(stderr).get(record["fingerprint"])
    python_frames = [f["symbol"] for f in record["stack"] if f.get("lang") == "python"]
    printed = re.findall(r"^  #\d+ +(\S+) \(.*\)  \[python\]$", stderr, re.M)
    print("# python %s: summary %r; python frames %s" % (handler, label, python_frames[:3]))
    check(label == handler and python_frames[:1] == [handler] and printed[:1] == [handler],
          "python %s: the summary names the Python function the printed stack shows innermost "
          "(summary %r, stack %r)" % (handler, label, printed[:1]))


with tempfile.TemporaryDirectory(prefix="lagwatch-program-frame.") as tmp:
    if subprocess.run([PYTHON, "-c", "import gi"], capture_output=True).returncode != 0:
        print("1..0 # SKIP %s has no gi (package python3-gi)" % PYTHON)
        sys.exit(0)
    python_case(tmp, "spin_handler")
    python_case(tmp, "zlib_handler")

print("1..%d" % len(results))
for number, (ok, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
sys.exit(0)
