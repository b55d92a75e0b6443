"""The team call's speech-to-text slot: the caller's audio reaches the active member's STT.

A switch is a frame from the head of the pipeline (see ``routing/router.py``).
Caller audio is not ordered with it: the STT changes between two audio frames,
when the switch frame reaches this router.
"""

from __future__ import annotations

from pipecat.services.stt_service import STTService

from routing.router import MemberRouting


class RoutingSTTService(MemberRouting[STTService]):
    """Sends the caller's audio to the active member's STT only."""

    kind = "STT"
