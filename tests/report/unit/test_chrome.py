"""lagwatch_report.chrome: Chrome's trace event format."""

import json
import unittest
from typing import Any

from lagwatch_report.chrome import write_chrome
from lagwatch_report.lags import DetailedGrouping
from records import CAUSE_A, CAUSE_B, cause_stack, known_records, no_offline_names, output, record

Event = dict[str, Any]


def trace(records: list[dict[str, Any]]) -> list[Event]:
    grouping = DetailedGrouping()
    grouping.files = 1
    for r in records:
        grouping.add_record(r, None, None)
    out = output()
    write_chrome(out, grouping, grouping.ordered("total"), no_offline_names())
    document = json.loads(out.getvalue())
    events: list[Event] = document["traceEvents"]
    check_trace_events(events)
    return events


def check_trace_events(events: list[Event]) -> dict[tuple[int, int], list[tuple[float, float, str]]]:
    """The Trace Event Format's shapes: every event a ph, pid and tid; B, E,
    X and i a ts (µs, a number); X a dur >= 0; M a name and args.name;
    B/E balanced and properly nested per thread, X events too (each within
    the one it starts in). AssertionError otherwise; the slices per
    (pid, tid) as (start, end, name)."""
    slices: dict[tuple[int, int], list[tuple[float, float, str]]] = {}
    open_begins: dict[tuple[int, int], list[tuple[float, str]]] = {}
    for e in events:
        ph = e.get("ph")
        assert ph in ("B", "E", "X", "i", "I", "M"), "unknown ph: %r" % e
        assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), "pid, tid: %r" % e
        track = (e["pid"], e["tid"])
        if ph == "M":
            assert e.get("name") in ("process_name", "thread_name") and isinstance(e["args"]["name"], str), e
            continue
        assert isinstance(e.get("ts"), (int, float)) and not isinstance(e["ts"], bool), "ts: %r" % e
        if ph == "X":
            assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, "dur: %r" % e
            assert isinstance(e.get("name"), str) and e["name"], "name: %r" % e
            slices.setdefault(track, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif ph == "B":
            open_begins.setdefault(track, []).append((e["ts"], e["name"]))
        elif ph == "E":
            assert open_begins.get(track), "E without its B: %r" % e
            start, name = open_begins[track].pop()
            assert e["ts"] >= start, "E before its B: %r" % e
            slices.setdefault(track, []).append((start, e["ts"], name))
        elif ph in ("i", "I"):
            assert e.get("s", "t") in ("g", "p", "t"), "instant scope: %r" % e
    assert not any(open_begins.values()), "B without its E: %r" % open_begins
    for track, spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack: list[tuple[float, float, str]] = []
        for span in spans:
            while stack and stack[-1][1] <= span[0]:
                stack.pop()
            assert not stack or span[1] <= stack[-1][1], \
                "track %r: %r partly overlaps %r" % (track, span, stack[-1])
            stack.append(span)
    return slices


CALLS = [{"name": "render_handler", "start_ms": 0.0, "duration_ms": 1000.0, "children": [
    {"name": "render_middle", "start_ms": 100.0, "duration_ms": 400.0, "children": [
        {"name": "render_leaf", "start_ms": 120.0, "duration_ms": 300.0, "children": []}]},
    {"name": "render_middle", "start_ms": 500.0, "duration_ms": 480.0, "children": []}]}]


class ChromeTest(unittest.TestCase):
    def test_one_complete_event_per_lag_on_its_thread(self) -> None:
        events = trace(known_records())
        lags = [e for e in events if e["ph"] == "X" and e["cat"] == "lagwatch,lag"]
        self.assertEqual(sorted((e["pid"], e["tid"], e["ts"], e["dur"]) for e in lags),
                         [(100, 100, 1795255201000000, 100000), (100, 100, 1795255203000000, 300000),
                          (100, 100, 1795255205000000, 1000000), (200, 200, 1795262400000000, 200000)])
        self.assertEqual({e["args"]["fingerprint"] for e in lags}, {CAUSE_A, CAUSE_B})

    def test_process_and_thread_names_without_their_ids(self) -> None:
        """Viewers add the pid to a process's name, the tid to a thread's."""
        events = trace(known_records())
        names = {(e["name"], e["pid"]): e["args"]["name"] for e in events if e["ph"] == "M"}
        self.assertEqual(names[("process_name", 100)], "editor")
        self.assertEqual(names[("thread_name", 200)], "editor")

    def test_calls_nested_in_their_lag(self) -> None:
        b = cause_stack("render")
        events = trace([record(CAUSE_B, 1000.0, "2026-11-21T10:00:05.000Z", b, lag_id="100-2",
                               calls=CALLS, calls_exact=False)])
        start = 1795255205000000
        slices = [(e["name"], e["ts"] - start, e["dur"]) for e in events if e["ph"] == "X"]
        self.assertEqual(slices, [("render_leaf \u2190 render_middle (render.c:20)", 0, 1000000),
                                  ("render_handler", 0, 1000000), ("render_middle", 100000, 400000),
                                  ("render_leaf", 120000, 300000), ("render_middle", 500000, 480000)])
        self.assertEqual({e["args"].get("lag") for e in events if e.get("cat") == "lagwatch,call"}, {"100-2"})
        self.assertEqual(events[2]["args"]["calls"], "from the samples")

    def test_calls_of_a_moved_lag_stay_inside_it(self) -> None:
        a = cause_stack("save")
        calls = [{"name": "save_handler", "start_ms": 0.0, "duration_ms": 300.0, "children": []}]
        events = trace([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, lag_id="100-1"),
                        record(CAUSE_A, 300.0, "2026-11-21T10:00:00.100Z", a, lag_id="100-2",
                               calls=calls, calls_exact=True)])
        second = [e for e in events if e["ph"] == "X" and e["args"].get("id") == "100-2"][0]
        self.assertEqual((second["ts"], second["dur"], second["args"]["start_moved_us"]),
                         (1795255200300000, 100000, 200000))
        handler = [e for e in events if e["name"] == "save_handler"][0]
        self.assertEqual((handler["ts"], handler["dur"]), (1795255200300000, 100000))

    def test_source_is_the_callback_of_an_unnamed_source(self) -> None:
        a = cause_stack("save")
        events = trace([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, source=None,
                               source_callback="on_save_timeout", source_callback_kind="timeout"),
                        record(CAUSE_A, 300.0, "2026-11-21T11:00:00.000Z", a, lag_id="100-2",
                               source_callback="on_idle", source_callback_kind="idle")])
        lags = [e["args"] for e in events if e["ph"] == "X"]
        self.assertEqual([(a["source"], a["callback"], a["where"]) for a in lags],
                         [("on_save_timeout", "on_save_timeout", "callback on_save_timeout (unnamed GSource)"),
                          ("timeout", "on_idle", 'GSource "timeout", callback on_idle')])

    def test_stacks_as_instant_events_where_sampling_began(self) -> None:
        a = cause_stack("save")
        other = cause_stack("save")[1:]
        events = trace([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, caught_ms=100.0,
                               stacks=[{"samples": 15, "truncated": False, "stack": a},
                                       {"samples": 5, "truncated": True, "stack": other}], samples=20)])
        instants = [e for e in events if e["ph"] == "i"]
        self.assertEqual([(e["name"], e["s"], e["ts"] - 1795255200000000) for e in instants],
                         [("stack 1 of 2: 15 samples", "t", 100000), ("stack 2 of 2: 5 samples", "t", 100000)])
        # 20 samples over the 200 ms after the catch: 10 ms each.
        self.assertEqual([(e["args"]["samples"], e["args"]["ms"]) for e in instants], [(15, 150.0), (5, 50.0)])
        self.assertEqual(instants[0]["args"]["stack"][:3],
                         ["clock_nanosleep", "save_leaf (save.c:20)", "save_middle (save.c:30)"])
        self.assertEqual(instants[1]["args"]["stack"][-1], "[truncated stack]")

    def test_overlapping_lags_are_moved_not_overlapped(self) -> None:
        a = cause_stack("save")
        events = trace([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z", a, lag_id="100-1"),
                        record(CAUSE_A, 300.0, "2026-11-21T10:00:00.100Z", a, lag_id="100-2")])
        second = [e for e in events if e["ph"] == "X" and e["args"]["id"] == "100-2"][0]
        self.assertEqual((second["ts"], second["dur"], second["args"]["start_moved_us"]),
                         (1795255200300000, 100000, 200000))

    def test_a_hang_that_ended_is_its_lag(self) -> None:
        a = cause_stack("save")
        events = trace([record(CAUSE_A, 5000.0, "2026-11-21T10:00:00.000Z", a, event="hang", lag_id="100-1"),
                        record(CAUSE_A, 6000.0, "2026-11-21T10:00:00.000Z", a, lag_id="100-1"),
                        record(CAUSE_A, 5000.0, "2026-11-21T11:00:00.000Z", a, event="hang", lag_id="100-2")])
        self.assertEqual(sorted((e["args"]["id"], e["args"]["kind"]) for e in events if e["ph"] == "X"),
                         [("100-1", "lag"), ("100-2", "hang")])


class CheckerTest(unittest.TestCase):
    """The checker itself catches what it is there for."""

    def test_partial_overlap_and_unbalanced_begin(self) -> None:
        with self.assertRaises(AssertionError):
            check_trace_events([{"ph": "X", "name": "a", "ts": 0, "dur": 10, "pid": 1, "tid": 1},
                                {"ph": "X", "name": "b", "ts": 5, "dur": 10, "pid": 1, "tid": 1}])
        with self.assertRaises(AssertionError):
            check_trace_events([{"ph": "B", "name": "a", "ts": 0, "pid": 1, "tid": 1}])
        self.assertEqual(check_trace_events([{"ph": "B", "name": "a", "ts": 0, "pid": 1, "tid": 1},
                                             {"ph": "E", "ts": 4, "pid": 1, "tid": 1},
                                             {"ph": "X", "name": "b", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]),
                         {(1, 1): [(0, 4, "a"), (1, 3, "b")]})


if __name__ == "__main__":
    unittest.main()
