"""The team call's voice slot: replies are spoken in the active member's voice.

A switch is a frame from the head of the pipeline that reaches this router
behind the previous member's last words (see ``routing/router.py``), so those
are still spoken in the previous member's voice.

And the next voice waits until the previous one has said them. A switched
service keeps making the audio it was given, and pipecat's switcher lets an
inactive service's output through, so without a wait the previous member's
last words (a handoff line, typically) and the next member's first words
would leave interleaved, chunk by chunk, whenever the next member answers
before the previous voice has finished. So on a switch the router hands the
previous voice a marker, which a pipecat TTS service queues behind the audio
it is still making (as it queues every frame that follows a reply), and holds
what follows the switch until the marker comes back out; then it switches.
That follows the previous voice's real end, however long its last words take
to make. A barge-in cuts the previous voice off anyway, so it switches at
once; so does a previous voice that stalls, making no audio for
``stall_secs`` (``RUNNER_TTS_TIMEOUT_SECS``), as a voice that has wedged
would never hand the marker back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass

from loguru import logger
from pipecat.frames.frames import (
    ControlFrame,
    Frame,
    InterruptionFrame,
    ManuallySwitchServiceFrame,
    TTSAudioRawFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.tts_service import TTSService

from routing.router import MemberRouting


@dataclass
class _PreviousVoiceDone(ControlFrame):
    """Comes out of the previous voice once it has made all the audio it was given."""


class RoutingTTSService(MemberRouting[TTSService]):
    """Speaks the active member's replies in that member's voice, one voice at a time.

    Args:
        by_member: Member id to that member's voice; members may share one.
        start_member_id: The member whose voice is active at the start.
        stall_secs: How long a switch waits for a previous voice that makes no audio.
    """

    kind = "TTS"

    def __init__(
        self,
        by_member: Mapping[str, TTSService | None],
        start_member_id: str,
        *,
        stall_secs: float = 5.0,
    ) -> None:
        super().__init__(by_member, start_member_id)
        self._stall_secs = stall_secs
        self._switch: ManuallySwitchServiceFrame | None = None
        self._marker: _PreviousVoiceDone | None = None
        self._stall_watch: asyncio.Task[None] | None = None
        # When the previous voice last made audio while a switch is held.
        self._last_audio = 0.0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if (
            isinstance(frame, ManuallySwitchServiceFrame)
            and direction == FrameDirection.DOWNSTREAM
            and frame.service in self.services
            and frame.service is not self.strategy.active_service
            # Only a TTS service holds the marker behind the audio it is making.
            and isinstance(self.strategy.active_service, TTSService)
        ):
            await self._hand_over(frame)
            return
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame) and self._switch is not None:
            # The previous voice has just been cut off: nothing left to wait for.
            await self._finish_handover()

    async def push_frame(self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM):
        if isinstance(frame, _PreviousVoiceDone):
            if frame is self._marker:
                await self._finish_handover()
            return
        if self._switch is not None and isinstance(frame, TTSAudioRawFrame):
            # Only the previous voice is making audio while the switch is held.
            self._last_audio = time.monotonic()
        await super().push_frame(frame, direction)

    async def _hand_over(self, switch: ManuallySwitchServiceFrame) -> None:
        """Hold what follows ``switch`` until the previous voice has said what it has."""
        if self._switch is not None:
            await self._finish_handover()
        self._switch = switch
        self._marker = _PreviousVoiceDone()
        self._marker.interruptible = False
        await self.pause_processing_frames()
        await self.strategy.active_service.queue_frame(self._marker)
        self._last_audio = time.monotonic()
        self._stall_watch = self.create_task(self._watch_for_a_stall(), name="voice-handover")

    async def _watch_for_a_stall(self) -> None:
        """Switch anyway once the previous voice has made no audio for ``stall_secs``."""
        # A deadline that each chunk of audio pushes back: sleep until it is due, rather
        # than wake for every chunk (an Event would).
        while (left := self._last_audio + self._stall_secs - time.monotonic()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)
        self._stall_watch = None
        logger.warning(
            f"{self}: the previous voice made no audio for {self._stall_secs:g}s "
            "and has not finished; switching anyway"
        )
        await self._finish_handover()

    async def _finish_handover(self) -> None:
        switch, self._switch, self._marker = self._switch, None, None
        if self._stall_watch is not None and self._stall_watch is not asyncio.current_task():
            await self.cancel_task(self._stall_watch)
        self._stall_watch = None
        if switch is not None:
            await super().process_frame(switch, FrameDirection.DOWNSTREAM)
            await self.resume_processing_frames()

    async def cleanup(self) -> None:
        await super().cleanup()
        if self._stall_watch is not None:
            await self.cancel_task(self._stall_watch)
            self._stall_watch = None
