"""Turn-taking: how the runner decides the caller has started and finished speaking.

Since pipecat 1.0 the VAD and the end-of-turn rule live on the user context
aggregator, not on the transport (the Go side's previous runner still set them
on the transport, where they were silently ignored). A call's ``vad_config``
becomes Silero's parameters, and ``smart_turn_enabled`` chooses the rule that
ends a turn:

* smart turn on: the smart-turn model judges, after each pause the VAD sees,
  whether the caller has finished;
* smart turn off: a fixed rule, the turn ends once the VAD has heard
  ``stop_secs`` of silence and a further ``USER_SPEECH_TIMEOUT_SECS`` of the
  caller's audio has arrived with no more speech in it
  (``teamrunner.speech.end_of_turn``: pipecat times that grace on the wall clock, which
  splits a sentence in two when the audio runs late).

The strategies are always given explicitly: pipecat's defaults would load the
smart-turn model for every call, wanted or not.
"""

from __future__ import annotations

from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.processors.aggregators.llm_response_universal import LLMUserAggregatorParams
from pipecat.turns.user_start import TranscriptionUserTurnStartStrategy, VADUserTurnStartStrategy
from pipecat.turns.user_stop import (
    SpeechTimeoutUserTurnStopStrategy,
    TurnAnalyzerUserTurnStopStrategy,
)
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from teamrunner.contract import VADConfig
from teamrunner.speech.end_of_turn import HeardSilenceTurnStop
from teamrunner.speech.models import SpeechModels

# pipecat's default grace after the VAD's stop before a turn ends.
USER_SPEECH_TIMEOUT_SECS = 0.6


def vad_params(config: VADConfig) -> VADParams:
    """Silero parameters: the request's values, pipecat's defaults for the rest."""
    given = config.model_dump(exclude_none=True)
    return VADParams(**given)


def user_params(
    vad_config: VADConfig, smart_turn: bool, models: SpeechModels, *, hears: bool
) -> LLMUserAggregatorParams:
    """The user aggregator's parameters for a call (its plan's ``TurnPlan``).

    ``smart_turn`` chooses the smart-turn model over the fixed rule to end a turn.

    A call without caller audio gets no VAD and the cheapest strategies, since
    its user turns arrive as text.
    """
    if not hears:
        return LLMUserAggregatorParams(
            user_turn_strategies=UserTurnStrategies(
                start=[TranscriptionUserTurnStartStrategy()],
                stop=[SpeechTimeoutUserTurnStopStrategy()],
            )
        )
    vad = models.vad(vad_params(vad_config))
    stop = (
        TurnAnalyzerUserTurnStopStrategy(turn_analyzer=models.smart_turn())
        if smart_turn
        else HeardSilenceTurnStop(
            grace_secs=USER_SPEECH_TIMEOUT_SECS, hears_speech=lambda: vad.hears_speech
        )
    )
    return LLMUserAggregatorParams(
        vad_analyzer=vad,
        user_turn_strategies=UserTurnStrategies(
            start=[VADUserTurnStartStrategy(), TranscriptionUserTurnStartStrategy()],
            stop=[stop],
        ),
    )
