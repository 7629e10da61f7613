"""lagwatch_report.grouping: causes, their names' frames, bounded memory."""

import random
import unittest

from lagwatch_report.grouping import (MAX_STACKS_PER_CAUSE, Durations, FrameKey, Grouping, Malformed,
                                      frame_is_program)
from records import CAUSE_A, CAUSE_B, LIBC, PROGRAM, cause_stack, frame, grouped, known_records, record


def label_symbols(grouping: Grouping, fingerprint: str) -> list[str | None]:
    label = grouping.causes[fingerprint].label
    assert label is not None
    return [placed.key.symbol for placed in label.candidates]


class GroupingTest(unittest.TestCase):
    def test_counts_per_cause(self) -> None:
        grouping = grouped(known_records())
        a = grouping.causes[CAUSE_A]
        self.assertEqual((a.count(), a.total_ms, a.durations.max), (3, 600.0, 300.0))
        self.assertEqual((a.first, a.last), ("2026-11-21T10:00:01.000Z", "2026-11-21T12:00:00.000Z"))
        self.assertEqual(a.samples, 30)
        self.assertEqual(grouping.causes[CAUSE_B].count(), 1)
        self.assertEqual([c.fingerprint for c in grouping.ordered("total")], [CAUSE_B, CAUSE_A])
        self.assertEqual([c.fingerprint for c in grouping.ordered("count")], [CAUSE_A, CAUSE_B])

    def test_the_records_verdict_names_the_cause(self) -> None:
        # The library's verdict is taken as it is: a libc frame it calls the
        # program's is one, a program frame it does not call so is not.
        frames = [frame(LIBC, "memcpy", is_program=True), frame(PROGRAM, "copy_helper", is_program=False),
                  frame(PROGRAM, "copy_all"), frame(PROGRAM, "main")]
        grouping = grouped([record(CAUSE_A, 200.0, "2026-11-21T10:00:00.000Z", frames)])
        self.assertEqual(label_symbols(grouping, CAUSE_A), ["memcpy", "copy_all"])
        self.assertEqual(grouping.without_verdict, 0)

    def test_frames_without_a_verdict_count_as_the_programs(self) -> None:
        frames = cause_stack("save")
        for f in frames:
            del f["is_program"]
        self.assertTrue(all(frame_is_program(f) for f in frames))
        grouping = grouped([record(CAUSE_A, 200.0, "2026-11-21T10:00:00.000Z", frames)])
        self.assertEqual(label_symbols(grouping, CAUSE_A), ["clock_nanosleep", "save_leaf"])
        self.assertEqual(grouping.without_verdict, 1)

    def test_hang_killed_counts_its_hang(self) -> None:
        hang = record(CAUSE_A, 5000.0, "2026-11-21T10:00:00.000Z", cause_stack("save"), event="hang")
        grouping = grouped([hang, {"event": "hang-killed", "exe": "/usr/bin/editor", "hang": hang}])
        a = grouping.causes[CAUSE_A]
        self.assertEqual((a.hangs, a.killed, a.count(), a.total_ms), (1, 1, 1, 5000.0))

    def test_malformed_records(self) -> None:
        good = record(CAUSE_A, 200.0, "2026-11-21T10:00:00.000Z", cause_stack("save"))
        for bad in [dict(good, duration_ms=-1), dict(good, duration_ms=True), dict(good, fingerprint=["x"]),
                    dict(good, stack=[{"module": ["x"], "symbol": None}], stacks=[]),
                    dict(good, stacks=[{"samples": "many", "stack": []}]),
                    {"event": "hang-killed", "hang": "gone"}]:
            with self.assertRaises(Malformed, msg=repr(bad)):
                grouped([bad])

    def test_stacks_per_cause_are_bounded(self) -> None:
        records = [record(CAUSE_A, 150.0, "2026-11-21T10:00:00.000Z",
                          [frame(PROGRAM, "f%d" % i), frame(PROGRAM, "main")], samples=2)
                   for i in range(MAX_STACKS_PER_CAUSE + 10)]
        a = grouped(records).causes[CAUSE_A]
        self.assertEqual(len(a.stacks), MAX_STACKS_PER_CAUSE)
        self.assertEqual(a.other_samples, 20)
        self.assertEqual(a.samples, 2 * len(records))

    def test_truncated_stack_is_marked(self) -> None:
        frames = [frame(PROGRAM, "deep"), frame(PROGRAM, "main")]
        r = record(CAUSE_A, 150.0, "2026-11-21T10:00:00.000Z", frames)
        r["stacks"][0]["truncated"] = True
        (stack,) = grouped([r]).causes[CAUSE_A].stacks
        self.assertEqual(stack[-1], FrameKey(None, "[truncated stack]"))

    def test_durations_sketch_within_one_percent(self) -> None:
        rng = random.Random(7)
        values = [rng.lognormvariate(5, 2) for _ in range(20000)]
        durations = Durations()
        for v in values:
            durations.add(v)
        self.assertFalse(durations.is_exact())
        ordered = sorted(values)
        for q in (0.5, 0.95, 0.99):
            exact = ordered[max(1, int(q * len(values) + 0.999999)) - 1]
            answer = durations.quantile(q)
            assert answer is not None
            self.assertLessEqual(abs(answer - exact) / exact, 0.0101, "p%g" % (q * 100))


if __name__ == "__main__":
    unittest.main()
