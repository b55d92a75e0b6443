"""pipecat's Silero VAD and smart-turn v3 analyzers on ONNX sessions loaded beforehand.

Both analyzers load their graph in their constructor, and pinned pipecat 1.14
offers no argument or hook to hand one in: ``SileroVADAnalyzer`` builds a
``SileroOnnxModel`` from a file path into ``_model``, and
``LocalSmartTurnAnalyzerV3`` loads its session into ``_session``. So each
class here sets up what pipecat's constructor sets up, on the session given:

* ``SileroVADOnSession``: ``_model`` (Silero's per-stream state around the
  session: ``SileroOnnxModel``'s ``session``, ``sample_rates`` and
  ``reset_states``), ``_windows_since_reset`` and ``_low_confidence_windows``
  (the counters pipecat's ``voice_confidence`` keeps to reset the model's state).
  It also analyzes inline (``_run_analyzer``, which pipecat's ``analyze_audio``
  hands to a thread of the analyzer's own), and offers under public names
  what a gate before the model needs: the smoothed volume (``_prev_volume``,
  ``_smoothing_factor``), pipecat's reset rule for a window not scored
  (``_maybe_reset_model``), and a volume known without measuring it
  (``_get_smoothed_volume``, ``_volume_tracker``).
* ``SmartTurnOnSession``: ``_session``, and ``_log_data`` off (pipecat turns it
  on from ``PIPECAT_SMART_TURN_LOG_DATA``, writing every turn's audio under
  ``./smart_turn_audio_log``; callers' audio stays off disk here).

Imported only when a call needs an analyzer, so the runner starts without
loading ONNX Runtime.
"""

from __future__ import annotations

import numpy as np
import onnxruntime
from pipecat.audio.turn.smart_turn.base_smart_turn import BaseSmartTurn, SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.utils import exp_smoothing
from pipecat.audio.vad.silero import SileroOnnxModel, SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState


class _SileroModelOnSession(SileroOnnxModel):
    """Silero's per-stream state around a session loaded beforehand."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        # SileroOnnxModel.__init__ would load a session of its own.
        self.session = session
        self.reset_states()
        self.sample_rates = [8000, 16000]


class SileroVADOnSession(SileroVADAnalyzer):
    """pipecat's Silero VAD running on ``session``, with a stream state of its own.

    It analyzes inline, on the caller's task, rather than handing every audio
    frame to a thread of its own as pipecat's analyzer does: the hand-off and
    the wake-up back on the event loop cost more than the model (one window is
    a fraction of a millisecond), and a worker's event loop runs on one core
    anyway. The rest is what a gate in front of the model needs: the smoothed
    volume pipecat decides with, a way to count a window the model did not
    score as pipecat's reset rule would, and a way to catch the model's state
    up on audio it skipped.
    """

    def __init__(
        self, session: onnxruntime.InferenceSession, params: VADParams | None = None
    ) -> None:
        # SileroVADAnalyzer.__init__ would load the model: set up what it sets up instead.
        VADAnalyzer.__init__(self, params=params)
        self._model = _SileroModelOnSession(session)
        self._windows_since_reset = 0
        self._low_confidence_windows = 0

    async def analyze_audio(self, buffer: bytes) -> VADState:
        """pipecat's analysis of ``buffer``, run here rather than on a thread."""
        return self._run_analyzer(buffer)

    @property
    def smoothed_volume(self) -> float:
        """The smoothed volume of the audio analyzed so far (pipecat's ``_prev_volume``)."""
        return self._prev_volume

    def smoothed_after(self, volume: float) -> float:
        """What the smoothed volume becomes when the next window measures ``volume``."""
        return exp_smoothing(volume, self._prev_volume, self._smoothing_factor)

    def count_unscored_window(self) -> bool:
        """Count a window the model skipped as pipecat's reset rule counts a silent one.

        Returns whether the rule reset the model's state on it.
        """
        self._maybe_reset_model(0.0)
        return self._windows_since_reset == 0

    def reset_model(self) -> None:
        """Clear the model's recurrent state and context, as pipecat's reset does."""
        self._model.reset_states()

    def advance_model(self, window: bytes) -> None:
        """Run the model on ``window`` for its state alone: nothing is scored or counted."""
        self._model(np.frombuffer(window, np.int16).astype(np.float32) / 32768.0, self.sample_rate)

    def known_volume(self, window: bytes) -> float | None:
        """The volume of the audio up to ``window`` if known without measuring it; None if not."""
        return None

    def _get_smoothed_volume(self, audio: bytes) -> float:
        volume = self.known_volume(audio)
        if volume is None:
            return super()._get_smoothed_volume(audio)
        # The window still joins the rolling window a later measurement reads.
        self._volume_tracker.update(audio, self.sample_rate)
        return self.smoothed_after(volume)


class SmartTurnOnSession(LocalSmartTurnAnalyzerV3):
    """pipecat's smart-turn v3 analyzer running on ``session``, logging no audio."""

    def __init__(
        self, session: onnxruntime.InferenceSession, params: SmartTurnParams | None = None
    ) -> None:
        # LocalSmartTurnAnalyzerV3.__init__ would load the model.
        BaseSmartTurn.__init__(self, params=params)
        self._log_data = False
        self._session = session
