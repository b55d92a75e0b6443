"""The ElevenLabs simulator answers pipecat's real ElevenLabs multi-context service.

Each test runs pipecat's ``ElevenLabsTTSService`` in a real pipeline (or a bare
websocket, where the protocol itself is the point) against the simulator on
loopback, and tells who spoke from the audio's tone. The ``elevenlabs`` SDK is
not used: its only websocket TTS client (``convert_realtime``) always dials
``wss://`` and speaks the single-context ``stream-input`` endpoint, not the
multi-context one pipecat uses.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import pytest
from pipecat.audio.utils import create_file_resampler, ulaw_to_pcm
from pipecat.frames.frames import (
    ErrorFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSTextFrame,
    TTSUpdateSettingsFrame,
)
from pipecat.pipeline.worker import PipelineParams
from pipecat.services.elevenlabs.tts import ElevenLabsTTSService
from pipecat.tests.utils import run_test
from pipeline_call import Call, audio_by_context

from simulators.elevenlabs import ElevenLabsSimulator
from simulators.voices import VoiceBook

GREETER, BILLING = "voice-greeter", "voice-billing"


def elevenlabs_tts(sim: ElevenLabsSimulator, voice: str = GREETER) -> ElevenLabsTTSService:
    return ElevenLabsTTSService(
        api_key="k", url=sim.ws_url, settings=ElevenLabsTTSService.Settings(voice=voice)
    )


@pytest.fixture
async def elevenlabs():
    async with ElevenLabsSimulator(voices=VoiceBook({GREETER: 500.0, BILLING: 1000.0})) as sim:
        yield sim


async def test_pipecat_service_speaks_the_text_in_the_voice_of_the_url(elevenlabs):
    down, _ = await run_test(
        elevenlabs_tts(elevenlabs), frames_to_send=[TTSSpeakFrame("Hello there.")]
    )

    (audio,) = audio_by_context(down).values()
    assert elevenlabs.voices.identify_voice(audio, 24000, [GREETER, BILLING]) == GREETER
    assert len(audio) == len("Hello there.") * 0.040 * 24000 * 2
    assert [f.text for f in down if isinstance(f, TTSTextFrame)] == ["Hello", "there."]
    assert elevenlabs.texts_for_voice(GREETER) == ["Hello there."]
    assert elevenlabs.api_keys_seen == ["k"]
    conn = elevenlabs.connections[0]
    assert conn.query["model_id"] == "eleven_flash_v2_5"
    assert conn.query["output_format"] == "pcm_24000"
    context_id = elevenlabs.requests[0].context_id
    assert conn.closed_contexts == [context_id]
    assert conn.close_socket_requested


async def test_pipecat_asks_for_the_pipeline_output_rate(elevenlabs):
    down, _ = await run_test(
        elevenlabs_tts(elevenlabs),
        frames_to_send=[TTSSpeakFrame("Sixteen kilohertz.")],
        pipeline_params=PipelineParams(audio_out_sample_rate=16000),
    )

    (audio,) = audio_by_context(down).values()
    assert elevenlabs.connections[0].query["output_format"] == "pcm_16000"
    assert elevenlabs.voices.identify_voice(audio, 16000, [GREETER, BILLING]) == GREETER


async def test_switching_voice_reconnects_to_the_new_voice_and_its_tone(elevenlabs):
    frames = [
        TTSSpeakFrame("Welcome, I am the greeter."),
        TTSUpdateSettingsFrame(delta=ElevenLabsTTSService.Settings(voice=BILLING)),
        TTSSpeakFrame("Billing here."),
    ]
    down, _ = await run_test(elevenlabs_tts(elevenlabs), frames_to_send=frames)

    spoken = [
        elevenlabs.voices.identify_voice(audio, 24000, [GREETER, BILLING])
        for audio in audio_by_context(down).values()
    ]
    assert spoken == [GREETER, BILLING]
    assert [conn.voice_id for conn in elevenlabs.connections] == [GREETER, BILLING]
    assert elevenlabs.texts_for_voice(BILLING) == ["Billing here."]


async def test_without_auto_mode_text_waits_for_flush_and_close_context_ends_it(elevenlabs):
    url = elevenlabs.ws_url + f"/v1/text-to-speech/{BILLING}/multi-stream-input"
    query = {"model_id": "eleven_flash_v2_5", "output_format": "ulaw_8000", "auto_mode": "false"}
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(url, params=query, headers={"xi-api-key": "raw"}) as ws,
    ):
        await ws.send_json({"text": " ", "context_id": "c1", "voice_settings": {"speed": 1}})
        await ws.send_json({"text": "Held until flushed. ", "context_id": "c1"})
        await ws.send_json({"text": ""})
        conn = elevenlabs.connections[0]
        await elevenlabs.wait_until(lambda: conn.keepalives == 1)
        assert elevenlabs.texts_for_voice(BILLING) == ["Held until flushed. "]
        assert conn.generations == []
        await ws.send_json({"context_id": "c1", "flush": True})
        first = json.loads(await ws.receive_str())
        await ws.send_json({"context_id": "c1", "close_context": True})
        messages = [first] + await _until_final(ws, "c1")
        await ws.send_json({"close_socket": True})
        closing = await ws.receive()

    audio_messages = [m for m in messages if "audio" in m]
    assert {m["contextId"] for m in messages} == {"c1"}
    chars = "".join(c for m in audio_messages for c in m["alignment"]["chars"])
    assert chars == "Held until flushed. "
    assert all(m["alignment"]["charStartTimesMs"][0] == 0 for m in audio_messages)
    assert audio_messages[0]["alignment"]["charDurationsMs"][0] == 40
    mulaw = b"".join(base64.b64decode(m["audio"]) for m in audio_messages)
    assert len(mulaw) == len("Held until flushed. ") * 0.040 * 8000
    pcm = await ulaw_to_pcm(mulaw, 8000, 8000, create_file_resampler())
    assert elevenlabs.voices.identify_voice(pcm, 8000, [GREETER, BILLING]) == BILLING
    assert closing.type == aiohttp.WSMsgType.CLOSE
    assert conn.generations == [("c1", "Held until flushed. ")]
    assert conn.voice_settings == {"c1": {"speed": 1}}
    assert conn.api_key == "raw"


async def test_refused_handshake_with_401_makes_pipecat_service_unusable(elevenlabs):
    elevenlabs.refuse_connections = True
    elevenlabs.refusal_status = 401
    tts = elevenlabs_tts(elevenlabs)
    async with Call(tts) as call:
        await call.wait_for(lambda: bool(call.of_type(ErrorFrame, "up")))

    assert "401" in call.of_type(ErrorFrame, "up")[0].error
    assert tts.is_usable is False


async def test_pipecat_reconnects_after_the_connection_drops_and_speaks_again(elevenlabs):
    tts = elevenlabs_tts(elevenlabs)
    async with Call(tts) as call:
        await elevenlabs.wait_until(lambda: elevenlabs.active_connections == 1)
        await elevenlabs.close_connections()
        await elevenlabs.wait_until(lambda: elevenlabs.connections_opened == 2)
        await call.worker.queue_frame(TTSSpeakFrame("Back again."))
        await call.wait_for(lambda: bool(call.of_type(TTSAudioRawFrame)))

    assert elevenlabs.texts_for_voice(GREETER) == ["Back again."]
    assert tts.is_usable is True


async def test_output_formats_the_simulator_cannot_speak_are_refused_at_the_handshake(
    elevenlabs,
):
    url = elevenlabs.ws_url + f"/v1/text-to-speech/{GREETER}/multi-stream-input"
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(url, params={"output_format": "mp3_44100_128"})

    assert refused.value.status == 400


async def _until_final(ws: aiohttp.ClientWebSocketResponse, context_id: str) -> list[Any]:
    messages = []
    while True:
        message = json.loads(await ws.receive_str())
        messages.append(message)
        if message.get("isFinal") and message.get("contextId") == context_id:
            return messages
