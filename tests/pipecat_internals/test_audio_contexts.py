"""A voice's replies read without a task per item: the same frames, in the same order.

``WithReadyAudioContexts`` replaces ``TTSService._audio_context_manager`` with a
``ReadyAudioContexts``, whose ``get`` (pipecat's playback task reads every item
of a reply through it) takes an item already queued at once and waits for one
that is not under ``asyncio.timeout``. These tests fail if pipecat stops
reading items through ``get`` or makes its manager elsewhere (a task per
chunk comes back), if what the voice pushes changes, or if ``get`` stops
timing out, passing over keepalives, or returning items in order.
"""

from __future__ import annotations

import asyncio

import pytest
from pipecat.frames.frames import (
    EndFrame,
    Frame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.cartesia.tts import CartesiaTTSService
from pipecat.services.tts_service import TTSService
from pipecat.workers.runner import WorkerRunner

from teamrunner.pipecat_internals.audio_contexts import ReadyAudioContexts
from teamrunner.pipecat_internals.websocket_service import runner_websocket_service

from conftest import CARTESIA_KEY, Cloud
from loop_tasks import tasks_created, tasks_running

SENTENCE = "Your order ships on Monday, and you will get an email when it leaves."
# What pipecat's audio contexts wrap in a task of their own for every item of a reply.
TASK_PER_ITEM = "Queue.get"
KINDS = (TTSStartedFrame, TTSAudioRawFrame, TTSTextFrame, TTSStoppedFrame)


class Spoken(FrameProcessor):
    """The voice's frames of a reply, in order, until it stops."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Frame] = []
        self.stopped = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM and isinstance(frame, KINDS):
            self.frames.append(frame)
            if isinstance(frame, TTSStoppedFrame):
                self.stopped.set()
        await self.push_frame(frame, direction)


async def speak(cloud: Cloud, voice_class: type[TTSService]) -> tuple[list[Frame], int]:
    """What a Cartesia voice of ``voice_class`` pushes for ``SENTENCE``, and its tasks per item."""
    voice = voice_class(  # type: ignore[call-arg]
        api_key=CARTESIA_KEY,
        url=f"{cloud.cartesia.ws_url}/tts/websocket",
        settings=CartesiaTTSService.Settings(voice="voice-a"),
    )
    spoken = Spoken()
    worker = PipelineWorker(Pipeline([voice, spoken]), cancel_on_idle_timeout=False)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    try:
        await cloud.cartesia.wait_until(lambda: cloud.cartesia.active_connections == 1)
        with tasks_created() as created:
            await worker.queue_frame(TTSSpeakFrame(SENTENCE))
            await asyncio.wait_for(spoken.stopped.wait(), 10)
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 10)
    per_item = tasks_running(created, TASK_PER_ITEM)
    return spoken.frames, len(per_item)


def shape(frames: list[Frame]) -> list[tuple[str, object]]:
    """The frames as the caller meets them: kind, and the audio or the words."""
    return [
        (type(f).__name__, f.audio if isinstance(f, TTSAudioRawFrame) else getattr(f, "text", ""))
        for f in frames
    ]


async def test_a_voice_pushes_the_same_reply_without_a_task_per_item(cloud: Cloud) -> None:
    pipecats, pipecats_tasks = await speak(cloud, CartesiaTTSService)
    runners, runners_tasks = await speak(cloud, runner_websocket_service(CartesiaTTSService))

    chunks = sum(isinstance(f, TTSAudioRawFrame) for f in pipecats)
    assert chunks >= 5
    # pipecat's manager makes a task for every item it reads; the runner's, none.
    assert pipecats_tasks >= chunks
    assert runners_tasks == 0
    assert shape(runners) == shape(pipecats)


async def test_a_context_gives_its_items_in_order_and_times_out_when_none_comes() -> None:
    contexts = ReadyAudioContexts()
    await contexts.create("reply")
    first, second = TTSStartedFrame(), TTSStoppedFrame()
    await contexts.append("reply", first)
    await contexts.append("reply", second)
    assert await contexts.get("reply", timeout=0.5) is first
    assert await contexts.get("reply", timeout=0.5) is second

    # A keepalive restarts the wait and is not returned: the item after it is.
    later = TTSStartedFrame()

    async def keep_alive_then_send() -> None:
        await asyncio.sleep(0.05)
        contexts.keepalive("reply")
        await asyncio.sleep(0.05)
        await contexts.append("reply", later)

    sending = asyncio.create_task(keep_alive_then_send())
    assert await contexts.get("reply", timeout=0.5) is later
    await sending

    with pytest.raises(TimeoutError):
        await contexts.get("reply", timeout=0.05)
