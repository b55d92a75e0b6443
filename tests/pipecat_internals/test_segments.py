"""The segmented recogniser holds each stretch's transcript for the turn rule's verdict.

A recogniser whose transcript is the number of bytes it was given shows
which audio each transcript covers, in a real pipecat pipeline; the frames
are what the VAD and the end-of-turn rule send it in a call, in their order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

import pytest
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.tests.utils import SleepFrame, run_test

from teamrunner.frames import NoWordsFrame, StretchVerdictFrame
from teamrunner.pipecat_internals import segments
from teamrunner.pipecat_internals.segments import WholeTurnSegments

RATE = 16000
PADDING = RATE  # bytes of the half second of silence pipecat pads a segment with


class ByteCountingRecogniser(WholeTurnSegments):
    """Hears each segment as the number of bytes in it."""

    @property
    def wants_wav_segments(self) -> bool:
        return False

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        yield TranscriptionFrame(str(len(audio) - PADDING), "caller", "")


def speech(secs: float) -> list[Frame]:
    frames: list[Frame] = []
    for _ in range(round(secs / 0.02)):
        frames += [InputAudioRawFrame(bytes(640), RATE, 1), SleepFrame(0.002)]
    return frames


def start() -> list[Frame]:
    return [VADUserStartedSpeakingFrame(), SleepFrame(0.02)]


def stop() -> list[Frame]:
    return [VADUserStoppedSpeakingFrame(), SleepFrame(0.02)]


def verdict(joined: bool) -> list[Frame]:
    return [StretchVerdictFrame(joined=joined), SleepFrame(0.05)]


async def heard(frames: Sequence[Frame]) -> list[str]:
    """The transcripts out of the recogniser, in order, a stretch with none as ``-``."""
    down, _ = await run_test(ByteCountingRecogniser(), frames_to_send=[*frames, SleepFrame(0.2)])
    return [
        frame.text if isinstance(frame, TranscriptionFrame) else "-"
        for frame in down
        if isinstance(frame, (TranscriptionFrame, NoWordsFrame))
    ]


async def test_stretches_the_caller_went_on_from_are_transcribed_as_one() -> None:
    frames = [*verdict(False), *start(), *speech(0.4), *stop(), *speech(0.2)]
    frames += [*start(), *verdict(True), *speech(0.4), *stop(), *speech(0.2), *verdict(False)]

    # The first stretch answered with no words; the second with all one second of it.
    assert await heard(frames) == ["-", str(RATE * 2)]


async def test_a_stretch_whose_grace_passed_is_transcribed_alone_as_pipecat_would() -> None:
    frames = [*verdict(False), *start(), *speech(0.4), *stop(), *speech(0.2), *verdict(False)]
    frames += [*start(), *speech(0.4), *stop(), *verdict(False)]

    # The second segment starts with what came after the first stop, as pipecat's does.
    assert await heard(frames) == [str(12800), str(6400 + 12800)]


async def test_without_a_rule_judging_each_stretch_is_sent_at_once() -> None:
    frames = [*start(), *speech(0.4), *stop(), *speech(0.2), *start(), *speech(0.4), *stop()]

    assert await heard(frames) == [str(12800), str(6400 + 12800)]


async def test_a_stretch_nobody_judges_is_let_go_after_the_hold_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(segments, "HOLD_LIMIT_SECS", 0.2)
    frames = [*verdict(False), *start(), *speech(0.4), *stop(), SleepFrame(0.5), *start()]
    down, _ = await run_test(ByteCountingRecogniser(), frames_to_send=frames)

    kinds = [
        type(f) for f in down if isinstance(f, (TranscriptionFrame, VADUserStartedSpeakingFrame))
    ]
    # Out before the next stretch began, not at the end of the call.
    assert kinds == [VADUserStartedSpeakingFrame, TranscriptionFrame, VADUserStartedSpeakingFrame]


async def test_a_held_stretch_is_transcribed_when_the_call_ends_gracefully(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(segments, "HOLD_LIMIT_SECS", 60.0)
    frames = [*verdict(False), *start(), *speech(0.4), *stop()]
    # run_test ends with an EndFrame, while the stretch still waits for its verdict.
    down, _ = await asyncio.wait_for(
        run_test(ByteCountingRecogniser(), frames_to_send=frames), timeout=10
    )

    assert [f.text for f in down if isinstance(f, TranscriptionFrame)] == [str(12800)]
