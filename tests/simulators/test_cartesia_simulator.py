"""The Cartesia simulator answers pipecat's real Cartesia service and the cartesia SDK.

Each test runs a real client (pipecat's ``CartesiaTTSService`` in a real
pipeline, the ``cartesia`` SDK, or a bare websocket where the protocol itself
is the point) against the simulator on loopback, and tells who spoke from the
audio's tone.
"""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp
import numpy as np
import pytest
from cartesia import AsyncCartesia
from pipecat.frames.frames import (
    ErrorFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSTextFrame,
    TTSUpdateSettingsFrame,
)
from pipecat.services.cartesia.tts import CartesiaTTSService
from pipecat.tests.utils import run_test
from pipeline_call import Call, audio_by_context

from simulators.audio import float_to_s16le
from simulators.cartesia import WEBSOCKET_PATH, CartesiaSimulator
from simulators.voices import VoiceBook

GREETER, BILLING = "voice-greeter", "voice-billing"


def cartesia_tts(sim: CartesiaSimulator, voice: str = GREETER) -> CartesiaTTSService:
    return CartesiaTTSService(
        api_key="k",
        url=sim.ws_url + WEBSOCKET_PATH,
        settings=CartesiaTTSService.Settings(voice=voice),
    )


@pytest.fixture
async def cartesia():
    async with CartesiaSimulator(voices=VoiceBook({GREETER: 500.0, BILLING: 1000.0})) as sim:
        yield sim


async def test_pipecat_service_speaks_the_text_in_the_configured_voice(cartesia):
    down, _ = await run_test(cartesia_tts(cartesia), frames_to_send=[TTSSpeakFrame("Hello there.")])

    (audio,) = audio_by_context(down).values()
    assert cartesia.voices.identify_voice(audio, 24000, [GREETER, BILLING]) == GREETER
    assert len(audio) == len("Hello there.") * 0.040 * 24000 * 2
    assert [f.text for f in down if isinstance(f, TTSTextFrame)] == ["Hello", "there."]
    assert cartesia.texts_for_voice(GREETER) == ["Hello there."]
    request = cartesia.requests[0]
    assert (request.model_id, request.language, request.sample_rate) == ("sonic-3.6", "en", 24000)
    assert request.encoding == "pcm_s16le"
    conn = cartesia.connections[0]
    assert (conn.api_key, conn.cartesia_version) == ("k", "2026-03-01")


async def test_switching_voice_mid_call_changes_the_tone_heard(cartesia):
    frames = [
        TTSSpeakFrame("Welcome, I am the greeter."),
        TTSUpdateSettingsFrame(delta=CartesiaTTSService.Settings(voice=BILLING)),
        TTSSpeakFrame("Billing here."),
    ]
    down, _ = await run_test(cartesia_tts(cartesia), frames_to_send=frames)

    spoken = [
        cartesia.voices.identify_voice(audio, 24000, [GREETER, BILLING])
        for audio in audio_by_context(down).values()
    ]
    assert spoken == [GREETER, BILLING]
    assert cartesia.texts_for_voice(BILLING) == ["Billing here."]
    assert cartesia.connections_opened == 1


async def test_cartesia_sdk_streams_audio_and_word_timestamps(cartesia):
    client = AsyncCartesia(api_key="sdk-key", websocket_base_url=cartesia.ws_url)
    async with client.tts.websocket_connect() as connection:
        context = connection.context(
            model_id="sonic-3",
            voice=BILLING,
            output_format={"container": "raw", "encoding": "pcm_f32le", "sample_rate": 16000},
            add_timestamps=True,
        )
        await context.push("Hello from the SDK.")
        await context.no_more_inputs()
        events = [event async for event in context.receive()]
    await client.close()

    assert events[-1].type == "done"
    samples = np.frombuffer(b"".join(e.audio or b"" for e in events if e.type == "chunk"), "<f4")
    assert samples.size == len("Hello from the SDK.") * 0.040 * 16000
    assert cartesia.voices.identify_voice(float_to_s16le(samples), 16000, [GREETER]) is None
    assert cartesia.voices.identify_voice(float_to_s16le(samples), 16000, [BILLING]) == BILLING
    stamps = [e.word_timestamps for e in events if e.type == "timestamps" and e.word_timestamps]
    words = [word for stamp in stamps for word in stamp.words]
    starts = [start for stamp in stamps for start in stamp.start]
    assert words == ["Hello", "from", "the", "SDK."]
    assert starts == pytest.approx([0.0, 0.24, 0.44, 0.6])
    assert cartesia.connections[0].api_key == "sdk-key"


