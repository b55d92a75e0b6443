"""The team call's LLM slot."""

from __future__ import annotations

from collections.abc import Mapping

from pipecat.frames.frames import LLMContextFrame, ManuallySwitchServiceFrame
from pipecat.pipeline.llm_switcher import LLMSwitcher
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService

from routing.router import MemberRouting, ordered_services
from teamrunner.errors import MemberSwitchError


class RoutingLLMService(MemberRouting, LLMSwitcher):
    """Runs the active member's LLM; an ``LLMSwitcher``, so pipecat.flows can drive it.

    Functions registered on it are registered on every member's LLM, so a
    tool call is handled the same whichever LLM makes it.

    Unlike the STT and TTS routers it switches at once instead of by a frame
    from the head of the pipeline. A transition runs while the LLM waits on
    its result, so the LLM has nothing in flight; and what follows a result
    (pipecat's next inference) reaches the LLM from the end of the pipeline,
    which a switch frame travelling down from the head could arrive after.
    """

    kind = "LLM"
    # The LLM switcher keeps every LLM's function handlers in step with the context.
    switcher_frames = (*MemberRouting.switcher_frames, LLMContextFrame)

    async def set_active_member(self, member_id: str) -> None:
        self.check_member(member_id)
        service = self.service_for(member_id)
        if service is None:
            return
        switch = ManuallySwitchServiceFrame(service=service)
        if await self.strategy.handle_frame(switch, FrameDirection.DOWNSTREAM) is None:
            raise MemberSwitchError(f"LLM {service.name} could not be made active")

    def __init__(self, by_member: Mapping[str, LLMService], start_member_id: str) -> None:
        LLMSwitcher.__init__(self, ordered_services(by_member, start_member_id))  # type: ignore[arg-type]
        self._init_members(by_member)
