"""The causes: lagwatch's records grouped by fingerprint, in bounded memory.

Memory: per cause, counts, a duration sketch, at most MAX_STACKS_PER_CAUSE
stacks and MAX_NAMES_PER_CAUSE programs and hosts; with a timeline (the
chrome format) also one small tuple per lag, the output's own size.
"""

import math
from collections.abc import Callable
from typing import Any, NamedTuple

# A record as json.loads() gives it: every member may hold any JSON value.
Json = dict[str, Any]

# Per-cause bounds: what keeps memory independent of the number of records.
MAX_STACKS_PER_CAUSE = 500   # distinct stacks; the samples of later ones go to "[other stacks]"
MAX_NAMES_PER_CAUSE = 64     # programs, hosts; later ones are counted as "others"
MAX_CALLS_KEPT = 2000        # calls of a cause's heaviest lag kept for its call tree
MAX_CALL_DEPTH = 64          # its nesting kept; deeper calls are left out
NO_HOST = "not recorded"     # JSON Lines files do not name their machine
MAX_DURATION_MS = 365 * 86400 * 1000.0
EXACT_DURATIONS = 1024       # durations kept exactly per cause before the sketch takes over
SKETCH_ALPHA = 0.01          # the sketch's quantiles are within 1% of the exact value
TRUNCATED = "[truncated stack]"
UNKNOWN_WHERE = "where not known"


class Malformed(Exception):
    """A line that is not a record lagwatch writes; its message says why."""


def basename(path: str | None) -> str:
    return path.rsplit("/", 1)[-1] if path else "?"


class FrameKey(NamedTuple):
    """A frame as a hashable key: (module, symbol) when named in the field,
    else (module, build_id, offset, leaf) so it can be named offline; a
    marker (the "[truncated stack]" end of a stack) is a symbol alone."""

    module: str | None
    symbol: str | None
    build_id: str | None = None
    offset: str | None = None
    leaf: bool = False


class Placed(NamedTuple):
    """A frame key and the frame's file:line (None when the record has none)."""

    key: FrameKey
    place: str | None


class Label(NamedTuple):
    """What names a cause (Grouping.label_of)."""

    candidates: tuple[Placed, ...]
    fallback: Placed


class Call(NamedTuple):
    """One call of a lag's call tree (the record's `calls`)."""

    name: str
    start_ms: float
    duration_ms: float
    children: list["Call"]


class CallsLag(NamedTuple):
    """The lag a cause's call tree comes from."""

    lag_id: str
    duration_ms: float
    exact: bool


class TimelineLag(NamedTuple):
    """One lag, hang or killed hang as the chrome format places it."""

    host: str
    pid: int | None
    tid: int | None
    thread_name: str
    program: str
    when: str
    duration_ms: float
    fingerprint: str | None
    lag_id: str | None
    kind: str               # "lag", "hang" or "killed"
    source: Any
    phase: Any


TEXT_OR_NULL = (str, type(None))


def optional_text(frame: Json, member: str) -> str | None:
    """FRAME's MEMBER, a string or null; ValueError for anything else."""
    value = frame.get(member)
    if type(value) not in TEXT_OR_NULL:
        raise ValueError("a frame's %s is not a string" % member)
    return value


def frame_key(frame: Json, leaf: bool) -> FrameKey:
    """FRAME's key; ValueError when its members are not strings or null.
    Called for every frame of every record: its checks are inline, and the
    key is made by tuple.__new__ (a fifth of FrameKey()'s time)."""
    if type(frame) is not dict:
        raise ValueError("a frame is not an object")
    get = frame.get
    module = get("module")
    symbol = get("symbol")
    if type(module) not in TEXT_OR_NULL or type(symbol) not in TEXT_OR_NULL:
        raise ValueError("a frame's module or symbol is not a string")
    if symbol is not None:
        return tuple.__new__(FrameKey, (module, symbol, None, None, False))
    build_id = get("build_id")
    offset = get("module_offset")
    if type(build_id) not in TEXT_OR_NULL or type(offset) not in TEXT_OR_NULL:
        raise ValueError("a frame's build_id or module_offset is not a string")
    return tuple.__new__(FrameKey, (module, None, build_id, offset, leaf))


