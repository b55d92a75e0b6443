"""Warming a worker up before the front sends it a call.

A pool's worker is not ready until it can take a call at full speed: the
speech models named in ``RUNNER_PRELOAD_MODELS`` (by default Silero VAD and
smart-turn, which every voice call uses) are loaded before it answers, so
neither the first call placed on it nor the first on a replacement waits for
them. The front waits for each worker's ``/ready`` (not its ``/health``), so
a worker that warms itself in the background instead (``teamrunner.warmup``)
is waited for just the same.
"""

from __future__ import annotations

from teamrunner.runtime import Runtime
from teamrunner.warmup import preload_names


def warm_up(runtime: Runtime) -> None:
    """Load the speech models ``RUNNER_PRELOAD_MODELS`` names, now."""
    runtime.shared.models.preload(preload_names(runtime.settings.preload_models))
