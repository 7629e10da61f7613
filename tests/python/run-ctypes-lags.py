"""run-ctypes-lags.py CHILD LIBLAGWATCH CHECK_OFFSETS SAMPLER [PYTHON...]: Python frames on every CPython here.

Runs CHILD (ctypes-lag.py: a GLib loop driven through ctypes, no PyGObject
needed) on each interpreter given and each one found in /usr/bin
(python3 and every python3.N beside it: Debian unstable installs a newer
CPython beside its default one) and pyenv's /root/.pyenv/versions, and
checks (TAP) what lagwatch reports of the Python handler that froze the
loop:
- CPython 3.11 to 3.15: the innermost Python frame is the handler
  (qualified name, this file, the line it spins on), main and <module>
  below it, no evaluation-loop frame left; the unnamed GSource described
  by the handler; one fingerprint per handler, the same from run to run;
  on 3.12 and later the same under -X perf, whose trampolines the walk
  goes through.
- CPython 3.6 to 3.10: no Python frame and one line saying why.
On each one lagwatch reads, CHECK_OFFSETS (check-offsets.py, with SAMPLER)
checks the layout lagwatch found against the interpreter's live objects,
check-churn.py beside it samples a thread that calls and returns
without pause, and check-reuse.py one that runs a code object made at
a freed one's address.
A version with no interpreter here is a visible skip.
"""
import glob
import json
import os
import subprocess
import sys

child, library, check_offsets, sampler = sys.argv[1:5]
READ = [(3, 11), (3, 12), (3, 13), (3, 14), (3, 15)]
REFUSED = [(3, 6), (3, 7), (3, 8), (3, 9), (3, 10)]
results = []


def check(ok, what):
    results.append(("ok" if ok else "not ok", what))


def skip(what, why):
    results.append(("ok", "%s # SKIP %s" % (what, why)))


def version_of(python):
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d %d' % sys.version_info[:2]); "
                              "print(int(bool(getattr(sys, '_is_gil_enabled', lambda: True)())))"],
                             capture_output=True, text=True, timeout=60).stdout.split()
        return (int(out[0]), int(out[1])), out[2] == "1"
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None, False


def interpreters():
    """One interpreter per version, with the GIL: the first given or found."""
    found = {}
    candidates = (sys.argv[5:] + ["/usr/bin/python3"]
                  + sorted(glob.glob("/usr/bin/python3.[0-9]")) + sorted(glob.glob("/usr/bin/python3.[0-9][0-9]"))
                  + sorted(glob.glob("/root/.pyenv/versions/*/bin/python3")))
    for python in candidates:
        if not os.access(python, os.X_OK):
            continue
        version, gil = version_of(python)
        if version is not None and gil and version not in found:
            found[version] = python
    return found


def run_env():
    env = dict(os.environ)
    if env.get("LW_ASAN_RUNTIME"):
        env["LD_PRELOAD"] = env["LW_ASAN_RUNTIME"] + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def run(python, handler, *options):
    proc = subprocess.run([python, *options, child, library, handler], env=run_env(), capture_output=True,
                          text=True, timeout=150)
    for line in proc.stderr.splitlines():
        print("# " + line)
    if proc.returncode != 0:
        print("# %s %s %s exited %d" % (python, " ".join(options), handler, proc.returncode))
        return None, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def run_cut(python, handler, max_frames):
    proc = subprocess.run([python, child, library, handler, str(max_frames)], env=run_env(),
                          capture_output=True, text=True, timeout=150)
    return (json.loads(proc.stdout) if proc.returncode == 0 else None), proc.stderr


def python_frames(result):
    return [f for f in result["report"]["stack"] if f.get("lang") == "python"]


def check_named(label, result, handler):
    if result is None:
        check(False, "%s %s: the program ran and reported its freeze" % (label, handler))
        return
    report = result["report"]
    frames = python_frames(result)
    line = result["spin_lines"][handler]
    innermost = frames[0] if frames else {}
    print("# %s %s: python frames %s" % (label, handler,
                                         [(f["symbol"], os.path.basename(f["file"]), f["line"]) for f in frames]))
    if not frames:
        # Why, when a failure needs it: the samples, those that ran Python
        # without their frames (and the reason), the stack's innermost.
        print("# %s %s: %s samples, %s without Python frames; stack %s" % (
            label, handler, report.get("samples"), report.get("samples_python_missing", "none"),
            [f.get("symbol") or f.get("module_offset") for f in report["stack"][:8]]))
    check(innermost.get("symbol") == handler and innermost.get("line") == line
          and os.path.realpath(innermost.get("file", "")) == os.path.realpath(child),
          "%s %s: the innermost Python frame is %s (%s:%d)" % (label, handler, handler, os.path.basename(child), line))
    check([f["symbol"] for f in frames[1:]] == ["main", "<module>"]
          and not any(f["symbol"] == "_PyEval_EvalFrameDefault" for f in report["stack"])
          and not report.get("stack_truncated"),
          "%s %s: main and <module> follow, no evaluation-loop frame is left, the stack is whole"
          % (label, handler))
    what = ("%s %s: the unnamed GSource is described by its callable (got %r)"
            % (label, handler, report.get("source_callback")))
    # A ctypes callback has no symbol: the source is named after the
    # outermost Python frame inside GLib's dispatch, which lagwatch knows by
    # its name before GLib 2.77 and by its return address after.
    check(report.get("source_callback") == handler, what)


