"""The command line: lagwatch-report [OPTION]... [FILE]...

Exit status: 0 the report was written (malformed lines are counted and
named on stderr, never fatal); 1 an input could not be opened or read to
its end (the report covers the rest), or the output could not be
written; 2 bad command line.
"""

import argparse
import io
import os
import sys
from typing import TextIO

from .chrome import write_chrome
from .folded import write_folded
from .grouping import SORT_KEYS, FrameKey, Grouping
from .html_page import write_html
from .lags import DetailedGrouping
from .reader import MAX_LINE_BYTES, Reader
from .speedscope import write_speedscope
from .symbolizer import Names
from .text import write_text

FORMATS = ("text", "folded", "speedscope", "chrome", "html")


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="lagwatch-report",
        description="Groups lagwatch's lag records from many runs, programs and machines by cause "
                    "(fingerprint). Inputs: JSON Lines files (gzip'd or not), journal exports "
                    "(journalctl -o json --all) and journal files (read with journalctl); "
                    "'-' or none reads stdin.",
        epilog="Exit status: 0 the report was written (malformed lines are counted and named on stderr); "
               "1 an input could not be opened or read to its end (the report covers the rest; an input "
               "with a line longer than %d MiB, as a gzip bomb makes, is refused there), or the "
               "output could not be written; 2 bad command line." % (MAX_LINE_BYTES >> 20))
    parser.add_argument("files", nargs="*", metavar="FILE")
    parser.add_argument("-f", "--format", choices=FORMATS,
                        default="text", help="text (default): the causes and their heaviest stacks; folded: "
                        "flamegraph.pl's input; speedscope: speedscope's JSON; chrome: Chrome trace events "
                        "(Perfetto, chrome://tracing); html: one self-contained page")
    parser.add_argument("-o", "--output", metavar="FILE", help="write there instead of stdout")
    parser.add_argument("-n", "--top", type=int, metavar="N",
                        help="only the N heaviest causes (default: 20 for text and html, all for the others; "
                             "0: all)")
    parser.add_argument("--sort", choices=sorted(SORT_KEYS), default="total",
                        help="order of the causes (default: total lag time)")
    parser.add_argument("--debug-dir", action="append", metavar="DIR",
                        help="where .build-id/xx/rest.debug files are (repeatable; default /usr/lib/debug)")
    parser.add_argument("--no-symbolize", action="store_true", help="do not name frames offline")
    parser.add_argument("--frames", type=int, default=12, metavar="N",
                        help="frames of the heaviest stack shown per cause in text (default 12)")
    parser.add_argument("--progress", action="store_true",
                        help="progress on stderr even when it is not a terminal")
    args = parser.parse_args(argv)
    if args.top is not None and args.top < 0:
        parser.error("--top must be 0 or more")
    if args.frames < 1:
        parser.error("--frames must be 1 or more")
    if not args.files and sys.stdin.isatty():
        parser.error("no input: name files, or pipe records to stdin")
    return args


def main(argv: list[str]) -> int:
    """Runs the command with ARGV (without the program's name): its exit status."""
    args = parse_arguments(argv)
    grouping = DetailedGrouping() if args.format in ("speedscope", "chrome") else Grouping()
    reader = Reader(grouping, progress=args.progress or sys.stderr.isatty())
    for path in args.files or ["-"]:
        reader.read_path(path)

    ordered = grouping.ordered(args.sort)
    top = args.top if args.top is not None else (20 if args.format in ("text", "html") else 0)
    causes = ordered[:top] if top else ordered

    names = Names(args.debug_dir or ["/usr/lib/debug"], None if args.no_symbolize else "eu-addr2line")
    keys: set[FrameKey] = set()
    for cause in causes:
        for stack in cause.stacks:
            keys.update(stack)
        if cause.label is not None:
            keys.update(placed.key for placed in cause.label.candidates + (cause.label.fallback,))
    names.symbolize(keys)

    # Names are written as the records hold them; a lone surrogate (valid
    # in JSON, not in UTF-8) or a terminal that is not UTF-8 gets '?' for
    # what it cannot take, not a crash.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    out: TextIO
    try:
        out = open(args.output, "w", encoding="utf-8", errors="replace") if args.output else sys.stdout
    except OSError as error:
        print("lagwatch-report: %s: %s" % (args.output, error.strerror), file=sys.stderr)
        return 1
    try:
        if args.format == "text":
            write_text(out, grouping, causes, names, args.frames)
        elif args.format == "folded":
            write_folded(out, causes, names)
        elif args.format == "speedscope":
            write_speedscope(out, grouping, causes, names)
        elif args.format == "chrome":
            write_chrome(out, grouping, causes, names)
        else:
            write_html(out, grouping, causes, names)
        out.flush()
    except BrokenPipeError:
        # `lagwatch-report | head` is not an error; nothing more to write.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    finally:
        if out is not sys.stdout:
            out.close()
    if grouping.malformed:
        print("lagwatch-report: %d malformed line%s skipped" % (grouping.malformed, "" if grouping.malformed == 1 else "s"),
              file=sys.stderr)
    return 1 if reader.failed_inputs else 0


def run() -> None:
    """The command's entry point: exits with main()'s status."""
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
