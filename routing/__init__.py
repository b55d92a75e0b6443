"""Routing services for team calls: one STT, LLM and TTS slot each, filled by the active member.

Each router is a pipecat ``ServiceSwitcher`` (``LLMSwitcher`` for the LLM)
over the call's distinct provider instances, with a map from member id to
the instance that member uses. See ``router.py`` for why switching is a frame.
"""

from routing.llm import RoutingLLMService
from routing.router import MemberRouting, ServicePool
from routing.stt import RoutingSTTService
from routing.tts import RoutingTTSService

__all__ = [
    "MemberRouting",
    "RoutingLLMService",
    "RoutingSTTService",
    "RoutingTTSService",
    "ServicePool",
]
