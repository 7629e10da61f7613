"""lagwatch_report.speedscope: speedscope's file format."""

import json
import unittest

from lagwatch_report.speedscope import write_speedscope
from records import grouped, known_records, no_offline_names, output


class SpeedscopeTest(unittest.TestCase):
    def test_known_records(self) -> None:
        grouping = grouped(known_records())
        out = output()
        write_speedscope(out, grouping.ordered("total"), no_offline_names())
        document = json.loads(out.getvalue())
        self.assertEqual(document["$schema"], "https://www.speedscope.app/file-format-schema.json")
        frames = [f["name"] for f in document["shared"]["frames"]]
        # Frames are shared: main, GLib's dispatch and libc's leaf once each.
        self.assertEqual(len(frames), len(set(frames)))
        self.assertEqual(frames.count("clock_nanosleep"), 1)
        profiles = document["profiles"]
        self.assertEqual([p["name"] for p in profiles],
                         ["render_leaf \u2190 render_middle (render.c:20) [bbbbbbbbbbbbbbbb]: 1 lags, 1000.0 ms",
                          "save_leaf \u2190 save_middle (save.c:20) [aaaaaaaaaaaaaaaa]: 3 lags, 600.0 ms"])
        save = profiles[1]
        self.assertEqual((save["type"], save["unit"], save["startValue"], save["endValue"]),
                         ("sampled", "none", 0, 30))
        self.assertEqual(save["weights"], [30])
        self.assertEqual([frames[i] for i in save["samples"][0]],
                         ["main", "g_main_context_dispatch", "save_handler", "save_middle", "save_leaf",
                          "clock_nanosleep"])


if __name__ == "__main__":
    unittest.main()
