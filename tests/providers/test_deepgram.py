"""Deepgram's socket closing mid-call loses none of the caller's words.

When Deepgram closes a call's socket, the runner reconnects at once and keeps
the caller's audio meanwhile, then sends it on the new socket. The call tests
hold the simulator's next handshake so that the socket stays down while the
caller speaks, and read what the new socket received and what the LLM was
asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import numpy as np
import pytest
from deepgram.core.client_wrapper import BaseClientWrapper
from loguru import logger
from pipecat.frames.frames import EndFrame, Frame, InputAudioRawFrame, SystemFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.services.deepgram.stt import DeepgramSTTService
from pipecat.services.stt_service import STTService
from pipecat.workers.runner import WorkerRunner

from playground.server import RunnerServer
from simulators.audio import float_to_s16le
from simulators.deepgram import DeepgramSimulator
from simulators.manager import Caller
from simulators.openai import Reply
from teamrunner.pipecat_internals.deepgram import LightDeepgramClient, shared_http_client
from teamrunner.providers.deepgram import GaplessDeepgramSTTService, HeldAudio

from conftest import Cloud
from scenarios import CALL_ID, caller_says, voice_request

LINE = "I want to change my address."


async def test_a_line_spoken_while_deepgrams_socket_is_down_is_transcribed_once_it_is_back(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Of course, what is the new address?"))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(greeting="Hello.")
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait(lambda c: c.bot_llm_text() == ["Hello."], 10, "the greeting")

    cloud.deepgram.hold_handshakes()
    dropped_at = time.monotonic()
    await cloud.deepgram.close_connections()
    # The runner tries again at once (pipecat alone waits 4 s), and the socket stays down.
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.handshakes_waiting == 1, 2)
    assert cloud.deepgram.handshakes[-1] - dropped_at < 1.0
    await caller_says(cloud, LINE, call_id=CALL_ID)
    await call.wait_caller_done(timeout=10)
    cloud.deepgram.release_handshakes()

    [request] = await cloud.openai.wait_for_requests(1, timeout=15)
    assert request.user_text == LINE
    first, second = cloud.deepgram.connections
    assert first.closed and first.transcripts_sent == []
    # The new socket got the line's audio, held while it was down, and answered it.
    assert second.transcripts_sent == [LINE]
    assert call.user_transcripts() == [LINE]


# --- The service in a pipeline of its own, against the simulator. ---

RATE = 16000
CHUNK = RATE * 20 // 1000 * 2  # 20 ms of 16-bit mono


def tone(secs: float) -> list[bytes]:
    t = np.arange(int(RATE * secs)) / RATE
    pcm = float_to_s16le(0.3 * np.sin(2 * np.pi * 440.0 * t))
    return [pcm[i : i + CHUNK] for i in range(0, len(pcm), CHUNK)]


def silence(secs: float) -> list[bytes]:
    return [bytes(CHUNK)] * round(secs * RATE * 2 / CHUNK)


async def eventually(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait until ``predicate()`` holds of pipecat state that no event announces: polled."""
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 (nothing to await: pipecat signals no change)
            await asyncio.sleep(0.01)


class PassedFrame(SystemFrame):
    """Queued behind caller audio: once it leaves the service, the audio before it was handled."""


