#!/usr/bin/env python3
"""check-records.py SCHEMA WRITE_RECORDS: every kind of record lagwatch
writes (lag, hang, hang-killed, stats, dropped) validated against the JSON
schema in docs/schema/, as TAP.

The records come from write-records: its synthetic mode (every member a
report can have, through the real writers and sinks), and real watches: a
lag long enough to be a hang, a run killed during a hang and the next run
that reports it. Needs python3-jsonschema (Debian's, 4.10 on bookworm, or
later); without it the test is skipped, saying so.
"""
import json
import os
import subprocess
import sys
import tempfile

KINDS = ["lag", "hang", "hang-killed", "stats", "dropped"]


def main():
    schema_path, writer = sys.argv[1], sys.argv[2]
    try:
        import jsonschema
    except ImportError:
        print("1..0 # SKIP python3-jsonschema is not installed (apt-get install python3-jsonschema)")
        return 0
    with open(schema_path) as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    with tempfile.TemporaryDirectory(prefix="lagwatch-schema-") as tmp:
        synthetic = os.path.join(tmp, "synthetic.jsonl")
        live = os.path.join(tmp, "live.jsonl")
        state = os.path.join(tmp, "state")
        os.mkdir(state, 0o700)
        env = dict(os.environ, LAGWATCH_OUTPUT="json:" + live, LAGWATCH_THRESHOLD_MS="50",
                   LAGWATCH_HANG_MS="200", LAGWATCH_STATE_DIR=state)
        steps = [
            ("synthetic records", [writer, "synthetic", synthetic], os.environ, 0),
            ("a run killed during a hang", [writer, "killed", live], env, -9),
            ("a lag and a hang, then detach", [writer, "live"], env, 0),
        ]
        tests = []
        for what, argv, step_env, expected in steps:
            run = subprocess.run(argv, env=step_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 timeout=120)
            tests.append((what, run.returncode == expected,
                          ["exit status %d, expected %d" % (run.returncode, expected),
                           run.stderr.decode(errors="replace")]))
        records = []
        for path in (synthetic, live):
            with open(path, "rb") as f:
                for number, line in enumerate(f, 1):
                    records.append(("%s:%d" % (os.path.basename(path), number), line))

        seen = {kind: 0 for kind in KINDS}
        live_seen = set()
        for where, line in records:
            problems = []
            try:
                record = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as error:
                tests.append(("%s is JSON" % where, False, [str(error), repr(line[:200])]))
                continue
            event = record.get("event") if isinstance(record, dict) else None
            for error in sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path)):
                path = "/".join(str(p) for p in error.absolute_path)
                problems.append("at /%s: %s" % (path, error.message[:300]))
            if event in seen:
                seen[event] += 1
            if where.startswith("live"):
                live_seen.add(event)
            tests.append(("%s (%s) matches the schema" % (where, event), not problems, problems))
        for kind in KINDS:
            tests.append(("a %s record was written" % kind, seen[kind] > 0, []))
        for kind in ["lag", "hang", "hang-killed", "stats"]:
            tests.append(("a real watch wrote a %s record" % kind, kind in live_seen, []))

    print("1..%d" % len(tests))
    failed = 0
    for number, (name, ok, details) in enumerate(tests, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", number, name))
        if not ok:
            failed += 1
            for detail in details:
                for text in str(detail).splitlines():
                    print("#   " + text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
