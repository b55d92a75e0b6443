"""The output socket's media sender: pipecat's, without a task per frame.

``DirectMediaSender`` overrides ``MediaSender._next_frame`` (taking queued
frames with ``get_nowait`` and waiting with ``asyncio.timeout``) and
``MediaSender._internal_write_audio_frame``; the output socket builds it in
``set_transport_ready`` into ``_media_senders``. These tests run the call's
real output socket against the manager simulator and fail if pipecat stops
calling either method, stops building its sender there, or if the sender
changes what leaves it, in what order, or when the bot is said to stop, or
stops letting an interruption in between the chunks of a long reply.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from pipecat.frames.frames import (
    BotStoppedSpeakingFrame,
    EndFrame,
    ErrorFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    OutputAudioRawFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.serializers.protobuf import ProtobufFrameSerializer
from pipecat.transports.base_output import BOT_VAD_STOP_FALLBACK_SECS
from pipecat.transports.websocket.client import (
    WebsocketClientInputTransport,
    WebsocketClientParams,
)
from pipecat.utils.text.base_text_aggregator import AggregationType
from pipecat.workers.runner import WorkerRunner

from simulators.manager import Caller
from simulators.record import CallRecord
from teamrunner.manager.transport import SAMPLE_RATE, UnpacedOutputTransport, open_sockets
from teamrunner.manager.urls import socket_url
from teamrunner.observe.redaction import Redactor
from teamrunner.pipecat_internals.websocket_client import WebsocketClient

from conftest import Cloud
from loop_tasks import tasks_created, tasks_running
from scenarios import CALL_ID

CHUNKS = 40
# What pipecat's own sender wraps in a task of its own for every frame.
TASK_PER_FRAME = ("Queue.get", "write_audio_frame")


def chunk(n: int) -> TTSAudioRawFrame:
    """40 ms of audio, the output's chunk, whose samples say which chunk it is."""
    return TTSAudioRawFrame(bytes([n, 1]) * (SAMPLE_RATE // 25), SAMPLE_RATE, 1)


class After(FrameProcessor):
    """What the output socket passes on, in order, as the assistant aggregator would see it."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Frame] = []
        self.arrived = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            self.frames.append(frame)
            self.arrived.set()
        await self.push_frame(frame, direction)

    async def wait_for(self, kind: type[Frame], count: int = 1) -> None:
        while sum(isinstance(f, kind) for f in self.frames) < count:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 10)


class Before(FrameProcessor):
    """The errors the output socket reports upstream."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[ErrorFrame] = []
        self.reported = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, ErrorFrame):
            self.errors.append(frame)
            self.reported.set()
        await self.push_frame(frame, direction)


class StuckPeer(UnpacedOutputTransport):
    """The output socket of a peer that has stopped reading: a write never returns."""

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        await asyncio.Event().wait()
        return True


@contextlib.asynccontextmanager
async def output_socket(
    cloud: Cloud, output: UnpacedOutputTransport | None = None, before: Before | None = None
) -> AsyncIterator[tuple[PipelineWorker, CallRecord, After]]:
    """The call's output socket (or ``output``) to the manager simulator, and what it passes on."""
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0)))
    if output is None:
        sockets = open_sockets(cloud.manager.ws_url, CALL_ID, hears=False, redactor=Redactor())
        output = sockets.output()
    after = After()
    processors = [output, after] if before is None else [before, output, after]
    worker = PipelineWorker(Pipeline(processors), cancel_on_idle_timeout=False)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    try:
        await call.wait_connected(timeout=10)
        yield worker, call, after
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 10)


def spoken(frame: Frame) -> int | None:
    """Which chunk an audio frame carries (None for any other frame)."""
    return frame.audio[0] if isinstance(frame, OutputAudioRawFrame) else None


