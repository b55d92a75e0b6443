"""pipecat's Silero VAD and smart-turn analyzers, running on sessions loaded once per process.

One analyzer per call would mean one graph load per call (about 50 ms and
10 MB each, measured), so the analyzers here run on the process's sessions
(``SpeechModels`` loads them, with the options pipecat's own constructors
use: ``silero_session``, ``smart_turn_session``). Handing pipecat's analyzer
a session takes its private attributes, which ``teamrunner.pipecat_internals.analyzers``
sets; each analyzer keeps its own per-call state (Silero's recurrent state,
smart-turn's audio buffer), and ONNX Runtime lets several threads run one
session at once. Everything an analyzer computes is pipecat's code; the VAD
adds ``hears_speech`` for the end-of-turn rule.

``tests/speech/test_speech_models.py`` fails if pipecat changes under them:
the same attributes as pipecat's own analyzer, the same session options, the
same confidences, VAD states and turn predictions on the same speech.
Imported only when a call needs an analyzer, so the runner starts without
loading ONNX Runtime.
"""

from __future__ import annotations

from importlib import resources

import onnxruntime
from pipecat.audio.vad.vad_analyzer import VADParams, VADState

from teamrunner.pipecat_internals.analyzers import SileroVADOnSession, SmartTurnOnSession


def bundled(package: str, name: str) -> str:
    return str(resources.files(package).joinpath(name))


class SharedSileroVAD(SileroVADOnSession):
    """pipecat's Silero VAD running on the process's session."""

    def __init__(self, session: onnxruntime.InferenceSession, params: VADParams | None = None):
        super().__init__(session, params)
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


class SharedSmartTurn(SmartTurnOnSession):
    """pipecat's smart-turn v3 analyzer running on the process's session."""


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
