"""Routing services for team calls: one STT, LLM and TTS slot each, filled by the active member.

Each router is a pipecat ``ServiceSwitcher`` (``LLMSwitcher`` for the LLM)
over the call's distinct provider instances, with a map from member id to
the instance that member uses. The STT and TTS routers switch by a frame, in
order with what is on its way; the LLM router switches at once (see
``router.py`` and ``llm.py`` for why). With one member there is nothing to
route: ``services.py`` fills each slot with that member's service as it is.

::

    services.py  a call's services, and the routers over them when it has a team
    router.py    what the three routers share: members to services, switching
    stt.py       the STT router: the caller's audio reaches the active member's STT
    llm.py       the LLM router, switching at once
    tts.py       the TTS router: replies in the active member's voice
    parting_words.py  a transferring member's line, for the next member's first request
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
