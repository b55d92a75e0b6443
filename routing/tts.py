"""The team call's voice slot: replies are spoken in the active member's voice.

A switch is a frame from the head of the pipeline that reaches this router
behind the previous member's last words (see ``routing/router.py``), so those
are still spoken in the previous member's voice.
"""

from __future__ import annotations

from pipecat.services.tts_service import TTSService

from routing.router import MemberRouting


class RoutingTTSService(MemberRouting[TTSService]):
    """Speaks the active member's replies in that member's voice."""

    kind = "TTS"
