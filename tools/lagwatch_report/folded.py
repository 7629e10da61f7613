"""flamegraph.pl's input: `root;...;leaf samples`, one line per stack."""

from typing import TextIO

from .grouping import Cause
from .naming import cause_name, merged_stacks
from .symbolizer import Names


def write_folded(out: TextIO, causes: list[Cause], names: Names) -> None:
    """Each stack's root is its cause, so causes stay apart in one graph."""
    for cause in causes:
        root = ("lag %s [%s]" % (cause_name(cause, names), cause.fingerprint or "-")).replace(";", ":")
        for path, samples in sorted(merged_stacks(cause, names).items()):
            if samples > 0:
                out.write("%s;%s %d\n" % (root, ";".join(path), samples))
