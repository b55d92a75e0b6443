"""A paced voice streams a reply the way real providers do, instead of in one burst.

Benchmarks of a loaded runner depend on it: a reply whose chunks all arrive
at once is a burst of work a real voice never causes. Both TTS simulators
are driven over a bare websocket, so what is measured is only when the
simulator sends; the assertions are lower bounds the schedule guarantees.
"""

from __future__ import annotations

import json
import time

import aiohttp

from simulators.cartesia import WEBSOCKET_PATH, CartesiaSimulator
from simulators.elevenlabs import ElevenLabsSimulator
from simulators.tts import PROVIDER_PACING, Pacing

TEXT = "word " * 20  # 100 characters: 1 s of audio at 10 ms a character
AUDIO_SECS = 1.0
# asyncio's timers may fire up to a clock tick early.
CLOCK_SLACK = 0.005


def _cartesia_request(text: str) -> dict[str, object]:
    return {
        "context_id": "ctx",
        "transcript": text,
        "continue": False,
        "model_id": "sonic-3",
        "voice": {"mode": "id", "id": "voice-a"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000},
    }


async def test_a_paced_cartesia_voice_waits_for_its_first_chunk_then_streams_at_its_speed():
    async with (
        CartesiaSimulator(ms_per_char=10, pacing=PROVIDER_PACING) as sim,
        aiohttp.ClientSession() as http,
        http.ws_connect(sim.ws_url + WEBSOCKET_PATH) as ws,
    ):
        sent = time.monotonic()
        await ws.send_json(_cartesia_request(TEXT))
        arrivals: list[float] = []
        while True:
            message = json.loads(await ws.receive_str())
            if message["type"] == "done":
                break
            if message["type"] == "chunk":
                arrivals.append(time.monotonic() - sent)
        # What benchmarks read: when the voice began and finished the line.
        began = sim.first_audio_at[("ctx", TEXT)] - sent
        finished = sim.last_audio_at[("ctx", TEXT)] - sent

    last_chunk_starts_at = AUDIO_SECS - 0.1  # chunks are 100 ms of audio each
    assert len(arrivals) == 10
    assert arrivals[0] >= PROVIDER_PACING.first_audio_secs - CLOCK_SLACK
    # The schedule is absolute from the request: a first chunk that arrives late
    # (a busy machine) shortens the spread, but never brings the last chunk sooner.
    assert arrivals[-1] >= (
        PROVIDER_PACING.first_audio_secs
        + last_chunk_starts_at / PROVIDER_PACING.speed
        - CLOCK_SLACK
    )
    assert began <= arrivals[0]
    # The schedule is absolute from the request, so a late first chunk does not delay the last.
    assert finished >= (
        PROVIDER_PACING.first_audio_secs
        + last_chunk_starts_at / PROVIDER_PACING.speed
        - CLOCK_SLACK
    )


async def test_a_paced_elevenlabs_voice_streams_at_the_pace_it_is_given():
    pacing = Pacing(first_audio_secs=0.2, speed=2.0)
    async with (
        ElevenLabsSimulator(ms_per_char=10, pacing=pacing) as sim,
        aiohttp.ClientSession() as http,
        http.ws_connect(
            sim.ws_url + "/v1/text-to-speech/voice-a/multi-stream-input?output_format=pcm_16000"
        ) as ws,
    ):
        sent = time.monotonic()
        await ws.send_json({"text": TEXT, "context_id": "ctx", "flush": True})
        arrivals: list[float] = []
        while len(arrivals) < 10:
            message = json.loads(await ws.receive_str())
            if "audio" in message:
                arrivals.append(time.monotonic() - sent)
        await sim.wait_until(lambda: ("ctx", TEXT) in sim.last_audio_at, 5)
        finished = sim.last_audio_at[("ctx", TEXT)] - sent

    assert arrivals[0] >= pacing.first_audio_secs - CLOCK_SLACK
    assert arrivals[-1] >= pacing.first_audio_secs + (AUDIO_SECS - 0.1) / pacing.speed - CLOCK_SLACK
    assert finished >= pacing.first_audio_secs + (AUDIO_SECS - 0.1) / pacing.speed - CLOCK_SLACK
