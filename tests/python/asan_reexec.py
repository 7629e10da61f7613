"""asan_reexec.py: an ASan build of python-sampler in an uninstrumented interpreter.

The module (python-sampler.c) built with ASan needs ASan's runtime loaded
before anything else: when LW_ASAN_RUNTIME names it and it is not
preloaded yet, reexec() runs the script again with it in LD_PRELOAD (the
interpreter's own leaks are not ours: not reported). Imported by the
check-*.py scripts, from their own folder, first thing.
"""
import os
import sys


def reexec():
    runtime = os.environ.get("LW_ASAN_RUNTIME")
    if runtime and runtime not in os.environ.get("LD_PRELOAD", ""):
        os.environ["LD_PRELOAD"] = runtime + (":" + os.environ["LD_PRELOAD"] if os.environ.get("LD_PRELOAD") else "")
        os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
