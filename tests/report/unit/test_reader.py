"""lagwatch_report.reader: inputs read one bounded line at a time."""

import contextlib
import io
import json
import os
import tempfile
import unittest

from lagwatch_report.grouping import Grouping
from lagwatch_report.reader import Reader
from records import CAUSE_A, known_records


def read(paths: list[str]) -> tuple[Grouping, Reader, str]:
    """Reads PATHS: (grouping, reader, stderr)."""
    grouping = Grouping()
    reader = Reader(grouping, progress=False)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        for path in paths:
            reader.read_path(path)
    return grouping, reader, stderr.getvalue()


class ReaderTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="lw-report-unit-")
        self.addCleanup(self.tmp.cleanup)

    def path(self, name: str) -> str:
        return os.path.join(self.tmp.name, name)

    def write_records(self, name: str) -> str:
        path = self.path(name)
        with open(path, "w", encoding="utf-8") as f:
            for r in known_records():
                f.write(json.dumps(r) + "\n")
        return path

    def test_journal_export(self) -> None:
        path = self.path("journal.json")
        entries = [{"__CURSOR": "c%d" % i, "_HOSTNAME": "box", "_EXE": "/usr/bin/editor",
                    "LAGWATCH_RECORD": json.dumps(r)} for i, r in enumerate(known_records())]
        entries.append({"__CURSOR": "other", "MESSAGE": "hello"})
        with open(path, "w", encoding="utf-8") as f:
            for entry in entries:
                f.write(json.dumps(entry) + "\n")
        grouping, reader, _ = read([path])
        self.assertEqual(grouping.records, 4)
        self.assertEqual(grouping.other_journal_entries, 1)
        self.assertEqual(grouping.causes[CAUSE_A].hosts.counts, {"box": 3})
        self.assertEqual(grouping.causes[CAUSE_A].programs.counts, {"editor": 3})

    def test_malformed_lines_are_counted(self) -> None:
        path = self.path("bad.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write('{not json\n[1]\n{"event": "lag", "duration_ms": "long"}\n' + json.dumps(known_records()[0]))
        grouping, reader, stderr = read([path])
        self.assertEqual(reader.failed_inputs, 0)
        self.assertEqual(grouping.malformed, 3)
        self.assertEqual(grouping.records, 1)
        self.assertIn("bad.jsonl:3: malformed line: lag record without a valid duration_ms", stderr)

    def test_missing_input(self) -> None:
        grouping, reader, stderr = read([self.path("missing.jsonl")])
        self.assertEqual(reader.failed_inputs, 1)
        self.assertEqual(grouping.files, 0)
        self.assertIn("missing.jsonl: No such file or directory", stderr)


if __name__ == "__main__":
    unittest.main()
