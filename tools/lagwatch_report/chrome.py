"""Chrome's trace event format (Perfetto, chrome://tracing).

Each lag a complete event ("X") on its thread's track, named after its
cause; inside it, its call tree as nested complete events (each call
within its caller, in time order); and, where sampling began (the lag's
catch), one thread-scoped instant event ("i") per distinct stack the
record holds, the stack in its args, innermost frame first.
"""

import datetime
import json
from typing import Any, TextIO

from .grouping import NO_HOST, Cause, Grouping
from .lags import DetailedGrouping, LagDetail, Span, lag_where, spans
from .naming import cause_name
from .symbolizer import Names

Track = tuple[str, int | None, int | None]   # host, pid, tid
Event = dict[str, Any]


def epoch_us(when: str) -> int | None:
    try:
        moment = datetime.datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round(moment.timestamp() * 1_000_000)


def track_order(track: Track) -> tuple[str, ...]:
    return tuple(str(x) for x in track)


def call_events(span: Span, origin: int, pid: int, tid: int, lag_id: str | None, out: list[Event]) -> None:
    """SPAN and its callees as complete events; ORIGIN: the lag's start in
    µs. Rounding keeps the nesting: it never moves one end past another."""
    start = origin + round(span.start_ms * 1000)
    end = origin + round(span.end_ms * 1000)
    out.append({"name": span.name, "cat": "lagwatch,call", "ph": "X", "ts": start, "dur": end - start,
                "pid": pid, "tid": tid, "args": {"lag": lag_id, "duration_ms": round(span.end_ms - span.start_ms, 3)}})
    for child in span.children:
        call_events(child, origin, pid, tid, lag_id, out)


def stack_events(detail: LagDetail, at: int, pid: int, tid: int, names: Names) -> list[Event]:
    """The lag's stacks as instant events at AT, heaviest first."""
    events = []
    stacks = sorted(detail.stacks, key=lambda s: -s.samples)
    for n, stack in enumerate(stacks, 1):
        frames = [names.name(f.key) + (" (%s:%s)" % (f.file, f.line) if f.file else "") for f in stack.frames]
        if stack.truncated:
            frames.append("[truncated stack]")
        arguments: dict[str, Any] = {"lag": detail.lag.lag_id, "samples": stack.samples, "stack": frames}
        if detail.interval_ms is not None:
            arguments["ms"] = round(stack.samples * detail.interval_ms, 3)
        events.append({"name": "stack %d of %d: %d samples" % (n, len(stacks), stack.samples),
                       "cat": "lagwatch,stack", "ph": "i", "s": "t", "ts": at, "pid": pid, "tid": tid,
                       "args": arguments})
    return events


def write_chrome(out: TextIO, grouping: Grouping, causes: list[Cause], names: Names) -> None:
    """The lags of CAUSES (GROUPING a DetailedGrouping). Lags of one thread
    never overlap, but their start times are rounded to the millisecond and
    the wall clock can step: a lag that would start inside the previous one
    on its track starts where that one ends, so the events of a track
    never partly overlap."""
    assert isinstance(grouping, DetailedGrouping), "DetailedGrouping()"
    labels = {c.fingerprint: cause_name(c, names) for c in grouping.causes.values()}
    tracks: dict[Track, list[tuple[int, LagDetail]]] = {}
    for detail in grouping.lags_shown({c.fingerprint for c in causes}):
        lag = detail.lag
        start = epoch_us(lag.when)
        if start is not None:
            tracks.setdefault((lag.host, lag.pid, lag.tid), []).append((start, detail))
    # Processes of several hosts can share a pid: each (host, pid) its own.
    # Trace viewers add the pid to a process's name, the tid to a thread's.
    process_ids: dict[tuple[str, int | None], int] = {}
    used: set[int] = set()
    events: list[Event] = []
    for (host, pid, tid) in sorted(tracks, key=track_order):
        if (host, pid) not in process_ids:
            number = pid if isinstance(pid, int) and pid not in used else max(used | {0}) + 1
            used.add(number)
            process_ids[(host, pid)] = number
            program = tracks[(host, pid, tid)][0][1].lag.program
            events.append({"ph": "M", "name": "process_name", "pid": number, "tid": 0,
                           "args": {"name": program + ("" if host == NO_HOST else " on " + host)}})
    for (host, pid, tid), lags in sorted(tracks.items(), key=lambda kv: track_order(kv[0])):
        number = process_ids[(host, pid)]
        thread = tid if isinstance(tid, int) else 0
        events.append({"ph": "M", "name": "thread_name", "pid": number, "tid": thread,
                       "args": {"name": lags[0][1].lag.thread_name}})
        lags.sort(key=lambda sl: (sl[0], -sl[1].lag.duration_ms))
        track_end = None
        for origin, detail in lags:
            lag = detail.lag
            start = origin
            end = start + round(lag.duration_ms * 1000)
            moved = 0
            if track_end is not None and start < track_end:
                moved = track_end - start
                start = track_end
                end = max(end, start)
            track_end = end
            source = lag.source if isinstance(lag.source, str) and lag.source else detail.callback
            arguments = {"id": lag.lag_id, "fingerprint": lag.fingerprint, "duration_ms": lag.duration_ms,
                         "source": source, "callback": detail.callback, "where": lag_where(detail),
                         "phase": lag.phase, "kind": lag.kind, "program": lag.program}
            if detail.calls:
                arguments["calls"] = "exact (traced)" if detail.calls_exact else "from the samples"
            if moved:
                arguments["start_moved_us"] = moved
            events.append({"name": labels.get(lag.fingerprint, "?"), "cat": "lagwatch," + lag.kind, "ph": "X",
                           "ts": start, "dur": end - start, "pid": number, "tid": thread, "args": arguments})
            for span in spans(detail.calls, (start - origin) / 1000, (end - origin) / 1000):
                call_events(span, origin, number, thread, lag.lag_id, events)
            caught = origin + round((detail.caught_ms or 0.0) * 1000)
            events.extend(stack_events(detail, min(max(caught, start), end), number, thread, names))
    json.dump({"traceEvents": events, "displayTimeUnit": "ms",
               "otherData": {"generator": "lagwatch-report"}}, out, separators=(",", ":"))
    out.write("\n")
