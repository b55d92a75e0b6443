"""The embedded default's ears: pipecat's Whisper STT on the process's loaded model.

pipecat's ``WhisperSTTService`` loads its model when constructed: about half
a second and a few hundred megabytes per service, and pinned pipecat 1.14.0
has no argument to hand it a loaded model (its ``model`` is a name or path).
``SharedWhisperSTTService`` runs on the process's model
(``teamrunner.speech.models.SpeechModels``) through
``teamrunner.pipecat_internals.whisper``, keeping pipecat's language check, so
a call or a team member costs no load; it also says when a stretch of speech
had no words, and transcribes a turn the caller paused in as a whole
(``teamrunner.pipecat_internals.segments``).

Transcription is pipecat's code. ``tests/speech/test_speech_models.py``
fails if pipecat changes under the adapter: the same attributes as pipecat's
own service, the same transcript, and no model loaded by the adapter itself.
The voice beside it is in ``piper.py``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from pipecat.frames.frames import Frame, TranscriptionFrame
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language

from teamrunner.frames import NoWordsFrame
from teamrunner.pipecat_internals.segments import WholeTurnSegments
from teamrunner.pipecat_internals.whisper import PreloadedWhisperSTTService


class SharedWhisperSTTService(WholeTurnSegments, PreloadedWhisperSTTService):
    """pipecat's Whisper STT on the process's loaded model, hearing a paused sentence whole."""

    def __init__(self, *, model: Any, language: Language | None, **kwargs: Any) -> None:
        super().__init__(
            model=model,
            device="cpu",
            settings=WhisperSTTService.Settings(model="tiny.en", language=language or Language.EN),
            # How long the end-of-turn rule waits after the VAD's stop for a final
            # transcript. Every stretch gets a transcript or a NoWordsFrame, which
            # ends the wait at once, so this only bounds a failed transcription:
            # a stretch takes 0.6-0.8 s on 2 cores, over 2 s when calls share them.
            ttfs_p99_latency=5.0,
            **kwargs,
        )

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        """pipecat's transcription, and a ``NoWordsFrame`` when it found no words."""
        heard = False
        async for frame in super().run_stt(audio):
            heard = heard or isinstance(frame, TranscriptionFrame)
            yield frame
        if not heard:
            yield NoWordsFrame()
