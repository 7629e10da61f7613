#!/usr/bin/python3
"""check-types: `mypy --strict` on lagwatch-report's package, its command
and its unit tests, for the oldest Python it supports (3.11, Debian 12).

  check-types.py TOOLS_DIR UNIT_TESTS_DIR CACHE_DIR

Exit 0 clean, 1 type errors (mypy's report on stdout), 77 (meson's skip)
with one line saying why when mypy is not installed.
"""

import os
import shutil
import subprocess
import sys

TOOLS, UNIT, CACHE = sys.argv[1:4]

mypy = shutil.which("mypy")
if mypy is None:
    print("SKIP: mypy is not installed (Debian package mypy): lagwatch-report's types are not checked")
    sys.exit(77)
version = subprocess.run([mypy, "--version"], capture_output=True, text=True).stdout.strip()
print("# " + version, flush=True)
env = dict(os.environ, MYPYPATH=os.pathsep.join([TOOLS, UNIT]))
done = subprocess.run([mypy, "--strict", "--python-version", "3.11", "--cache-dir", CACHE,
                       os.path.join(TOOLS, "lagwatch_report"), os.path.join(TOOLS, "lagwatch-report"), UNIT],
                      env=env)
sys.exit(1 if done.returncode else 0)
