"""What every output shares: a cause's name, its stacks by display name,
durations and times as text."""

from .grouping import Cause
from .symbolizer import Names

Path = tuple[str, ...]   # a stack by display names, root first
OTHER_STACKS = "[other stacks]"


def merged_stacks(cause: Cause, names: Names) -> dict[Path, int]:
    """The cause's stacks as root-first tuples of display names, merged by
    name (offline names can join several offsets of one function)."""
    merged: dict[Path, int] = {}
    for key, samples in cause.stacks.items():
        path = tuple(names.name(k).replace(";", ":") for k in reversed(key))
        merged[path] = merged.get(path, 0) + samples
    if cause.other_samples:
        merged[(OTHER_STACKS,)] = merged.get((OTHER_STACKS,), 0) + cause.other_samples
    return merged


def cause_name(cause: Cause, names: Names) -> str:
    """The cause's innermost two named program frames, innermost first, and
    the file:line of the first."""
    if cause.fingerprint is None:
        return "(no stack)"
    if cause.label is None:
        return "(no frames)"
    candidates, fallback = cause.label
    chosen = [c for c in candidates if names.has_name(c.key)][:2] or [fallback]
    name = " \u2190 ".join(names.name(c.key) for c in chosen)
    return name + (" (%s)" % chosen[0].place if chosen[0].place else "")


def format_ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 10000:
        return "%.1f s" % (value / 1000)
    return "%.1f ms" % value


def short_time(when: str | None) -> str:
    return when.replace("T", " ").rstrip("Z") if when else "-"


def plural(n: int, word: str, words: str | None = None) -> str:
    """"1 lag", "2 lags"; WORDS: the plural when it is not WORD + "s"."""
    return "%d %s" % (n, word if n == 1 else words or word + "s")