async def test_queued_frames_leave_without_a_task_each_in_order(cloud: Cloud) -> None:
    async with output_socket(cloud) as (worker, call, after):
        with tasks_created() as created:
            for n in range(CHUNKS):
                await worker.queue_frame(chunk(n))
                if n % 10 == 9:
                    # Frames the assistant aggregator must see in order with the audio.
                    text = TTSTextFrame(f"part {n // 10}", AggregationType.SENTENCE)
                    await worker.queue_frame(text)
            await worker.queue_frame(LLMFullResponseEndFrame())
            await after.wait_for(LLMFullResponseEndFrame)
        await call.wait(lambda c: c.received_bot_secs() >= CHUNKS / 25, 10, "every chunk")

    passed = [spoken(f) if spoken(f) is not None else type(f) for f in after.frames]
    passed = [
        p for p in passed if p in range(CHUNKS) or p in (TTSTextFrame, LLMFullResponseEndFrame)
    ]
    expected: list[object] = []
    for n in range(CHUNKS):
        expected.append(n)
        if n % 10 == 9:
            expected.append(TTSTextFrame)
    assert passed == [*expected, LLMFullResponseEndFrame]
    # Less the silence pipecat ends the call's audio with.
    sent = [c.pcm[0] for c in call.audio_chunks() if any(c.pcm)]
    assert sent == list(range(CHUNKS))
    # pipecat's own sender makes a task to take each frame and one to write each chunk.
    per_frame = tasks_running(created, TASK_PER_FRAME)
    assert per_frame == []


async def test_the_bot_stops_speaking_once_no_audio_has_come_for_a_while(cloud: Cloud) -> None:
    async with output_socket(cloud) as (worker, _call, after):
        # Speech with no TTSStoppedFrame after it: only the sender's wait can end it.
        await worker.queue_frame(chunk(1))
        await after.wait_for(OutputAudioRawFrame)
        spoke_at = asyncio.get_running_loop().time()
        await asyncio.wait_for(after.wait_for(BotStoppedSpeakingFrame), 10)
        quiet = asyncio.get_running_loop().time() - spoke_at
    assert BOT_VAD_STOP_FALLBACK_SECS - 0.1 < quiet < BOT_VAD_STOP_FALLBACK_SECS + 1


async def test_a_write_that_never_returns_writes_the_peer_off(cloud: Cloud) -> None:
    params = WebsocketClientParams(
        serializer=ProtobufFrameSerializer(),
        audio_out_enabled=True,
        audio_out_sample_rate=SAMPLE_RATE,
        audio_out_write_timeout_secs=0.2,
    )
    socket = WebsocketClient(
        socket_url(cloud.manager.ws_url, CALL_ID, "output"),
        params,
        make_input=WebsocketClientInputTransport,
        make_output=StuckPeer,
    )
    before = Before()
    async with output_socket(cloud, socket.output(), before) as (worker, _call, after):
        await worker.queue_frame(chunk(1))
        await asyncio.wait_for(before.reported.wait(), 5)
        assert not socket.output().is_usable
        # Written off: the next chunk is not even tried, and nothing is passed on.
        await worker.queue_frame(chunk(2))
        await worker.queue_frame(LLMFullResponseEndFrame())
        await after.wait_for(LLMFullResponseEndFrame)
    assert [spoken(f) for f in after.frames if spoken(f) is not None] == []
    assert len(before.errors) == 1 and "stopped reading" in before.errors[0].error


async def test_an_interruption_cuts_a_long_reply_short(cloud: Cloud) -> None:
    # A voice that makes a whole reply at once: the sender has it all queued as chunks.
    reply = 125
    async with output_socket(cloud) as (worker, call, after):
        await worker.queue_frame(TTSAudioRawFrame(chunk(7).audio * reply, SAMPLE_RATE, 1))
        await after.wait_for(OutputAudioRawFrame)
        await worker.queue_frame(InterruptionFrame())
        await call.wait(lambda c: len(c.flushes()) == 1, 10, "FLUSH_MEDIA")
        await worker.queue_frame(LLMFullResponseEndFrame())
        await after.wait_for(LLMFullResponseEndFrame)
    # The sender lets the interruption in between two chunks: the rest is dropped.
    sent = [c for c in call.audio_chunks() if any(c.pcm)]
    assert 0 < len(sent) < reply // 2
