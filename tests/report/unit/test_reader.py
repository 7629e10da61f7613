"""lagwatch_report.reader: inputs read one bounded line at a time."""

import contextlib
import gzip
import io
import json
import os
import tempfile
import unittest

from lagwatch_report.grouping import Grouping
from lagwatch_report.reader import MAX_LINE_BYTES, Reader
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

    def write_gzip_line(self, name: str, length: int) -> str:
        """A gzip file of one line of LENGTH bytes (newline included)."""
        path = self.path(name)
        chunk = b"0" * (1 << 20)
        with gzip.open(path, "wb", compresslevel=1) as f:
            left = length - 1
            while left > 0:
                f.write(chunk[:left])
                left -= len(chunk)
            f.write(b"\n")
        return path

    def write_records(self, name: str) -> str:
        path = self.path(name)
        with open(path, "w", encoding="utf-8") as f:
            for r in known_records():
                f.write(json.dumps(r) + "\n")
        return path

    def test_line_past_the_limit_refuses_its_input(self) -> None:
        bomb = self.write_gzip_line("bomb.jsonl.gz", MAX_LINE_BYTES + 1)
        self.assertLess(os.path.getsize(bomb), 1 << 20)
        good = self.write_records("good.jsonl")
        grouping, reader, stderr = read([bomb, good])
        self.assertEqual(stderr.splitlines(),
                         ["lagwatch-report: %s:1: a line longer than 16 MiB: not lagwatch records (a compressed "
                          "file that expands without end?); the rest of this input is skipped" % bomb])
        self.assertEqual(reader.failed_inputs, 1)
        self.assertEqual(grouping.records, 4)
        self.assertEqual(grouping.malformed, 0)

    def test_line_at_the_limit_is_read(self) -> None:
        at_limit = self.write_gzip_line("long.jsonl.gz", MAX_LINE_BYTES)
        grouping, reader, stderr = read([at_limit])
        self.assertEqual(reader.failed_inputs, 0)
        self.assertEqual(grouping.malformed, 1)
        self.assertIn("long.jsonl.gz:1: malformed line: not JSON", stderr)

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

    def test_progress_counts_in_words(self) -> None:
        path = self.path("one.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(known_records()[0]) + "\n")
        grouping = Grouping()
        reader = Reader(grouping, progress=True)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            reader.read_path(path)
        self.assertEqual(stderr.getvalue(), "lagwatch-report: %s: done, 1 line, 1 record\n" % path)

    def test_missing_input(self) -> None:
        grouping, reader, stderr = read([self.path("missing.jsonl")])
        self.assertEqual(reader.failed_inputs, 1)
        self.assertEqual(grouping.files, 0)
        self.assertIn("missing.jsonl: No such file or directory", stderr)


if __name__ == "__main__":
    unittest.main()
