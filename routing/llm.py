"""The team call's LLM slot, which switches at once rather than by a frame.

A transition is a function the active LLM calls, and pipecat runs it while
that LLM waits on its result, so the LLM has nothing in flight to finish.
What follows the result must reach the next member's LLM: pipecat.flows
queues the next node's prompt (an ``LLMUpdateSettingsFrame`` that reaches
only the active LLM) and tools at the head of the pipeline, and pipecat's
next inference starts from the context the assistant aggregator sends back
upstream from the end of the pipeline, which a switch frame travelling down
from the head could arrive after. So ``set_active_member`` switches before
the transition returns, through ``RoutingStrategy.activate``.

Switching at once opens a gap: the next member's LLM has the call before its
prompt and tools have reached it, which takes as long as the transition's
result takes to reach the end of the pipeline (behind the words said before
it, through the voice) and pipecat.flows to enter the node, a summary
included. A caller who finishes a turn in that gap, or a tool result that
asks for a run, would have the next member answer under the previous
member's prompt and tools, and then answer again when its node is entered.
So a switch can hold the LLM's runs (``hold_until_ready``) until a marker
queued behind the member's prompt and tools comes by (``member_ready``):
every run asked for meanwhile is one run, made then with the conversation
as it stands, or none if the caller is speaking, whose turn will ask for it.

A run on a conversation that ends with a transition's result, which passed
the line the previous member said with it, is made on a copy that has that
line (``routing/parting_words.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from loguru import logger
from pipecat.frames.frames import (
    Frame,
    LLMContextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.llm_switcher import LLMSwitcher
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService

from routing.parting_words import PartingWords
from routing.router import SHORTCUT_FRAMES, MemberRouting, RoutingStrategy
from teamrunner.errors import MemberSwitchError
from teamrunner.frames import MemberReadyFrame


class RoutingLLMService(MemberRouting[LLMService], LLMSwitcher[RoutingStrategy]):
    """Runs the active member's LLM; an ``LLMSwitcher``, so pipecat.flows can drive it.

    Functions registered on it are registered on every member's LLM, so a
    tool call is handled the same whichever LLM makes it.

    Args:
        by_member: Member id to that member's LLM; members may share one.
        start_member_id: The member whose LLM is active at the start.
        ready_timeout_secs: How long runs are held for a member that never
            becomes ready (a bug: then they go ahead anyway).
        parting: The lines transferring members said ahead of the conversation.
    """

    kind = "LLM"

    def __init__(
        self,
        by_member: Mapping[str, LLMService | None],
        start_member_id: str,
        *,
        ready_timeout_secs: float = 30.0,
        parting: PartingWords | None = None,
    ) -> None:
        super().__init__(by_member, start_member_id)
        self._ready_timeout = ready_timeout_secs
        self._parting = parting or PartingWords()
        self._holding = False
        self._held: tuple[LLMContextFrame, FrameDirection] | None = None
        self._deadline: asyncio.Task[None] | None = None
        self._caller_speaking = False
        # The last message of the conversation a release ran on (see _release).
        self._answered: object | None = None

    async def set_active_member(self, member_id: str) -> None:
        """Make ``member_id``'s LLM the active one now.

        Raises:
            MemberSwitchError: the member is unknown or its LLM has failed.
        """
        self.check_member(member_id)
        service = self.service_for(member_id)
        if service is None:
            return
        if await self.strategy.activate(service) is None:
            raise MemberSwitchError(f"LLM {service.name} could not be made active")

    def hold_until_ready(self) -> None:
        """Hold the LLM's runs from now until ``member_ready``'s marker comes by."""
        self._holding = True
        if self._deadline is None:
            self._deadline = self.create_task(self._give_up_waiting(), name="member-ready")

    async def member_ready(self) -> None:
        """Queue the marker that ends a hold, behind what is already on its way.

        Queued at the head of the pipeline, so it reaches this router after the
        member's prompt and tools (and the run pipecat.flows queued with them).
        """
        frame = MemberReadyFrame()
        # A barge-in must not drop it: the runs would stay held.
        frame.interruptible = False
        await self.pipeline_worker.queue_frame(frame)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        # The shortcut's frames are most of what a call carries, and none is the hold's.
        if type(frame) in SHORTCUT_FRAMES:
            await super().process_frame(frame, direction)
        elif not await self._took(frame, direction):
            if isinstance(frame, LLMContextFrame):
                frame = self._parting.completed(frame)
            await super().process_frame(frame, direction)

    async def _took(self, frame: Frame, direction: FrameDirection) -> bool:
        """Whether the hold took ``frame`` (a marker, a held run, or a run already made)."""
        if isinstance(frame, UserStartedSpeakingFrame):
            self._caller_speaking = True
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._caller_speaking = False
        elif isinstance(frame, MemberReadyFrame):
            await self._release()
            return True
        elif isinstance(frame, LLMContextFrame):
            if self._holding:
                self._held = (frame, direction)
                return True
            answered, self._answered = self._answered, None
            # The run just released already answers it.
            return answered is not None and _last_message(frame) is answered
        return False

    async def _release(self) -> None:
        """End a hold: run what was asked for meanwhile, once, unless the caller is speaking.

        A caller whose turn is ending may have had it written to the
        conversation already, with its own run still on the way here; the
        release runs on that conversation, so the run that follows, finding
        nothing new, is dropped.
        """
        if not self._holding:
            return
        held, self._held, self._holding = self._held, None, False
        if self._deadline is not None:
            if self._deadline is not asyncio.current_task():
                await self.cancel_task(self._deadline)
            self._deadline = None
        if held is None or self._caller_speaking:
            return
        frame, direction = held
        self._answered = _last_message(frame)
        await super().process_frame(self._parting.completed(frame), direction)

    async def _give_up_waiting(self) -> None:
        await asyncio.sleep(self._ready_timeout)
        logger.error(
            f"{self}: the next member was not ready within {self._ready_timeout:g}s; "
            "letting the LLM run anyway"
        )
        await self._release()

    async def cleanup(self) -> None:
        await super().cleanup()
        if self._deadline is not None:
            await self.cancel_task(self._deadline)
            self._deadline = None


def _last_message(frame: LLMContextFrame) -> object | None:
    messages = frame.context.get_messages()
    return messages[-1] if messages else None
