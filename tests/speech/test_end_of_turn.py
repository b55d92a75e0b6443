"""The fixed end-of-turn rule, driven frame by frame through pipecat's user aggregator.

These frames are what the VAD, the transport and the STT put before the
aggregator in a call; sending them by hand fixes their order and the amount
of audio between them, which a live call on a busy machine does not.
``tests/speech/test_turn_taking.py`` proves the same rule in whole calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMUserAggregator,
    LLMUserAggregatorParams,
)
from pipecat.tests.utils import SleepFrame, run_test
from pipecat.turns.user_start import VADUserTurnStartStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from teamrunner.frames import NoWordsFrame, StretchVerdictFrame
from teamrunner.speech.end_of_turn import HeardSilenceTurnStop

RATE = 16000
STEP = 0.02  # wall-clock seconds between frames, so each is handled in order


def audio(secs: float, *, every: float = STEP) -> list[Frame]:
    """``secs`` of quiet caller audio in 40 ms frames, one frame ``every`` wall-clock seconds."""
    frames: list[Frame] = []
    for _ in range(round(secs / 0.04)):
        frames += [InputAudioRawFrame(bytes(1280), RATE, 1), SleepFrame(every)]
    return frames


def said(text: str) -> list[Frame]:
    return [TranscriptionFrame(text, "caller", "", finalized=True), SleepFrame(STEP)]


def started() -> list[Frame]:
    return [VADUserStartedSpeakingFrame(), SleepFrame(STEP)]


def stopped() -> list[Frame]:
    return [VADUserStoppedSpeakingFrame(stop_secs=0.2), SleepFrame(STEP)]


async def judged(
    frames: Sequence[Frame], *, hears_speech: bool = False
) -> tuple[list[str], list[bool]]:
    """What the caller had said each time the rule ended a turn, and its verdicts on stretches.

    The end of the session writes whatever is left to the context too, so the
    rule's own decisions are read off its event rather than off the context.
    The verdicts are the ``joined`` of each ``StretchVerdictFrame`` the rule
    sent upstream, toward the recogniser.
    """
    context = LLMContext()
    stop = HeardSilenceTurnStop(grace_secs=0.6, hears_speech=lambda: hears_speech)
    ended: list[str] = []

    @stop.event_handler("on_user_turn_stopped")
    async def on_stopped(_strategy: object, _params: object) -> None:
        ended.append(len(ended))

    aggregator = LLMUserAggregator(
        context,
        params=LLMUserAggregatorParams(
            user_turn_strategies=UserTurnStrategies(start=[VADUserTurnStartStrategy()], stop=[stop])
        ),
    )
    # A recogniser that says its final transcripts come within 1 s of the speech's end.
    metadata = [STTMetadataFrame(service_name="stt", ttfs_p99_latency=1.0), SleepFrame(STEP)]
    _, upstream = await run_test(aggregator, frames_to_send=[*metadata, *frames])
    messages = [str(m["content"]) for m in context.get_messages() if m.get("role") == "user"]
    verdicts = [f.joined for f in upstream if isinstance(f, StretchVerdictFrame)]
    return messages[: len(ended)], verdicts


async def turns_ended(frames: Sequence[Frame], *, hears_speech: bool = False) -> list[str]:
    turns, _ = await judged(frames, hears_speech=hears_speech)
    return turns


async def test_a_turn_ends_once_the_grace_has_passed_in_audio() -> None:
    turns = await turns_ended([*started(), *stopped(), *said("Hello."), *audio(0.68)])

    assert turns == ["Hello."]


async def test_a_turn_waits_for_the_grace_in_audio_however_long_the_wall_clock_runs() -> None:
    # 0.48 s of audio after the stop, arriving over about 1 s of wall-clock time,
    # as it does when it waits in a busy pipeline's queues.
    turns = await turns_ended([*started(), *stopped(), *said("Hello."), *audio(0.48, every=0.08)])

    assert turns == []


async def test_speech_inside_the_grace_keeps_the_turn_open() -> None:
    frames = [
        *started(),
        *stopped(),
        *said("I was wondering"),
        *audio(0.4),
        *started(),
        *stopped(),
        *said("about my bill."),
        *audio(0.68),
    ]

    assert await turns_ended(frames) == ["I was wondering about my bill."]


async def test_speech_the_vad_has_not_reported_yet_holds_the_grace() -> None:
    frames = [*started(), *stopped(), *said("Hello."), *audio(0.8)]

    assert await turns_ended(frames, hears_speech=True) == []


async def test_a_final_transcript_that_comes_while_the_caller_speaks_again_is_not_the_last() -> (
    None
):
    # A recogniser that transcribes each stretch between the VAD's stops
    # finishes "Hi." while the caller is already saying the rest.
    frames = [
        *started(),
        *stopped(),
        *audio(0.12),
        *started(),
        *said("Hi."),
        *stopped(),
        *audio(0.68),
        *said("I have a billing question."),
        *audio(0.12),
    ]

    assert await turns_ended(frames) == ["Hi. I have a billing question."]


async def test_a_turn_waits_for_a_final_transcript_for_each_stop_of_the_vad() -> None:
    # "Thank you, goodbye.": the recogniser is still on "Thank you." when the
    # short "goodbye" has ended, and sends the two one after the other.
    frames = [
        *started(),
        *stopped(),
        *audio(0.12),
        *started(),
        *stopped(),
        *said("Thank you."),
        *audio(0.68),
        *said("Goodbye."),
        *audio(0.12),
    ]

    assert await turns_ended(frames) == ["Thank you. Goodbye."]


async def test_a_stretch_the_recogniser_found_no_words_in_does_not_hold_the_turn() -> None:
    # A cough after the sentence: the VAD stops twice, the second stretch has no words.
    frames = [
        *started(),
        *stopped(),
        *said("Hello."),
        *audio(0.12),
        *started(),
        *stopped(),
        NoWordsFrame(),
        SleepFrame(STEP),
        *audio(0.68),
    ]

    assert await turns_ended(frames) == ["Hello."]


async def test_the_recogniser_is_told_a_stretch_the_caller_went_on_from_joins_the_next() -> None:
    frames = [*started(), *stopped(), *audio(0.2), *started(), *stopped(), *said("Hi there.")]
    _, verdicts = await judged([*frames, *audio(0.68)])

    # At each start: no stretch waiting (first), the first stretch joined (second);
    # then the grace after the second stop passes.
    assert verdicts == [False, True, False]


async def test_the_recogniser_is_told_a_stretch_whose_grace_passed_stands_alone() -> None:
    frames = [*started(), *stopped(), *said("Hello."), *audio(0.68), *started(), *stopped()]
    turns, verdicts = await judged([*frames, *said("Bye."), *audio(0.68)])

    assert turns == ["Hello.", "Bye."]
    assert verdicts == [False, False, False, False]
