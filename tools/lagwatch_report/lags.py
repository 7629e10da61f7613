"""What the speedscope and chrome exports need beyond the causes: each lag's
call tree, stacks and sampling interval, the file:line of every frame, and
each cause's stacks weighed in milliseconds.

Memory: per lag its call tree (at most grouping.MAX_CALLS_KEPT calls) and
its stacks (at most 5 in a record): the exports write each lag, so this is
the output's own size. Per cause, one number per stack Grouping keeps.
"""

from typing import Any, NamedTuple

from .grouping import (TRUNCATED, Call, FrameKey, Grouping, Json, Stack, TimelineLag, frame_key, marker_key,
                       read_calls)
from .naming import format_ms, short_time

Place = tuple[str | None, int | None]   # a frame's file and line, as the record has them
MAX_PLACED_FRAMES = 100_000             # frames whose places are counted; later ones have none


class PlacedFrame(NamedTuple):
    """One frame of a lag's stack: its key, file and line."""

    key: FrameKey
    file: str | None
    line: int | None


class LagStack(NamedTuple):
    """One of a lag's distinct stacks, innermost frame first."""

    samples: int
    frames: tuple[PlacedFrame, ...]
    truncated: bool


class LagDetail(NamedTuple):
    """One lag as the per-lag exports show it."""

    lag: TimelineLag
    callback: str | None        # the GSource's callback, as the record names it
    calls: list[Call]           # its call tree, [] when the record has none
    calls_exact: bool
    interval_ms: float | None   # what one sample weighs (sampling_interval())
    caught_ms: float | None     # when the watcher caught it and sampling began, from its start
    stacks: list[LagStack]


