"""pipecat's manual switching strategy, able to switch at once.

``ServiceSwitcherStrategyManual`` switches when a ``ManuallySwitchServiceFrame``
reaches it, through ``_set_active_if_available`` (which refuses a service
that is not the switcher's or can no longer be used). Pinned pipecat 1.14 has
no public way to switch without sending that frame through the switcher.
"""

from __future__ import annotations

from pipecat.pipeline.service_switcher import ServiceSwitcherStrategyManual
from pipecat.processors.frame_processor import FrameProcessor


class RoutingStrategy(ServiceSwitcherStrategyManual):
    """pipecat's manual strategy, which can also switch at once.

    A ``ManuallySwitchServiceFrame`` switches as with the manual strategy
    (the STT and TTS routers). ``activate`` switches without waiting for a
    frame to arrive (the LLM router).
    """

    async def activate(self, service: FrameProcessor) -> FrameProcessor | None:
        """Make ``service`` the active service now.

        Returns:
            ``service``; or None, and nothing changes, if it is not one of the
            switcher's services or can no longer be used.
        """
        return await self._set_active_if_available(service)
