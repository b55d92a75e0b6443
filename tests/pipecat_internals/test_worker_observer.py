"""The worker's observer proxy queues only what some observer reads, in a real pipeline.

Each test runs a real ``PipelineWorker`` whose observer was replaced by
``select_observed``, pushes caller audio and text through two processors,
and reads what each observer was handed. They fail if pipecat's worker stops
keeping its proxy in ``_observer`` (or its observers in ``_observers``), or
hands its processors the proxy before the runner can replace it: the
observers would then be handed every event again.
"""

from __future__ import annotations

import asyncio

import pytest
from pipecat.frames.frames import EndFrame, Frame, InputAudioRawFrame, TextFrame
from pipecat.observers.base_observer import BaseObserver, FrameProcessed, FramePushed
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.pipeline.worker_observer import WorkerObserver
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner
from pydantic import SecretStr

from run import build_call
from teamrunner.config import Settings
from teamrunner.contract import RunRequest
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.manager.transport import open_sockets
from teamrunner.observe.journal import CallJournal
from teamrunner.pipecat_internals.worker_observer import (
    SelectiveWorkerObserver,
    select_observed,
)
from teamrunner.plan import plan_call

AUDIO = b"\x01\x00" * 640


class Passing(FrameProcessor):
    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


class Pushes(BaseObserver):
    """Notes each frame's first push it is handed, as a call's observer does."""

    def __init__(self, unread: frozenset[type[Frame]] | None = None) -> None:
        super().__init__(observe_every_push=False)
        if unread is not None:
            self.unread_frame_types = unread
        self.pushed: list[Frame] = []
        self.text = asyncio.Event()

    async def on_push_frame(self, data: FramePushed) -> None:
        self.pushed.append(data.frame)
        if isinstance(data.frame, TextFrame):
            self.text.set()


class Processing(Pushes):
    """Also notes the processing events it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.processed: list[Frame] = []

    async def on_process_frame(self, data: FrameProcessed) -> None:
        self.processed.append(data.frame)


async def run_frames(observers: list[BaseObserver]) -> PipelineWorker:
    """Caller audio then text through two processors, under a worker whose proxy was replaced."""
    first = Passing()
    # No RTVI, turn tracking or idle timeout: their observers, which say nothing of
    # what they read, would be handed everything (a call's worker has none of pipecat's:
    # see run.py).
    worker = PipelineWorker(
        Pipeline([first, Passing()]),
        observers=list(observers),
        enable_rtvi=False,
        enable_turn_tracking=False,
        idle_timeout_secs=None,
    )
    select_observed(worker)
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def on_started(worker: PipelineWorker, frame: Frame) -> None:
        started.set()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    task = asyncio.create_task(runner.run())
    await asyncio.wait_for(started.wait(), 5)
    for _ in range(10):
        await worker.queue_frame(InputAudioRawFrame(audio=AUDIO, sample_rate=16000, num_channels=1))
    await worker.queue_frame(TextFrame("after the audio"))
    for observer in observers:
        assert isinstance(observer, Pushes)
        await asyncio.wait_for(observer.text.wait(), 5)
    await worker.queue_frame(EndFrame())
    await asyncio.wait_for(task, 10)
    return worker


def audio(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if isinstance(f, InputAudioRawFrame)]


async def test_an_observer_that_reads_no_caller_audio_is_handed_none() -> None:
    observer = Pushes(unread=frozenset({InputAudioRawFrame}))
    await run_frames([observer])
    assert audio(observer.pushed) == []
    assert any(isinstance(f, TextFrame) for f in observer.pushed)


async def test_caller_audio_still_reaches_an_observer_that_may_read_it() -> None:
    # One observer that says nothing of what it reads keeps caller audio coming to all.
    silent, says = Pushes(), Pushes(unread=frozenset({InputAudioRawFrame}))
    await run_frames([silent, says])
    assert len(audio(silent.pushed)) == 10
    assert len(audio(says.pushed)) == 10


async def test_processing_events_still_reach_an_observer_that_reads_them() -> None:
    reader = Processing()
    await run_frames([reader])
    # Each of the two processors processed each audio frame.
    assert len(audio(reader.processed)) >= 20


async def test_the_worker_proxy_is_replaced_with_the_same_observers() -> None:
    observer = Pushes()
    worker = PipelineWorker(Pipeline([Passing()]), observers=[observer])
    built = worker._observer
    assert type(built) is WorkerObserver
    assert observer in built._observers
    select_observed(worker)
    assert isinstance(worker._observer, SelectiveWorkerObserver)
    assert observer in worker._observer._observers
    with pytest.raises(RuntimeError, match="not a WorkerObserver"):
        select_observed(worker)


async def test_a_voice_calls_worker_queues_none_of_the_callers_audio() -> None:
    request = RunRequest.model_validate(
        {
            "id": "observed-call",
            "llm_type": "openai.gpt-4o",
            "llm_messages": [{"role": "system", "content": "You are Ava."}],
            "stt_type": "deepgram",
            "tts_type": "cartesia",
            "tts_voice_id": "voice-a",
        }
    )
    keys = ("OPENAI_API_KEY", "DEEPGRAM_API_KEY", "CARTESIA_API_KEY")
    settings = Settings(keys={k: SecretStr(f"{k.lower()}-not-a-real-key-0000") for k in keys})
    plan = plan_call(request, settings)
    runtime = Runtime.create(settings)
    # Built, never connected.
    sockets = open_sockets("ws://127.0.0.1:9", plan.id, hears=True, redactor=runtime.redactor)
    call = build_call(plan, runtime, CallJournal(plan, runtime.metrics), sockets)
    observer = call.worker._observer
    assert isinstance(observer, SelectiveWorkerObserver)
    assert InputAudioRawFrame in observer.unread_types