def marker_key(text: str) -> FrameKey:
    return FrameKey(None, text)


def frame_place(frame: Json) -> str | None:
    """A frame's file:line, or None."""
    file = optional_text(frame, "file")
    return "%s:%s" % (basename(file), frame.get("line")) if file else None


def frame_is_program(frame: Json) -> bool:
    """Whether FRAME is the program's, as the library says.

    The rule (the program is its executable and the libraries it ships;
    the system's libraries, the C++ runtime, an interpreter's machinery
    and standard library are not; in a stack with frames of an interpreted
    language only those can be) lives in the library alone
    (lw_report_frame_is_program_in() in lib/report/lw-report-program.c), whose JSON writer
    gives its verdict in every frame ("is_program"): this tool keeps no copy
    of it, so the two cannot drift apart. A frame that does not say (a
    record from another writer) counts as the program's: its cause is
    named after its innermost named frames, and the report says so.
    """
    return frame.get("is_program") is not False


def where_of(record: Json) -> str:
    """Where in the loop a record's lag was, as the library's text report
    says it (lw_report_where_to_text()), shortened: 'GSource "name"', 'g_timeout_add
    callback fn', 'the prepare phase', 'starved input'."""
    phase = record.get("phase")
    source = record.get("source")
    callback = record.get("source_callback")
    if phase == "dispatch":
        if isinstance(source, str):
            return "GSource \"%s\"" % source
        if isinstance(callback, str):
            kind = record.get("source_callback_kind")
            return "%s callback %s" % (kind if isinstance(kind, str) else "GSource", callback)
        return "an unnamed GSource"
    if phase == "starved":
        return "starved input"
    if isinstance(phase, str):
        return "the %s phase" % phase
    return UNKNOWN_WHERE


def as_duration(value: Any) -> float | None:
    """VALUE as a duration in ms, or None when it is not a number from 0 to
    a year (beyond a year is no lag's duration, and its microseconds overflow)."""
    if type(value) not in (int, float) or not 0 <= value <= MAX_DURATION_MS:
        return None
    return float(value)


def read_calls(found: Any) -> list[Call]:
    """A record's `calls`, at most MAX_CALLS_KEPT calls and MAX_CALL_DEPTH
    levels; ValueError when it is not a call tree."""
    budget = MAX_CALLS_KEPT

    def convert(calls: Any, depth: int) -> list[Call]:
        nonlocal budget
        if not isinstance(calls, list):
            raise ValueError("calls is not a list")
        result = []
        for call in calls:
            if not isinstance(call, dict):
                raise ValueError("a call is not an object")
            name = call.get("name")
            start, duration = as_duration(call.get("start_ms")), as_duration(call.get("duration_ms"))
            if name is not None and not isinstance(name, str):
                raise ValueError("a call's name is not a string")
            if start is None or duration is None:
                raise ValueError("a call's start_ms or duration_ms is not a duration")
            if budget == 0 or depth >= MAX_CALL_DEPTH:
                continue
            budget -= 1
            label = name or "??"
            # A summary of calls too short to time one by one (a tree from
            # samples): its duration is their estimated total, not a span.
            short_calls = call.get("short_calls")
            if isinstance(short_calls, int) and not isinstance(short_calls, bool) and short_calls > 0:
                label = "%s: %d call%s too short to time, in all" % (label, short_calls,
                                                                      "" if short_calls == 1 else "s")
            result.append(Call(label, start, duration,
                               convert(call.get("children") or [], depth + 1)))
        return result

    return convert(found, 0)


