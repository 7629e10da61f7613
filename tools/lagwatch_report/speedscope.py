"""speedscope's file format (https://www.speedscope.app/file-format-schema.json)."""

import json
from typing import Any, TextIO

from .grouping import Cause
from .naming import cause_name, format_ms, merged_stacks
from .symbolizer import Names


def write_speedscope(out: TextIO, causes: list[Cause], names: Names) -> None:
    """Frames shared, one sampled profile per cause."""
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    profiles: list[dict[str, Any]] = []
    for cause in causes:
        samples = []
        weights = []
        for path, weight in sorted(merged_stacks(cause, names).items(), key=lambda kv: (-kv[1], kv[0])):
            stack = []
            for name in path:
                i = index.get(name)
                if i is None:
                    i = index[name] = len(frames)
                    frames.append({"name": name})
                stack.append(i)
            samples.append(stack)
            weights.append(weight)
        profiles.append({"type": "sampled",
                         "name": "%s [%s]: %d lags, %s" % (cause_name(cause, names), cause.fingerprint or "-",
                                                           cause.count(), format_ms(cause.total_ms)),
                         "unit": "none", "startValue": 0, "endValue": sum(weights),
                         "samples": samples, "weights": weights})
    json.dump({"$schema": "https://www.speedscope.app/file-format-schema.json",
               "shared": {"frames": frames}, "profiles": profiles,
               "name": "lagwatch-report", "activeProfileIndex": 0, "exporter": "lagwatch-report"},
              out, separators=(",", ":"))
    out.write("\n")