found = interpreters()
print("# interpreters: %s" % {"%d.%d" % v: p for v, p in sorted(found.items())})
for version in READ:
    label = "CPython %d.%d" % version
    python = found.get(version)
    if python is None:
        skip("%s: Python frames named" % label, "no CPython %d.%d with the GIL on this machine" % version)
        continue
    offsets = subprocess.run([python, check_offsets, sampler], capture_output=True, text=True, timeout=120)
    failed = [line for line in offsets.stdout.splitlines() if line.startswith("not ok") or "SKIP" in line]
    for line in failed + offsets.stderr.splitlines()[-5:]:
        print("# offsets: " + line)
    check(offsets.returncode == 0 and offsets.stdout.startswith("1..") and not failed,
          "%s: every offset of lagwatch's layout finds its field in live objects (check-offsets.py)" % label)
    churn = subprocess.run([python, os.path.join(os.path.dirname(check_offsets), "check-churn.py"), sampler],
                           capture_output=True, text=True, timeout=300)
    failed = [line for line in churn.stdout.splitlines() if line.startswith("not ok")]
    for line in [l for l in churn.stdout.splitlines() if l.startswith("# ")][:3] + failed:
        print("# churn: " + line)
    check(churn.returncode == 0 and "1..3" in churn.stdout and not failed,
          "%s: frames read while the thread calls and returns without pause: never a wrong name "
          "(check-churn.py)" % label)
    reuse = subprocess.run([python, os.path.join(os.path.dirname(check_offsets), "check-reuse.py"), sampler],
                           capture_output=True, text=True, timeout=300)
    failed = [line for line in reuse.stdout.splitlines() if line.startswith("not ok")]
    for line in failed + [l for l in reuse.stdout.splitlines() if "SKIP" in l] + reuse.stderr.splitlines()[-5:]:
        print("# reuse: " + line)
    check(reuse.returncode == 0 and reuse.stdout.startswith("1..") and not failed,
          "%s: a code object made at a freed one's address is named afresh (check-reuse.py)" % label)
    first, _ = run(python, "python_spin_handler")
    check_named(label, first, "python_spin_handler")
    again, _ = run(python, "python_spin_handler")
    method, _ = run(python, "Spinner.on_timeout")
    check_named(label, method, "Spinner.on_timeout")
    if first and again and method:
        prints = [r["report"]["fingerprint"] for r in (first, again, method)]
        print("# %s fingerprints: %s" % (label, prints))
        check(prints[0] == prints[1] and prints[0] != prints[2],
              "%s: one fingerprint per handler, the same from run to run" % label)
    else:
        check(False, "%s: one fingerprint per handler, the same from run to run" % label)
    # Cut between the handler's evaluation loop and main's: the handler's
    # frame replaces its loop, main's and <module>'s are cut with their
    # loop, never placed on the last native frame copied.
    cut, _ = run_cut(python, "python_spin_handler", 12)
    cut_frames = [(f["symbol"], f.get("lang")) for f in cut["report"]["stack"]] if cut else []
    print("# %s cut at 12 frames: %s" % (label, cut_frames))
    # The heaviest stack may be one caught inside a C call of the handler
    # (time.monotonic()): native frames then come first, and none of them
    # is an evaluation loop the handler's frame should have replaced.
    handler_at = next((i for i, (s, lang) in enumerate(cut_frames) if lang == "python"), None)
    check(cut is not None and cut["report"].get("stack_truncated")
          and [s for s, lang in cut_frames if lang == "python"] == ["python_spin_handler"]
          and not any(s == "_PyEval_EvalFrameDefault" for s, _ in cut_frames[:handler_at]),
          "%s: a stack cut at 12 frames keeps the handler's frame and places no cut one" % label)
    if version >= (3, 12):
        perf, _ = run(python, "python_spin_handler", "-X", "perf")
        check_named(label + " -X perf", perf, "python_spin_handler")
for version in REFUSED:
    label = "CPython %d.%d" % version
    python = found.get(version)
    if python is None:
        skip("%s: refused with one line" % label, "no CPython %d.%d on this machine" % version)
        continue
    result, stderr = run(python, "python_spin_handler")
    said = [line for line in stderr.splitlines() if "its stacks show interpreter frames" in line]
    check(result is not None and not python_frames(result) and len(said) == 1 and "older than 3.11" in said[0],
          "%s: no Python frame, one line says why (%r)" % (label, said))

print("1..%d" % len(results))
for number, (status, what) in enumerate(results, 1):
    print("%s %d - %s" % (status, number, what))
sys.exit(0)
