#!/usr/bin/python3
"""test-program-frame: one innermost program frame, whoever names it.

  test-program-frame.py TOOL LAUNCHER PYTHON_PROGRAM RECORDS LAG_EXAMPLE CXX_LAG JS_PROGRAM

Prints TAP. Runs real programs under lagwatch (C: LAG_EXAMPLE; C++ with
std::sort inlined into a template method: CXX_LAG, "" when not built;
PyGObject: PYTHON_PROGRAM; GJS with its JIT: JS_PROGRAM) and RECORDS (the
library's records of stacks that take each branch of the rule), and checks:

- the summary's "innermost program frame" (printed at exit) names the code
  the program's developer wrote, and agrees with the stack the report
  prints: a Python lag is named by its innermost Python function, even
  when that function spends its time in a named C library (zlib);
- every frame of a record says whether it is the program's ("is_program");
- lagwatch-report (TOOL) names each record's cause after the same frame as
  the library's summary: it takes the verdict "is_program" from the record
  and keeps no copy of the rule; a record whose frames do not say counts
  every frame as the program's, and its cause is named after its innermost
  named frame.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # launched.py is not compiled into the source tree
from launched import child_env, summary_labels  # noqa: E402

TOOL, LAUNCHER, PYTHON_PROGRAM, RECORDS, LAG_EXAMPLE, CXX_LAG, JS_PROGRAM = sys.argv[1:8]
PYTHON = "/usr/bin/python3"   # Debian's, with python3-gi
results = []


def check(ok, what):
    results.append((ok, what))


def run_launched(tmp, name, command):
    """Runs COMMAND under the launcher, JSON and stderr: (records of the
    freeze, stderr). The freeze is a lag in a dispatch: a program starved
    of CPU as it exits (Python's finalization, after the loop returned,
    measured at 331 ms) is a lag too, in the loop's own phase."""
    json_file = os.path.join(tmp, name + ".jsonl")
    proc = subprocess.run([LAUNCHER, "--threshold", "100", "--output", "stderr,json:" + json_file, "--"]
                          + command, env=child_env(json_file), capture_output=True, text=True, timeout=120)
    records = []
    if os.path.exists(json_file):
        with open(json_file, encoding="utf-8") as f:
            records = [r for r in map(json.loads, f)
                       if r.get("event") == "lag" and r.get("phase") == "dispatch" and r["duration_ms"] >= 250]
    if proc.returncode != 0 or len(records) != 1:
        for line in proc.stderr.splitlines()[-30:]:
            print("# " + line)
        print("# %s: exit %d, %d lag records" % (name, proc.returncode, len(records)))
    return records, proc.stderr


def run_attached(tmp, name, command):
    """Runs COMMAND, a program that attaches lagwatch itself, with the
    environment's output: (lag records, stderr)."""
    json_file = os.path.join(tmp, name + ".jsonl")
    env = child_env(json_file)
    env["LAGWATCH_OUTPUT"] = "stderr,json:" + json_file
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    with open(json_file, encoding="utf-8") as f:
        records = [r for r in map(json.loads, f) if r.get("event") == "lag" and r["duration_ms"] >= 100]
    if proc.returncode != 0:
        for line in proc.stderr.splitlines()[-30:]:
            print("# " + line)
        print("# %s: exit %d" % (name, proc.returncode))
    return records, proc.stderr


