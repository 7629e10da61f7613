"""speedscope's file format (https://www.speedscope.app/file-format-schema.json).

Per cause, a sampled profile of all its lags' stacks (the flame graph of
where its time goes); after it, one profile per lag of the cause, in time
order (speedscope's "Time Order" view shows when each call ran).

A lag's own profile is "evented", from the record's call tree (`calls`):
a record has no sample timeline (its samples are grouped into at most 5
distinct stacks, their order lost), and the call tree is the library's
reading of that timeline, in order, with each call's start and duration.
A lag whose record has no call tree gets a sampled profile of its stacks.

Weights are milliseconds: a sample weighs its lag's sampling interval
(lags.sampling_interval()), so a cause's long lags, sampled at a doubled
interval, weigh what they lasted. Frames carry the file and line of the
function where most of its samples were (lags.DetailedGrouping.place()).
"""

import json
from typing import Any, TextIO

from .grouping import Cause, FrameKey, Grouping, Stack
from .lags import DetailedGrouping, LagDetail, Span, lag_title, spans
from .naming import OTHER_STACKS, cause_name, format_ms
from .symbolizer import Names

Profile = dict[str, Any]


def ms(value: float) -> float:
    """A time in ms as written: to the microsecond."""
    return round(value, 3)


class Frames:
    """speedscope's shared frames: one per display name and place."""

    def __init__(self, grouping: DetailedGrouping, names: Names) -> None:
        self.grouping = grouping
        self.names = names
        self.frames: list[dict[str, Any]] = []
        self.index: dict[tuple[str, str | None, int | None], int] = {}
        self.by_name: dict[str, int] = {}

    def add(self, name: str, file: str | None, line: int | None) -> int:
        found = self.index.get((name, file, line))
        if found is not None:
            return found
        i = self.index[(name, file, line)] = len(self.frames)
        frame: dict[str, Any] = {"name": name}
        if file is not None:
            frame["file"] = file
            if line is not None:
                frame["line"] = line
        self.frames.append(frame)
        return i

    def of_key(self, key: FrameKey) -> int:
        name = self.names.name(key)
        i = self.add(name, *self.grouping.place(key))
        self.by_name.setdefault(name, i)
        return i

    def of_call(self, name: str, detail: LagDetail) -> int:
        """A call's frame: the frame of that name in the lag's stacks (a call
        is a function its samples saw), else in any stack, else the name."""
        for stack in detail.stacks:
            for frame in stack.frames:
                if self.names.name(frame.key) == name:
                    return self.of_key(frame.key)
        found = self.by_name.get(name)
        return found if found is not None else self.add(name, None, None)


def cause_profile(cause: Cause, grouping: DetailedGrouping, frames: Frames, names: Names) -> Profile:
    """All the cause's samples, each weighing its lag's interval."""
    times = grouping.stack_ms.get(cause.fingerprint, {})
    merged: dict[tuple[int, ...], float] = {}
    stack: Stack
    for stack in cause.stacks:
        path = tuple(frames.of_key(k) for k in reversed(stack))
        merged[path] = merged.get(path, 0.0) + times.get(stack, 0.0)
    other = grouping.other_ms.get(cause.fingerprint, 0.0)
    if other:
        path = (frames.add(OTHER_STACKS, None, None),)
        merged[path] = merged.get(path, 0.0) + other
    rows = sorted(((path, ms(weight)) for path, weight in merged.items()), key=lambda kv: (-kv[1], kv[0]))
    return {"type": "sampled",
            "name": "%s [%s]: %d lags, %s" % (cause_name(cause, names), cause.fingerprint or "-", cause.count(),
                                              format_ms(cause.total_ms)),
            "unit": "milliseconds", "startValue": 0, "endValue": ms(sum(w for _, w in rows)),
            "samples": [list(path) for path, _ in rows], "weights": [w for _, w in rows]}


def lag_profile(detail: LagDetail, frames: Frames) -> Profile | None:
    """The lag in time order from its call tree, else its stacks; None when
    the record has neither."""
    laid_out = spans(detail.calls, 0.0, detail.lag.duration_ms)
    if laid_out:
        events: list[dict[str, Any]] = []

        def emit(span: Span) -> None:
            frame = frames.of_call(span.name, detail)
            events.append({"type": "O", "frame": frame, "at": ms(span.start_ms)})
            for child in span.children:
                emit(child)
            events.append({"type": "C", "frame": frame, "at": ms(span.end_ms)})

        for span in laid_out:
            emit(span)
        return {"type": "evented", "name": lag_title(detail), "unit": "milliseconds",
                "startValue": 0, "endValue": ms(detail.lag.duration_ms), "events": events}
    if not detail.stacks:
        return None
    interval = detail.interval_ms or 0.0
    samples = [[frames.of_key(f.key) for f in reversed(s.frames)] for s in detail.stacks]
    weights = [ms(s.samples * interval) for s in detail.stacks]
    return {"type": "sampled", "name": lag_title(detail) + " (its stacks, not in time order: no call tree)",
            "unit": "milliseconds", "startValue": 0, "endValue": ms(sum(weights)),
            "samples": samples, "weights": weights}


def write_speedscope(out: TextIO, grouping: Grouping, causes: list[Cause], names: Names) -> None:
    """Per cause in CAUSES, its profile, then each of its lags' (GROUPING
    a DetailedGrouping)."""
    assert isinstance(grouping, DetailedGrouping), "DetailedGrouping()"
    frames = Frames(grouping, names)
    per_cause: dict[str | None, list[LagDetail]] = {}
    for detail in grouping.lags_shown({c.fingerprint for c in causes}):
        per_cause.setdefault(detail.lag.fingerprint, []).append(detail)
    profiles: list[Profile] = []
    for cause in causes:
        profiles.append(cause_profile(cause, grouping, frames, names))
        for detail in per_cause.get(cause.fingerprint, []):
            profile = lag_profile(detail, frames)
            if profile is not None:
                profiles.append(profile)
    json.dump({"$schema": "https://www.speedscope.app/file-format-schema.json",
               "shared": {"frames": frames.frames}, "profiles": profiles,
               "name": "lagwatch-report", "activeProfileIndex": 0, "exporter": "lagwatch-report"},
              out, separators=(",", ":"))
    out.write("\n")
