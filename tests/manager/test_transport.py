"""The output socket to pipecat-manager: after ``FLUSH_MEDIA``, none of the cut-off audio.

The media server drops what it has queued when it reads ``FLUSH_MEDIA``, and
plays whatever comes after it. So audio made before a barge-in must never
leave after the flush, even when the transport's audio task had already taken
a chunk off its queue when the barge-in came (pipecat lets the chunk it is
writing finish, and that write can land after a flush written meanwhile).
"""

from __future__ import annotations

import asyncio

from pipecat.frames.frames import EndFrame, InterruptionFrame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.workers.runner import WorkerRunner

from simulators.manager import Caller
from teamrunner.manager.transport import SAMPLE_RATE, open_sockets
from teamrunner.observe.redaction import Redactor

from conftest import Cloud
from scenarios import CALL_ID

TENTH_OF_A_SECOND = b"\x01\x10" * (SAMPLE_RATE // 10)


async def test_no_audio_from_before_a_barge_in_leaves_after_the_flush(cloud: Cloud) -> None:
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0)))
    sockets = open_sockets(cloud.manager.ws_url, CALL_ID, hears=False, redactor=Redactor())
    worker = PipelineWorker(Pipeline([sockets.output()]), cancel_on_idle_timeout=False)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    try:
        await call.wait_connected(timeout=10)
        # Each barge-in comes while the audio task is sending a long reply made
        # all at once, so it is likely to have a chunk in hand (before the fix,
        # the first barge-in of every run left one behind).
        for barge_in in range(1, 11):
            sent = len(call.audio_chunks())
            for _ in range(100):
                await worker.queue_frame(
                    TTSAudioRawFrame(TENTH_OF_A_SECOND, sample_rate=SAMPLE_RATE, num_channels=1)
                )
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
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 10)
