"""Caller audio on its way in: joined from pipecat-manager's 20 ms frames, and whole."""

from __future__ import annotations

import httpx
from pipecat.frames.frames import InputAudioRawFrame

from playground.server import RunnerServer
from simulators.manager import Caller, Then
from simulators.openai import Reply
from teamrunner.manager.transport import AudioJoiner

from conftest import Cloud, cloud_settings
from scenarios import CALL_ID, voice_request

ONE_SECOND = 16000 * 2


def frame(audio: bytes, rate: int = 16000) -> InputAudioRawFrame:
    return InputAudioRawFrame(audio=audio, sample_rate=rate, num_channels=1)


async def heard_by_stt(cloud: Cloud, **settings: object) -> list[int]:
    """The sizes of the audio messages the STT got for one second of caller audio."""
    cloud.openai.push(Reply.say("Hello."))
    pcm = bytes(range(256)) * (ONE_SECOND // 256)
    call = cloud.manager.expect_call(
        CALL_ID, caller=Caller(Caller.pcm(pcm), realtime=False, speed=0, then=Then.STOP)
    )
    async with (
        RunnerServer(cloud_settings(cloud, **settings)) as runner,
        httpx.AsyncClient(timeout=30) as http,
    ):
        response = await http.post(f"{runner.url}/run", json=voice_request())
        assert response.status_code == 200, response.text
        await cloud.deepgram.wait_until(lambda: cloud.deepgram.audio_bytes_received >= ONE_SECOND)
        await http.post(f"{runner.url}/stop", params={"id": CALL_ID})
        await call.wait_closed(timeout=10)
    return [size for conn in cloud.deepgram.connections for size in conn.audio_messages]


async def test_caller_audio_reaches_the_stt_in_40_ms_messages_and_none_is_lost(
    cloud: Cloud,
) -> None:
    sizes = await heard_by_stt(cloud, caller_audio_ms=40)

    assert sum(sizes) == ONE_SECOND
    assert set(sizes) == {1280}


async def test_caller_audio_ms_zero_passes_pipecat_managers_frames_as_sent(cloud: Cloud) -> None:
    sizes = await heard_by_stt(cloud, caller_audio_ms=0)

    assert sum(sizes) == ONE_SECOND
    assert set(sizes) == {640}


def test_joined_frames_keep_the_audio_in_order() -> None:
    joiner = AudioJoiner(60)
    parts = [bytes([n]) * 640 for n in range(7)]

    out = [f for part in parts for f in joiner.add(frame(part))]

    assert [f.audio for f in out] == [b"".join(parts[0:3]), b"".join(parts[3:6])]


def test_a_change_of_format_delivers_what_was_held_first() -> None:
    joiner = AudioJoiner(40)

    assert joiner.add(frame(b"a" * 640)) == []
    [held] = joiner.add(frame(b"b" * 320, rate=8000))
    [joined] = joiner.add(frame(b"c" * 320, rate=8000))

    assert (held.audio, held.sample_rate) == (b"a" * 640, 16000)
    assert (joined.audio, joined.sample_rate) == (b"b" * 320 + b"c" * 320, 8000)
