"""pipecat's segmented recogniser, holding each stretch's transcript for the turn rule's verdict.

pipecat's ``SegmentedSTTService`` transcribes the caller's audio between each
VAD start and stop, and clears its buffer at the stop. A caller who pauses
mid-sentence ("How much is my ... bill?") long enough for the VAD to stop,
but not long enough to end the turn, is transcribed in fragments, and a
recogniser hears a fragment cut mid-phrase worse than the phrase: Whisper
hears "How much is my" as "How much is mine?".

``WholeTurnSegments`` still transcribes each stretch as soon as the VAD stops
(so a turn that ends there loses no time), but keeps the stretch's audio and
holds its transcript until the end-of-turn rule's ``StretchVerdictFrame``
comes upstream:

* ``joined=False`` (the rule's grace passed in silence): the transcript goes
  out as pipecat would have sent it, and the audio is let go;
* ``joined=True`` (the caller spoke again inside the grace): the transcript is
  dropped (a ``NoWordsFrame`` answers that stop for the rule), and the next
  stop's segment is the whole of it, from the first stretch's start.

The verdicts come in the order of the stops, in-band behind them, so the
oldest undecided stretch is the one a verdict is for. The recogniser holds
only after a verdict has told it a rule is judging (the rule sends one at
every VAD start, before the stop it will judge), and never longer than
``HOLD_LIMIT_SECS``: a stretch nobody judges is let go as pipecat would. A
graceful stop lets every held stretch go first.

The privates it uses (``_handle_user_started_speaking``,
``_handle_user_stopped_speaking``, ``_segment_task_handler``,
``_segment_queue``, ``_audio_buffer``, ``_audio_buffer_size_1s``,
``_user_speaking``) are checked by ``tests/providers/test_local_speech.py`` and
``tests/pipecat_internals/test_segments.py``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import (
    EndFrame,
    ErrorFrame,
    Frame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.stt_service import SegmentedSTTService

from teamrunner.frames import NoWordsFrame, StretchVerdictFrame

# The longest a stretch's transcript waits for its verdict: the rule's own
# wall-clock limit (grace plus a second of slack) with room for a busy loop.
HOLD_LIMIT_SECS = 3.0


@dataclass
class HeldStretch:
    """One stretch between a VAD start and stop, waiting for its verdict."""

    # Where the stretch ended in the recogniser's buffer.
    end: int
    joined: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class WholeTurnSegments(SegmentedSTTService):
    """A segmented recogniser that transcribes a turn whole when the caller resumed inside it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._judged = False
        self._caller_speaking = False
        # Stretches waiting for their verdict, oldest first.
        self._held: deque[HeldStretch] = deque()
        # One entry per segment queued for transcription: its stretch if held, else None.
        self._segment_holds: deque[HeldStretch | None] = deque()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, StretchVerdictFrame):
            self._judged = True
            self._decide_oldest(joined=frame.joined)
        await super().process_frame(frame, direction)

    async def stop(self, frame: EndFrame) -> None:
        # pipecat's stop transcribes what is queued: nothing may wait on a verdict then.
        self._judged = False
        while self._undecided():
            self._decide_oldest(joined=False)
        await super().stop(frame)

    async def _handle_user_started_speaking(self, frame: VADUserStartedSpeakingFrame) -> None:
        self._caller_speaking = True
        await super()._handle_user_started_speaking(frame)

    async def _handle_user_stopped_speaking(self, frame: VADUserStoppedSpeakingFrame) -> None:
        self._caller_speaking = False
        if not self.is_usable:
            await super()._handle_user_stopped_speaking(frame)
            return
        held = HeldStretch(end=len(self._audio_buffer)) if self._judged else None
        stretch = bytes(self._audio_buffer)
        # pipecat's step queues the segment and clears the buffer.
        self._segment_holds.append(held)
        await super()._handle_user_stopped_speaking(frame)
        if held is not None:
            # The buffer keeps growing until the verdict: a joined stretch needs all of it.
            self._held.append(held)
            self._audio_buffer[:0] = stretch
            self._user_speaking = True

    async def _segment_task_handler(self) -> None:
        """pipecat's loop, with each held stretch's transcript sent or dropped by its verdict."""
        while (audio := await self._segment_queue.get()) is not None:
            held = self._segment_holds.popleft()
            frames = await self._transcribe(audio)
            if held is not None and await self._joined(held):
                await self.push_frame(NoWordsFrame())
                continue
            for transcribed in frames:
                if isinstance(transcribed, ErrorFrame):
                    await self.push_error_frame(transcribed)
                else:
                    await self.push_frame(transcribed)

    async def _transcribe(self, audio: bytes) -> list[Frame]:
        try:
            return [frame async for frame in self.run_stt(audio) if frame is not None]
        except Exception as e:
            await self.push_error(f"{self}: transcription failed: {e}", exception=e)
            return []

    async def _joined(self, held: HeldStretch) -> bool:
        try:
            return await asyncio.wait_for(asyncio.shield(held.joined), HOLD_LIMIT_SECS)
        except TimeoutError:
            # Nobody judged it: let it go as pipecat would have.
            self._decide(held, joined=False)
            return False

    def _undecided(self) -> bool:
        return any(not held.joined.done() for held in self._held)

    def _decide_oldest(self, *, joined: bool) -> None:
        for held in self._held:
            if not held.joined.done():
                self._decide(held, joined=joined)
                return

    def _decide(self, held: HeldStretch, *, joined: bool) -> None:
        """Settle one stretch; a stretch let go takes its audio out of the buffer."""
        if held.joined.done():
            return
        held.joined.set_result(joined)
        if not joined:
            del self._audio_buffer[: held.end]
            for later in self._held:
                later.end = max(0, later.end - held.end)
        while self._held and self._held[0].joined.done():
            self._held.popleft()
        self._user_speaking = self._caller_speaking or self._undecided()
        if not self._user_speaking and len(self._audio_buffer) > self._audio_buffer_size_1s:
            del self._audio_buffer[: len(self._audio_buffer) - self._audio_buffer_size_1s]
