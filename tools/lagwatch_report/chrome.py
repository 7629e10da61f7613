"""Chrome's trace event format (Perfetto, chrome://tracing): each lag a
complete event on its thread's track."""

import datetime
import json
from typing import Any, NamedTuple, TextIO

from .grouping import NO_HOST, Cause, Grouping
from .naming import cause_name
from .symbolizer import Names


class TrackLag(NamedTuple):
    start_us: int
    duration_us: int
    fingerprint: str | None
    lag_id: str | None
    kind: str
    source: Any
    phase: Any
    thread_name: str
    program: str


Track = tuple[str, int | None, int | None]   # host, pid, tid


def epoch_us(when: str) -> int | None:
    try:
        moment = datetime.datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round(moment.timestamp() * 1_000_000)


def track_order(track: Track) -> tuple[str, ...]:
    return tuple(str(x) for x in track)


def write_chrome(out: TextIO, grouping: Grouping, causes: list[Cause], names: Names) -> None:
    """The lags of CAUSES from GROUPING's timeline. Lags of one thread never
    overlap, but their start times are rounded to the millisecond and the
    wall clock can step: a lag that would start inside the previous one on
    its track starts where that one ends, so the events of a track never
    partly overlap."""
    assert grouping.timeline is not None, "Grouping(keep_timeline=True)"
    labels = {c.fingerprint: cause_name(c, names) for c in grouping.causes.values()}
    chosen = {c.fingerprint for c in causes}
    # A hang that ended is its lag; one whose process was killed is its
    # hang-killed record: the hang record alone only for a hang neither followed.
    covered = {(e.host, e.pid, e.lag_id) for e in grouping.timeline if e.kind != "hang" and e.lag_id is not None}
    tracks: dict[Track, list[TrackLag]] = {}
    for e in grouping.timeline:
        if e.fingerprint not in chosen or (e.kind == "hang" and (e.host, e.pid, e.lag_id) in covered):
            continue
        start = epoch_us(e.when)
        if start is None:
            continue
        tracks.setdefault((e.host, e.pid, e.tid), []).append(
            TrackLag(start, round(e.duration_ms * 1000), e.fingerprint, e.lag_id, e.kind, e.source, e.phase,
                     e.thread_name, e.program))
    # Processes of several hosts can share a pid: each (host, pid) its own.
    process_ids: dict[tuple[str, int | None], int] = {}
    used: set[int] = set()
    events: list[dict[str, Any]] = []
    for (host, pid, tid) in sorted(tracks, key=track_order):
        if (host, pid) not in process_ids:
            number = pid if isinstance(pid, int) and pid not in used else max(used | {0}) + 1
            used.add(number)
            process_ids[(host, pid)] = number
            program = tracks[(host, pid, tid)][0].program
            events.append({"ph": "M", "name": "process_name", "pid": number, "tid": 0,
                           "args": {"name": "%s (pid %s%s)" % (program, pid,
                                                                "" if host == NO_HOST else " on " + host)}})
    for (host, pid, tid), lags in sorted(tracks.items(), key=lambda kv: track_order(kv[0])):
        number = process_ids[(host, pid)]
        thread = tid if isinstance(tid, int) else 0
        events.append({"ph": "M", "name": "thread_name", "pid": number, "tid": thread,
                       "args": {"name": "%s (%s)" % (lags[0].thread_name, tid)}})
        lags.sort(key=lambda lag: (lag.start_us, -lag.duration_us))
        track_end = None
        for lag in lags:
            start = lag.start_us
            end = start + lag.duration_us
            moved = 0
            if track_end is not None and start < track_end:
                moved = track_end - start
                start = track_end
                end = max(end, start)
            track_end = end
            arguments = {"id": lag.lag_id, "fingerprint": lag.fingerprint, "duration_ms": lag.duration_us / 1000,
                         "source": lag.source, "phase": lag.phase, "kind": lag.kind}
            if moved:
                arguments["start_moved_us"] = moved
            events.append({"name": labels.get(lag.fingerprint, "?"), "cat": "lagwatch," + lag.kind, "ph": "X",
                           "ts": start, "dur": end - start, "pid": number, "tid": thread, "args": arguments})
    json.dump({"traceEvents": events, "displayTimeUnit": "ms",
               "otherData": {"generator": "lagwatch-report"}}, out, separators=(",", ":"))
    out.write("\n")
