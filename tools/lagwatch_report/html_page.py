"""One self-contained HTML page: a histogram of the lag durations, the
causes' table, and per cause a flame graph of its samples and a flame
chart of its longest lag's calls, drawn here as SVG (the page's script
only zooms)."""

import html
import math
from typing import TextIO

from .grouping import Call, Cause, Grouping
from .naming import Path, cause_name, format_ms, merged_stacks, plural, short_time
from .symbolizer import Names

HTML_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table.causes{border-collapse:collapse}
table.causes th,table.causes td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}
table.causes td{white-space:nowrap}
table.causes td.text,table.causes th.text{text-align:left;white-space:normal}
code{font-family:ui-monospace,monospace;font-size:.92em}
svg text{font:11px ui-monospace,monospace;pointer-events:none}
svg.flame rect{stroke:#fff;stroke-width:.5;cursor:pointer}
svg.flame rect:hover{stroke:#000}
svg.calls rect{stroke:#fff;stroke-width:.5}
h3{font-size:1em}
.bar{fill:#4a7fb5}.axis{stroke:#888}
.note{color:#666}
"""

# Click a frame to zoom its subtree to the full width; click the root to reset.
HTML_SCRIPT = """
document.querySelectorAll('svg.flame').forEach(function (svg) {
  var width = +svg.dataset.width;
  function zoom(x0, w0, depth) {
    svg.querySelectorAll('g.frame').forEach(function (g) {
      var x = +g.dataset.x, w = +g.dataset.w, d = +g.dataset.depth;
      var inside = x >= x0 - 1e-9 && x + w <= x0 + w0 + 1e-9;
      var show = d < depth ? x <= x0 + 1e-9 && x + w >= x0 + w0 - 1e-9 : inside;
      g.style.display = show ? '' : 'none';
      if (!show) return;
      var nx = d < depth ? 0 : (x - x0) / w0 * width, nw = d < depth ? width : w / w0 * width;
      var r = g.querySelector('rect'), t = g.querySelector('text');
      r.setAttribute('x', nx); r.setAttribute('width', Math.max(nw, 0.5));
      t.setAttribute('x', nx + 3);
      var chars = Math.floor((nw - 6) / 6.6), name = g.dataset.name;
      t.textContent = chars < 3 ? '' : name.length > chars ? name.slice(0, chars - 1) + '\\u2026' : name;
    });
  }
  svg.addEventListener('click', function (e) {
    var g = e.target.closest('g.frame');
    if (g) zoom(+g.dataset.x, +g.dataset.w, +g.dataset.depth);
  });
});
"""

FLAME_WIDTH = 1100
FLAME_ROW = 17


class FlameNode:
    """A frame of the flame graph: its samples and its callees by name."""

    __slots__ = ("samples", "children")

    def __init__(self) -> None:
        self.samples = 0
        self.children: dict[str, FlameNode] = {}


def flame_tree(stacks: dict[Path, int]) -> FlameNode:
    """The merged stacks as a tree."""
    root = FlameNode()
    for path, samples in stacks.items():
        root.samples += samples
        node = root
        for name in path:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = FlameNode()
            child.samples += samples
            node = child
    return root


def flame_color(name: str) -> str:
    h = 0
    for c in name:
        h = (h * 31 + ord(c)) & 0xffff
    if "+0x" in name:
        return "rgb(170,170,170)"
    return "rgb(%d,%d,%d)" % (205 + h % 50, 80 + (h >> 4) % 130, 40 + (h >> 8) % 40)


def flame_svg(cause: Cause, names: Names, title: str) -> str:
    """A flame graph (root at the bottom) of the cause's samples, drawn here
    so the page needs no script to show it; the script only zooms."""
    tree = flame_tree(merged_stacks(cause, names))
    total = tree.samples
    if total == 0:
        return "<p class=note>no samples</p>"
    rows: list[tuple[str, float, float, int, int]] = []
    depth_max = 0

    def walk(node: FlameNode, name: str, x: float, depth: int) -> None:
        nonlocal depth_max
        width = node.samples / total
        if width * FLAME_WIDTH < 0.3:
            return
        rows.append((name, x, width, depth, node.samples))
        depth_max = max(depth_max, depth)
        offset = x
        for child_name, child in sorted(node.children.items(), key=lambda kv: kv[0]):
            walk(child, child_name, offset, depth + 1)
            offset += child.samples / total

    walk(tree, title, 0.0, 0)
    height = (depth_max + 1) * FLAME_ROW
    parts = ['<svg class=flame xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" data-width="%d">'
             % (FLAME_WIDTH, height, FLAME_WIDTH)]
    for name, x, width, depth, samples in rows:
        px = x * FLAME_WIDTH
        pw = max(width * FLAME_WIDTH, 0.5)
        y = height - (depth + 1) * FLAME_ROW
        chars = int((pw - 6) / 6.6)
        text = "" if chars < 3 else (name if len(name) <= chars else name[:chars - 1] + "\u2026")
        label = html.escape(name, quote=True)
        parts.append('<g class=frame data-name="%s" data-x="%.6f" data-w="%.6f" data-depth="%d">'
                     '<title>%s: %d samples (%.1f%%)</title>'
                     '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>'
                     '<text x="%.2f" y="%d">%s</text></g>'
                     % (label, x, width, depth, label, samples, 100.0 * width, px, y, pw, FLAME_ROW - 1,
                        flame_color(name), px + 3, y + FLAME_ROW - 5, html.escape(text)))
    parts.append("</svg>")
    return "".join(parts)


def calls_svg(cause: Cause) -> str:
    """A flame chart of the cause's longest lag: time on x, one row per
    call depth, callers above callees."""
    assert cause.calls is not None and cause.calls_lag is not None
    lag_id, duration, exact = cause.calls_lag
    span = max([duration] + [start + length for _, start, length, _ in cause.calls]) or 1.0
    rows: list[tuple[str, float, float, int]] = []

    def walk(calls: list[Call], depth: int) -> None:
        for name, start, length, children in calls:
            rows.append((name, start, length, depth))
            walk(children, depth + 1)

    walk(cause.calls, 0)
    height = (max(depth for _, _, _, depth in rows) + 2) * FLAME_ROW
    parts = ['<svg class=calls xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">'
             % (FLAME_WIDTH, height)]
    for tick in range(0, 11):
        x = tick * (FLAME_WIDTH - 60) / 10
        parts.append('<text class=tick x="%.1f" y="%d">%s</text>' % (x, height - 4, format_ms(span * tick / 10)))
    for name, start, length, depth in rows:
        px = start / span * (FLAME_WIDTH - 60)
        pw = max(length / span * (FLAME_WIDTH - 60), 0.5)
        y = depth * FLAME_ROW
        chars = int((pw - 6) / 6.6)
        label = "%s %s" % (name, format_ms(length))
        text = "" if chars < 3 else (label if len(label) <= chars else label[:chars - 1] + "\u2026")
        parts.append('<g class=call data-name="%s" data-start-ms="%.1f" data-duration-ms="%.1f" data-depth="%d">'
                     '<title>%s: %s, at %s</title>'
                     '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>'
                     '<text x="%.2f" y="%d">%s</text></g>'
                     % (html.escape(name, quote=True), start, length, depth, html.escape(name),
                        format_ms(length), format_ms(start), px, y, pw, FLAME_ROW - 1, flame_color(name),
                        px + 3, y + FLAME_ROW - 5, html.escape(text)))
    parts.append("</svg>")
    return ("<h3>Calls of its longest lag</h3>\n<p class=note>lag %s, %s; %s. Time runs left to right; "
            "callers above callees.</p>\n%s"
            % (html.escape(lag_id), format_ms(duration),
               "exact, from the tracer" if exact else "from the samples: each call within about one sampling "
               "interval", "".join(parts)))


def bin_label(ms: float) -> str:
    """A bin's lower edge to two significant digits: 10^(3/10) * 100 ms is
    "200 ms", not "199.5 ms"."""
    if ms <= 0:
        return "0"
    ms = round(ms, 1 - math.floor(math.log10(ms)))
    return "%g ms" % ms if ms < 1000 else "%g s" % (ms / 1000)


def histogram_svg(histogram: dict[int, int]) -> str:
    """Lag durations in logarithmic bins, 10 a decade."""
    if not histogram:
        return "<p class=note>no lags</p>"
    low = min(histogram)
    high = max(histogram)
    bins = list(range(low, high + 1))
    peak = max(histogram.values())
    height, left, bottom = 220, 50, 40
    bar = min(48.0, 840 / len(bins))
    width = max(320, round(left + bar * len(bins) + 10))
    parts = ['<svg class=histogram xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (width, height)]
    parts.append('<line class=axis x1="%d" y1="%d" x2="%d" y2="%d"/>'
                 % (left, height - bottom, width - 10, height - bottom))
    parts.append('<text x="4" y="14">lags</text><text x="4" y="30">%d</text>' % peak)
    for i, b in enumerate(bins):
        count = histogram.get(b, 0)
        bar_height = (height - bottom - 20) * count / peak
        x = left + i * bar
        low_ms = 10 ** (b / 10) if b > -1000 else 0
        high_ms = 10 ** ((b + 1) / 10) if b > -1000 else 0
        parts.append('<rect class=bar x="%.1f" y="%.1f" width="%.1f" height="%.1f">'
                     '<title>%.0f-%.0f ms: %d lags</title></rect>'
                     % (x + 1, height - bottom - bar_height, max(bar - 2, 1), bar_height, low_ms, high_ms, count))
        # 1, 2, 5 of each decade, or every bin when there are few.
        if b % 10 in (0, 3, 7) or len(bins) <= 12:
            parts.append('<text x="%.1f" y="%d">%s</text>' % (x, height - bottom + 15, bin_label(low_ms)))
    parts.append('<text x="%d" y="%d">duration (log scale)</text>' % (width // 2 - 60, height - 5))
    parts.append("</svg>")
    return "".join(parts)


def write_html(out: TextIO, grouping: Grouping, causes: list[Cause], names: Names) -> None:
    e = html.escape
    out.write("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
              "<title>lagwatch report</title><style>%s</style></head><body>\n" % HTML_STYLE)
    out.write("<h1>lagwatch report</h1>\n<p id=summary>%s, %s (%d killed) in %s, from %s in %s%s.</p>\n"
              % (plural(grouping.total_lags(), "lag"), plural(grouping.events["hang"], "hang"),
                 grouping.events["hang-killed"], plural(len(grouping.causes), "cause"),
                 plural(grouping.records, "record"), plural(grouping.files, "input"),
                 "; %s skipped" % plural(grouping.malformed, "malformed line") if grouping.malformed else ""))
    out.write("<h2>Lag durations</h2>\n<div id=histogram>%s</div>\n" % histogram_svg(grouping.histogram))
    out.write("<h2>Causes</h2>\n<table class=causes id=causes><thead><tr><th>#</th><th class=text>cause</th>"
              "<th>lags</th><th>hangs</th><th>total</th><th>p50</th><th>p95</th><th>max</th>"
              "<th class=text>first seen</th><th class=text>last seen</th><th class=text>programs</th>"
              "<th class=text>hosts</th></tr></thead><tbody>\n")
    for rank, cause in enumerate(causes, 1):
        d = cause.durations
        out.write('<tr class=cause data-fingerprint="%s"><td>%d</td><td class=text><a href="#cause-%d">%s</a>'
                  '<br><code>%s</code></td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                  '<td class=text>%s</td><td class=text>%s</td><td class=text>%s</td><td class=text>%s</td></tr>\n'
                  % (e(cause.fingerprint or "-"), rank, rank, e(cause_name(cause, names)),
                     e(cause.fingerprint or "-"), cause.count(), cause.hangs, format_ms(cause.total_ms),
                     format_ms(d.quantile(0.5)), format_ms(d.quantile(0.95)),
                     format_ms(d.max if d.n else None), short_time(cause.first), short_time(cause.last),
                     e(cause.programs.describe()), e(cause.hosts.describe())))
    out.write("</tbody></table>\n")
    for rank, cause in enumerate(causes, 1):
        out.write('<section class=cause id="cause-%d"><h2>#%d %s</h2>\n<p class=note>%d samples; '
                  'click a frame to zoom, the bottom bar to reset.</p>\n%s\n%s</section>\n'
                  % (rank, rank, e(cause_name(cause, names)), cause.samples,
                     flame_svg(cause, names, "all samples of #%d" % rank),
                     calls_svg(cause) + "\n" if cause.calls else ""))
    out.write("<script>%s</script>\n</body></html>\n" % HTML_SCRIPT)

