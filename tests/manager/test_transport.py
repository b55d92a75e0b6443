"""The output socket to pipecat-manager: unpaced, and nothing cut off sent after ``FLUSH_MEDIA``.

Go hands bot audio to the media server as it arrives, and the media server
plays it out in real time, so the runner sends audio as soon as it is made:
a reply's audio reaches pipecat-manager far faster than it takes to play.

The media server drops what it has queued when it reads ``FLUSH_MEDIA``, and
plays whatever comes after it. So audio made before a barge-in must never
leave after the flush, even when the transport's audio task had already taken
a chunk off its queue when the barge-in came (pipecat lets the chunk it is
writing finish, and that write can land after a flush written meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    TTSAudioRawFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from simulators.manager import Caller
from simulators.record import CallRecord
from teamrunner.manager.transport import SAMPLE_RATE, open_sockets
from teamrunner.observe.redaction import Redactor

from conftest import Cloud
from loop_tasks import tasks_created, tasks_running
from scenarios import CALL_ID

TENTH_OF_A_SECOND = b"\x01\x10" * (SAMPLE_RATE // 10)


def tenth_of_a_second() -> TTSAudioRawFrame:
    return TTSAudioRawFrame(TENTH_OF_A_SECOND, sample_rate=SAMPLE_RATE, num_channels=1)


@contextlib.asynccontextmanager
async def output_socket(cloud: Cloud) -> AsyncIterator[tuple[PipelineWorker, CallRecord]]:
    """A pipeline of the call's output socket alone, connected to the manager simulator."""
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0)))
    sockets = open_sockets(cloud.manager.ws_url, CALL_ID, hears=False, redactor=Redactor())
    worker = PipelineWorker(Pipeline([sockets.output()]), cancel_on_idle_timeout=False)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    try:
        await call.wait_connected(timeout=10)
        yield worker, call
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 10)


async def test_bot_audio_reaches_pipecat_manager_far_faster_than_real_time(cloud: Cloud) -> None:
    async with output_socket(cloud) as (worker, call):
        queued_at = time.monotonic()
        for _ in range(50):
            await worker.queue_frame(tenth_of_a_second())
        await call.wait(lambda c: c.received_bot_secs() >= 5.0, 10, "5 s of bot audio")

    # pipecat's own websocket output would take 5 s: it paces audio at real time.
    took = call.audio_chunks()[-1].at - queued_at
    assert took < 1.0, f"5 s of audio took {took:.2f} s to arrive"


async def test_no_audio_from_before_a_barge_in_leaves_after_the_flush(cloud: Cloud) -> None:
    async with output_socket(cloud) as (worker, call):
        # Each barge-in comes while the audio task is sending a long reply made
        # all at once, so it is likely to have a chunk in hand (before the fix,
        # the first barge-in of every run left one behind).
        for barge_in in range(1, 11):
            sent = len(call.audio_chunks())
            for _ in range(100):
                await worker.queue_frame(tenth_of_a_second())
            await call.wait(
                lambda c, sent=sent: len(c.audio_chunks()) > sent, 10, "the reply's audio"
            )
            await worker.queue_frame(InterruptionFrame())
            await call.wait(lambda c, n=barge_in: len(c.flushes()) == n, 10, "FLUSH_MEDIA")
            # Anything still on its way arrives well within this.
            await asyncio.sleep(0.05)
            flush = call.flushes()[-1]
            late = [chunk for chunk in call.audio_chunks() if chunk.seq > flush.seq]
            assert late == [], f"barge-in {barge_in}: {len(late)} chunk(s) after FLUSH_MEDIA"


class Heard(FrameProcessor):
    """Keeps the caller audio that reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[InputAudioRawFrame] = []
        self.got_all = asyncio.Event()
        self.expected_bytes = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            self.frames.append(frame)
            if sum(len(f.audio) for f in self.frames) >= self.expected_bytes:
                self.got_all.set()
        await self.push_frame(frame, direction)


async def test_caller_audio_reaches_the_pipeline_in_order_and_joined_without_a_task_per_frame(
    cloud: Cloud,
) -> None:
    # Two seconds of distinct samples, sent as fast as the socket takes them
    # from the moment it opens: some of it before the pipeline has started.
    said = b"".join(i.to_bytes(2, "little") for i in range(SAMPLE_RATE * 2))
    caller = Caller(Caller.pcm(said, SAMPLE_RATE), realtime=False, speed=0, start="on_connect")
    cloud.manager.expect_call(CALL_ID, caller=caller)
    sockets = open_sockets(
        cloud.manager.ws_url, CALL_ID, hears=True, redactor=Redactor(), caller_audio_ms=40
    )
    assert sockets.input_socket is not None
    heard = Heard()
    heard.expected_bytes = len(said)
    worker = PipelineWorker(Pipeline([sockets.input_socket.input(), heard]))
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    with tasks_created() as created:
        running = asyncio.create_task(runner.run())
        try:
            await asyncio.wait_for(heard.got_all.wait(), 10)
        finally:
            await worker.queue_frame(EndFrame())
            await asyncio.wait_for(running, 10)

    assert b"".join(f.audio for f in heard.frames)[: len(said)] == said
    # Go's 20 ms frames, joined in twos.
    assert {len(f.audio) for f in heard.frames[:-1]} == {SAMPLE_RATE * 2 * 40 // 1000}
    # Handed on by the socket's task (DirectClientInput): pipecat's input wraps the
    # queue's get of every frame in a task of its own.
    assert tasks_running(created, "Queue.get") == []
