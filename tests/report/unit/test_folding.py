"""lagwatch_report.folding: runs of frames folded once with their count."""

import unittest

from lagwatch_report.folding import MAX_CYCLE, Run, fold


class FoldingTest(unittest.TestCase):
    def test_nothing_repeats(self) -> None:
        self.assertEqual(fold(["a", "b", "c"]), [Run(0, 1, 1), Run(1, 1, 1), Run(2, 1, 1)])

    def test_one_frame_repeated(self) -> None:
        keys = ["leaf"] + ["recurse"] * 58 + ["main"]
        self.assertEqual(fold(keys), [Run(0, 1, 1), Run(1, 1, 58), Run(59, 1, 1)])

    def test_a_cycle_repeated(self) -> None:
        keys = ["leaf"] + ["a", "b"] * 20 + ["main"]
        self.assertEqual(fold(keys), [Run(0, 1, 1), Run(1, 2, 20), Run(41, 1, 1)])

    def test_the_run_covering_most_frames_wins(self) -> None:
        # "a a" is a repeat of one frame, but "a a b" three times covers more.
        keys = ["a", "a", "b"] * 3
        self.assertEqual(fold(keys), [Run(0, 3, 3)])

    def test_unnamed_frames_of_one_module(self) -> None:
        keys = [("??", "libgtk-4.so.1")] * 16 + [("??", "libglib-2.0.so.0")] * 2
        self.assertEqual(fold(keys), [Run(0, 1, 16), Run(16, 1, 2)])

    def test_cycles_longer_than_the_limit_are_not_folded(self) -> None:
        block = [str(i) for i in range(MAX_CYCLE + 1)]
        self.assertEqual(len(fold(block * 2)), 2 * len(block))

    def test_empty(self) -> None:
        self.assertEqual(fold([]), [])


if __name__ == "__main__":
    unittest.main()
