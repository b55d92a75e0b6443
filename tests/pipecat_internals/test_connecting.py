"""A websocket service set up with connecting deferred opens its socket on ``open``, and only then.

Guards ``teamrunner.pipecat_internals.connecting``: pipecat's Deepgram,
Cartesia and ElevenLabs services connect in ``setup`` through ``_connect``.
Each test runs the service the provider registry builds, in a real pipeline
under pipecat's worker, against its simulator, and counts the sockets the
simulator saw opened. If pipecat stops connecting through ``_connect``, a
deferred service connects at setup and these tests fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pipecat.frames.frames import EndFrame, Frame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.workers.runner import WorkerRunner

from simulators.server import ProviderSimulator
from teamrunner.pipecat_internals.connecting import ConnectsWhenOpened
from teamrunner.providers import STT, TTS, STTSpec, TTSSpec
from teamrunner.providers.resources import SharedResources

from conftest import Cloud


def build(cloud: Cloud, provider: str) -> tuple[ConnectsWhenOpened, ProviderSimulator[Any]]:
    """The runner's own service for ``provider``, pointed at its simulator."""
    endpoints = cloud.endpoints()
    service: Any
    if provider == "deepgram":
        spec = STTSpec("deepgram", "en", key="k", endpoint=endpoints["DEEPGRAM_BASE_URL"])
        service, sim = STT.get("deepgram").factory(spec, SharedResources()), cloud.deepgram
    else:
        variable = f"{provider.upper()}_BASE_URL"
        spec_tts = TTSSpec(provider, "voice-a", key="k", endpoint=endpoints[variable])
        service = TTS.get(provider).factory(spec_tts, SharedResources())
        sim = getattr(cloud, provider)
    assert isinstance(service, ConnectsWhenOpened)
    return service, sim


@asynccontextmanager
async def running(service: FrameProcessor) -> AsyncIterator[None]:
    """``service`` alone in a real pipeline, started, then ended with an ``EndFrame``."""
    worker = PipelineWorker(Pipeline([service]), cancel_on_idle_timeout=False)
    started = asyncio.Event()

    async def on_started(worker: PipelineWorker, frame: Frame) -> None:
        started.set()

    worker.add_event_handler("on_pipeline_started", on_started)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    task = asyncio.create_task(runner.run())
    await asyncio.wait_for(started.wait(), 10)
    try:
        yield
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(task, 10)


PROVIDERS = ["deepgram", "cartesia", "elevenlabs"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_deferred_service_starts_without_a_socket_and_opens_one_when_asked(
    cloud: Cloud, provider: str
) -> None:
    service, sim = build(cloud, provider)
    service.defer_connecting()

    async with running(service):
        # The pipeline started (every processor set up and started): no handshake yet.
        assert sim.connections_opened == 0
        assert service.connect_deferred and not service.opened

        await asyncio.gather(service.open(), service.open())
        await service.open()

        assert sim.connections_opened == 1
        assert not service.connect_deferred and service.opened
        await sim.wait_until(lambda: sim.active_connections == 1, 5)
    await sim.wait_until(lambda: sim.active_connections == 0, 5)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_service_not_deferred_connects_with_its_pipeline_as_pipecats_does(
    cloud: Cloud, provider: str
) -> None:
    service, sim = build(cloud, provider)

    async with running(service):
        assert sim.connections_opened == 1
        assert service.opened
        await service.open()
        assert sim.connections_opened == 1
    await sim.wait_until(lambda: sim.active_connections == 0, 5)


async def test_a_deferred_service_ended_before_it_was_opened_never_connects(
    cloud: Cloud,
) -> None:
    service, sim = build(cloud, "cartesia")
    service.defer_connecting()

    async with running(service):
        pass
    await service.open()

    assert sim.connections_opened == 0
