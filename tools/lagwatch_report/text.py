"""The text report: a table of the causes, then each cause with its
heaviest stack and the call tree of its longest lag."""

import re
from typing import TextIO

from .grouping import Call, Cause, Grouping
from .naming import cause_name, format_ms, merged_stacks, short_time
from .symbolizer import Names

TERMINAL_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """TEXT as the text report shows it: every control character (C0,
    newline included, DEL, C1) as \\xNN. A name in a record (a GSource's, a
    thread's, a function's) can hold anything: it must not drive the
    terminal the report is read on."""
    return TERMINAL_CONTROL.sub(lambda m: "\\x%02x" % ord(m.group(0)), str(text))


def write_text(out: TextIO, grouping: Grouping, causes: list[Cause], names: Names, frames: int) -> None:
    """The report; FRAMES: frames shown of each cause's heaviest stack."""
    out.write("lagwatch-report: %d lags, %d hangs (%d killed) in %d causes from %d records in %d inputs"
              % (grouping.total_lags(), grouping.events["hang"], grouping.events["hang-killed"],
                 len(grouping.causes), grouping.records, grouping.files))
    if grouping.malformed:
        out.write("; %d malformed lines" % grouping.malformed)
    out.write("\n")
    if grouping.other_journal_entries:
        out.write("%d journal entries without LAGWATCH_RECORD skipped\n" % grouping.other_journal_entries)
    if grouping.other_events:
        out.write("%d records of other events skipped\n" % grouping.other_events)
    if grouping.without_verdict:
        out.write("%d records with frames that do not say is_program: those count as the program's\n"
                  % grouping.without_verdict)
    if names.symbolized:
        out.write("%d frames named offline from debug files\n" % names.symbolized)
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
        out.write("\n#%d %s  fingerprint %s\n" % (rank, terminal_safe(cause_name(cause, names)),
                                                  terminal_safe(cause.fingerprint or "-")))
        out.write("  %d lag%s (%d hangs, %d killed), total %s, p50 %s, p95 %s, max %s%s\n"
                  % (cause.count(), "" if cause.count() == 1 else "s", cause.hangs, cause.killed,
                     format_ms(cause.total_ms), format_ms(d.quantile(0.5)), format_ms(d.quantile(0.95)),
                     format_ms(d.max if d.n else None), "" if d.is_exact() else " (p50/p95 within 1%)"))
        out.write("  first seen %s, last seen %s UTC\n" % (short_time(cause.first), short_time(cause.last)))
        out.write("  programs: %s\n" % terminal_safe(cause.programs.describe()))
        out.write("  hosts: %s\n" % terminal_safe(cause.hosts.describe()))
        stacks = merged_stacks(cause, names)
        if stacks:
            path, samples = max(stacks.items(), key=lambda kv: (kv[1], kv[0]))
            share = 100.0 * samples / cause.samples if cause.samples else 100.0
            out.write("  heaviest stack (%.0f%% of %d samples), innermost first:\n" % (share, cause.samples))
            for frame in list(reversed(path))[:frames]:
                out.write("    %s\n" % terminal_safe(frame))
            if len(path) > frames:
                out.write("    ... %d more frames\n" % (len(path) - frames))
        if cause.calls:
            write_calls_text(out, cause, frames * 3)


def write_calls_text(out: TextIO, cause: Cause, limit: int) -> None:
    """The call tree of the cause's longest lag, indented, in call order."""
    assert cause.calls is not None and cause.calls_lag is not None
    lag_id, duration, exact = cause.calls_lag
    out.write("  calls of its longest lag (%s, %s, %s), in order:\n"
              % (terminal_safe(lag_id), format_ms(duration), "exact" if exact else "from the samples"))
    lines: list[str] = []

    def walk(calls: list[Call], depth: int) -> None:
        for name, start, length, children in calls:
            lines.append("    %s%s  %s  (at %s)" % ("  " * depth, terminal_safe(name), format_ms(length),
                                                  format_ms(start)))
            walk(children, depth + 1)

    walk(cause.calls, 0)
    for line in lines[:limit]:
        out.write(line + "\n")
    if len(lines) > limit:
        out.write("    ... %d more calls\n" % (len(lines) - limit))
