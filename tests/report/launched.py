"""launched.py: what the tests that run programs under the launcher share.

Imported by test-attribution-run.py and test-program-frame.py (Python puts
a script's own folder on its path).
"""
import os
import re


def child_env(report_file):
    """The environment of a program under test: LW_TEST_REPORT_FILE set,
    and in an ASan build ASan's runtime loaded first (the library is
    instrumented, the program or interpreter is not; its own leaks are not
    ours)."""
    env = dict(os.environ)
    env["LW_TEST_REPORT_FILE"] = report_file
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
