"""How long a call has gone without anyone speaking or typing: the session idle timeout.

pipecat's ``PipelineWorker`` has an idle timeout of its own, but it watches
for activity with an observer of its own, and pipecat gives every observer a
queue and a task and hands it every frame each processor processes. Measured
with ``bench/load_profile.py`` (BENCHMARKS.md section 5), that observer and
the call's journal observer together cost about a seventh of a voice call's
CPU. So the call's one registered observer (``teamrunner.call.rtvi.CallEvents``)
hands each frame to its journal observer (``teamrunner.call.observer.CallObserver``), which
feeds this watch, and the session ends the call when ``idle()`` returns.
"""

from __future__ import annotations

import asyncio
import math
import time

from pipecat.frames.frames import (
    BotSpeakingFrame,
    Frame,
    InputTransportMessageFrame,
    InterimTranscriptionFrame,
    LLMFullResponseEndFrame,
    StartFrame,
    TranscriptionFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
)

# What counts as a call being alive: someone spoke or typed, or the bot answered.
ACTIVITY_FRAMES: tuple[type[Frame], ...] = (
    BotSpeakingFrame,
    InputTransportMessageFrame,
    InterimTranscriptionFrame,
    LLMFullResponseEndFrame,
    StartFrame,
    TranscriptionFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
)


class ActivityWatch:
    """The time since a call's last activity frame.

    Args:
        timeout_secs: How long a call may go without activity; 0 or less
            never times out.
    """

    def __init__(self, timeout_secs: float) -> None:
        self._timeout = timeout_secs if timeout_secs > 0 else math.inf
        self._last = time.monotonic()

    def saw(self, frame: Frame) -> None:
        if isinstance(frame, ACTIVITY_FRAMES):
            self._last = time.monotonic()

    async def idle(self) -> None:
        """Return once the call has gone ``timeout_secs`` without activity (never, if 0)."""
        while True:
            remaining = self._last + self._timeout - time.monotonic()
            if remaining <= 0:
                return
            # Sleeping out the remainder rather than a timer per frame: a frame
            # costs one clock read, and a busy call wakes this once per timeout.
            await asyncio.sleep(remaining)
