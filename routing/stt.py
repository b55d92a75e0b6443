"""The team call's speech-to-text slot."""

from __future__ import annotations

from collections.abc import Mapping

from pipecat.pipeline.service_switcher import ServiceSwitcher
from pipecat.services.stt_service import STTService

from routing.router import MemberRouting, ordered_services


class RoutingSTTService(MemberRouting, ServiceSwitcher):
    """Sends the caller's audio to the active member's STT only."""

    kind = "STT"

    def __init__(self, by_member: Mapping[str, STTService | None], start_member_id: str) -> None:
        ServiceSwitcher.__init__(self, ordered_services(by_member, start_member_id))
        self._init_members(by_member)
