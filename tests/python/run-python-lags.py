"""run-python-lags.py CHILD TYPELIB_DIR LIB_DIR: Python frames and sources, on a real CPython.

Runs CHILD (python-lag.py) on /usr/bin/python3 (Debian's 3.11, with PyGObject)
against the build's typelib and library, once per handler and twice for one
of them, and checks (TAP) what the reports say of the Python code that froze
the loop: the function, its file and the line it spun on; the language marker
in JSON and through lagwatch_report_get_frame_language(); the GSource named by
its Python callable; one fingerprint per handler, the same from run to run.
"""
import json
import os
import subprocess
import sys

PYTHON = "/usr/bin/python3"
child, typelib_dir, lib_dir = sys.argv[1:4]
results = []


def check(ok, what):
    results.append((ok, what))


def run(handler):
    env = dict(os.environ)
    env["GI_TYPELIB_PATH"] = typelib_dir + (":" + env["GI_TYPELIB_PATH"] if env.get("GI_TYPELIB_PATH") else "")
    env["LD_LIBRARY_PATH"] = lib_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    # An ASan build of the library in an uninstrumented interpreter needs
    # ASan's runtime first; the interpreter's own leaks are not ours.
    if env.get("LW_ASAN_RUNTIME"):
        env["LD_PRELOAD"] = env["LW_ASAN_RUNTIME"] + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    proc = subprocess.run([PYTHON, child, handler], env=env, capture_output=True, text=True, timeout=150)
    for line in proc.stderr.splitlines():
        print("# " + line)
    if proc.returncode != 0:
        print("# %s %s exited %d" % (child, handler, proc.returncode))
        return None
    return json.loads(proc.stdout)


def python_frames(result):
    return [f for f in result["report"]["stack"] if f.get("lang") == "python"]


def check_handler(result, handler):
    if result is None:
        check(False, "%s: the program ran and reported its freeze" % handler)
        return
    report = result["report"]
    frames = python_frames(result)
    line = result["spin_lines"][handler]
    innermost = frames[0] if frames else {}
    print("# %s: python frames %s" % (handler, [(f["symbol"], os.path.basename(f["file"]), f["line"]) for f in frames]))
    check(innermost.get("symbol") == handler and innermost.get("line") == line
          and os.path.realpath(innermost.get("file", "")) == os.path.realpath(child)
          and innermost.get("module") == innermost.get("file"),
          "%s: the innermost Python frame is %s (%s:%d)" % (handler, handler, os.path.basename(child), line))
    outer = [f["symbol"] for f in frames[1:]]
    check(outer[-2:] == ["main", "<module>"] and "MainLoop.run" in outer,
          "%s: the outer Python frames follow, innermost first: MainLoop.run ... main, <module>" % handler)
    stack = report["stack"]
    check(result["languages"] is not None and len(result["languages"]) == len(stack)
          and all(lang == (f.get("lang") or "native") for lang, f in zip(result["languages"], stack))
          and not any(f["symbol"] == "_PyEval_EvalFrameDefault" for f in stack),
          "%s: lagwatch_report_get_frame_language() agrees with JSON; no evaluation loop frame is left" % handler)
    check(report["source"] is None and report.get("source_callback") == handler
          and report.get("source_callback_kind") == "g_timeout_add",
          "%s: the unnamed GSource is described by its callable (got %r, %r)"
          % (handler, report["source"], report.get("source_callback")))


first = run("python_slow_handler")
check_handler(first, "python_slow_handler")
again = run("python_slow_handler")
other = run("other_slow_handler")
check_handler(other, "other_slow_handler")
method = run("Window.on_timeout")
check_handler(method, "Window.on_timeout")
# A name that is not ASCII: Latin-1 code units in memory.
non_ascii = run("slow_été")
check_handler(non_ascii, "slow_été")
named = run("named:python_slow_handler")
check(named is not None and named["report"]["source"] == "the program's own name"
      and python_frames(named)[:1] and python_frames(named)[0]["symbol"] == "python_slow_handler",
      "a source named with g_source_set_name() keeps its name (got %r)"
      % (named["report"]["source"] if named else None))
if first and again and other:
    fingerprints = [r["report"]["fingerprint"] for r in (first, again, other)]
    print("# fingerprints: %s" % fingerprints)
    check(fingerprints[0] == fingerprints[1], "the same program run twice keeps its fingerprint")
    check(fingerprints[0] != fingerprints[2], "two different Python handlers get different fingerprints")
else:
    check(False, "the same program run twice keeps its fingerprint")
    check(False, "two different Python handlers get different fingerprints")

print("1..%d" % len(results))
for number, (ok, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
sys.exit(0)
