"""A call's provider sockets over TLS: verified as before, and one TLS context for them all.

The providers' simulators speak TLS (``wss://``, ``https://``) with a certificate
from a CA made for the test, which the process trusts through ``SSL_CERT_FILE``
next to certifi's bundle, as a production trust store holds many CAs. The
shared contexts are made on first use, after the test has pointed
``SSL_CERT_FILE`` at that bundle.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pipecat.frames.frames import EndFrame, Frame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.services.cartesia.tts import CartesiaTTSService
from pipecat.workers.runner import WorkerRunner
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from playground.server import RunnerServer
from simulators.cloud import Cloud
from simulators.manager import Caller
from simulators.openai import Reply
from simulators.tls import issue
from simulators.voices import VoiceBook
from teamrunner.pipecat_internals.websocket_service import runner_websocket_service
from teamrunner.providers.deepgram import GaplessDeepgramSTTService
from teamrunner.tls import client_context, httpx2_context, httpx_context

from conftest import CARTESIA_KEY, DEEPGRAM_KEY, VOICES, cloud_settings
from scenarios import CALL_ID, caller_says, voice_request


@pytest.fixture
async def tls_cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cloud]:
    certificates = issue(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))
    # The process's contexts are made once; here, after the trust store is the test's.
    for context in (client_context, httpx_context, httpx2_context):
        context.cache_clear()
    try:
        async with Cloud(voices=VoiceBook(VOICES), ms_per_char=10, tls=certificates) as cloud:
            yield cloud
    finally:
        for context in (client_context, httpx_context, httpx2_context):
            context.cache_clear()


async def test_a_voice_call_hears_and_answers_with_its_providers_over_tls(
    tls_cloud: Cloud, http: httpx.AsyncClient
) -> None:
    assert tls_cloud.deepgram.ws_url.startswith("wss://")
    tls_cloud.openai.push(Reply.say("Of course."))
    call = tls_cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    async with RunnerServer(cloud_settings(tls_cloud)) as runner:
        body = voice_request(greeting="Hello.")
        assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
        await call.wait(lambda c: c.bot_llm_text() == ["Hello."], 10, "the greeting")
        await caller_says(tls_cloud, "I want to change my address.", call_id=CALL_ID)
        [request] = await tls_cloud.openai.wait_for_requests(1, timeout=15)
        assert request.messages[-1]["content"] == "I want to change my address."
        await call.wait(lambda c: "Of course." in c.bot_llm_text(), 10, "the answer")
        await call.wait_bot_audio(min_secs=0.1, timeout=10)
        await http.post(f"{runner.url}/stop", params={"id": CALL_ID})
    assert tls_cloud.deepgram.connections and tls_cloud.cartesia.connections_opened >= 1


class Started:
    """A pipeline of ``processors`` running under pipecat's worker until the block ends."""

    def __init__(self, *processors: Any) -> None:
        self.worker = PipelineWorker(Pipeline(list(processors)), cancel_on_idle_timeout=False)
        self._started = asyncio.Event()
        self.worker.add_event_handler("on_pipeline_started", self._on_started)
        self._task: asyncio.Task[None] | None = None

    async def _on_started(self, worker: PipelineWorker, frame: Frame) -> None:
        self._started.set()

    async def __aenter__(self) -> Started:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self.worker)
        self._task = asyncio.create_task(runner.run())
        await asyncio.wait_for(self._started.wait(), 10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.worker.queue_frame(EndFrame())
        assert self._task is not None
        await asyncio.wait_for(self._task, 10)


def _context(websocket: Any) -> ssl.SSLContext:
    return websocket.transport.get_extra_info("ssl_object").context


async def test_the_ears_and_voice_of_a_call_share_the_process_tls_context(
    tls_cloud: Cloud,
) -> None:
    stt = GaplessDeepgramSTTService(api_key=DEEPGRAM_KEY, base_url=tls_cloud.deepgram.ws_url)
    tts = runner_websocket_service(CartesiaTTSService)(
        api_key=CARTESIA_KEY,
        url=f"{tls_cloud.cartesia.ws_url}/tts/websocket",
        settings=CartesiaTTSService.Settings(voice="voice-a"),
    )
    async with Started(stt, tts):
        await tls_cloud.deepgram.wait_until(lambda: tls_cloud.deepgram.active_connections == 1)
        await tls_cloud.cartesia.wait_until(lambda: tls_cloud.cartesia.active_connections == 1)
        assert stt._connection is not None and tts._websocket is not None
        contexts = {id(_context(stt._connection._websocket)), id(_context(tts._websocket))}
    assert contexts == {id(client_context())}


async def _echo(connection: ServerConnection) -> None:
    async for message in connection:
        await connection.send(message)


async def test_the_shared_context_refuses_a_certificate_the_trust_store_does_not_hold(
    tls_cloud: Cloud, tmp_path: Path
) -> None:
    stranger = issue(tmp_path, "stranger", "Unknown CA")
    async with serve(_echo, "127.0.0.1", 0, ssl=stranger.server_context()) as server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(ssl.SSLCertVerificationError):
            async with connect(f"wss://localhost:{port}", ssl=client_context()):
                pass
    # The providers' simulators, whose CA the trust store holds, still answer through it.
    async with connect(f"{tls_cloud.cartesia.ws_url}/tts/websocket", ssl=client_context()):
        pass
