"""pipecat's Piper TTS on a voice loaded beforehand.

``PiperTTSService.__init__`` loads its voice (downloading a missing one) into
``_voice``, and pinned pipecat 1.14 has no argument to hand it a loaded one.
``PreloadedPiperTTSService`` makes the call to ``TTSService.__init__`` that
pipecat's constructor makes, then sets ``_voice``; pipecat's ``run_tts`` uses
only the voice's ``config`` and ``synthesize``.
"""

from __future__ import annotations

from typing import Any

from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.tts_service import TTSService


class PreloadedPiperTTSService(PiperTTSService):
    """pipecat's Piper TTS speaking with ``voice``, loaded beforehand.

    Args:
        voice: Anything with a Piper voice's ``config`` and ``synthesize``.
        voice_name: The voice's name, for pipecat's settings and metrics.
        **kwargs: ``TTSService``'s own arguments.
    """

    def __init__(self, *, voice: Any, voice_name: str, **kwargs: Any) -> None:
        TTSService.__init__(
            self,
            push_start_frame=True,
            push_stop_frames=True,
            settings=PiperTTSService.Settings(model=None, voice=voice_name, language=None),
            **kwargs,
        )
        self._voice = voice
