"""``python bench/gc_probe.py``: the runner's ``main.py``, with every garbage collection timed.

Run in the runner's place (``RunnerProcess(command=...)``, the checkout to
measure as its working directory), it records each collection's generation,
duration, the objects it freed and (for a full one) the objects it walked
through ``gc.callbacks``, and writes them as
JSON lines to ``GC_PROBE_OUT`` when the process exits. ``bench/gc_pauses.py``
reads them.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import sys
import time
from typing import Any

collections_seen: list[dict[str, Any]] = []
_started = [0.0]
_walked = [0]


def _timed(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        # What a full collection walks: every object the collector tracks and has
        # not frozen (counted before the clock starts, so not in its time).
        _walked[0] = len(gc.get_objects()) if info["generation"] == 2 else 0
        _started[0] = time.perf_counter()
        return
    collections_seen.append(
        {
            "at": time.monotonic(),
            "generation": info["generation"],
            "ms": (time.perf_counter() - _started[0]) * 1000,
            "collected": info["collected"],
            "walked": _walked[0],
        }
    )


def _write() -> None:
    with open(os.environ["GC_PROBE_OUT"], "w") as out:
        for seen in collections_seen:
            out.write(json.dumps(seen) + "\n")


if __name__ == "__main__":
    gc.callbacks.append(_timed)
    atexit.register(_write)
    sys.path.insert(0, os.getcwd())
    sys.argv = ["main.py"]
    runpy.run_path("main.py", run_name="__main__")
