"""The embedded default's speech services: Whisper ears and a Piper voice, on shared models.

pipecat's ``WhisperSTTService`` and ``PiperTTSService`` load their model when
constructed: about half a second and a few hundred megabytes per service.
Pinned pipecat 1.14.0 has no argument to hand either one a loaded model:
Whisper's ``model`` is a name or path, and Piper's voice is a name looked up
in (or downloaded to) ``download_dir``. So these services run on the process's
models (``teamrunner.speech_models.SpeechModels``) through two small adapters,
and a call or a team member costs no load:

- ``SharedWhisperSTTService`` overrides ``WhisperSTTService._load``, the step
  pipecat's constructor calls to load (and pipecat's MLX service overrides the
  same way), taking the shared model and keeping pipecat's language check.
- ``SharedPiperTTSService`` skips ``PiperTTSService.__init__`` (which loads, and
  would download a missing voice) and sets up what it sets up. It synthesizes a
  sentence's first clause on its own (``first_clause``): Piper makes a whole
  sentence before its first audio, about 60 ms per second of speech here, and
  pipecat's voice hands it one sentence at a time, so a long first sentence
  delayed a reply by up to 0.4 s; its first clause is ready in a fraction of that,
  and the rest is made while it plays.

Transcription and synthesis are pipecat's code. ``tests/providers/test_speech_models.py``
fails if pipecat changes under either adapter: the same attributes as
pipecat's own service, the same transcript and the same PCM, and no model
loaded by the adapter itself.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from pipecat.frames.frames import Frame, TranscriptionFrame
from pipecat.services.piper.tts import PiperTTSService
from pipecat.services.tts_service import TTSService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.transcriptions.language import Language

from teamrunner.turn_stop import NoWordsFrame

PIPER_VOICE = "en_US-joe-medium"

# A clause ends at a comma, semicolon or colon followed by a space (not "1,042").
_CLAUSE_END = re.compile(r"[,;:]\s+(?=\S)")


def first_clause(text: str) -> list[str]:
    """``text`` as its first clause and the rest, or whole when it has one clause."""
    end = _CLAUSE_END.search(text)
    if end is None or not text[: end.start()].strip():
        return [text]
    return [text[: end.start() + 1], text[end.end() :]]


class SharedWhisperSTTService(WhisperSTTService):
    """pipecat's Whisper STT on the process's loaded model."""

    def __init__(self, *, model: Any, language: Language | None, **kwargs: Any) -> None:
        self._shared_model = model
        super().__init__(
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

    def _load(self) -> None:
        """Take the shared model instead of loading one, then check the language as pipecat does."""
        self._model = self._shared_model
        unsupported = self._unsupported_language()
        if unsupported:
            raise ValueError(unsupported)


class _SerializedVoice:
    """A Piper voice that synthesizes one chunk at a time across the process, first clause first."""

    def __init__(self, voice: Any, lock: threading.Lock) -> None:
        self._voice = voice
        self._lock = lock

    @property
    def config(self) -> Any:
        return self._voice.config

    def synthesize(self, text: str) -> Iterator[Any]:
        for part in first_clause(text):
            chunks = self._voice.synthesize(part)
            while True:
                with self._lock:
                    chunk = next(chunks, None)
                if chunk is None:
                    break
                yield chunk


class SharedPiperTTSService(PiperTTSService):
    """pipecat's Piper TTS speaking with the process's loaded voice."""

    def __init__(self, *, voice: Any, lock: threading.Lock, **kwargs: Any) -> None:
        # PiperTTSService.__init__ would load the voice: make the call it makes to its base.
        TTSService.__init__(
            self,
            push_start_frame=True,
            push_stop_frames=True,
            settings=PiperTTSService.Settings(model=None, voice=PIPER_VOICE, language=None),
            **kwargs,
        )
        # pipecat types _voice as a PiperVoice; its run_tts uses only config and synthesize.
        self._voice = _SerializedVoice(voice, lock)  # type: ignore[assignment]
