"""What the caller hears when the LLM fails them: a short line in the member's voice.

An LLM that errs or stalls (``RUNNER_LLM_TIMEOUT_SECS``) leaves the caller
in silence: pipecat reports the error upstream, pipecat-manager gets an RTVI
``error``, and nothing is spoken. ``LLMFallback`` sits just before the LLM,
sees that error on its way up, and sends the fallback line down to the
voice, which is whichever member's voice has the call. The call goes on;
the caller's next turn asks the LLM again.
"""

from __future__ import annotations

from pipecat.frames.frames import ErrorFrame, Frame, TTSSpeakFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.llm_service import LLMService


class LLMFallback(FrameProcessor):
    """Passes every frame; answers an LLM's non-fatal error with ``line``, spoken."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self._line = line

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if (
            direction == FrameDirection.UPSTREAM
            and isinstance(frame, ErrorFrame)
            and not frame.fatal
            and isinstance(frame.processor, LLMService)
        ):
            await self.push_frame(TTSSpeakFrame(self._line), FrameDirection.DOWNSTREAM)
