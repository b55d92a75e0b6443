"""The team call's LLM slot."""

from __future__ import annotations

from collections.abc import Mapping

from pipecat.pipeline.llm_switcher import LLMSwitcher
from pipecat.services.llm_service import LLMService

from routing.router import MemberRouting, ordered_services


class RoutingLLMService(MemberRouting, LLMSwitcher):
    """Runs the active member's LLM; an ``LLMSwitcher``, so pipecat.flows can drive it.

    Functions registered on it are registered on every member's LLM, so a
    tool call is handled the same whichever LLM makes it.
    """

    kind = "LLM"

    def __init__(self, by_member: Mapping[str, LLMService], start_member_id: str) -> None:
        LLMSwitcher.__init__(self, ordered_services(by_member, start_member_id))  # type: ignore[arg-type]
        self._init_members(by_member)
