"""The team call's voice slot."""

from __future__ import annotations

from collections.abc import Mapping

from pipecat.pipeline.service_switcher import ServiceSwitcher
from pipecat.services.tts_service import TTSService

from routing.router import MemberRouting, ordered_services


class RoutingTTSService(MemberRouting, ServiceSwitcher):
    """Speaks the active member's replies in that member's voice."""

    kind = "TTS"

    def __init__(self, by_member: Mapping[str, TTSService | None], start_member_id: str) -> None:
        ServiceSwitcher.__init__(self, ordered_services(by_member, start_member_id))
        self._init_members(by_member)
