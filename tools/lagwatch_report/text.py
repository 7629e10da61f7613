"""The text report: a table of the causes, then each cause with its
heaviest stack and the call tree of its longest lag."""

import re
from typing import TextIO

from .folding import fold
from .grouping import UNKNOWN_WHERE, Call, Cause, Grouping, Stack, basename
from .naming import cause_name, format_ms, plural, short_time
from .symbolizer import Names

TERMINAL_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# A call's name when it stands for calls too short to time (read_calls()).
# Unnamed frames of one module folded into one line "?? xN in module" from
# this many on; fewer keep their offsets, for naming them offline.
MIN_UNNAMED_RUN = 3
SHORT_CALLS = re.compile(r"(.*): (\d+) calls? too short to time, in all")


def terminal_safe(text: str) -> str:
    """TEXT as the text report shows it: every control character (C0,
    newline included, DEL, C1) as \\xNN. A name in a record (a GSource's, a
    thread's, a function's) can hold anything: it must not drive the
    terminal the report is read on."""
    return TERMINAL_CONTROL.sub(lambda m: "\\x%02x" % ord(m.group(0)), str(text))


def write_text(out: TextIO, grouping: Grouping, causes: list[Cause], names: Names, frames: int) -> None:
    """The report; FRAMES: lines of each cause's heaviest stack shown."""
    out.write("lagwatch-report: %s (%s, %d killed) in %s, from %s in %s"
              % (plural(grouping.total_lags(), "lag"), plural(grouping.events["hang"], "hang"),
                 grouping.events["hang-killed"], plural(len(grouping.causes), "cause"),
                 plural(grouping.records, "record"), plural(grouping.files, "input")))
    if grouping.malformed:
        out.write("; %s" % plural(grouping.malformed, "malformed line"))
    out.write("\n")
    if grouping.other_journal_entries:
        out.write("%s without LAGWATCH_RECORD skipped\n"
                  % plural(grouping.other_journal_entries, "journal entry", "journal entries"))
    if grouping.other_events:
        out.write("%s of other events skipped\n" % plural(grouping.other_events, "record"))
    if grouping.without_verdict:
        out.write("%s with frames that do not say is_program: those count as the program's\n"
                  % plural(grouping.without_verdict, "record"))
    if names.symbolized:
        out.write("%s named offline from debug files\n" % plural(names.symbolized, "frame"))
    if not causes:
        return
    out.write("\n%3s %7s %10s %10s %10s %10s  %s\n" % ("#", "lags", "total", "p50", "p95", "max", "cause"))
    for rank, cause in enumerate(causes, 1):
        d = cause.durations
        out.write("%3d %7d %10s %10s %10s %10s  %s\n"
                  % (rank, cause.count(), format_ms(cause.total_ms), format_ms(d.quantile(0.5)),
                     format_ms(d.quantile(0.95)), format_ms(d.max if d.n else None),
                     terminal_safe(cause_name(cause, names))))
    for rank, cause in enumerate(causes, 1):
        d = cause.durations
        out.write("\n#%d %s  fingerprint %s\n"
                  % (rank, terminal_safe(cause_name(cause, names)), terminal_safe(cause.fingerprint or "-")))
        where = cause.wheres.most()
        out.write("  %s%s (%s, %d killed), total %s, p50 %s, p95 %s, max %s%s\n"
                  % ("" if where in ("-", UNKNOWN_WHERE) else "in %s: " % terminal_safe(where),
                     plural(cause.count(), "lag"), plural(cause.hangs, "hang"), cause.killed,
                     format_ms(cause.total_ms), format_ms(d.quantile(0.5)), format_ms(d.quantile(0.95)),
                     format_ms(d.max if d.n else None), "" if d.is_exact() else " (p50/p95 within 1%)"))
        out.write("  first seen %s, last seen %s UTC\n" % (short_time(cause.first), short_time(cause.last)))
        out.write("  programs: %s\n" % terminal_safe(cause.programs.describe()))
        out.write("  hosts: %s\n" % terminal_safe(cause.hosts.describe()))
        heaviest = heaviest_stack(cause, names)
        if heaviest is not None:
            keys, samples = heaviest
            share = 100.0 * samples / cause.samples if cause.samples else 100.0
            out.write("  heaviest stack: %d of %s (%.0f%%), innermost first:\n"
                      % (samples, plural(cause.samples, "sample"), share))
            lines = stack_lines(keys, names)
            for line in lines[:frames]:
                out.write("    %s\n" % terminal_safe(line))
            if len(lines) > frames:
                out.write("    ... %d more line%s\n" % (len(lines) - frames, "" if len(lines) - frames == 1 else "s"))
            if cause.other_samples and cause.samples:
                out.write("  the other %.0f%% of the samples in lighter stacks, not kept\n"
                          % (100.0 * cause.other_samples / cause.samples))
        if cause.calls:
            write_calls_text(out, cause, frames * 3)


