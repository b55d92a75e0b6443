"""Routing services for team calls: one STT, LLM and TTS slot each, filled by the active member.

Each router is a pipecat ``ServiceSwitcher`` (``LLMSwitcher`` for the LLM)
over the call's distinct provider instances, with a map from member id to
the instance that member uses. The STT and TTS routers switch by a frame, in
order with what is on its way; the LLM router switches at once (see
``router.py`` and ``llm.py`` for why).
"""

from routing.llm import RoutingLLMService
from routing.router import MemberRouting, RoutingStrategy, ServicePool
from routing.stt import RoutingSTTService
from routing.tts import RoutingTTSService

__all__ = [
    "MemberRouting",
    "RoutingLLMService",
    "RoutingSTTService",
    "RoutingStrategy",
    "RoutingTTSService",
    "ServicePool",
]
