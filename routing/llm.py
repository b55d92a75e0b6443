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
"""

from __future__ import annotations

from pipecat.pipeline.llm_switcher import LLMSwitcher
from pipecat.services.llm_service import LLMService

from routing.router import MemberRouting, RoutingStrategy
from teamrunner.errors import MemberSwitchError


class RoutingLLMService(MemberRouting[LLMService], LLMSwitcher[RoutingStrategy]):
    """Runs the active member's LLM; an ``LLMSwitcher``, so pipecat.flows can drive it.

    Functions registered on it are registered on every member's LLM, so a
    tool call is handled the same whichever LLM makes it.
    """

    kind = "LLM"

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
