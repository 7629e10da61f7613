"""lagwatch_report.chrome: Chrome's trace event format."""

import json
import unittest
from typing import Any

from lagwatch_report.chrome import write_chrome
from records import CAUSE_A, CAUSE_B, cause_stack, grouped, known_records, no_offline_names, output, record


def trace(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    grouping = grouped(records, keep_timeline=True)
    out = output()
    write_chrome(out, grouping, grouping.ordered("total"), no_offline_names())
    events: list[dict[str, Any]] = json.loads(out.getvalue())["traceEvents"]
    return events


class ChromeTest(unittest.TestCase):
    def test_one_complete_event_per_lag_on_its_thread(self) -> None:
        events = trace(known_records())
        lags = [e for e in events if e["ph"] == "X"]
        self.assertEqual(sorted((e["pid"], e["tid"], e["ts"], e["dur"]) for e in lags),
                         [(100, 100, 1795255201000000, 100000), (100, 100, 1795255203000000, 300000),
                          (100, 100, 1795255205000000, 1000000), (200, 200, 1795262400000000, 200000)])
        self.assertEqual({e["args"]["fingerprint"] for e in lags}, {CAUSE_A, CAUSE_B})
        names = {(e["name"], e["pid"]): e["args"]["name"] for e in events if e["ph"] == "M"}
        self.assertEqual(names[("process_name", 100)], "editor (pid 100)")
        self.assertEqual(names[("thread_name", 200)], "editor (200)")

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


if __name__ == "__main__":
    unittest.main()
