#!/usr/bin/env python3
"""check-layout.py LIBDIR: the stages of lib/ depend one way.

lib/ holds one folder per stage. A file may include the headers of its own
folder and of the stages before it in STAGES, never of a later one; and no
two files depend on each other in a circle, even inside one folder. This
reads every `#include "..."` of LIBDIR, resolves it as the build does (the
file's own folder, then every stage folder, then LIBDIR itself: internal
headers are included by their name alone) and fails, printing the include
lines at fault, when
  - a stage includes a header of a later stage (the folder graph's order);
  - the file graph has a cycle;
  - a file lies in a folder that is not a stage, or two files share a name
    (an include by name alone would be ambiguous);
  - a .c or .h file is over MAX_LINES lines: a file that long has more
    than one job, and splits by job (a private header for what the pieces
    share).
Includes that resolve outside LIBDIR (the public headers in include/, the
build's lw-build-config.h, system headers) are not stages: any file may
include them.

The file graph joins a .c and the header of the same name in one node
(lw-report.c with lw-report.h): including a header depends on the code
behind it. A header with no .c of its name (lw-slot.h, lw-capture-private.h)
is a node of its own.

check-layout.py --self-test: checks the checker on small trees that break
each rule.
"""

import os
import re
import shutil
import sys
import tempfile

# The stages, lowest first; "." is lib/ itself, the public face on top.
# docs/architecture.md says what each one holds.
STAGES = [
    "trace",    # liblagwatch-trace's shared-memory ABI (lw-trace-abi.h): libc only
    "base",     # messages, kept descriptors, clocks, threads' /proc facts, error domain
    "core",     # the signal handler and stack copy: async-signal-safe, GLib-free
    "unwind",   # the module table, .eh_frame rules, the DWARF unwinder
    "symbols",  # naming addresses: symbol tables, debug files, demangling, lines
    "lang",     # interpreted and generated code: CPython, GJS, perf maps
    "loop",     # the loop thread: poll hooks, the slot, dispatch probe, stats
    "report",   # one lag: the report type, profile, call tree, summary
    "out",      # where it goes: reporting and sink threads, sinks, hang store
    "watch",    # the watcher thread, capture, frame clocks, settings
    ".",        # lagwatch.c, lagwatch-gobject.c: the public face
]

# The most lines a .c or .h of lib/ may have.
MAX_LINES = 800

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def stage_of(libdir, path):
    rel = os.path.relpath(os.path.dirname(path), libdir)
    return rel.split(os.sep)[0] if rel != "." else "."


def read_tree(libdir):
    """Returns (files, problems): files maps a path to its stage."""
    files = {}
    problems = []
    by_name = {}
    for root, dirs, names in os.walk(libdir):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, name)
            stage = stage_of(libdir, path)
            if stage not in STAGES:
                problems.append("%s: in folder %s, which is not a stage (STAGES in %s)"
                                % (path, stage, os.path.basename(__file__)))
                continue
            if name in by_name:
                problems.append("%s and %s share a name: an include by name alone is ambiguous"
                                % (by_name[name], path))
            by_name[name] = path
            files[path] = stage
            with open(path, encoding="utf-8", errors="replace") as f:
                n_lines = sum(1 for _ in f)
            if n_lines > MAX_LINES:
                problems.append("%s: %d lines, over the %d a file of lib/ may have: split it by job"
                                % (path, n_lines, MAX_LINES))
    return files, problems


def resolve(libdir, path, target):
    for folder in [os.path.dirname(path)] + [os.path.join(libdir, s) for s in STAGES]:
        candidate = os.path.normpath(os.path.join(folder, target))
        if os.path.isfile(candidate):
            return candidate
    return None


def node_of(path):
    """The file graph's node: a header joins the .c of its name."""
    stem, ext = os.path.splitext(path)
    if ext == ".h" and os.path.isfile(stem + ".c"):
        return stem + ".c"
    return path


def includes(libdir, files):
    """Yields (path, line number, included path) for every include inside libdir."""
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m is None:
                    continue
                target = resolve(libdir, path, m.group(1))
                if target is not None and target in files:
                    yield path, number, target


