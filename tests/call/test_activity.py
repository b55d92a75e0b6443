"""The session idle timeout's clock: what keeps a call alive, and what does not."""

from __future__ import annotations

import asyncio

from pipecat.frames.frames import InputAudioRawFrame, TranscriptionFrame, UserSpeakingFrame

from teamrunner.call.activity import ActivityWatch

SILENCE = InputAudioRawFrame(audio=b"\x00" * 640, sample_rate=16000, num_channels=1)


async def feed(watch: ActivityWatch, frame: object, seconds: float) -> None:
    for _ in range(int(seconds / 0.02)):
        watch.saw(frame)  # type: ignore[arg-type]
        await asyncio.sleep(0.02)


async def test_a_caller_who_keeps_speaking_keeps_the_call_alive() -> None:
    watch = ActivityWatch(0.2)
    idle = asyncio.ensure_future(watch.idle())

    await feed(watch, UserSpeakingFrame(), 0.6)

    assert not idle.done()
    await asyncio.wait_for(idle, 2)  # and once they stop, it times out


async def test_caller_audio_alone_is_not_activity() -> None:
    # Go streams the line's silence as audio: a call with nobody on it still ends.
    watch = ActivityWatch(0.2)
    idle = asyncio.ensure_future(watch.idle())

    await feed(watch, SILENCE, 0.6)

    assert idle.done()


async def test_each_transcript_restarts_the_wait() -> None:
    watch = ActivityWatch(0.3)
    idle = asyncio.ensure_future(watch.idle())
    for _ in range(3):
        await asyncio.sleep(0.2)
        watch.saw(TranscriptionFrame(text="hello", user_id="caller", timestamp="now"))

    assert not idle.done()
    idle.cancel()


async def test_a_timeout_of_zero_never_ends_the_call() -> None:
    idle = asyncio.ensure_future(ActivityWatch(0).idle())

    await asyncio.sleep(0.3)

    assert not idle.done()
    idle.cancel()
