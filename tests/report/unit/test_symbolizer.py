"""lagwatch_report.symbolizer: display names, offline names from debug files."""

import os
import stat
import tempfile
import unittest

from lagwatch_report.grouping import FrameKey
from lagwatch_report.symbolizer import Names

BUILD_ID = "ab" + "cd" * 19


class NamesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="lw-report-unit-")
        self.addCleanup(self.tmp.cleanup)
        debug = os.path.join(self.tmp.name, "debug", ".build-id", BUILD_ID[:2])
        os.makedirs(debug)
        open(os.path.join(debug, BUILD_ID[2:] + ".debug"), "wb").close()
        # eu-addr2line's answers, two lines per address: the function, file:line.
        self.addr2line = os.path.join(self.tmp.name, "addr2line")
        with open(self.addr2line, "w") as f:
            f.write("#!/bin/sh\nwhile read a; do case $a in 0x1000) echo ??;; *) echo \"fn_$a\";; esac; "
                    "echo x.c:1; done\n")
        os.chmod(self.addr2line, stat.S_IRWXU)

    def test_names_from_the_record(self) -> None:
        names = Names([], None)
        self.assertEqual(names.name(FrameKey("/usr/lib/libz.so.1", "inflate")), "inflate")
        unnamed = FrameKey("/usr/lib/libz.so.1", None, BUILD_ID, "0x2a", True)
        self.assertFalse(names.has_name(unnamed))
        self.assertEqual(names.name(unnamed), "libz.so.1+0x2a")
        self.assertEqual(names.name(FrameKey(None, None)), "?+?")

    def test_offline_names_ask_for_the_call_not_the_return_address(self) -> None:
        names = Names([os.path.join(self.tmp.name, "debug")], self.addr2line)
        leaf = FrameKey("/opt/app", None, BUILD_ID, "0x2000", True)
        caller = FrameKey("/opt/app", None, BUILD_ID, "0x3000", False)
        unknown = FrameKey("/opt/app", None, BUILD_ID, "0x1000", True)
        elsewhere = FrameKey("/opt/other", None, "ef" * 20, "0x2000", True)
        names.symbolize([leaf, caller, unknown, elsewhere])
        self.assertEqual(names.name(leaf), "fn_0x2000")
        self.assertEqual(names.name(caller), "fn_0x2fff")
        self.assertEqual(names.name(unknown), "app+0x1000")
        self.assertEqual(names.name(elsewhere), "other+0x2000")
        self.assertEqual(names.symbolized, 2)

    def test_debug_file_refuses_paths(self) -> None:
        names = Names([os.path.join(self.tmp.name, "debug")], None)
        self.assertIsNotNone(names.debug_file(BUILD_ID.upper()))
        self.assertIsNone(names.debug_file("../../etc/passwd"))
        self.assertIsNone(names.debug_file("ab"))


if __name__ == "__main__":
    unittest.main()