class Durations:
    """Count, max and quantiles of one cause's durations in bounded memory.

    Exact (nearest rank) up to EXACT_DURATIONS values; past that a
    logarithmic sketch (DDSketch's buckets: bucket i holds the values in
    (gamma^(i-1), gamma^i]) answers within SKETCH_ALPHA relative error, in
    at most log(max/min)/log(gamma) buckets (about 800 from 1 ms to 3 hours).
    """

    GAMMA = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA)
    LOG_GAMMA = math.log(GAMMA)
    __slots__ = ("exact", "buckets", "zeros", "n", "max")

    def __init__(self) -> None:
        self.exact: list[float] | None = []
        self.buckets: dict[int, int] = {}
        self.zeros = 0
        self.n = 0
        self.max = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        if value > self.max:
            self.max = value
        if self.exact is not None:
            self.exact.append(value)
            if len(self.exact) > EXACT_DURATIONS:
                values, self.exact = self.exact, None
                self.n -= len(values)
                for v in values:
                    self.add(v)
            return
        if value <= 0:
            self.zeros += 1
            return
        index = math.ceil(math.log(value) / self.LOG_GAMMA)
        self.buckets[index] = self.buckets.get(index, 0) + 1

    def is_exact(self) -> bool:
        return self.exact is not None

    def quantile(self, q: float) -> float | None:
        if self.n == 0:
            return None
        rank = max(1, math.ceil(q * self.n))
        if self.exact is not None:
            return sorted(self.exact)[rank - 1]
        seen = self.zeros
        if rank <= seen:
            return 0.0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                return min(self.max, 2 * self.GAMMA ** index / (self.GAMMA + 1))
        return self.max


class Tally:
    """Counts per name (programs, hosts), at most MAX_NAMES_PER_CAUSE names."""

    __slots__ = ("counts", "others")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.others = 0

    def add(self, name: str) -> None:
        counts = self.counts
        if name in counts:
            counts[name] += 1
        elif len(counts) < MAX_NAMES_PER_CAUSE:
            counts[name] = 1
        else:
            self.others += 1

    def most(self) -> str:
        """The name counted most often (the first in order on a tie), and
        how many others there are: 'GSource "x"', 'GSource "x" and 2 more'."""
        if not self.counts:
            return "-"
        items = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        rest = len(items) - 1 + self.others
        return items[0][0] + (" and %d more" % rest if rest else "")

    def describe(self, limit: int = 4) -> str:
        items = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if not items and not self.others:
            return "-"
        parts = ["%s (%d)" % kv for kv in items[:limit]]
        rest = sum(c for _, c in items[limit:]) + self.others
        if rest:
            parts.append("%d more" % rest)
        return ", ".join(parts)


Stack = tuple[FrameKey, ...]   # innermost first


class Cause:
    """Everything kept about one fingerprint: bounded whatever the record count."""

    __slots__ = ("fingerprint", "lags", "hangs", "killed", "total_ms", "durations", "first",
                 "last", "programs", "hosts", "wheres", "stacks", "other_samples", "label", "samples",
                 "calls", "calls_lag")

    def __init__(self, fingerprint: str | None) -> None:
        self.fingerprint = fingerprint
        self.lags = 0           # lags that ended ("lag" records)
        self.hangs = 0          # lags that reached the hang threshold ("hang" records)
        self.killed = 0         # hangs whose process was killed ("hang-killed" records)
        self.total_ms = 0.0
        self.durations = Durations()
        self.first: str | None = None
        self.last: str | None = None
        self.programs = Tally()
        self.hosts = Tally()
        self.wheres = Tally()   # where in the loop (where_of()), per lag
        self.stacks: dict[Stack, int] = {}   # stack -> samples
        self.other_samples = 0
        self.label: Label | None = None      # what names it: Grouping.label_of()
        self.samples = 0                     # every sample of its lags (records' "samples")
        self.calls: list[Call] | None = None  # the call tree of its longest lag that has one
        self.calls_lag: CallsLag | None = None

    def count(self) -> int:
        """Its lags: those that ended and those killed during a hang; a hang
        record, written while a lag went on, is an early copy of one of them."""
        return self.lags + self.killed