async def test_cancel_stops_a_context_while_others_carry_on():
    async with (
        CartesiaSimulator(chunk_delay=0.05) as sim,
        aiohttp.ClientSession() as http,
        http.ws_connect(sim.ws_url + WEBSOCKET_PATH) as ws,
    ):
        await ws.send_json(_request("long", "word " * 60, continue_=False))
        first = json.loads(await ws.receive_str())
        await ws.send_json({"context_id": "long", "cancel": True})
        await sim.wait_until(lambda: sim.connections[0].cancelled_contexts == ["long"])
        await ws.send_json(_request("next", "Still here.", continue_=False))
        messages = [first]
        while not (messages[-1]["type"] == "done" and messages[-1]["context_id"] == "next"):
            messages.append(json.loads(await ws.receive_str()))

    long_chunks = [m for m in messages if m["context_id"] == "long" and m["type"] == "chunk"]
    assert 1 <= len(long_chunks) <= 3
    assert not any(m["context_id"] == "long" and m["type"] == "done" for m in messages)


async def test_first_audio_waits_for_the_configured_delay():
    async with (
        CartesiaSimulator(first_audio_delay=0.3) as sim,
        aiohttp.ClientSession() as http,
        http.ws_connect(sim.ws_url + WEBSOCKET_PATH) as ws,
    ):
        sent = time.monotonic()
        await ws.send_json(_request("ctx", "Hi.", continue_=False))
        first = json.loads(await ws.receive_str())
        waited = time.monotonic() - sent

    assert first["type"] == "chunk" and waited >= 0.3


async def test_unsupported_output_format_is_answered_with_an_error_message(cartesia):
    request = _request("ctx", "Hi.", continue_=False)
    request["output_format"]["encoding"] = "mp3"
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(cartesia.ws_url + WEBSOCKET_PATH) as ws,
    ):
        await ws.send_json(request)
        reply = json.loads(await ws.receive_str())

    assert (reply["type"], reply["context_id"], reply["status_code"]) == ("error", "ctx", 400)
    assert "encoding" in reply["message"]


async def test_refused_handshake_with_401_makes_pipecat_service_unusable(cartesia):
    cartesia.refuse_connections = True
    cartesia.refusal_status = 401
    tts = cartesia_tts(cartesia)
    async with Call(tts) as call:
        await call.wait_for(lambda: bool(call.of_type(ErrorFrame, "up")))

    assert "401" in call.of_type(ErrorFrame, "up")[0].error
    assert tts.is_usable is False


async def test_pipecat_reconnects_after_the_connection_drops_and_speaks_again(cartesia):
    tts = cartesia_tts(cartesia)
    async with Call(tts) as call:
        await cartesia.wait_until(lambda: cartesia.active_connections == 1)
        await cartesia.close_connections()
        await cartesia.wait_until(lambda: cartesia.connections_opened == 2)
        await call.worker.queue_frame(TTSSpeakFrame("Back again."))
        await call.wait_for(lambda: bool(call.of_type(TTSAudioRawFrame)))

    assert cartesia.texts_for_voice(GREETER) == ["Back again."]
    assert tts.is_usable is True


def _request(context_id: str, transcript: str, continue_: bool) -> dict[str, Any]:
    return {
        "context_id": context_id,
        "transcript": transcript,
        "continue": continue_,
        "model_id": "sonic-3",
        "voice": {"mode": "id", "id": GREETER},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000},
    }
