#!/usr/bin/env python3
"""check-readme.py SCHEMA README: the README's field tables of the JSON
Lines records against the record schema, in TAP. Every member a table
names (the lag record's and the stats record's) is a member of that record
in the schema, and every member the schema gives a record (lag and hang,
stats, hang-killed, dropped) is named in the README, in a table or in the
text (as `name` or "name")."""
import json
import re
import sys


def field_tables(text):
    """The first-column names of each "| field | meaning |" table."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("| field | meaning |"):
            current = []
            tables.append(current)
        elif current is not None and line.startswith("|---"):
            continue
        elif current is not None and line.startswith("|"):
            current.extend(re.findall(r"`([A-Za-z_0-9]+)`", line.split("|")[1]))
        else:
            current = None
    return tables


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    readme = open(sys.argv[2], encoding="utf-8").read()
    defs = schema["$defs"]
    tables = field_tables(readme)
    # The record tables: the lag record's (it starts with "event") and the
    # stats record's (it has "iterations"); the journal's names fields, not members.
    lag_table = next((t for t in tables if t and t[0] == "event"), None)
    stats_table = next((t for t in tables if "iterations" in t), None)
    checks = []
    for name, table, kind in (("lag record", lag_table, "report"), ("stats record", stats_table, "stats")):
        if table is None:
            checks.append(("the README has a field table for the %s" % name, ["no such table"]))
            continue
        unknown = [m for m in table if m not in defs[kind]["properties"]]
        checks.append(("every member the README's %s table names is in the schema" % name, unknown))
    for kind in ("report", "stats", "hang-killed", "dropped"):
        missing = [m for m in defs[kind]["properties"]
                   if not re.search(r"[`\"]%s[`\"]" % re.escape(m), readme)]
        checks.append(("every member of the schema's %s record is named in the README" % kind, missing))
    print("1..%d" % len(checks))
    failed = False
    for n, (what, wrong) in enumerate(checks, 1):
        print("%s %d - %s" % ("not ok" if wrong else "ok", n, what))
        for item in wrong:
            print("#   %s" % item)
        failed = failed or bool(wrong)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
