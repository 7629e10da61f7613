"""lagwatch_report.html_page: one self-contained HTML page."""

import html.parser
import unittest

from lagwatch_report.html_page import bin_label, write_html
from records import CAUSE_A, PROGRAM, frame, grouped, known_records, no_offline_names, output, record


class Elements(html.parser.HTMLParser):
    """Start tags with their attributes, and whether the page loads anything."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def page(records: list[dict[str, object]]) -> tuple[str, Elements]:
    grouping = grouped(records)
    out = output()
    write_html(out, grouping, grouping.ordered("total"), no_offline_names())
    parser = Elements()
    parser.feed(out.getvalue())
    return out.getvalue(), parser


class HtmlTest(unittest.TestCase):
    def test_known_records(self) -> None:
        text, elements = page(known_records())
        self.assertIn("<p id=summary>4 lags, 0 hangs (0 killed) in 2 causes, from 4 records in 1 input.</p>", text)
        rows = [a["data-fingerprint"] for tag, a in elements.tags if tag == "tr" and a.get("class") == "cause"]
        self.assertEqual(rows, ["bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa"])
        self.assertEqual([a["id"] for tag, a in elements.tags if tag == "section"], ["cause-1", "cause-2"])
        frames = [a["data-name"] for tag, a in elements.tags if tag == "g" and a.get("class") == "frame"]
        self.assertIn("save_leaf", frames)
        self.assertIn("all samples of #2", frames)
        # Self-contained: nothing loaded from elsewhere.
        self.assertFalse([a for tag, a in elements.tags if a.get("src") or (a.get("href") or "#").startswith("http")])

    def test_names_are_escaped(self) -> None:
        text, elements = page([record(CAUSE_A, 300.0, "2026-11-21T10:00:00.000Z",
                                      [frame(PROGRAM, "<script>alert(1)</script>"), frame(PROGRAM, "main")])])
        self.assertNotIn("<script>alert", text)
        self.assertEqual([tag for tag, _ in elements.tags].count("script"), 1)

    def test_histogram_bins(self) -> None:
        self.assertEqual([bin_label(10 ** (b / 10)) for b in (20, 23, 27, 30, 40)],
                         ["100 ms", "200 ms", "500 ms", "1 s", "10 s"])


if __name__ == "__main__":
    unittest.main()
