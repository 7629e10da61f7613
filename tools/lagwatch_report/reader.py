"""The inputs: JSON Lines files (plain or gzip'd), journal exports
(`journalctl -o json --all`, the record in the field LAGWATCH_RECORD) and
journal files (through journalctl), read one bounded line at a time.

Bad input never stops the report: a malformed line is counted and named
on stderr; an input that cannot be opened or read to its end (a cut gzip
file, a line longer than MAX_LINE_BYTES) is named on stderr in one line,
the records before counted, and makes the exit status 1.
"""

import gzip
import io
import json
import os
import subprocess
import sys
import time
from typing import IO, Any, cast

from .grouping import Grouping, Json, Malformed
from .naming import plural

MAX_MALFORMED_NAMED = 10     # malformed lines named per input; the rest are counted
# The longest line read, decompressed: a record is a few KiB, a hang's with
# every thread's stack well under 1 MiB. A gzip file of a few KiB can expand
# into one line of gigabytes: a longer line refuses the rest of its input
# instead of filling memory.
MAX_LINE_BYTES = 16 << 20


class LineTooLong(Exception):
    """A line past MAX_LINE_BYTES; .number is its line number."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def say(message: str) -> None:
    print("lagwatch-report: " + message, file=sys.stderr)


def unwrap_journal(entry: Json, record: Any) -> tuple[Json, str | None, str | None]:
    """A journal entry's LAGWATCH_RECORD (text, or bytes exported as a
    list of numbers, or several values exported as a list) as (record,
    host, program)."""
    if isinstance(record, list):
        if record and all(isinstance(b, int) for b in record):
            record = bytes(record).decode("utf-8", "replace")
        elif record and isinstance(record[0], str):
            record = record[0]
    if not isinstance(record, str):
        raise Malformed("journal entry: LAGWATCH_RECORD is not text")
    try:
        value = json.loads(record)
    except (ValueError, RecursionError) as error:
        raise Malformed("journal entry: LAGWATCH_RECORD is not JSON (%s)" % error) from None
    if not isinstance(value, dict) or "event" not in value:
        raise Malformed("journal entry: LAGWATCH_RECORD is not a lagwatch record")
    host = entry.get("_HOSTNAME")
    program = entry.get("_EXE")
    return value, host if isinstance(host, str) else None, program if isinstance(program, str) else None


class Reader:
    """Reads inputs one line at a time into GROUPING; failed_inputs counts
    the inputs not read to their end."""

    def __init__(self, grouping: Grouping, progress: bool) -> None:
        self.grouping = grouping
        self.progress = progress
        self.failed_inputs = 0

    def read_path(self, path: str) -> None:
        """Reads PATH ("-": stdin) to its end, or says why not."""
        name = "<stdin>" if path == "-" else path
        try:
            raw = cast(io.BufferedReader, sys.stdin.buffer) if path == "-" else open(path, "rb")
        except OSError as error:
            say("%s: %s" % (name, error.strerror))
            self.failed_inputs += 1
            return
        self.grouping.files += 1
        size = None
        if path != "-":
            try:
                size = os.fstat(raw.fileno()).st_size
            except OSError:
                pass
        stream: IO[bytes] = raw
        journal = None
        magic = raw.peek(8)[:8]
        # gzip and journal files are recognised by their magic, whatever
        # their names. A journal file (as systemd-journal-remote writes
        # them) is read by journalctl, its own reader.
        if magic[:2] == b"\x1f\x8b":
            stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
        elif magic == b"LPKSHHRH" and path != "-":
            try:
                journal = subprocess.Popen(["journalctl", "--output=json", "--all", "--no-pager",
                                            "--file=" + path], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
            except OSError as error:
                say("%s: a journal file, and journalctl cannot run: %s" % (name, error.strerror))
                self.failed_inputs += 1
                raw.close()
                return
            assert journal.stdout is not None
            stream = journal.stdout
            size = None
        try:
            self.read_stream(stream, raw, name, size)
        except LineTooLong as error:
            say("%s:%d: a line longer than %d MiB: not lagwatch records (a compressed file that expands "
                "without end?); the rest of this input is skipped" % (name, error.number, MAX_LINE_BYTES >> 20))
            self.failed_inputs += 1
        except (OSError, EOFError, ValueError) as error:
            say("%s: read error: %s (the records before it are counted)" % (name, error))
            self.failed_inputs += 1
        finally:
            if journal is not None:
                assert journal.stdout is not None
                journal.stdout.close()
                if journal.wait() != 0:
                    say("%s: journalctl failed (exit %d)" % (name, journal.returncode))
                    self.failed_inputs += 1
            if path != "-":
                raw.close()

    def read_stream(self, stream: IO[bytes], raw: io.BufferedReader, name: str, size: int | None) -> None:
        """Reads STREAM's lines; LineTooLong at a line past MAX_LINE_BYTES."""
        named = 0
        number = 0
        last_bad = None
        next_progress = time.monotonic() + 0.5 if self.progress else None
        handle = self.handle_line
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise LineTooLong(number)
            try:
                handle(line)
            except Malformed as error:
                self.grouping.malformed += 1
                if not line.endswith(b"\n"):
                    last_bad = "%s:%d: incomplete last line (the file was being written?)" % (name, number)
                    continue
                if named < MAX_MALFORMED_NAMED:
                    say("%s:%d: malformed line: %s" % (name, number, error))
                named += 1
            if next_progress is not None and number % 1024 == 0 and time.monotonic() >= next_progress:
                next_progress = time.monotonic() + 0.5
                self.show_progress(name, raw, size, number)
        if last_bad:
            say(last_bad)
        if named > MAX_MALFORMED_NAMED:
            say("%s: %d more malformed lines not named" % (name, named - MAX_MALFORMED_NAMED))
        if self.progress:
            self.show_progress(name, raw, size, number, done=True)

    def show_progress(self, name: str, raw: io.BufferedReader, size: int | None, lines: int,
                      done: bool = False) -> None:
        where = ""
        if size:
            try:
                where = " %3d%%" % (100 * raw.tell() // size)
            except OSError:
                pass
        end = "\n" if done or not sys.stderr.isatty() else "\r"
        sys.stderr.write("lagwatch-report: %s:%s %s, %s%s%s"
                         % (name, " done," if done else where, plural(lines, "line"),
                            plural(self.grouping.records, "record"),
                            "" if end == "\n" else "\033[K", end))
        sys.stderr.flush()

    def handle_line(self, line: bytes) -> None:
        """One line: a record, a journal entry (with a record or not) or
        blank; Malformed for anything else."""
        if not line.strip():
            return
        try:
            value = json.loads(line)
        except UnicodeDecodeError:
            # The library writes names byte for byte; keep what can be read.
            try:
                value = json.loads(line.decode("utf-8", "replace"))
            except (ValueError, RecursionError) as error:
                raise Malformed("not JSON (%s)" % error) from None
        except (ValueError, RecursionError) as error:
            # RecursionError: nesting deeper than the parser's stack.
            raise Malformed("not JSON (%s)" % error) from None
        if not isinstance(value, dict):
            raise Malformed("not a JSON object")
        host = None
        program = None
        if "event" not in value:
            record = value.get("LAGWATCH_RECORD")
            if record is None and "LAGWATCH_RECORD" in value:
                raise Malformed("journal entry: LAGWATCH_RECORD is null: journalctl writes fields over "
                                "4096 bytes as null unless given --all")
            if record is None:
                if "__CURSOR" in value or "MESSAGE" in value:
                    self.grouping.other_journal_entries += 1
                    return
                raise Malformed("neither a lagwatch record nor a journal entry")
            value, host, program = unwrap_journal(value, record)
        self.grouping.add_record(value, host, program)
