"""lagwatch_report.text: the text report."""

import unittest
from typing import Any

from lagwatch_report.grouping import Call
from lagwatch_report.text import terminal_safe, write_text
from records import CAUSE_A, LIBC, PROGRAM, frame, grouped, known_records, no_offline_names, output, record

EXPECTED = """\
lagwatch-report: 4 lags (0 hangs, 0 killed) in 2 causes, from 4 records in 1 input

  #    lags      total        p50        p95        max  cause
  1       1  1000.0 ms  1000.0 ms  1000.0 ms  1000.0 ms  render_leaf \u2190 render_middle (render.c:20)
  2       3   600.0 ms   200.0 ms   300.0 ms   300.0 ms  save_leaf \u2190 save_middle (save.c:20)

#1 render_leaf \u2190 render_middle (render.c:20)  fingerprint bbbbbbbbbbbbbbbb
  in GSource "timeout": 1 lag (0 hangs, 0 killed), total 1000.0 ms, p50 1000.0 ms, p95 1000.0 ms, max 1000.0 ms
  first seen 2026-11-21 10:00:05.000, last seen 2026-11-21 10:00:05.000 UTC
  programs: editor (1)
  hosts: not recorded (1)
  heaviest stack: 10 of 10 samples (100%), innermost first:
    clock_nanosleep
    render_leaf
    render_middle
    render_handler
    ... 2 more lines

#2 save_leaf \u2190 save_middle (save.c:20)  fingerprint aaaaaaaaaaaaaaaa
  in GSource "timeout": 3 lags (0 hangs, 0 killed), total 600.0 ms, p50 200.0 ms, p95 300.0 ms, max 300.0 ms
  first seen 2026-11-21 10:00:01.000, last seen 2026-11-21 12:00:00.000 UTC
  programs: editor (3)
  hosts: not recorded (3)
  heaviest stack: 30 of 30 samples (100%), innermost first:
    clock_nanosleep
    save_leaf
    save_middle
    save_handler
    ... 2 more lines
"""


