"""A real pipecat pipeline around one service, for the provider simulators' tests.

``Call`` runs one service (an STT or TTS service pointed at a simulator) in a
real ``Pipeline`` under a ``PipelineWorker`` and ``WorkerRunner``, and records
every frame that leaves it in either direction; ``audio_by_context`` reads TTS
audio out of recorded frames. Tests import it by module name (pytest puts this
folder on ``sys.path``), so it is named to clash with nothing, and this folder
must stay free of ``__init__.py`` and ``conftest.py``: the first would make
pytest import it as a package called ``simulators``, hiding the real one; the
second would replace ``tests/conftest.py`` as the module ``conftest`` that
other tests import from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

from pipecat.frames.frames import EndFrame, Frame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.workers.runner import WorkerRunner

F = TypeVar("F", bound=Frame)


class Call:
    """A real pipeline around one service, recording the frames that leave it.

    Use it as ``async with Call(service) as call:``; leaving the block ends the
    pipeline with an ``EndFrame`` and waits for it to finish.
    """

    def __init__(self, service: FrameProcessor) -> None:
        self.down: list[Frame] = []
        self.up: list[Frame] = []
        self._arrived = asyncio.Condition()
        self.worker = PipelineWorker(Pipeline([service]), cancel_on_idle_timeout=False)
        self.worker.set_reached_downstream_filter((Frame,))
        self.worker.set_reached_upstream_filter((Frame,))
        self.worker.add_event_handler("on_frame_reached_downstream", self._record(self.down))
        self.worker.add_event_handler("on_frame_reached_upstream", self._record(self.up))
        self._started = asyncio.Event()
        self.worker.add_event_handler("on_pipeline_started", self._on_started)
        self._task: asyncio.Task[None] | None = None

    def _record(self, into: list[Frame]) -> Callable[[PipelineWorker, Frame], object]:
        async def record(worker: PipelineWorker, frame: Frame) -> None:
            into.append(frame)
            async with self._arrived:
                self._arrived.notify_all()

        return record

    async def _on_started(self, worker: PipelineWorker, frame: Frame) -> None:
        self._started.set()

    async def __aenter__(self) -> Call:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self.worker)
        self._task = asyncio.create_task(runner.run())
        await asyncio.wait_for(self._started.wait(), 5)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.worker.queue_frame(EndFrame())
        assert self._task is not None
        await asyncio.wait_for(self._task, 10)

    async def send(self, frames: Sequence[Frame]) -> None:
        for frame in frames:
            await self.worker.queue_frame(frame)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(predicate), timeout)

    def of_type(self, kind: type[F], direction: str = "down") -> list[F]:
        frames = self.down if direction == "down" else self.up
        return [f for f in frames if isinstance(f, kind)]


def audio_by_context(frames: Sequence[Frame]) -> dict[str | None, bytes]:
    """Concatenated TTS audio per context, in the order contexts first spoke."""
    audio: dict[str | None, bytes] = {}
    for frame in frames:
        if isinstance(frame, TTSAudioRawFrame):
            audio[frame.context_id] = audio.get(frame.context_id, b"") + frame.audio
    return audio
