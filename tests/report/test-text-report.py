#!/usr/bin/python3
"""test-text-report: the text report of a real 60-level recursion.

  test-text-report.py TOOL TEXT_REPORT_LAG

Prints TAP. Runs text-report-lag (tests/report/text-report-lag.c), which
writes one lag's report as text and as JSON, then checks the text: it
fits in 30 lines, it names every function of the JSON record's heaviest
stack and call tree and, by the function the text names it by, every
lighter stack the record keeps; its header names the culprit (the
innermost program frame, with its file:line) and the GSource, the
recursion is one line, and the share of the heaviest stack is the same in
the text, in the JSON record and in lagwatch-report's text.

A lighter stack is named in the text by its innermost program function
("also 4% in main"), not by each of its frames: on a busy machine one
sample of this lag can land after the callback returned, in GLib's loop
on its way back (free() of the removed source, the next iteration's
prepare), and that stack's library frames are in the JSON only.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import traceback

TOOL, LAG = sys.argv[1:3]
MAX_LINES = 30
results = []


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def run_lag(kind, tmp):
    """The text and the JSON record of one lag of KIND."""
    prefix = os.path.join(tmp, kind)
    done = subprocess.run([LAG, kind, prefix], capture_output=True, text=True, timeout=120)
    check(done.returncode == 0, "%s: exit %d: %s" % (kind, done.returncode, done.stderr))
    with open(prefix + ".txt", encoding="utf-8") as f:
        text = f.read()
    with open(prefix + ".json", encoding="utf-8") as f:
        record = json.loads(f.read())
    return text, record, prefix + ".json"


def functions_of(record):
    """Every function of the record's heaviest stack and call tree."""
    names = set(f["symbol"] for f in record.get("stack") or [] if f.get("symbol"))

    def walk(calls):
        for call in calls:
            if call.get("name"):
                names.add(call["name"])
            walk(call.get("children") or [])

    walk(record.get("calls") or [])
    return names


def label_of(stack):
    """The function the text names a stack by: its innermost program
    frame's, else its innermost named frame's (lw_report_stack_label())."""
    named = [f for f in stack if f.get("symbol")]
    program = [f for f in named if f.get("is_program")]
    return (program or named or [{"symbol": "(no stack)"}])[0]["symbol"]


def lighter_labels(record):
    """The labels of the lighter stacks the text has room for (three
    "also" lines), heaviest first."""
    shares = {}
    for stack in (record.get("stacks") or [])[1:]:
        label = label_of(stack["stack"])
        shares[label] = shares.get(label, 0) + stack["samples"]
    return sorted(shares, key=lambda label: -shares[label])[:3]


def case_recursion_fits(tmp):
    text, record, _ = run_lag("recursion", tmp)
    lines = text.splitlines()
    depth = sum(1 for f in record["stack"] if f.get("symbol") == "recurse")
    check(depth == 60, "the record's stack holds the 60 levels of recurse (got %d)" % depth)
    check(len(lines) <= MAX_LINES, "the text is %d lines, more than %d:\n%s" % (len(lines), MAX_LINES, text))
    missing = [name for name in functions_of(record) if name not in text]
    check(not missing, "the text names every function of the JSON record's heaviest stack and call tree; "
          "missing %s:\n%s" % (missing, text))
    also = [l for l in lines if l.startswith("  also ")]
    unnamed = [label for label in lighter_labels(record) if not any(" in %s" % label in l for l in also)]
    check(not unnamed, "an 'also' line names each lighter stack of the JSON record; missing %s:\n%s"
          % (unnamed, text))
    check(re.search(r"^  #\d+-\d+ .*recurse\+0x[0-9a-f]+ .* x5\d$", text, re.M),
          "the recursion is one frame line ending in its count:\n" + text)
    check(len([l for l in lines if l.lstrip().startswith("recurse")]) <= 1,
          "the call tree shows the recursion once:\n" + text)
    return "60-level recursion: %d lines, every function of the JSON record's heaviest stack and call tree " \
        "named, and each lighter stack (%d)" % (len(lines), len(record.get("stacks") or []) - 1)


def case_culprit_header(tmp):
    text, record, _ = run_lag("recursion", tmp)
    culprit = next(f for f in record["stack"] if f["is_program"] and f.get("symbol"))
    place = " (%s:%d)" % (os.path.basename(culprit["file"]), culprit["line"]) if culprit.get("line") else ""
    header = text.splitlines()[0]
    expected = "lagwatch: lag of %.1f ms: %s%s, in GSource \"text-report: recursion\" (priority 200) [%s]" \
        % (record["duration_ms"], culprit["symbol"], place, record["id"])
    check(header == expected, "header %r, expected %r" % (header, expected))
    return "header: " + header


def case_share_agrees(tmp):
    text, record, path = run_lag("spread", tmp)
    total = record["samples"]
    heaviest = record["stacks"][0]["samples"]
    share = round(100.0 * heaviest / total)
    kept = sum(s["samples"] for s in record["stacks"])
    check(len(record["stacks"]) >= 2 and kept < total,
          "the samples spread over more stacks than the record keeps (%d of %d in %d stacks)"
          % (kept, total, len(record["stacks"])))
    in_text = "heaviest stack: %d of %d samples (%d%%)" % (heaviest, total, share)
    check(in_text in text, "the text says %r:\n%s" % (in_text, text))
    done = subprocess.run([TOOL, "--no-symbolize", path], capture_output=True, text=True, timeout=120)
    check(done.returncode == 0, "lagwatch-report: exit %d: %s" % (done.returncode, done.stderr))
    in_report = "heaviest stack: %d of %d samples (%d%%)" % (heaviest, total, share)
    check(in_report in done.stdout, "lagwatch-report says %r:\n%s" % (in_report, done.stdout))
    also = [l for l in text.splitlines() if l.startswith("  also ")]
    check(len(also) == len(set(l.split(" in ", 1)[1] for l in also)), "each 'also' line names another function")
    return "heaviest stack %d of %d samples (%d%%) in the text, the JSON record and lagwatch-report" \
        % (heaviest, total, share)


def case_report_folds(tmp):
    _, record, path = run_lag("recursion", tmp)
    done = subprocess.run([TOOL, "--no-symbolize", path], capture_output=True, text=True, timeout=120)
    check(done.returncode == 0, "lagwatch-report: exit %d: %s" % (done.returncode, done.stderr))
    out = done.stdout
    check(re.search(r"^    recurse x60$", out, re.M), "the heaviest stack folds the recursion:\n" + out)
    check(out.count("recurse") <= 4, "recurse named at most in the table, the heading, the stack and the calls:\n" + out)
    check(out.startswith("lagwatch-report: 1 lag (0 hangs, 0 killed) in 1 cause, from 1 record in 1 input\n"),
          "counts with their plurals right:\n" + out)
    return "lagwatch-report folds the recursion"


CASES = [case_recursion_fits, case_culprit_header, case_share_agrees, case_report_folds]

print("1..%d" % len(CASES), flush=True)
failed = 0
with tempfile.TemporaryDirectory() as tmp:
    for n, case in enumerate(CASES, 1):
        try:
            print("ok %d - %s" % (n, case(tmp)), flush=True)
        except Exception:
            failed += 1
            print("not ok %d - %s" % (n, case.__name__), flush=True)
            for line in traceback.format_exc().splitlines():
                print("# " + line, flush=True)
sys.exit(1 if failed else 0)