class Pipe:
    """One STT service in a real pipeline under pipecat's worker, fed caller audio."""

    def __init__(self, stt: DeepgramSTTService) -> None:
        self.stt = stt
        self.worker = PipelineWorker(Pipeline([stt]), cancel_on_idle_timeout=False)
        self.worker.set_reached_downstream_filter((PassedFrame,))
        self.worker.add_event_handler("on_frame_reached_downstream", self._on_passed)
        self._started = asyncio.Event()
        self.worker.add_event_handler("on_pipeline_started", self._on_started)
        self._task: asyncio.Task[None] | None = None
        self._passed: set[int] = set()
        self._passing = asyncio.Condition()

    async def _on_started(self, worker: PipelineWorker, frame: Frame) -> None:
        self._started.set()

    async def _on_passed(self, worker: PipelineWorker, frame: Frame) -> None:
        async with self._passing:
            self._passed.add(frame.id)
            self._passing.notify_all()

    async def handled(self) -> None:
        """Wait until the service has handled all the audio sent so far."""
        marker = PassedFrame()
        await self.worker.queue_frame(marker)
        async with self._passing:
            await asyncio.wait_for(self._passing.wait_for(lambda: marker.id in self._passed), 5)

    async def __aenter__(self) -> Pipe:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self.worker)
        self._task = asyncio.create_task(runner.run())
        await asyncio.wait_for(self._started.wait(), 5)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.worker.queue_frame(EndFrame())
        assert self._task is not None
        await asyncio.wait_for(self._task, 10)

    @contextlib.asynccontextmanager
    async def line(self) -> AsyncIterator[None]:
        """Real-time silence while the block runs, as a phone line sends between words."""

        async def fill() -> None:
            while True:
                await self.send(silence(0.02))
                await asyncio.sleep(0.02)

        filler = asyncio.create_task(fill())
        try:
            yield
        finally:
            filler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await filler

    async def send(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            frame = InputAudioRawFrame(audio=chunk, sample_rate=RATE, num_channels=1)
            await self.worker.queue_frame(frame)


@pytest.fixture
async def deepgram() -> AsyncIterator[DeepgramSimulator]:
    async with DeepgramSimulator(["Hello there."]) as sim:
        yield sim


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """What ``teamrunner.providers.deepgram`` logs, from INFO up."""
    lines: list[str] = []
    sink = logger.add(
        lambda message: lines.append(str(message)),
        level="INFO",
        filter="teamrunner.providers.deepgram",
    )
    yield lines
    logger.remove(sink)


async def test_past_its_hold_the_oldest_audio_is_dropped_and_the_newest_sent_and_logged(
    deepgram: DeepgramSimulator, logged: list[str]
) -> None:
    stt = GaplessDeepgramSTTService(api_key="k", base_url=deepgram.ws_url, hold_secs=0.5)
    async with Pipe(stt) as pipe:
        await deepgram.wait_until(lambda: deepgram.active_connections == 1)
        deepgram.hold_handshakes()
        await deepgram.close_connections()
        async with pipe.line():
            await deepgram.wait_until(lambda: deepgram.handshakes_waiting == 1)
        # Another second while the socket is down: half a second of silence, then half of speech.
        await pipe.send(silence(0.5) + tone(0.5))
        await pipe.handled()
        assert any("dropping the oldest audio kept" in line for line in logged)
        deepgram.release_handshakes()
        await deepgram.wait_until(lambda: len(deepgram.connections) == 2)
        await pipe.send(silence(0.02))  # the next audio finds the socket back
        second = deepgram.connections[1]
        await deepgram.wait_until(lambda: second.audio_bytes >= RATE + CHUNK)

    # What was kept is the newest half second (the speech), and then the live audio.
    assert second.audio_bytes == RATE + CHUNK
    assert second.interim_transcripts_sent  # it heard speech from its first byte
    [sent] = [line for line in logged if " sent " in line]
    assert "sent 0.5 s of caller audio kept while the socket was down" in sent
    assert "s before it were dropped" in sent


async def test_a_socket_that_closes_again_straight_away_is_retried_after_pipecats_backoff(
    deepgram: DeepgramSimulator,
) -> None:
    stt = GaplessDeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    async with Pipe(stt) as pipe, pipe.line():
        await deepgram.wait_until(lambda: deepgram.active_connections == 1)
        first_drop = time.monotonic()
        await deepgram.close_connections()
        await deepgram.wait_until(lambda: len(deepgram.connections) == 2)
        second_drop = time.monotonic()
        await deepgram.close_connections()
        await deepgram.wait_until(lambda: len(deepgram.connections) == 3, 10)

    first_retry, second_retry = deepgram.handshakes[1:]
    assert first_retry - first_drop < 1.0
    assert second_retry - second_drop >= 3.5  # pipecat's backoff, not another at-once


# --- The two private seams of pipecat's service the gapless one relies on. ---


async def test_pipecats_deepgram_service_clears_its_connection_when_the_socket_goes(
    deepgram: DeepgramSimulator,
) -> None:
    stt = DeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    assert stt._connection is None
    async with Pipe(stt):
        await deepgram.wait_until(lambda: deepgram.active_connections == 1)
        assert stt._connection is not None
        deepgram.hold_handshakes()
        await deepgram.close_connections()
        # pipecat's own retry waits out its backoff; the connection reads as gone meanwhile.
        await eventually(lambda: stt._connection is None)
        deepgram.release_handshakes()


async def test_pipecats_do_reconnect_makes_a_new_socket_at_once(
    deepgram: DeepgramSimulator,
) -> None:
    assert DeepgramSTTService._do_reconnect is not STTService._do_reconnect
    stt = DeepgramSTTService(api_key="k", base_url=deepgram.ws_url)
    async with Pipe(stt):
        await deepgram.wait_until(lambda: deepgram.active_connections == 1)
        await deepgram.close_connections()
        await deepgram.wait_until(lambda: deepgram.active_connections == 0)
        asked = time.monotonic()
        await stt._do_reconnect()
        assert stt._connection is not None
        assert deepgram.handshakes[-1] - asked < 1.0
        assert deepgram.active_connections == 1


def test_held_audio_keeps_the_newest_chunks_in_order_within_its_limit() -> None:
    held = HeldAudio(limit_bytes=6)
    for chunk in (b"ab", b"cd", b"ef", b"gh"):
        held.add(chunk)

    assert len(held) == 6 and held.dropped_bytes == 2
    assert held.take() == [b"cd", b"ef", b"gh"]
    assert len(held) == 0 and held.dropped_bytes == 0


async def test_deepgram_services_share_one_http_client_and_send_the_sdks_own_headers(
    deepgram: DeepgramSimulator,
) -> None:
    first = GaplessDeepgramSTTService(api_key="k1", base_url=deepgram.ws_url)
    second = GaplessDeepgramSTTService(api_key="k2", base_url=deepgram.ws_url)
    clients = [stt._client for stt in (first, second)]
    assert all(isinstance(c, LightDeepgramClient) for c in clients)
    http = {id(c._client_wrapper.httpx_client.httpx_client) for c in clients}
    assert http == {id(shared_http_client())}
    for client in clients:
        wrapper = client._client_wrapper
        assert wrapper.get_headers() == BaseClientWrapper.get_headers(wrapper)
    assert clients[0]._client_wrapper.get_headers()["Authorization"] == "Token k1"
    # And the socket opens with them: the simulator reads the key from the handshake.
    async with Pipe(second):
        await deepgram.wait_until(lambda: deepgram.active_connections == 1)
    assert [c.api_key for c in deepgram.connections] == ["k2"]