def number(value: Any) -> float | None:
    """VALUE when it is a JSON number (not a boolean), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def summary_samples(calls: Any) -> tuple[float, int]:
    """The total duration and samples of the summaries in a record's `calls`
    (calls too short to time: a summary's duration is its samples times the
    sampling interval)."""
    duration, samples = 0.0, 0
    stack = [calls]
    while stack:
        level = stack.pop()
        if not isinstance(level, list):
            continue
        for call in level:
            if not isinstance(call, dict):
                continue
            count, ms = number(call.get("samples")), number(call.get("duration_ms"))
            if call.get("short_calls") and count is not None and count > 0 and ms is not None:
                duration += ms
                samples += int(count)
            stack.append(call.get("children"))
    return duration, samples


def sampling_interval(record: Json, duration_ms: float) -> float | None:
    """The wall time one sample of RECORD stands for, in ms; None when it has
    no samples. The record states it in its call tree's summaries (their
    duration is their samples times the interval, the median gap between
    the lag's samples); without one, the sampled part of the lag (from its
    catch, when sampling starts, to its end) over its samples."""
    summed, summarised = summary_samples(record.get("calls"))
    if summarised:
        return summed / summarised
    samples = record.get("samples")
    if type(samples) is not int or samples <= 0:
        entries = record.get("stacks")
        samples = sum(e["samples"] for e in entries if isinstance(e, dict) and type(e.get("samples")) is int) \
            if isinstance(entries, list) else 0
        if not samples:
            samples = 1 if record.get("stack") else 0
    if samples <= 0:
        return None
    caught = number(record.get("caught_ms"))
    sampled = duration_ms - caught if caught is not None and 0 <= caught < duration_ms else duration_ms
    return sampled / samples


def placed_frames(frames: list[Json]) -> tuple[PlacedFrame, ...]:
    """FRAMES (innermost first) with their keys, files and lines."""
    result = []
    for i, frame in enumerate(frames):
        file, line = frame.get("file"), frame.get("line")
        result.append(PlacedFrame(frame_key(frame, i == 0), file if isinstance(file, str) and file else None,
                                  line if type(line) is int else None))
    return tuple(result)


def placed_stacks(record: Json, heaviest: tuple[PlacedFrame, ...]) -> list[LagStack]:
    """RECORD's distinct stacks with each frame's file and line; HEAVIEST
    (its `stack`, placed) alone, 1 sample, when it has no `stacks`. The
    library names files and lines in the heaviest stack only: the entry of
    `stacks` that is the same stack takes them from it. Only called on
    records Grouping read: their stacks are well formed."""
    entries = record.get("stacks")
    if not entries:
        return [LagStack(1, heaviest, record.get("stack_truncated") is True)] if heaviest else []
    keys = [f.key for f in heaviest]
    result = []
    for entry in entries:
        frames = placed_frames(entry["stack"])
        if [f.key for f in frames] == keys:
            frames = heaviest
        result.append(LagStack(entry["samples"], frames, entry.get("truncated") is True))
    return result


def stack_key(stack: LagStack) -> Stack:
    """The stack as Grouping keys it in Cause.stacks."""
    key = tuple(f.key for f in stack.frames)
    return key + (marker_key(TRUNCATED),) if stack.truncated else key


class DetailedGrouping(Grouping):
    """A Grouping (with its timeline) that also keeps, for the exports, every
    lag's LagDetail, each frame's places and each cause's stacks in ms."""

    def __init__(self) -> None:
        super().__init__(keep_timeline=True)
        self.details: list[LagDetail] = []
        # Per frame, the samples seen at each (file, line).
        self.places: dict[FrameKey, dict[Place, int]] = {}
        # Per cause, its kept stacks' time: samples times their lag's interval.
        self.stack_ms: dict[str | None, dict[Stack, float]] = {}
        self.other_ms: dict[str | None, float] = {}

    def add_record(self, record: Json, host: str | None, program: str | None) -> None:
        """Grouping.add_record(), then RECORD's details when it was counted."""
        counted, placed = self.records, len(self.timeline or [])
        super().add_record(record, host, program)
        if self.records == counted:
            return
        event = record.get("event")
        if event == "hang-killed":
            record = record["hang"]
        duration = float(record["duration_ms"])
        interval = sampling_interval(record, duration)
        heaviest = placed_frames(record.get("stack") or [])
        fingerprint = record.get("fingerprint")
        if event == "hang":
            # Grouping reads no samples of a hang record (the lag or the
            # hang-killed record that follows has them): its stacks are
            # shown only when well formed.
            try:
                stacks = placed_stacks(record, heaviest)
            except (AttributeError, TypeError, KeyError, ValueError):
                stacks = []
        else:
            stacks = placed_stacks(record, heaviest)
            self.weigh(fingerprint, stacks, interval or 0.0, heaviest)
        if self.timeline is None or len(self.timeline) == placed:
            return   # a record without its time: in its cause, not on its own
        callback = record.get("source_callback")
        caught = number(record.get("caught_ms"))
        calls = read_calls(record["calls"]) if record.get("calls") is not None else []
        self.details.append(LagDetail(self.timeline[-1], callback if isinstance(callback, str) else None,
                                      calls, record.get("calls_exact") is True, interval,
                                      caught, stacks))

    def weigh(self, fingerprint: str | None, stacks: list[LagStack], interval: float,
              heaviest: tuple[PlacedFrame, ...]) -> None:
        """Adds the lag's STACKS to its cause's time, and the places of its
        HEAVIEST stack's frames."""
        kept = self.causes[fingerprint].stacks
        times = self.stack_ms.setdefault(fingerprint, {})
        for stack in stacks:
            key = stack_key(stack)
            if key in kept:
                times[key] = times.get(key, 0.0) + stack.samples * interval
            else:
                self.other_ms[fingerprint] = self.other_ms.get(fingerprint, 0.0) + stack.samples * interval
        # Only the heaviest stack has places: with the samples of its entry
        # in `stacks`, 1 when it is none of them.
        samples = next((s.samples for s in stacks if s.frames is heaviest), 1)
        self.count_places(heaviest, max(samples, 1))

    def count_places(self, frames: tuple[PlacedFrame, ...], samples: int) -> None:
        """Counts SAMPLES at each of FRAMES' places (those with a file)."""
        for frame in frames:
            if frame.file is None:
                continue
            counts = self.places.get(frame.key)
            if counts is None:
                if len(self.places) >= MAX_PLACED_FRAMES:
                    continue
                counts = self.places[frame.key] = {}
            place = (frame.file, frame.line)
            counts[place] = counts.get(place, 0) + samples

    def place(self, key: FrameKey) -> Place:
        """The frame's file and line: where most of its samples were (a
        function's line varies from sample to sample; an export's frame has
        one), the lowest line of those that tie; (None, None) unknown."""
        counts = self.places.get(key) or {}
        if not counts:
            return None, None
        return min(counts, key=lambda p: (p[0] is None, -counts[p], p[1] or 0, p[0] or ""))

    def lags_shown(self, fingerprints: set[str | None]) -> list[LagDetail]:
        """The lags of the causes FINGERPRINTS, each once, in time order: a
        hang that ended is its lag, one whose process was killed its
        hang-killed record, the hang record alone only for a hang neither
        followed."""
        covered = {(d.lag.host, d.lag.pid, d.lag.lag_id) for d in self.details
                   if d.lag.kind != "hang" and d.lag.lag_id is not None}
        shown = [d for d in self.details if d.lag.fingerprint in fingerprints
                 and not (d.lag.kind == "hang" and (d.lag.host, d.lag.pid, d.lag.lag_id) in covered)]
        return sorted(shown, key=lambda d: (d.lag.when, d.lag.host, d.lag.pid or 0, d.lag.lag_id or ""))


