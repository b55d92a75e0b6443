"""The embedded default's voice: pipecat's Piper TTS on the process's loaded voice.

pipecat's ``PiperTTSService`` loads its voice when constructed: about half a
second and a few hundred megabytes per service, and pinned pipecat 1.14.0
has no argument to hand it a loaded one (its voice is a name looked up in, or
downloaded to, ``download_dir``). So ``SharedPiperTTSService`` speaks with
the process's voice (``teamrunner.speech.models.SpeechModels``) through
``teamrunner.pipecat_internals.piper``, which sets pipecat's service up
without loading one, and a call or a team member costs no load. It
synthesizes a sentence's first clause on its own (``first_clause``): Piper
makes a whole sentence before its first audio, about 60 ms per second of
speech here, and pipecat's voice hands it one sentence at a time, so a long
first sentence delayed a reply by up to 0.4 s; its first clause is ready in
a fraction of that, and the rest is made while it plays.

Synthesis is pipecat's code. ``tests/speech/test_speech_models.py`` fails
if pipecat changes under the adapter: the same attributes as pipecat's own
service, the same PCM, and no voice loaded by the adapter itself. The ears
beside it are in ``whisper.py``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from teamrunner.pipecat_internals.piper import PreloadedPiperTTSService

PIPER_VOICE = "en_US-joe-medium"

# A clause ends at a comma, semicolon or colon followed by a space (not "1,042").
_CLAUSE_END = re.compile(r"[,;:]\s+(?=\S)")


def first_clause(text: str) -> list[str]:
    """``text`` as its first clause and the rest, or whole when it has one clause."""
    end = _CLAUSE_END.search(text)
    if end is None or not text[: end.start()].strip():
        return [text]
    return [text[: end.start() + 1], text[end.end() :]]


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


class SharedPiperTTSService(PreloadedPiperTTSService):
    """pipecat's Piper TTS speaking with the process's loaded voice."""

    def __init__(self, *, voice: Any, lock: threading.Lock, **kwargs: Any) -> None:
        super().__init__(voice=_SerializedVoice(voice, lock), voice_name=PIPER_VOICE, **kwargs)
