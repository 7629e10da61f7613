"""Display names of frames, naming offline the frames that had no name in
the field: their build-id's debug file (DIR/.build-id/xx/rest.debug), read
by elfutils' eu-addr2line."""

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable

from .grouping import FrameKey, basename


class Names:
    """Display names of frame keys, with offline symbolization of the frames
    that had no name in the field. ADDR2LINE None: no offline names."""

    def __init__(self, debug_dirs: list[str], addr2line: str | None) -> None:
        self.debug_dirs = debug_dirs
        self.addr2line = shutil.which(addr2line) if addr2line else None
        self.wanted = addr2line is not None
        self.found: dict[FrameKey, str] = {}
        self.symbolized = 0

    def symbolize(self, keys: Iterable[FrameKey]) -> None:
        """Names the unnamed keys whose build-id has a debug file here: one
        eu-addr2line call per debug file, addresses on its stdin."""
        wanted: dict[str, set[FrameKey]] = {}
        for key in keys:
            if key.symbol is None and key.build_id and key.offset:
                wanted.setdefault(key.build_id, set()).add(key)
        if not wanted or not self.wanted:
            return
        for build_id, unsorted in wanted.items():
            debug = self.debug_file(build_id)
            if debug is None:
                continue
            if self.addr2line is None:
                print("lagwatch-report: eu-addr2line (elfutils) is not installed: frames with debug files "
                      "here stay unnamed", file=sys.stderr)
                return
            group = sorted(unsorted, key=lambda k: (k.offset or "", k.leaf))
            addresses: list[int | None] = []
            for key in group:
                try:
                    offset: int | None = int(key.offset or "", 16)
                except ValueError:
                    offset = None
                # Frames past the first hold return addresses: the call is
                # the instruction before.
                addresses.append(None if offset is None else offset - (0 if key.leaf else 1))
            query = "".join("0x%x\n" % a for a in addresses if a is not None)
            try:
                done = subprocess.run([self.addr2line, "-f", "-C", "-e", debug], input=query.encode(),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            except (OSError, subprocess.TimeoutExpired) as error:
                print("lagwatch-report: %s: %s" % (self.addr2line, error), file=sys.stderr)
                continue
            lines = done.stdout.decode("utf-8", "replace").splitlines()
            answers = iter(zip(lines[0::2], lines[1::2]))
            for key, address in zip(group, addresses):
                if address is None:
                    continue
                function, _ = next(answers, ("??", "??:0"))
                if function in ("??", ""):
                    continue
                self.found[key] = function
                self.symbolized += 1

    def debug_file(self, build_id: str) -> str | None:
        build_id = build_id.lower()
        if len(build_id) < 3 or any(c not in "0123456789abcdef" for c in build_id):
            return None
        for directory in self.debug_dirs:
            path = os.path.join(directory, ".build-id", build_id[:2], build_id[2:] + ".debug")
            if os.path.isfile(path):
                return path
        return None

    def has_name(self, key: FrameKey) -> bool:
        """Whether the frame has a name, from the record or offline."""
        return key.symbol is not None or key in self.found

    def name(self, key: FrameKey) -> str:
        """Display name of a frame key."""
        if key.symbol is not None:
            return key.symbol
        found = self.found.get(key)
        if found is not None:
            return found
        return "%s+%s" % (basename(key.module), key.offset or "?")
