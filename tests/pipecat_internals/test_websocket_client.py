"""The input socket from pipecat-manager: caller audio handed on by the socket's own task.

``DirectClientInput`` overrides ``BaseInputTransport.set_transport_ready`` (where
pipecat makes its audio queue and task) and ``push_audio_frame``, reading
``_params`` and ``_paused`` as pipecat's task does. This test runs the call's
real input socket against the manager simulator and fails if caller audio
follows the end of the call down the pipeline. That the audio arrives whole,
in order, joined, and with no task per frame is
``tests/manager/test_transport.py``
``test_caller_audio_reaches_the_pipeline_in_order_and_joined_without_a_task_per_frame``.
"""

from __future__ import annotations

import asyncio

from pipecat.frames.frames import EndFrame, Frame, InputAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from simulators.manager import Caller
from teamrunner.manager.transport import SAMPLE_RATE, EarlyAudioInputTransport, open_sockets
from teamrunner.observe.redaction import Redactor

from conftest import Cloud
from scenarios import CALL_ID

# Late caller audio, as the socket would read it after the call has ended: 40 ms,
# so that the input's joiner delivers it at once.
LATE = InputAudioRawFrame(b"\x07\x07" * (SAMPLE_RATE // 25), SAMPLE_RATE, 1)


class Heard(FrameProcessor):
    """What reaches the processor after the input socket, in order, the end included.

    At the end it plays the socket reading one more caller frame.
    """

    def __init__(self, transport: EarlyAudioInputTransport, expected_bytes: int) -> None:
        super().__init__()
        self._transport = transport
        self._expected_bytes = expected_bytes
        self.frames: list[Frame] = []
        self.got_all = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, (InputAudioRawFrame, EndFrame)):
            self.frames.append(frame)
        if isinstance(frame, InputAudioRawFrame):
            self._expected_bytes -= len(frame.audio)
            if self._expected_bytes <= 0:
                self.got_all.set()
        if isinstance(frame, EndFrame):
            await self._transport.push_audio_frame(LATE)
        await self.push_frame(frame, direction)


async def hear(cloud: Cloud, caller: Caller, expected_bytes: int) -> Heard:
    """Run the call's input socket until ``expected_bytes`` of audio have passed, then end."""
    cloud.manager.expect_call(CALL_ID, caller=caller)
    sockets = open_sockets(
        cloud.manager.ws_url, CALL_ID, hears=True, redactor=Redactor(), caller_audio_ms=40
    )
    transport = sockets.input()
    assert transport is not None
    heard = Heard(transport, expected_bytes)
    worker = PipelineWorker(Pipeline([transport, heard]))
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(heard.got_all.wait(), 10)
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 10)
    return heard


async def test_no_caller_audio_follows_the_end_down_the_pipeline(cloud: Cloud) -> None:
    # The caller talks on, in real time, while the call ends.
    said = b"\x01\x02" * SAMPLE_RATE * 5
    caller = Caller(Caller.pcm(said, SAMPLE_RATE), start="on_connect")
    heard = await hear(cloud, caller, expected_bytes=SAMPLE_RATE * 2 // 5)  # 0.2 s

    # The audio read before the end reached the pipeline, and nothing after it.
    kinds = [type(f) for f in heard.frames]
    assert kinds.count(InputAudioRawFrame) >= 5
    assert kinds.index(EndFrame) == len(kinds) - 1
