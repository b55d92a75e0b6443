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
* ``SmartTurnOnSession``: ``_session``, and ``_log_data`` off (pipecat turns it
  on from ``PIPECAT_SMART_TURN_LOG_DATA``, writing every turn's audio under
  ``./smart_turn_audio_log``; callers' audio stays off disk here).

Imported only when a call needs an analyzer, so the runner starts without
loading ONNX Runtime.
"""

from __future__ import annotations

import onnxruntime
from pipecat.audio.turn.smart_turn.base_smart_turn import BaseSmartTurn, SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroOnnxModel, SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams


class _SileroModelOnSession(SileroOnnxModel):
    """Silero's per-stream state around a session loaded beforehand."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        # SileroOnnxModel.__init__ would load a session of its own.
        self.session = session
        self.reset_states()
        self.sample_rates = [8000, 16000]


class SileroVADOnSession(SileroVADAnalyzer):
    """pipecat's Silero VAD running on ``session``, with a stream state of its own."""

    def __init__(
        self, session: onnxruntime.InferenceSession, params: VADParams | None = None
    ) -> None:
        # SileroVADAnalyzer.__init__ would load the model: set up what it sets up instead.
        VADAnalyzer.__init__(self, params=params)
        self._model = _SileroModelOnSession(session)
        self._windows_since_reset = 0
        self._low_confidence_windows = 0


class SmartTurnOnSession(LocalSmartTurnAnalyzerV3):
    """pipecat's smart-turn v3 analyzer running on ``session``, logging no audio."""

    def __init__(
        self, session: onnxruntime.InferenceSession, params: SmartTurnParams | None = None
    ) -> None:
        # LocalSmartTurnAnalyzerV3.__init__ would load the model.
        BaseSmartTurn.__init__(self, params=params)
        self._log_data = False
        self._session = session
