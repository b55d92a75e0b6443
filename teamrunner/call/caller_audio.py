"""Where the caller's audio stops travelling down a call's pipeline.

pipecat's user context aggregator runs the VAD and turn detection on every
caller audio frame and then passes the frame on, for realtime services that
hear audio themselves. Nothing after it in this runner's pipelines does: the
LLM, the voice, the output socket and the assistant aggregator each queued
and forwarded 50 frames a second for nothing, and in a team call the LLM and
voice routers fanned each one out to every member's service. Measured with
``bench/routing_overhead.py``; see BENCHMARKS.md.
"""

from __future__ import annotations

from pipecat.frames.frames import Frame, InputAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

# The caller's audio as frame types, for observers to say they never read it
# (``unread_frame_types``, ``teamrunner.pipecat_internals.worker_observer``).
CALLER_AUDIO: frozenset[type[Frame]] = frozenset({InputAudioRawFrame})


class CallerAudioStop(FrameProcessor):
    """Drops caller audio going downstream; every other frame passes."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame) and direction == FrameDirection.DOWNSTREAM:
            return
        await self.push_frame(frame, direction)
