"""The Deepgram simulator answers pipecat's real Deepgram service and the deepgram SDK.

Each test runs the real client (pipecat's ``DeepgramSTTService`` inside a real
pipeline, or the deepgram SDK's own websocket client) against the simulator on
loopback and checks what came out and what the simulator recorded.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from deepgram import AsyncDeepgramClient, DeepgramClientEnvironment
from deepgram.core.events import EventType
from deepgram.listen.v1.types import (
    ListenV1CloseStream,
    ListenV1Metadata,
    ListenV1Results,
    ListenV1UtteranceEnd,
)
from pipecat.frames.frames import (
    ErrorFrame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.services.deepgram.stt import DeepgramSTTService
from pipeline_call import Call

from simulators.audio import float_to_s16le
from simulators.deepgram import DeepgramSimulator, SpeechEnded, UtteranceDetector

RATE = 16000
FRAME_MS = 20


def caller_audio(seconds: float, hz: float = 440.0) -> list[bytes]:
    """20 ms frames of a caller: a tone when hz > 0, silence otherwise."""
    t = np.arange(int(RATE * seconds)) / RATE
    pcm = float_to_s16le(0.3 * np.sin(2 * np.pi * hz * t) if hz else np.zeros(t.size))
    step = RATE * FRAME_MS // 1000 * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


def audio_frames(chunks: list[bytes]) -> list[InputAudioRawFrame]:
    return [InputAudioRawFrame(audio=chunk, sample_rate=RATE, num_channels=1) for chunk in chunks]


@pytest.fixture
async def deepgram():
    async with DeepgramSimulator(["Hello there.", "I need help with my bill."]) as sim:
        yield sim


async def test_pipecat_service_gets_the_scripted_transcript_for_a_caller_utterance(deepgram):
    stt = DeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    chunks = caller_audio(0.6) + caller_audio(0.5, hz=0)
    async with Call(stt) as call:
        await call.send(audio_frames(chunks))
        await call.wait_for(lambda: bool(call.of_type(TranscriptionFrame)))
        await deepgram.wait_until(lambda: deepgram.audio_bytes_received == sum(map(len, chunks)))

    assert [f.text for f in call.of_type(TranscriptionFrame)] == ["Hello there."]
    interims = [f.text for f in call.of_type(InterimTranscriptionFrame)]
    assert interims and interims[0] == "Hello"
    conn = deepgram.connections[0]
    assert conn.api_key == "k"
    assert conn.query["model"] == "nova-3-general"
    assert conn.query["language"] == "en"
    assert conn.query["encoding"] == "linear16"
    assert conn.query["sample_rate"] == "16000"
    assert conn.query["interim_results"] == "true"
    assert conn.transcripts_sent == ["Hello there."]
    assert deepgram.remaining_transcripts == ["I need help with my bill."]


async def test_finalize_from_pipecat_ends_the_utterance_without_waiting_for_silence(deepgram):
    stt = DeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    async with Call(stt) as call:
        await call.send(audio_frames(caller_audio(0.4)))
        await deepgram.wait_until(lambda: deepgram.audio_bytes_received >= 0.4 * RATE * 2)
        await call.send([VADUserStoppedSpeakingFrame()])
        await call.wait_for(lambda: bool(call.of_type(TranscriptionFrame)))

    (transcription,) = call.of_type(TranscriptionFrame)
    assert transcription.text == "Hello there."
    assert "Finalize" in deepgram.connections[0].control_messages
    result = transcription.result
    assert isinstance(result, ListenV1Results) and result.from_finalize is True


async def test_utterances_past_the_end_of_the_script_go_unanswered_until_more_is_pushed():
    async with DeepgramSimulator(["only one"]) as sim:
        stt = DeepgramSTTService(api_key="k", base_url=sim.ws_url)
        utterance = caller_audio(0.3) + caller_audio(0.4, hz=0)
        async with Call(stt) as call:
            await call.send(audio_frames(utterance * 2))
            await sim.wait_until(lambda: sim.unanswered_utterances == 1)
            sim.push_transcripts("and another")
            await call.send(audio_frames(utterance))
            await call.wait_for(lambda: len(call.of_type(TranscriptionFrame)) == 2)

    assert [f.text for f in call.of_type(TranscriptionFrame)] == ["only one", "and another"]
    assert sim.transcripts_sent == ["only one", "and another"]


async def test_a_final_delay_holds_final_transcripts_back_but_not_interims():
    async with DeepgramSimulator(["Hello there."], final_delay=1.0) as sim:
        stt = DeepgramSTTService(api_key="k", base_url=sim.ws_url)
        async with Call(stt) as call:
            await call.send(audio_frames(caller_audio(0.6)))
            await call.wait_for(lambda: bool(call.of_type(InterimTranscriptionFrame)))
            await call.send([VADUserStoppedSpeakingFrame()])
            finalized_at = time.monotonic()
            await call.wait_for(lambda: bool(call.of_type(TranscriptionFrame)))
            answered_at = time.monotonic()

    assert [f.text for f in call.of_type(TranscriptionFrame)] == ["Hello there."]
    assert answered_at - finalized_at >= 1.0


async def test_deepgram_sdk_reads_results_utterance_end_and_metadata(deepgram):
    client = AsyncDeepgramClient(
        api_key="sdk-key",
        environment=DeepgramClientEnvironment(
            base=deepgram.http_url,
            production=deepgram.ws_url,
            agent=deepgram.ws_url,
            agent_rest=deepgram.http_url,
        ),
    )
    received: list[object] = []
    async with client.listen.v1.connect(
        model="nova-3", encoding="linear16", sample_rate="16000", utterance_end_ms="1000"
    ) as connection:
        connection.on(EventType.MESSAGE, received.append)
        listening = asyncio.create_task(connection.start_listening())
        for chunk in caller_audio(0.5) + caller_audio(0.4, hz=0):
            await connection.send_media(chunk)
        await connection.send_close_stream(ListenV1CloseStream(type="CloseStream"))
        await asyncio.wait_for(listening, 5)

    finals = [m for m in received if isinstance(m, ListenV1Results) and m.is_final]
    assert [m.channel.alternatives[0].transcript for m in finals] == ["Hello there."]
    words = finals[0].channel.alternatives[0].words
    assert [w.punctuated_word for w in words] == ["Hello", "there."]
    assert 0.0 <= words[0].start < words[0].end <= words[1].start < words[1].end <= 0.6
    assert any(isinstance(m, ListenV1UtteranceEnd) for m in received)
    metadata = [m for m in received if isinstance(m, ListenV1Metadata)]
    assert metadata and metadata[0].duration == pytest.approx(0.9, abs=0.02)
    assert deepgram.connections[0].api_key == "sdk-key"
    assert deepgram.connections[0].control_messages == ["CloseStream"]


async def test_refused_handshake_with_401_makes_pipecat_service_unusable(deepgram):
    deepgram.refuse_connections = True
    deepgram.refusal_status = 401
    stt = DeepgramSTTService(api_key="bad", base_url=deepgram.ws_url)
    async with Call(stt) as call:
        await call.wait_for(lambda: bool(call.of_type(ErrorFrame, "up")))

    assert "401" in call.of_type(ErrorFrame, "up")[0].error
    assert stt.is_usable is False
    assert deepgram.connections_opened == 0


async def test_dropped_connection_reaches_pipecat_as_an_error(deepgram):
    stt = DeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    async with Call(stt) as call:
        await deepgram.wait_until(lambda: deepgram.active_connections == 1)
        await deepgram.close_connections()
        await call.wait_for(lambda: bool(call.of_type(ErrorFrame, "up")))
        await deepgram.wait_until(lambda: deepgram.active_connections == 0)

    assert deepgram.connections[0].closed
    assert stt.is_usable is True


async def test_a_held_handshake_waits_until_released_and_then_connects(deepgram):
    deepgram.hold_handshakes()
    stt = DeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    starting = asyncio.create_task(Call(stt).__aenter__())
    await deepgram.wait_until(lambda: deepgram.handshakes_waiting == 1)
    assert deepgram.connections_opened == 0 and not starting.done()

    deepgram.release_handshakes()
    call = await asyncio.wait_for(starting, 5)
    await call.__aexit__(None, None, None)

    assert deepgram.connections_opened == 1
    assert len(deepgram.handshakes) == 1 and deepgram.handshakes_waiting == 0


def test_detector_ends_an_utterance_after_the_silence_window():
    detector = UtteranceDetector(RATE, silence_s=0.3)
    events = []
    for chunk in caller_audio(0.5) + caller_audio(0.5, hz=0):
        events.extend(detector.feed(chunk))

    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "SpeechBegan" and kinds[-1] == "SpeechEnded"
    assert isinstance(events[-1], SpeechEnded)
    assert (events[-1].start, events[-1].end) == (0.0, pytest.approx(0.5))
    assert not detector.in_speech
