"""lagwatch_report.folded: flamegraph.pl's input."""

import unittest

from lagwatch_report.folded import write_folded
from lagwatch_report.grouping import MAX_STACKS_PER_CAUSE
from records import CAUSE_A, PROGRAM, frame, grouped, known_records, no_offline_names, output, record


class FoldedTest(unittest.TestCase):
    def test_known_records(self) -> None:
        grouping = grouped(known_records())
        out = output()
        write_folded(out, grouping.ordered("total"), no_offline_names())
        self.assertEqual(out.getvalue().splitlines(), [
            "lag render_leaf \u2190 render_middle (render.c:20) [bbbbbbbbbbbbbbbb];main;g_main_context_dispatch;"
            "render_handler;render_middle;render_leaf;clock_nanosleep 10",
            "lag save_leaf \u2190 save_middle (save.c:20) [aaaaaaaaaaaaaaaa];main;g_main_context_dispatch;"
            "save_handler;save_middle;save_leaf;clock_nanosleep 30"])

    def test_semicolons_in_names_and_other_stacks(self) -> None:
        records = [record(CAUSE_A, 150.0, "2026-11-21T10:00:00.000Z",
                          [frame(PROGRAM, "f;%d" % i), frame(PROGRAM, "main")], samples=1)
                   for i in range(MAX_STACKS_PER_CAUSE + 2)]
        out = output()
        write_folded(out, grouped(records).ordered("total"), no_offline_names())
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), MAX_STACKS_PER_CAUSE + 1)
        self.assertIn("lag f:0 \u2190 main [aaaaaaaaaaaaaaaa];main;f:0 1", lines)
        self.assertIn("lag f:0 \u2190 main [aaaaaaaaaaaaaaaa];[other stacks] 2", lines)


if __name__ == "__main__":
    unittest.main()
