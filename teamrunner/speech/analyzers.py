"""pipecat's Silero VAD and smart-turn analyzers, running on sessions loaded once per process.

pipecat's analyzers load their ONNX graph in their constructor, and pinned
pipecat 1.14.0 offers no argument or hook to hand one in:
``SileroVADAnalyzer`` takes only ``sample_rate`` and ``params`` and builds its
``SileroOnnxModel`` from a file path, and ``LocalSmartTurnAnalyzerV3`` takes
only a model path and a CPU count. One analyzer per call would mean one graph
load per call (about 50 ms and 10 MB each, measured). So each adapter here is
a subclass of pipecat's analyzer whose constructor sets up what pipecat's sets
up, except that it takes the shared session (``SpeechModels`` loads it). The
adapter keeps its own per-call state (Silero's recurrent state, smart-turn's
audio buffer); ONNX Runtime lets several threads run one session at once.
Everything an adapter computes is pipecat's code.

The constructors mirror pipecat 1.14.0's, so ``tests/speech/test_speech_models.py``
fails if pipecat changes under them: the same attributes as pipecat's own
analyzer, the same session options, the same confidences, VAD states and
turn predictions on the same speech. Imported only when a call needs an
analyzer, so the runner starts without loading ONNX Runtime.
"""

from __future__ import annotations

from importlib import resources

import onnxruntime
from pipecat.audio.turn.smart_turn.base_smart_turn import BaseSmartTurn, SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroOnnxModel, SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState


def bundled(package: str, name: str) -> str:
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
        self._last_state = VADState.QUIET

    @property
    def hears_speech(self) -> bool:
        """Whether the last audio analyzed was speech, reported or not yet.

        pipecat reports speech only once it has lasted ``start_secs``, and the
        report reaches the rest of the aggregator after the audio that caused
        it. The end-of-turn rule asks this so that a caller who resumed inside
        its grace is not cut off while the VAD is still making sure.
        """
        return self._last_state in (VADState.STARTING, VADState.SPEAKING)

    async def analyze_audio(self, buffer: bytes) -> VADState:
        self._last_state = await super().analyze_audio(buffer)
        return self._last_state


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


def silero_session() -> onnxruntime.InferenceSession:
    """Silero's graph, with ``SileroOnnxModel.__init__``'s options."""
    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(
        bundled("pipecat.audio.vad.data", "silero_vad.onnx"),
        providers=["CPUExecutionProvider"],
        sess_options=options,
    )


def smart_turn_session() -> onnxruntime.InferenceSession:
    """Smart-turn v3's graph, with ``LocalSmartTurnAnalyzerV3.__init__``'s options (cpu_count=1)."""
    options = onnxruntime.SessionOptions()
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(
        bundled("pipecat.audio.turn.smart_turn.data", "smart-turn-v3.2-cpu.onnx"),
        sess_options=options,
    )
