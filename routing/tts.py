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

A transition does not wait for the previous voice. pipecat queues every frame
that follows a reply behind the audio the voice is still making, the
function call's start and result included, and the next member's LLM runs
only once the result is in the context at the end of the pipeline. When a
member says a line of its own as it transfers ("Sure, one moment."), the
next member was asked only once the previous voice had made that line, and
the caller heard the silence of the next member's whole first answer after
it (312 ms p50 with provider-like latency, BENCHMARKS.md section 10). So the
calls of a response that calls a transition (``transitions``) pass the
previous voice: their starts, the results of the Go tools called with it
(which ask for no run of their own, ``teamrunner.call.tool_batch``), and a
transition's result that moves the call on (one whose properties say
pipecat.flows enters the next node once it is in the context) go straight on
down, in the order they come, and the next member's LLM answers while the previous
line is still being made and played. A switch that arrives before they have
passed waits for them, so that it cannot hold them behind the line either.
The line itself is still said whole, in the previous voice, before the next.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from loguru import logger
from pipecat.frames.frames import (
    ControlFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    InterruptionFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    ManuallySwitchServiceFrame,
    TTSAudioRawFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.tts_service import TTSService

from routing.parting_words import PartingWords
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
        transitions: The names of the functions that hand the call to another
            member: a response that calls one does not wait for the voice.
        parting: Where the line said with such a response is kept for the next
            member's first request.
    """

    kind = "TTS"

    def __init__(
        self,
        by_member: Mapping[str, TTSService | None],
        start_member_id: str,
        *,
        stall_secs: float = 5.0,
        transitions: Iterable[str] = (),
        parting: PartingWords | None = None,
    ) -> None:
        super().__init__(by_member, start_member_id)
        self._stall_secs = stall_secs
        self._transitions = frozenset(transitions)
        # The calls of a handover still to pass the voice (tool call ids), and a
        # switch that waits for them.
        self._ahead: set[str] = set()
        self._batch: frozenset[str] = frozenset()
        self._deferred: ManuallySwitchServiceFrame | None = None
        self._parting = parting or PartingWords()
        # The text of the reply on its way to the voice, as its LLM wrote it.
        self._said: list[str] = []
        self._switch: ManuallySwitchServiceFrame | None = None
        self._marker: _PreviousVoiceDone | None = None
        self._stall_watch: asyncio.Task[None] | None = None
        # When the previous voice last made audio while a switch is held.
        self._last_audio = 0.0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if type(frame) is LLMTextFrame:
            # Most of what comes down: nothing but what the reply says.
            if not frame.skip_tts:
                self._said.append(frame.text)
            await super().process_frame(frame, direction)
            return
        if direction == FrameDirection.DOWNSTREAM and await self._passed_ahead(frame):
            return
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
        if isinstance(frame, InterruptionFrame):
            # The previous voice has just been cut off: nothing left to wait for.
            await self._switch_now()
            if self._switch is not None:
                await self._finish_handover()

    async def _passed_ahead(self, frame: Frame) -> bool:
        """Whether ``frame``, a handover's call on its way down, went past the voice."""
        if isinstance(frame, LLMFullResponseStartFrame):
            self._said = []
            return False
        if isinstance(frame, FunctionCallsStartedFrame):
            # A new response's calls: nothing the last one left is still to come.
            self._ahead = set()
            self._parting.forget()
            await self._switch_deferred()
            calls = frame.function_calls
            if any(call.function_name in self._transitions for call in calls):
                self._batch = frozenset(call.tool_call_id for call in calls)
                self._ahead = set(self._batch)
            return False
        if isinstance(frame, FunctionCallCancelFrame):
            await self._settled(frame.tool_call_id)
            return False
        if isinstance(frame, FunctionCallInProgressFrame) and frame.tool_call_id in self._ahead:
            # The reply's words have all come by now (the calls follow them).
            self._parting.passed(self._batch, "".join(self._said))
            await self._push_ahead(frame)
            return True
        if isinstance(frame, FunctionCallResultFrame) and frame.tool_call_id in self._ahead:
            properties = frame.properties
            refused = frame.function_name in self._transitions and (
                properties is None or properties.on_context_updated is None
            )
            if refused:
                # The member stays, and its LLM runs again on a context that should
                # hold the line it said first.
                await super().process_frame(frame, FrameDirection.DOWNSTREAM)
            else:
                await self._push_ahead(frame)
            await self._settled(frame.tool_call_id)
            return True
        return False

    async def _push_ahead(self, frame: Frame) -> None:
        # What the router's own processing does (tell observers), then on down.
        await FrameProcessor.process_frame(self, frame, FrameDirection.DOWNSTREAM)
        await self.push_frame(frame, FrameDirection.DOWNSTREAM)

    async def _settled(self, tool_call_id: str) -> None:
        """One of a handover's calls has passed: a switch that waited goes ahead once all have."""
        self._ahead.discard(tool_call_id)
        if not self._ahead:
            await self._switch_deferred()

    async def _switch_deferred(self) -> None:
        """Hand over to the switch that waited, as it would have when it came."""
        switch, self._deferred = self._deferred, None
        if switch is not None:
            await self._hand_over(switch)

    async def _switch_now(self) -> None:
        """Make the switch that waited, without waiting for the previous voice."""
        switch, self._deferred = self._deferred, None
        if switch is not None:
            await super().process_frame(switch, FrameDirection.DOWNSTREAM)

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
        if self._ahead:
            # The handover's calls are still to pass the voice: the switch waits for them.
            await self._switch_now()
            self._deferred = switch
            return
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