def tool_labels(tmp, name, records):
    """fingerprint -> the innermost frame lagwatch-report names the cause after."""
    path = os.path.join(tmp, name + ".tool.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    proc = subprocess.run([TOOL, "--no-symbolize", "--top", "0", path], capture_output=True, text=True, timeout=120)
    labels = {}
    for line in proc.stdout.splitlines():
        cause = re.match(r"^#\d+ (.*)  fingerprint ([0-9a-f]{16})$", line)
        if cause:
            name = cause.group(1).split(" \u2190 ")
            # One frame: its " (file:line)" goes.
            labels[cause.group(2)] = re.sub(r" \([^()\s]+:(\d+|None)\)$", "", name[0]) if len(name) == 1 else name[0]
    if proc.returncode != 0 or not labels:
        print("# lagwatch-report: exit %d\n# %s" % (proc.returncode, proc.stderr.replace("\n", "\n# ")))
    return labels


def without_is_program(record):
    """The record without the frames' "is_program" (another writer's)."""
    copy = json.loads(json.dumps(record))
    for frames in [copy["stack"]] + [s["stack"] for s in copy.get("stacks") or []]:
        for frame in frames:
            frame.pop("is_program", None)
    return copy


def same_name(library, tool):
    """The summary's label is the tool's name, or that name with template
    arguments and parameters elided ("JS_CallFunction(...)"), as the
    summary shortens names over 80 bytes."""
    if library is None or tool is None:
        return False
    pattern = re.escape(library).replace(re.escape("<...>"), "<.*>").replace(re.escape("(...)"), r"\(.*\)")
    return re.fullmatch(pattern, tool) is not None


def check_tool(tmp, what, records, library):
    """lagwatch-report names each record's cause as the library's summary
    (library: fingerprint -> label); without "is_program", after the
    innermost named frame."""
    for record in records:
        frames = record["stack"]
        check(all(type(f.get("is_program")) is bool for f in frames),
              "%s: every frame says whether it is the program's" % what)
    with_member = tool_labels(tmp, what.replace(" ", "-"), records)
    without = tool_labels(tmp, what.replace(" ", "-") + "-old", [without_is_program(r) for r in records])
    for record in records:
        fingerprint = record["fingerprint"]
        expected = library.get(fingerprint)
        innermost_named = next((f["symbol"] for f in record["stack"] if f.get("symbol") is not None), None)
        print("# %s [%s]: library %r, lagwatch-report %r, without is_program %r"
              % (what, fingerprint, expected, with_member.get(fingerprint), without.get(fingerprint)))
        check(same_name(expected, with_member.get(fingerprint)),
              "%s: lagwatch-report names the library's innermost program frame %r (got %r)"
              % (what, expected, with_member.get(fingerprint)))
        check(without.get(fingerprint) == innermost_named,
              "%s, a record without is_program: lagwatch-report names its innermost named frame %r (got %r)"
              % (what, innermost_named, without.get(fingerprint)))


def records_case(tmp):
    """The library's records of stacks that take each branch of the rule."""
    path = os.path.join(tmp, "rule.jsonl")
    proc = subprocess.run([RECORDS, path], capture_output=True, text=True, timeout=60, check=True)
    expected = {"c++ std::sort inlined into the program's method": "Sorter<int>::sort_many(long)",
                "c++ runtime modules": "Cache::grow()",
                "c functions named like CPython's C API": "Python_app_tick",
                # gjs-console is not the program: nothing is, the
                # innermost named frame names the lag.
                "jit code under SpiderMonkey and GJS": "Ion: compiled",
                "c through PyGObject's extension, no Python frame read": "render_page",
                "python over a named C library": "zlib_handler",
                "python named like the interpreter": "PyLoader.run",
                "javascript over jit code": "slowHandler",
                "sanitizer runtime and an unnamed program frame": "copy_all",
                "gtk painting over the program's private library": "canvas_draw_grid",
                "system libraries under a plugin in a directory named after the program": "procs_refresh",
                "python in the standard library under the program's script": "Store.load",
                "javascript in gjs's own modules under the program's": "Panel.refresh",
                "no program frame": "poll"}
    library = {}
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    for line in proc.stdout.splitlines():
        fingerprint, name, label = line.split("\t")
        library[fingerprint] = label
        check(expected.get(name) == label, "rule, %s: the summary names %r (got %r)"
              % (name, expected.get(name), label))
    check(len(library) == len(expected) == len(records), "rule: one record and fingerprint per case")
    check_tool(tmp, "rule", records, library)


def c_case(tmp):
    records, stderr = run_attached(tmp, "c", [LAG_EXAMPLE])
    library = summary_labels(stderr)
    by_source = {r["source"]: library.get(r["fingerprint"]) for r in records}
    # A loaded machine can make the watcher drop a lag: the lags present.
    expected = {"example: busy": "spin_for_ms", "example: sleeping": "freeze_sleeping"}
    check(any(source in by_source for source in expected)
          and all(by_source[source] == label for source, label in expected.items() if source in by_source),
          "c: the summary names spin_for_ms and freeze_sleeping (got %r)" % by_source)
    check_tool(tmp, "c", records, library)


def cxx_case(tmp):
    if not CXX_LAG:
        check(True, "c++: # SKIP no C++ compiler")
        return
    records, stderr = run_attached(tmp, "cxx", [CXX_LAG])
    library = summary_labels(stderr)
    # The 400 ms sort; a loaded machine may add a lag of its own.
    sort = max(records, key=lambda r: r["duration_ms"]) if records else {}
    label = library.get(sort.get("fingerprint"))
    check(label == "Sorter<int>::sort_many(long)", "c++: the summary names Sorter<int>::sort_many(long) (got %r)"
          % label)
    check_tool(tmp, "c++", records, library)


def js_case(tmp):
    if shutil.which("gjs") is None:
        check(True, "gjs: # SKIP gjs is not installed (scripts/setup-and-test installs it)")
        return
    records, stderr = run_launched(tmp, "gjs", ["gjs", JS_PROGRAM])
    check(len(records) == 1, "gjs: one report of the freeze")
    check_tool(tmp, "gjs", records, summary_labels(stderr))


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
    check_tool(tmp, "python " + handler, records, summary_labels(stderr))


with tempfile.TemporaryDirectory(prefix="lagwatch-program-frame.") as tmp:
    records_case(tmp)
    c_case(tmp)
    cxx_case(tmp)
    if subprocess.run([PYTHON, "-c", "import gi"], capture_output=True).returncode == 0:
        python_case(tmp, "spin_handler")
        python_case(tmp, "zlib_handler")
    else:
        check(True, "python: # SKIP %s has no gi (package python3-gi)" % PYTHON)
    js_case(tmp)

print("1..%d" % len(results))
for number, (ok, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
sys.exit(0)