def find_cycles(graph):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def one_circle(graph, component):
    """A shortest path from the component's first node back to itself."""
    start = component[0]
    members = set(component)
    previous = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                path = [v]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in previous:
                previous[w] = v
                queue.append(w)
    return component


def check(libdir):
    libdir = os.path.normpath(libdir)
    files, problems = read_tree(libdir)
    file_graph, folder_graph, why = {}, {}, {}

    def short(p):
        return os.path.relpath(p, os.path.dirname(libdir))

    for path, number, target in includes(libdir, files):
        a, b = node_of(path), node_of(target)
        if a != b:
            file_graph.setdefault(a, set()).add(b)
            why.setdefault((a, b), "%s:%d includes %s" % (short(path), number, short(target)))
        sa, sb = files[path], files[target]
        if sa != sb:
            folder_graph.setdefault(sa, set()).add(sb)
            why.setdefault((sa, sb), "%s:%d includes %s" % (short(path), number, short(target)))
            if STAGES.index(sb) > STAGES.index(sa):
                problems.append("%s:%d includes %s: stage %s may include only %s"
                                % (short(path), number, short(target), sa,
                                   ", ".join(STAGES[:STAGES.index(sa) + 1])))

    for graph, kind in ((folder_graph, "folder"), (file_graph, "file")):
        for component in find_cycles(graph):
            circle = one_circle(graph, component)
            names = [c if kind == "folder" else short(c) for c in circle]
            lines = ["a %s cycle: %s" % (kind, " -> ".join(names))]
            for a, b in zip(circle, circle[1:]):
                lines.append("    " + why[(a, b)])
            problems.append("\n".join(lines))
    return problems, len(files)


def self_test():
    """Each broken tree fails with the expected words; the good one passes."""
    trees = {
        "good": ({"base/lw-a.h": "", "base/lw-a.c": '#include "lw-a.h"\n',
                  "loop/lw-b.c": '#include "lw-a.h"\n'}, None),
        "upward": ({"base/lw-a.c": '#include "lw-b.h"\n', "loop/lw-b.h": ""},
                   "stage base may include only"),
        "file cycle": ({"base/lw-a.h": "", "base/lw-a.c": '#include "lw-b.h"\n',
                        "base/lw-b.h": "", "base/lw-b.c": '#include "lw-a.h"\n'},
                       "a file cycle: lib/base/lw-a.c -> lib/base/lw-b.c -> lib/base/lw-a.c"),
        "unknown folder": ({"misc/lw-a.c": ""}, "not a stage"),
        "same name": ({"base/lw-a.h": "", "loop/lw-a.h": ""}, "share a name"),
        "800 lines": ({"base/lw-a.c": "x\n" * MAX_LINES}, None),
        "801 lines": ({"base/lw-a.c": "x\n" * (MAX_LINES + 1)},
                      "lib/base/lw-a.c: 801 lines, over the 800 a file of lib/ may have"),
    }
    failed = 0
    print("1..%d" % len(trees))
    for name, (tree, expected) in trees.items():
        top = tempfile.mkdtemp(prefix="check-layout-")
        try:
            for rel, text in tree.items():
                path = os.path.join(top, "lib", rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            problems, _ = check(os.path.join(top, "lib"))
        finally:
            shutil.rmtree(top)
        text = "\n".join(problems)
        ok = not problems if expected is None else expected in text
        print("%s - %s" % ("ok" if ok else "not ok", name))
        if not ok:
            print("# expected %r, got:\n# %s" % (expected, text.replace("\n", "\n# ")))
            failed += 1
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print("usage: check-layout.py LIBDIR | --self-test", file=sys.stderr)
        return 2
    problems, n_files = check(sys.argv[1])
    if problems:
        print("\n".join(problems))
        print("%d problem(s) in the layout of %s (stages, lowest first: %s)"
              % (len(problems), sys.argv[1], ", ".join(STAGES)))
        return 1
    print("%d files of %s: the stages depend one way, no cycle" % (n_files, sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
