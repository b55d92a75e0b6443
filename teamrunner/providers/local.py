"""The embedded default's speech services: Whisper ears and a Piper voice, on shared models.

pipecat's ``WhisperSTTService`` and ``PiperTTSService`` load their model when
constructed: about half a second and a few hundred megabytes per service.
Here they run on the process's models (``SpeechModels``) instead, so a call
or a team member costs no load. The subclasses replace only where the model
comes from; transcription and synthesis are pipecat's code. The Piper
subclass skips ``PiperTTSService.__init__`` (which loads, and would download a
missing voice) and sets up what it sets up, as pinned pipecat 1.14.0 does it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.tts_service import TTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language

PIPER_VOICE = "en_US-joe-medium"


class SharedWhisperSTTService(WhisperSTTService):
    """pipecat's Whisper STT on the process's loaded model."""

    def __init__(self, *, model: Any, language: Language | None, **kwargs: Any) -> None:
        self._shared_model = model
        super().__init__(
            device="cpu",
            settings=WhisperSTTService.Settings(model="tiny.en", language=language or Language.EN),
            # Measured: tiny.en transcribes a turn in well under a second on 2 cores.
            ttfs_p99_latency=1.0,
            **kwargs,
        )

    def _load(self) -> None:
        """Take the shared model instead of loading one."""
        self._model = self._shared_model


class _SerializedVoice:
    """A Piper voice that synthesizes one chunk at a time across the process."""

    def __init__(self, voice: Any, lock: threading.Lock) -> None:
        self._voice = voice
        self._lock = lock

    @property
    def config(self) -> Any:
        return self._voice.config

    def synthesize(self, text: str) -> Iterator[Any]:
        chunks = self._voice.synthesize(text)
        while True:
            with self._lock:
                chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk


class SharedPiperTTSService(PiperTTSService):
    """pipecat's Piper TTS speaking with the process's loaded voice."""

    def __init__(self, *, voice: Any, lock: threading.Lock, **kwargs: Any) -> None:
        TTSService.__init__(
            self,
            push_start_frame=True,
            push_stop_frames=True,
            settings=PiperTTSService.Settings(model=None, voice=PIPER_VOICE, language=None),
            **kwargs,
        )
        self._voice = _SerializedVoice(voice, lock)