SORT_KEYS: dict[str, Callable[[Cause], tuple[float, float]]] = {
    "total": lambda c: (-c.total_ms, -c.count()),
    "count": lambda c: (-c.count(), -c.total_ms),
    "max": lambda c: (-c.durations.max, -c.total_ms),
    "hangs": lambda c: (-c.hangs - c.killed, -c.total_ms),
}


class Grouping:
    """The records read so far, grouped into causes, and the counts every
    output shows. Grouping.add_record() takes one record; the reader counts
    inputs and malformed lines here too."""

    def __init__(self, keep_timeline: bool = False) -> None:
        self.causes: dict[str | None, Cause] = {}
        self.records = 0
        self.events = {"lag": 0, "hang": 0, "hang-killed": 0}
        self.other_events = 0
        self.other_journal_entries = 0
        self.without_verdict = 0  # records with frames that do not say is_program
        self.malformed = 0
        self.files = 0
        self.histogram: dict[int, int] = {}     # all lag durations, 10 bins a decade
        self.timeline: list[TimelineLag] | None = [] if keep_timeline else None

    def total_lags(self) -> int:
        return sum(c.count() for c in self.causes.values())

    def ordered(self, sort: str) -> list[Cause]:
        return sorted(self.causes.values(), key=SORT_KEYS[sort])

    def add_record(self, record: Json, host: str | None, program: str | None) -> None:
        """Counts RECORD (a lag, hang or hang-killed record; others are
        counted and skipped) in its cause; Malformed when it is not one."""
        event = record.get("event")
        if event == "hang-killed":
            program = program or record.get("exe")
            hang = record.get("hang")
            if not isinstance(hang, dict):
                raise Malformed("hang-killed without its hang record")
            record = hang
        elif event not in ("lag", "hang"):
            self.other_events += 1
            return
        duration = as_duration(record.get("duration_ms"))
        if duration is None:
            raise Malformed("%s record without a valid duration_ms" % event)
        fingerprint = record.get("fingerprint")
        if fingerprint is not None and not isinstance(fingerprint, str):
            raise Malformed("fingerprint is not a string")
        when = record.get("time")
        if not isinstance(when, str):
            when = None
        host = host or record.get("host") or record.get("hostname")
        if not isinstance(host, str):
            host = NO_HOST
        heaviest = record.get("stack")
        if heaviest is not None and not isinstance(heaviest, list):
            raise Malformed("stack is not a list")
        try:
            program = program or record.get("exe") or record.get("program") \
                or self.program_of(heaviest) or record.get("thread_name")
            stacks = [] if event == "hang" else self.stacks_of(record, heaviest)
            label = self.label_of(heaviest) if heaviest else None
            calls = read_calls(record["calls"]) if record.get("calls") is not None else None
        except (AttributeError, TypeError, KeyError, ValueError) as error:
            raise Malformed("%s record with malformed stacks (%s)" % (event, error)) from None
        program = basename(program) if isinstance(program, str) else "?"
        lag_id = record.get("id")
        if not isinstance(lag_id, str):
            lag_id = None

        self.records += 1
        self.events[event] += 1
        if heaviest and any(isinstance(f, dict) and "is_program" not in f for f in heaviest):
            self.without_verdict += 1
        cause = self.causes.get(fingerprint)
        if cause is None:
            cause = self.causes[fingerprint] = Cause(fingerprint)
        if cause.label is None and label is not None:
            cause.label = label
        if when is not None:
            if cause.first is None or when < cause.first:
                cause.first = when
            if cause.last is None or when > cause.last:
                cause.last = when
        if self.timeline is not None and when is not None:
            self.timeline.append(self.timeline_lag(record, host, program, when, duration, fingerprint,
                                                   "killed" if event == "hang-killed" else event))
        if event == "hang":
            # The lag that follows when it ends (same id) or the hang-killed
            # record of the next run carries its duration and samples.
            cause.hangs += 1
            return
        # Programs, hosts and places count lags, as count() does: a hang
        # record is an early copy of a lag its lag record (or the
        # hang-killed record) counts.
        cause.programs.add(program)
        cause.hosts.add(host)
        cause.wheres.add(where_of(record))
        if calls and (cause.calls_lag is None or duration > cause.calls_lag.duration_ms):
            cause.calls = calls
            cause.calls_lag = CallsLag(lag_id or "?", duration,
                                       record.get("calls_exact") is True)
        if event == "lag":
            cause.lags += 1
        else:
            cause.killed += 1
        cause.total_ms += duration
        cause.durations.add(duration)
        bin_index = math.floor(10 * math.log10(duration)) if duration > 0 else -1000
        self.histogram[bin_index] = self.histogram.get(bin_index, 0) + 1
        kept = cause.stacks
        in_stacks = sum(samples for samples, _ in stacks)
        total = record.get("samples")
        # The share of a stack is over every sample of the lag (the
        # record's "samples"), as the library's text report gives it: the
        # samples of the stacks the record does not keep are "[other
        # stacks]" (lw_report_heaviest_share() in lib/report/lw-report-text.h).
        if type(total) is int and total > in_stacks:
            cause.samples += total - in_stacks
            cause.other_samples += total - in_stacks
        for samples, key in stacks:
            cause.samples += samples
            if key in kept:
                kept[key] += samples
            elif len(kept) < MAX_STACKS_PER_CAUSE:
                kept[key] = samples
            else:
                cause.other_samples += samples

    @staticmethod
    def timeline_lag(record: Json, host: str, program: str, when: str, duration: float,
                     fingerprint: str | None, kind: str) -> TimelineLag:
        pid = record.get("pid")
        tid = record.get("thread_id")
        thread_name = record.get("thread_name")
        lag_id = record.get("id")
        return TimelineLag(host, pid if type(pid) is int else None, tid if type(tid) is int else None,
                           thread_name if isinstance(thread_name, str) else "?", program, when, duration,
                           fingerprint, lag_id if isinstance(lag_id, str) else None, kind,
                           record.get("source"), record.get("phase"))

    @staticmethod
    def stacks_of(record: Json, heaviest: list[Any] | None) -> list[tuple[int, Stack]]:
        """(samples, stack) per distinct stack; the heaviest one alone for
        records without `stacks` (1 sample)."""
        found = record.get("stacks")
        result: list[tuple[int, Stack]] = []
        if found:
            for entry in found:
                frames = entry["stack"]
                samples = entry.get("samples")
                if type(samples) is not int or samples < 0:
                    raise ValueError("samples is not a count")
                key = tuple([frame_key(f, i == 0) for i, f in enumerate(frames)])
                if entry.get("truncated"):
                    key += (marker_key(TRUNCATED),)
                result.append((samples, key))
        elif heaviest:
            key = tuple([frame_key(f, i == 0) for i, f in enumerate(heaviest)])
            if record.get("stack_truncated"):
                key += (marker_key(TRUNCATED),)
            result.append((1, key))
        return result

    @staticmethod
    def program_of(frames: list[Any] | None) -> Any:
        """The executable: the module of the stack's `main` or `_start`."""
        if not frames:
            return None
        for frame in reversed(frames[-4:]):
            if frame.get("symbol") in ("_start", "main"):
                return frame.get("module")
        return None

    @staticmethod
    def label_of(frames: list[Any]) -> Label:
        """What names the cause: candidates and a fallback. Candidates: the
        program frames (frame_is_program()), innermost first, up to the
        second named one; the first two that have a name, in the record or
        offline (naming.cause_name), name the cause, as the library's summary
        names the innermost named program frame. Fallback, when none has a
        name: the innermost named frame, else the innermost."""
        candidates = []
        named = 0
        for i, f in enumerate(frames):
            if frame_is_program(f):
                candidates.append(Placed(frame_key(f, i == 0), frame_place(f)))
                named += f.get("symbol") is not None
                if named == 2:
                    break
        i, f = next(((i, f) for i, f in enumerate(frames) if f.get("symbol") is not None), (0, frames[0]))
        return Label(tuple(candidates), Placed(frame_key(f, i == 0), frame_place(f)))
