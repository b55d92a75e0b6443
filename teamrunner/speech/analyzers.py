"""pipecat's Silero VAD and smart-turn analyzers, running on sessions loaded once per process.

One analyzer per call would mean one graph load per call (about 50 ms and
10 MB each, measured), so the analyzers here run on the process's sessions
(``SpeechModels`` loads them, with the options pipecat's own constructors
use: ``silero_session``, ``smart_turn_session``). Handing pipecat's analyzer
a session takes its private attributes, which ``teamrunner.pipecat_internals.analyzers``
sets; each analyzer keeps its own per-call state (Silero's recurrent state,
smart-turn's audio buffer), and ONNX Runtime lets several threads run one
session at once. Everything an analyzer computes is pipecat's code; the VAD
adds ``hears_speech`` for the end-of-turn rule, analyzes on the caller's task
rather than a thread per call, and puts an energy gate before Silero that
skips the model on windows that cannot be speech (most of a call's audio:
the caller listens while the bot speaks).

``tests/speech/test_speech_models.py`` fails if pipecat changes under them:
the same attributes as pipecat's own analyzer, the same session options, the
same confidences, VAD states and turn predictions on the same speech;
``tests/speech/test_vad_gate.py`` requires the gated VAD's state after every
frame to be pipecat's own analyzer's, a quiet caller's onset included.
Imported only when a call needs an analyzer, so the runner starts without
loading ONNX Runtime.
"""

from __future__ import annotations

import math
from collections import deque
from importlib import resources

import numpy as np
import onnxruntime
from pipecat.audio.vad.vad_analyzer import VADParams, VADState
from pipecat.audio.volume import VOLUME_WINDOW_SECS

from teamrunner.pipecat_internals.analyzers import SileroVADOnSession, SmartTurnOnSession

# Windows of Silero's 512 samples (at 16 kHz) that cover the loudness meter's 400 ms.
VOLUME_WINDOWS = 13
# Skipped windows the model is run over before it scores again: half a second.
CATCH_UP_WINDOWS = 16
FULL_SCALE = 32768.0
# pipecat normalizes loudness from this range to a volume from 0 to 1.
QUIET_LUFS, LOUD_LUFS = -110.0, -10.0
# BS.1770 loudness exceeds the mean square's power in dBFS by at most the K-filter's
# high shelf (+4 dB) less its 0.691 offset; measured at most 3.5 dB on tones at 16 kHz.
# Rounded up with a margin.
LOUDNESS_OVER_POWER_DB = 6.0
# Audio below this measures as no loudness at all (-inf, a volume of 0).
ABSOLUTE_GATE_LUFS = -70.0


def bundled(package: str, name: str) -> str:
    return str(resources.files(package).joinpath(name))


class SharedSileroVAD(SileroVADOnSession):
    """pipecat's Silero VAD running on the process's session, behind an energy gate.

    pipecat counts a window as speech only when Silero's confidence and the
    smoothed loudness of the last 400 ms both pass their thresholds. The
    loudness can be bounded from the audio's energy for a few microseconds,
    while Silero and the loudness meter cost a fraction of a millisecond a
    window each. So, window by window:

    * when the bound says the smoothed volume stays below ``min_volume``,
      the window cannot be speech whatever Silero would say: the model is
      skipped (pipecat's decision for the window is the same);
    * when the bound is below BS.1770's absolute gate, the loudness pipecat
      would measure is exactly zero, and is not measured.

    Silero carries a recurrent state from window to window, so the windows it
    skipped are kept: the first window the gate lets through first runs the
    model over them. After a long skip only the last ``CATCH_UP_WINDOWS`` are
    run, from a reset state, which is a state pipecat's own rule reaches (it
    resets the model every 2 s of clear non-speech).
    """

    def __init__(self, session: onnxruntime.InferenceSession, params: VADParams | None = None):
        super().__init__(session, params)
        self._last_state = VADState.QUIET
        # Sums of squares of the last windows, enough to cover the loudness meter's 400 ms.
        self._energies: deque[float] = deque(maxlen=VOLUME_WINDOWS)
        self._skipped: deque[bytes] = deque(maxlen=CATCH_UP_WINDOWS)
        self._skipped_since_sync = 0
        self._loudness_bound = float("-inf")
        self.windows_scored = 0
        self.windows_skipped = 0

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

    def voice_confidence(self, buffer: bytes) -> float:
        samples = np.frombuffer(buffer, np.int16).astype(np.float64)
        self._energies.append(float(np.dot(samples, samples)))
        # Every sample the meter's window can hold is among the last windows, so their
        # energy over the window's length bounds its mean square from above.
        mean_square = sum(self._energies) / (VOLUME_WINDOW_SECS * self.sample_rate)
        self._loudness_bound = (
            10 * math.log10(mean_square / FULL_SCALE**2) + LOUDNESS_OVER_POWER_DB
            if mean_square > 0
            else float("-inf")
        )
        highest = max(0.0, min(1.0, (self._loudness_bound - QUIET_LUFS) / (LOUD_LUFS - QUIET_LUFS)))
        if self.smoothed_after(highest) < self.params.min_volume:
            self._skip(buffer)
            return 0.0
        self._catch_up()
        self.windows_scored += 1
        return super().voice_confidence(buffer)

    def known_volume(self, window: bytes) -> float | None:
        return 0.0 if self._loudness_bound < ABSOLUTE_GATE_LUFS else None

    def _skip(self, window: bytes) -> None:
        self.windows_skipped += 1
        if self.count_unscored_window():
            # pipecat's rule reset the model after this window: the model starts afresh
            # from the next one, so nothing skipped so far is run through it.
            self._skipped.clear()
            self._skipped_since_sync = 0
            return
        self._skipped.append(window)
        self._skipped_since_sync += 1

    def _catch_up(self) -> None:
        """Bring the model's state to where running it on every window would have."""
        if self._skipped_since_sync > len(self._skipped):
            self.reset_model()
        for window in self._skipped:
            self.advance_model(window)
        self._skipped.clear()
        self._skipped_since_sync = 0


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
