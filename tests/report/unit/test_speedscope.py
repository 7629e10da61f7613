"""lagwatch_report.speedscope: speedscope's file format."""

import json
import unittest
from typing import Any

from lagwatch_report.grouping import Call
from lagwatch_report.lags import DetailedGrouping, Span, sampling_interval, spans
from lagwatch_report.speedscope import write_speedscope
from records import CAUSE_A, CAUSE_B, PROGRAM, cause_stack, frame, known_records, no_offline_names, output, record


def call(name: str, start: float, duration: float, *children: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return dict({"name": name, "start_ms": start, "duration_ms": duration, "children": list(children)}, **extra)


# A lag's call tree from samples: render_handler calls render_middle twice,
# the first calling render_leaf.
CALLS = [call("render_handler", 0.0, 1000.0,
              call("render_middle", 100.0, 400.0, call("render_leaf", 120.0, 300.0)),
              call("render_middle", 500.0, 480.0))]


def export(records: list[dict[str, Any]]) -> dict[str, Any]:
    grouping = DetailedGrouping()
    grouping.files = 1
    for r in records:
        grouping.add_record(r, None, None)
    out = output()
    write_speedscope(out, grouping, grouping.ordered("total"), no_offline_names())
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def frame_names(document: dict[str, Any], indices: list[int]) -> list[str]:
    return [document["shared"]["frames"][i]["name"] for i in indices]


class SpeedscopeTest(unittest.TestCase):
    def test_merged_profiles_in_milliseconds(self) -> None:
        document = export(known_records())
        self.assertEqual(document["$schema"], "https://www.speedscope.app/file-format-schema.json")
        frames = document["shared"]["frames"]
        # Frames are shared: main, GLib's dispatch and libc's leaf once each.
        self.assertEqual([f["name"] for f in frames].count("clock_nanosleep"), 1)
        profiles = document["profiles"]
        merged = [p for p in profiles if "[" in p["name"]]
        self.assertEqual([p["name"] for p in merged],
                         ["render_leaf \u2190 render_middle (render.c:20) [bbbbbbbbbbbbbbbb]: 1 lags, 1000.0 ms",
                          "save_leaf \u2190 save_middle (save.c:20) [aaaaaaaaaaaaaaaa]: 3 lags, 600.0 ms"])
        save = merged[1]
        # 10 samples per lag, no catch time: each weighs a tenth of its lag.
        self.assertEqual((save["type"], save["unit"], save["startValue"], save["endValue"]),
                         ("sampled", "milliseconds", 0, 600.0))
        self.assertEqual(save["weights"], [600.0])
        self.assertEqual(frame_names(document, save["samples"][0]),
                         ["main", "g_main_context_dispatch", "save_handler", "save_middle", "save_leaf",
                          "clock_nanosleep"])

    def test_frames_carry_file_and_line(self) -> None:
        frames = export(known_records())["shared"]["frames"]
        by_name = {f["name"]: f for f in frames}
        self.assertEqual(by_name["save_leaf"], {"name": "save_leaf", "file": "save.c", "line": 20})
        self.assertEqual(by_name["main"], {"name": "main", "file": "main.c", "line": 85})
        # None where the record has none.
        self.assertEqual(by_name["clock_nanosleep"], {"name": "clock_nanosleep"})

    def test_a_frame_at_its_hottest_line(self) -> None:
        """The library names places in the heaviest stack only; a function
        seen at several lines takes the one with the most samples."""
        at_20 = cause_stack("save")
        at_25 = cause_stack("save")
        at_25[1] = frame(PROGRAM, "save_leaf", 0x1310, file="save.c", line=25)
        records = [record(CAUSE_A, 100.0, "2026-11-21T10:00:00.000Z", at_20, lag_id="1-1", samples=3),
                   record(CAUSE_A, 100.0, "2026-11-21T10:00:01.000Z", at_25, lag_id="1-2", samples=8)]
        by_name = {f["name"]: f for f in export(records)["shared"]["frames"]}
        self.assertEqual(by_name["save_leaf"]["line"], 25)

    def test_a_sample_weighs_its_lags_interval(self) -> None:
        """A long lag's samples are further apart (the interval doubles past
        256 samples): its samples weigh more."""
        a = cause_stack("save")
        records = [record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, lag_id="1-1", samples=20, caught_ms=100.0),
                   record(CAUSE_A, 2100.0, "2026-11-21T10:00:05.000Z", a, lag_id="1-2", samples=40, caught_ms=100.0)]
        merged = export(records)["profiles"][0]
        self.assertEqual(merged["weights"], [20 * 10.0 + 40 * 50.0])

    def test_interval_stated_by_the_call_trees_summaries(self) -> None:
        summary = call("h_light", 10.0, 36.0, samples=3, short_calls=3)
        lag = record(CAUSE_A, 500.0, "2026-11-21T10:00:00.000Z", cause_stack("save"), samples=30, caught_ms=100.0,
                     calls=[call("save_handler", 0.0, 500.0, summary)], calls_exact=False)
        self.assertEqual(sampling_interval(lag, 500.0), 12.0)
        del lag["calls"]
        self.assertAlmostEqual(sampling_interval(lag, 500.0) or 0.0, 400.0 / 30)
        self.assertIsNone(sampling_interval(dict(lag, samples=0, stacks=[], stack=[]), 500.0))

    def test_one_evented_profile_per_lag_from_its_calls(self) -> None:
        b = cause_stack("render")
        lag = record(CAUSE_B, 1000.0, "2026-11-21T10:00:05.000Z", b, lag_id="100-2", calls=CALLS, calls_exact=False)
        document = export([lag])
        profiles = document["profiles"]
        self.assertEqual(len(profiles), 2)
        profile = profiles[1]
        self.assertEqual(profile["name"], 'editor: 1000.0 ms lag in GSource "timeout", 2026-11-21 10:00:05.000 '
                                          "(id 100-2)")
        self.assertEqual((profile["type"], profile["unit"], profile["startValue"], profile["endValue"]),
                         ("evented", "milliseconds", 0, 1000.0))
        events = [(e["type"], document["shared"]["frames"][e["frame"]]["name"], e["at"]) for e in profile["events"]]
        self.assertEqual(events, [("O", "render_handler", 0.0), ("O", "render_middle", 100.0),
                                  ("O", "render_leaf", 120.0), ("C", "render_leaf", 420.0),
                                  ("C", "render_middle", 500.0), ("O", "render_middle", 500.0),
                                  ("C", "render_middle", 980.0), ("C", "render_handler", 1000.0)])
        # A call's frame is the frame of its function, file and line too.
        leaf = document["shared"]["frames"][profile["events"][2]["frame"]]
        self.assertEqual(leaf, {"name": "render_leaf", "file": "render.c", "line": 20})

    def test_lag_names_its_callback_and_program(self) -> None:
        lag = record(CAUSE_A, 250.5, "2026-11-21T10:00:00.000Z", cause_stack("save"), source=None,
                     source_callback="on_save_timeout", source_callback_kind="timeout", exe="/usr/bin/notes",
                     calls=[call("save_handler", 110.0, 140.5)], calls_exact=False)
        names = [p["name"] for p in export([lag])["profiles"]]
        self.assertEqual(names[1], "notes: 250.5 ms lag in callback on_save_timeout (unnamed GSource), "
                                   "2026-11-21 10:00:00.000 (id 100-1)")

    def test_lag_without_calls_has_its_stacks(self) -> None:
        profiles = export(known_records())["profiles"]
        self.assertEqual([p["name"].split(" in ")[0] for p in profiles],
                         ["render_leaf \u2190 render_middle (render.c:20) [bbbbbbbbbbbbbbbb]: 1 lags, 1000.0 ms",
                          "editor: 1000.0 ms lag",
                          "save_leaf \u2190 save_middle (save.c:20) [aaaaaaaaaaaaaaaa]: 3 lags, 600.0 ms",
                          "editor: 100.0 ms lag", "editor: 300.0 ms lag", "editor: 200.0 ms lag"])
        lag = profiles[1]
        self.assertTrue(lag["name"].endswith("(its stacks, not in time order: no call tree)"))
        self.assertEqual((lag["type"], lag["weights"]), ("sampled", [1000.0]))

    def test_a_hang_that_ended_is_its_lag(self) -> None:
        a = cause_stack("save")
        profiles = export([record(CAUSE_A, 5000.0, "2026-11-21T10:00:00.000Z", a, event="hang", lag_id="100-1"),
                           record(CAUSE_A, 6000.0, "2026-11-21T10:00:00.000Z", a, lag_id="100-1")])["profiles"]
        self.assertEqual([p["name"].split(" in ")[0] for p in profiles[1:]], ["editor: 6000.0 ms lag"])

    def test_a_killed_hang_weighs_its_samples(self) -> None:
        a = cause_stack("save")
        hang = record(CAUSE_A, 2000.0, "2026-11-21T10:00:00.000Z", a, event="hang", samples=20, caught_ms=100.0)
        merged = export([{"event": "hang-killed", "previous_pid": 100, "hang": hang}])["profiles"][0]
        self.assertEqual(merged["weights"], [1900.0])

    def test_a_hang_with_malformed_stacks(self) -> None:
        """Grouping does not read a hang record's samples: malformed ones
        leave the hang without stacks, not the export without an answer."""
        hang = record(CAUSE_A, 2000.0, "2026-11-21T10:00:00.000Z", cause_stack("save"), event="hang",
                      stacks=[{"samples": 1, "stack": None}, 5])
        profiles = export([hang])["profiles"]
        self.assertEqual(len(profiles), 1)


class SpansTest(unittest.TestCase):
    def test_summary_cut_where_the_next_call_begins(self) -> None:
        """A summary of calls too short to time sits at its first call with
        their total time: cut where the timed call after it begins."""
        calls = [Call("h: 3 calls too short to time, in all", 10.0, 40.0, []), Call("g", 20.0, 30.0, [])]
        self.assertEqual(spans(calls, 0.0, 100.0),
                         [Span("h: 3 calls too short to time, in all", 10.0, 20.0, []), Span("g", 20.0, 50.0, [])])

    def test_calls_within_their_caller_and_the_lag(self) -> None:
        calls = [Call("f", 0.0, 120.0, [Call("g", 90.0, 50.0, []), Call("empty", 120.0, 0.0, [])])]
        self.assertEqual(spans(calls, 5.0, 100.0), [Span("f", 5.0, 100.0, [Span("g", 90.0, 100.0, [])])])


if __name__ == "__main__":
    unittest.main()