class TextTest(unittest.TestCase):
    def test_known_records(self) -> None:
        grouping = grouped(known_records())
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 4)
        self.assertEqual(out.getvalue(), EXPECTED)

    def test_calls_of_the_longest_lag(self) -> None:
        calls = [{"name": "handler", "start_ms": 0.0, "duration_ms": 300.0,
                  "children": [{"name": "inner", "start_ms": 10.0, "duration_ms": 200.0}]}]
        grouping = grouped([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", [frame(PROGRAM, "handler")],
                                   lag_id="7-1", calls=calls, calls_exact=True)])
        self.assertEqual(grouping.causes[CAUSE_A].calls,
                         [Call("handler", 0.0, 300.0, [Call("inner", 10.0, 200.0, [])])])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertIn("  calls of its longest lag (7-1, 300.0 ms, exact; time taken, from the lag's start), in order:\n"
                      "    handler  300.0 ms, from +0.0 ms\n"
                      "      inner  200.0 ms, from +10.0 ms\n", out.getvalue())

    def test_calls_too_short_to_time(self) -> None:
        # A tree from samples: a summary of calls too short to time says so.
        calls = [{"name": "handler", "start_ms": 0.0, "duration_ms": 300.0, "samples": 25,
                  "children": [{"name": "light", "start_ms": 10.0, "duration_ms": 36.0, "samples": 3,
                                "short_calls": 3, "children": []}]}]
        grouping = grouped([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", [frame(PROGRAM, "handler")],
                                   lag_id="7-1", calls=calls, calls_exact=False)])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertIn("    handler  300.0 ms, from +0.0 ms\n"
                      "      light: 3 calls too short to time, in all  36.0 ms, from +10.0 ms\n", out.getvalue())

    def test_recursion_folds_in_the_stack_and_the_calls(self) -> None:
        # 58 levels of recurse under a libgtk run of unnamed frames: one
        # line each, and the call tree's chain of recurse one line too.
        gtk = "/usr/lib/x86_64-linux-gnu/libgtk-4.so.1"
        frames = ([frame(LIBC, "clock_nanosleep"), frame(PROGRAM, "leaf")]
                  + [frame(PROGRAM, "recurse", 0x1400) for _ in range(58)]
                  + [frame(gtk, None, 0x9000 + i, is_program=False) for i in range(16)]
                  + [frame(PROGRAM, "main")])
        call: dict[str, Any] = {"name": "leaf", "start_ms": 100.0, "duration_ms": 200.0, "children": []}
        for level in range(40):
            call = {"name": "recurse", "start_ms": 94.0, "duration_ms": 206.0,
                    "children": [{"name": "tick", "start_ms": 94.0 + level, "duration_ms": 1.0, "children": []},
                                 call]}
        grouping = grouped([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", frames, lag_id="7-1",
                                   calls=[call], calls_exact=True, samples=10)])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertIn("  heaviest stack: 10 of 10 samples (100%), innermost first:\n"
                      "    clock_nanosleep\n"
                      "    leaf\n"
                      "    recurse x58\n"
                      "    ?? x16 in libgtk-4.so.1\n"
                      "    main\n", out.getvalue())
        self.assertIn("    recurse x40 (recursion)  206.0 ms, from +94.0 ms\n"
                      "      tick: 40 calls along the recursion, 40.0 ms in all\n"
                      "      leaf  200.0 ms, from +100.0 ms\n", out.getvalue())

    def test_share_is_over_every_sample_of_the_lag(self) -> None:
        # The record keeps 2 stacks (7 samples) of a lag of 101 samples:
        # the heaviest stack is 5 of 101, as the library's text says.
        a = [frame(PROGRAM, "spin"), frame(PROGRAM, "main")]
        b = [frame(PROGRAM, "other"), frame(PROGRAM, "main")]
        r = record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, samples=5)
        r["stacks"].append({"samples": 2, "truncated": False, "stack": b})
        r["samples"] = 101
        grouping = grouped([r])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertIn("  heaviest stack: 5 of 101 samples (5%), innermost first:\n    spin\n    main\n"
                      "  the other 93% of the samples in lighter stacks, not kept\n", out.getvalue())

    def test_ties_go_to_the_record_s_first_stack(self) -> None:
        # The library lists a tie most recent first: its stacks[0] is the
        # heaviest stack, here as in its own text.
        a = [frame(PROGRAM, "alpha"), frame(PROGRAM, "main")]
        b = [frame(PROGRAM, "zeta"), frame(PROGRAM, "main")]
        r = record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, samples=3)
        r["stacks"].append({"samples": 3, "truncated": False, "stack": b})
        grouping = grouped([r])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertIn("  heaviest stack: 3 of 6 samples (50%), innermost first:\n    alpha\n", out.getvalue())

    def test_a_lag_and_its_hang_are_one_lag(self) -> None:
        stack = [frame(PROGRAM, "spin"), frame(PROGRAM, "main")]
        grouping = grouped([record(CAUSE_A, 2000.0, "2026-11-21T10:00:00.000Z", stack, event="hang",
                                   lag_id="7-1", thread_name="python3.11"),
                            record(CAUSE_A, 2500.0, "2026-11-21T10:00:00.000Z", stack, lag_id="7-1")])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertTrue(out.getvalue().startswith(
            "lagwatch-report: 1 lag (1 hang, 0 killed) in 1 cause, from 2 records in 1 input\n"), out.getvalue())
        self.assertIn("  in GSource \"timeout\": 1 lag (1 hang, 0 killed), total 2500.0 ms", out.getvalue())
        self.assertIn("  programs: editor (1)\n", out.getvalue())

    def test_a_chain_of_calls_too_short_to_time_is_one_line(self) -> None:
        def short(name: str, children: list[dict[str, Any]]) -> dict[str, Any]:
            return {"name": name, "start_ms": 20.0, "duration_ms": 12.0, "samples": 1, "short_calls": 1,
                    "children": children}

        calls = [{"name": "open_display", "start_ms": 0.0, "duration_ms": 300.0, "samples": 25,
                  "children": [short("XQueryExtension", [short("_XReply", [short("xcb_wait_for_reply64", [])])])]}]
        grouping = grouped([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", [frame(PROGRAM, "handler")],
                                   lag_id="7-1", calls=calls, calls_exact=False)])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertIn("    open_display  300.0 ms, from +0.0 ms\n"
                      "      XQueryExtension > _XReply > xcb_wait_for_reply64: 1 call too short to time, in all"
                      "  12.0 ms, from +20.0 ms\n", out.getvalue())

    def test_control_characters_are_escaped(self) -> None:
        self.assertEqual(terminal_safe("a\x1b[2J\nb\x9bc\x7f"), "a\\x1b[2J\\x0ab\\x9bc\\x7f")
        grouping = grouped([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z",
                                   [frame(PROGRAM, "evil\x1b]0;X\x07"), frame(PROGRAM, "main")])])
        out = output()
        write_text(out, grouping, grouping.ordered("total"), no_offline_names(), 12)
        self.assertNotIn("\x1b", out.getvalue())
        self.assertIn("evil\\x1b]0;X\\x07 \u2190 main", out.getvalue())


if __name__ == "__main__":
    unittest.main()
