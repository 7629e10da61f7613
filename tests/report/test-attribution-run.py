#!/usr/bin/python3
"""test-attribution-run: whose code a real program's frames are, and one
fingerprint per cause, on programs built and run here.

  test-attribution-run.py LAUNCHER TOOL SOURCES PYTHON_PROGRAM

Prints TAP.

- A private library beside the executable: SOURCES/app.c is built as
  APP/bin/attribution-app with RUNPATH $ORIGIN/../lib/private, and
  SOURCES/churn.c as APP/lib/private/libchurn.so, which churns through
  libc, libm, libz and (when its headers are installed) cairo and pixman,
  one lag per leaf, all from the same callback. Every frame of the app and
  of libchurn.so is the program's ("is_program" in the records), no frame of
  libz, libm, libc, cairo, pixman or GLib is; every lag is named churn()
  by the summary and by lagwatch-report (TOOL), with one fingerprint.
- A Python loop over many lines (PYTHON_PROGRAM lines_handler, under
  /usr/bin/python3 with PyGObject), run three times: its samples fall on
  different lines each run, its fingerprint and name are the same.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # launched.py is not compiled into the source tree
from launched import child_env, summary_labels  # noqa: E402

LAUNCHER, TOOL, SOURCES, PYTHON_PROGRAM = sys.argv[1:5]
PYTHON = "/usr/bin/python3"   # Debian's, with python3-gi
results = []


def check(ok, what):
    results.append((ok, what))


def skip(what, why):
    results.append((True, "%s # SKIP %s" % (what, why)))


def pkg_config(*names):
    """The compiler and linker flags of NAMES, or None when one is missing."""
    proc = subprocess.run(["pkg-config", "--cflags", "--libs"] + list(names), capture_output=True, text=True)
    return shlex.split(proc.stdout) if proc.returncode == 0 else None


def run(command, json_file):
    """Runs COMMAND under the launcher: (its lag records of at least 250 ms
    in a dispatch, its stderr)."""
    proc = subprocess.run([LAUNCHER, "--threshold", "100", "--output", "stderr,json:" + json_file, "--"] + command,
                          env=child_env(json_file), capture_output=True, text=True, timeout=180)
    records = []
    if os.path.exists(json_file):
        with open(json_file, encoding="utf-8") as f:
            records = [r for r in map(json.loads, f)
                       if r.get("event") == "lag" and r.get("phase") == "dispatch" and r["duration_ms"] >= 250]
    if proc.returncode != 0:
        for line in proc.stderr.splitlines()[-30:]:
            print("# " + line)
        print("# %s: exit %d" % (command[0], proc.returncode))
    return records, proc.stderr


def tool_causes(tmp, name, records):
    """fingerprint -> the innermost frame lagwatch-report names the cause after."""
    path = os.path.join(tmp, name + ".tool.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    proc = subprocess.run([TOOL, "--no-symbolize", "--top", "0", path], capture_output=True, text=True, timeout=120)
    causes = {}
    for line in proc.stdout.splitlines():
        cause = re.match(r"^#\d+ (.*)  fingerprint ([0-9a-f]{16})$", line)
        if cause:
            causes[cause.group(2)] = re.sub(r" \([^()\s]+:(\d+|None)\)$", "", cause.group(1).split(" \u2190 ")[0])
    return causes


def private_library_case(tmp):
    cc = os.environ.get("CC") or shutil.which("cc")
    glib = pkg_config("glib-2.0")
    zlib = pkg_config("zlib")
    if cc is None or glib is None or zlib is None:
        skip("private library", "no C compiler, or no glib-2.0 or zlib development files")
        return
    cairo = pkg_config("cairo")
    leaves = ["0", "1", "2"] + (["3"] if cairo else [])
    app = os.path.join(tmp, "app")
    private = os.path.join(app, "lib", "private")
    os.makedirs(private)
    os.makedirs(os.path.join(app, "bin"))
    library = os.path.join(private, "libchurn.so")
    program = os.path.join(app, "bin", "attribution-app")
    subprocess.run([cc, "-O1", "-g", "-fPIC", "-shared", "-o", library, os.path.join(SOURCES, "churn.c")]
                   + (["-DHAVE_CAIRO"] + cairo if cairo else []) + zlib + ["-lm"], check=True)
    subprocess.run([cc, "-O1", "-g", "-o", program, os.path.join(SOURCES, "app.c"), "-L" + private, "-lchurn",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib/private"] + glib, check=True)
    if not cairo:
        skip("private library: cairo leaf", "no cairo development files")

    records, stderr = run([program] + leaves, os.path.join(tmp, "app.jsonl"))
    check(len(records) >= len(leaves), "private library: one lag per leaf (%d records, %d leaves)"
          % (len(records), len(leaves)))
    platform = ("libz.so", "libm.so", "libc.so", "libcairo.so", "libpixman-1.so", "libglib-2.0.so")
    seen, judged = set(), set()
    for record in records:
        for frame in record["stack"]:
            module = frame.get("module") or ""
            base = os.path.basename(module)
            if (module, frame.get("symbol")) in judged:
                continue
            judged.add((module, frame.get("symbol")))
            # The loader names libchurn.so ".../bin/../lib/private/libchurn.so".
            if os.path.normpath(module) in (program, library):
                seen.add(base)
                check(frame["is_program"] is True, "private library: %s in %s is the program's"
                      % (frame.get("symbol"), base))
            elif base.startswith(platform):
                seen.add(base.split(".so")[0])
                check(frame["is_program"] is False, "private library: %s in %s is not the program's"
                      % (frame.get("symbol"), base))
    print("# modules seen in the stacks: %s" % sorted(seen))
    check("libchurn.so" in seen and "attribution-app" in seen and "libz" in seen,
          "private library: the stacks show the app, libchurn.so and libz (%s)" % sorted(seen))
    fingerprints = {r["fingerprint"] for r in records}
    labels = summary_labels(stderr)
    causes = tool_causes(tmp, "app", records)
    for record in records:
        leaf = next((f.get("symbol") for f in record["stack"]), None)
        print("# lag %s: leaf %s, fingerprint %s, summary %r, lagwatch-report %r"
              % (record["id"], leaf, record["fingerprint"], labels.get(record["fingerprint"]),
                 causes.get(record["fingerprint"])))
    check(len(fingerprints) == 1, "private library: one fingerprint for every leaf (%s)" % sorted(fingerprints))
    check(all(labels.get(f) == "churn" for f in fingerprints),
          "private library: the summary names churn (%s)" % labels)
    check(all(causes.get(f) == "churn" for f in fingerprints),
          "private library: lagwatch-report names churn (%s)" % causes)


def python_lines_case(tmp):
    if subprocess.run([PYTHON, "-c", "import gi"], capture_output=True).returncode != 0:
        skip("python lines", "%s has no gi (package python3-gi)" % PYTHON)
        return
    fingerprints, lines, names = set(), set(), set()
    for run_number in range(3):
        records, stderr = run([PYTHON, PYTHON_PROGRAM, "lines_handler"],
                              os.path.join(tmp, "lines%d.jsonl" % run_number))
        if len(records) != 1:
            check(False, "python lines, run %d: one report of the freeze (%d)" % (run_number, len(records)))
            continue
        record = records[0]
        python = [f for f in record["stack"] if f.get("lang") == "python"]
        fingerprints.add(record["fingerprint"])
        lines.add(python[0].get("line") if python else None)
        names.add(summary_labels(stderr).get(record["fingerprint"]))
    print("# python lines: fingerprints %s, lines of the stack %s, named %s" % (fingerprints, lines, names))
    check(len(fingerprints) == 1, "python lines: one fingerprint in three runs (%s)" % sorted(fingerprints))
    check(names == {"lines_handler"}, "python lines: the summary names lines_handler (%s)" % names)


with tempfile.TemporaryDirectory(prefix="lagwatch-attribution.") as tmp:
    private_library_case(tmp)
    python_lines_case(tmp)

print("1..%d" % len(results))
for number, (ok, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
sys.exit(0)