def heaviest_stack(cause: Cause, names: Names) -> tuple[Stack, int] | None:
    """The cause's heaviest stack (the one with the most samples once
    merged by display name, as merged_stacks() merges them and the library
    groups a lag's samples by function; the samples of stacks no record
    kept do not make one) and its samples."""
    merged: dict[tuple[str, ...], tuple[Stack, int]] = {}
    for key, samples in cause.stacks.items():
        path = tuple(names.name(k) for k in key)
        kept, before = merged.get(path, (key, 0))
        merged[path] = (kept, before + samples)
    if not merged:
        return None
    # Ties go to the stack read first: a record lists its stacks heaviest
    # first, ties most recent first, so for one record this is its
    # stacks[0], the library's heaviest stack.
    return max(merged.values(), key=lambda entry: entry[1])


def stack_lines(stack: Stack, names: Names) -> list[str]:
    """STACK (innermost first) as the text shows it, folded (folding.fold):
    "?? x16 in libgtk-4.so.1" for unnamed frames of one module, "recurse
    x58" for a recursion, a cycle of frames once under the line that says
    how many times it repeats."""
    keys = [names.name(k) if names.has_name(k) else ("??", basename(k.module)) for k in stack]
    lines: list[str] = []
    for run in fold(keys):
        first = keys[run.start]
        if run.times == 1 or (run.period == 1 and not isinstance(first, str) and run.times < MIN_UNNAMED_RUN):
            lines.extend(names.name(k) for k in stack[run.start:run.start + run.period * run.times])
        elif run.period == 1 and not isinstance(first, str):
            lines.append("?? x%d in %s" % (run.times, first[1]))
        elif run.period == 1:
            lines.append("%s x%d" % (first, run.times))
        else:
            lines.append("the %d frames below, x%d (recursion):" % (run.period, run.times))
            lines.extend("  " + names.name(k) for k in stack[run.start:run.start + run.period])
    return lines


def split_short(name: str) -> tuple[str, str]:
    """A call's NAME as its function and what it says of short calls:
    ("light", ": 3 calls too short to time, in all"), ("inner", "")."""
    short = SHORT_CALLS.fullmatch(name)
    return (short.group(1), name[len(short.group(1)):]) if short else (name, "")


def write_calls_text(out: TextIO, cause: Cause, limit: int) -> None:
    """The call tree of the cause's longest lag, indented, in call order;
    a call of a function made by a call of the same function, again and
    again (recursion), is one line "name x58", as the library's text
    report folds it."""
    assert cause.calls is not None and cause.calls_lag is not None
    lag_id, duration, exact = cause.calls_lag
    out.write("  calls of its longest lag (%s, %s, %s; time taken, from the lag's start), in order:\n"
              % (terminal_safe(lag_id), format_ms(duration), "exact" if exact else "from the samples"))
    lines: list[str] = []

    def walk(calls: list[Call], depth: int) -> None:
        for call in calls:
            # Calls each the only call of the one before, over the same
            # time: one line, "a > b > c  44.0 ms, from +1080.0 ms".
            base, suffix = split_short(call.name)
            names, inner = [base], call
            while len(inner.children) == 1:
                only = inner.children[0]
                only_base, only_suffix = split_short(only.name)
                # A call that starts a recursion gets its own line, "x58".
                if (only_suffix != suffix or only_base == names[-1] or only.start_ms != call.start_ms
                        or only.duration_ms != call.duration_ms
                        or [c.name for c in only.children].count(only.name) == 1):
                    break
                names.append(only_base)
                inner = only
            if inner is not call:
                lines.append("    %s%s%s  %s, from +%s"
                             % ("  " * depth, terminal_safe(" > ".join(names)), terminal_safe(suffix),
                                format_ms(call.duration_ms), format_ms(call.start_ms)))
                walk(inner.children, depth + 1)
                continue
            chain = [call]
            while True:
                same = [c for c in chain[-1].children if c.name == call.name]
                if len(same) != 1:
                    break
                chain.append(same[0])
            times = " x%d (recursion)" % len(chain) if len(chain) > 1 else ""
            lines.append("    %s%s%s  %s, from +%s" % ("  " * depth, terminal_safe(call.name), times,
                                                     format_ms(call.duration_ms), format_ms(call.start_ms)))
            if len(chain) == 1:
                walk(call.children, depth + 1)
                continue
            # The calls the chain's calls made besides the next one, by
            # function, those of one function on one line when several.
            others = [c for link, after in zip(chain, chain[1:] + [None]) for c in link.children if c is not after]
            by_name: dict[str, list[tuple[Call, int]]] = {}
            for other in others:
                short = SHORT_CALLS.fullmatch(other.name)
                name, count = (short.group(1), int(short.group(2))) if short else (other.name, 1)
                by_name.setdefault(name, []).append((other, count))
            for name, group in by_name.items():
                calls_made = sum(count for _, count in group)
                if calls_made == 1:
                    walk([group[0][0]], depth + 1)
                else:
                    lines.append("    %s%s: %d calls along the recursion, %s in all"
                                 % ("  " * (depth + 1), terminal_safe(name), calls_made,
                                    format_ms(sum(c.duration_ms for c, _ in group))))

    walk(cause.calls, 0)
    for line in lines[:limit]:
        out.write(line + "\n")
    if len(lines) > limit:
        out.write("    ... %d more line%s\n" % (len(lines) - limit, "" if len(lines) - limit == 1 else "s"))
