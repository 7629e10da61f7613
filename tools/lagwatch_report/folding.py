"""Folding a stack for the text report: a run of unnamed frames of one
module, or a recursion (a frame, or a cycle of frames, repeated), shown
once with its count. The library's text report folds its stacks by the
same rule (lib/report/lw-report-text.c)."""

from collections.abc import Hashable, Sequence
from typing import NamedTuple

MAX_CYCLE = 8   # the longest cycle of frames folded (a calls b calls a...)


class Run(NamedTuple):
    """Frames KEYS[start:start + period * times]: the PERIOD frames from
    START, repeated TIMES times (1: nothing repeats)."""

    start: int
    period: int
    times: int


def fold(keys: Sequence[Hashable]) -> list[Run]:
    """KEYS (one per frame, equal for frames that read the same: an unnamed
    frame's key is its module alone) cut into runs, in order. At each
    frame, the cycle that repeats the most frames from there wins, the
    shortest on a tie; a frame that starts no repeat is a run of one."""
    runs: list[Run] = []
    at = 0
    while at < len(keys):
        best_times, best_period = 1, 1
        for period in range(1, MAX_CYCLE + 1):
            if at + 2 * period > len(keys):
                break
            block = keys[at:at + period]
            times = 1
            while keys[at + times * period:at + (times + 1) * period] == block:
                times += 1
            if times >= 2 and times * period > best_times * best_period:
                best_times, best_period = times, period
        runs.append(Run(at, best_period, best_times))
        at += best_period * best_times
    return runs