class Span(NamedTuple):
    """A call as the exports lay it out: nested within its caller, never
    overlapping its neighbours."""

    name: str
    start_ms: float
    end_ms: float
    children: list["Span"]


def spans(calls: list[Call], start: float, end: float) -> list[Span]:
    """CALLS laid out within [START, END], in start order: each begins where
    the call before it ended at the earliest and ends where the next begins
    at the latest. A tree from samples places a summary (calls too short to
    time) at its first call with their total time, which can reach into
    the timed call after it: the summary is cut there, the timed call kept.
    A call left with no time is left out."""
    ordered = sorted(calls, key=lambda c: c.start_ms)
    result = []
    at = start
    for i, call in enumerate(ordered):
        begin = max(call.start_ms, at)
        finish = min(call.start_ms + call.duration_ms, end)
        if i + 1 < len(ordered) and begin < ordered[i + 1].start_ms < finish:
            finish = ordered[i + 1].start_ms
        if finish <= begin:
            continue
        result.append(Span(call.name, begin, finish, spans(call.children, begin, finish)))
        at = finish
    return result


KIND_WORDS = {"lag": "lag", "hang": "hang (still going when last written)", "killed": "hang, killed"}


def lag_where(detail: LagDetail) -> str:
    """Where in the loop the lag was: its GSource by name, its callback
    (what names an unnamed GSource), else its phase."""
    source, callback = detail.lag.source, detail.callback
    if isinstance(source, str) and source:
        return 'GSource "%s"' % source + (", callback %s" % callback if callback else "")
    if callback:
        return "callback %s (unnamed GSource)" % callback
    phase = detail.lag.phase
    return "the loop's %s phase" % phase if isinstance(phase, str) else "an unknown place in the loop"


def lag_title(detail: LagDetail) -> str:
    """The lag in one line: program, duration, where, when, id."""
    lag = detail.lag
    return "%s: %s %s in %s, %s (id %s)" % (lag.program, format_ms(lag.duration_ms), KIND_WORDS.get(lag.kind, lag.kind),
                                             lag_where(detail), short_time(lag.when), lag.lag_id or "?")
