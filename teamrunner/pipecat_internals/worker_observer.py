"""A pipeline worker's observer proxy that queues only what some observer reads.

pipecat's ``PipelineWorker`` hands its observers every frame through one
``WorkerObserver``: each frame's pushes, and each processor's processing of
each frame (``on_process_frame``), every one put on a queue per observer and
taken off by that observer's task. A caller's audio frame alone makes a
processing event at every processor it passes and a push at its first: some
two hundred queue round trips a second per call, and no observer of a call
reads any of them (pipecat's ``BaseObserver.on_process_frame`` does nothing,
and of pipecat's observers only its start-up timing one overrides it; the
call's RTVI observer drops caller audio unless it reports audio levels).
``SelectiveWorkerObserver`` queues:

* a processing event only for the observers whose class overrides
  ``on_process_frame``;
* a push only if some observer may read a frame of its type: an observer
  can say which types it never reads with an ``unread_frame_types``
  attribute (a set of exact types); one that says nothing reads every type.

Everything else is pipecat's ``WorkerObserver``, unchanged.

The worker builds its ``WorkerObserver`` in its constructor, into
``_observer``, and takes no argument for another (pinned pipecat 1.14); the
proxy keeps its observers in ``_observers``. ``select_observed(worker)``
replaces it, with the same observers, before the worker is set up.
``tests/pipecat_internals/test_worker_observer.py`` fails if either moves.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipecat.frames.frames import Frame
from pipecat.observers.base_observer import BaseObserver, FrameProcessed, FramePushed
from pipecat.pipeline.worker import PipelineWorker
from pipecat.pipeline.worker_observer import WorkerObserver


def reads_processing(observer: BaseObserver) -> bool:
    """Whether ``observer`` does anything with a processor's processing of a frame."""
    return type(observer).on_process_frame is not BaseObserver.on_process_frame


def unread_by_all(observers: Iterable[BaseObserver]) -> frozenset[type[Frame]]:
    """The frame types none of ``observers`` reads (empty when any says nothing)."""
    unread: frozenset[type[Frame]] | None = None
    for observer in observers:
        types = frozenset(getattr(observer, "unread_frame_types", ()))
        unread = types if unread is None else unread & types
    return unread or frozenset()


class SelectiveWorkerObserver(WorkerObserver):
    """pipecat's ``WorkerObserver``, queueing only events some observer reads."""

    def __init__(self, *, observers: list[BaseObserver] | None = None) -> None:
        super().__init__(observers=observers)
        self._select()

    def add_observer(self, observer: BaseObserver) -> None:
        super().add_observer(observer)
        self._select()

    async def remove_observer(self, observer: BaseObserver) -> None:
        await super().remove_observer(observer)
        self._select()

    @property
    def unread_types(self) -> frozenset[type[Frame]]:
        """The frame types whose pushes are not queued: none of the observers reads them."""
        return self._unread

    async def on_process_frame(self, data: FrameProcessed) -> None:
        if self._reads_processing:
            await super().on_process_frame(data)

    async def on_push_frame(self, data: FramePushed) -> None:
        if type(data.frame) not in self._unread:
            await super().on_push_frame(data)

    def _select(self) -> None:
        self._reads_processing = any(reads_processing(o) for o in self._observers)
        self._unread = unread_by_all(self._observers)


def select_observed(worker: PipelineWorker) -> None:
    """Give ``worker`` a ``SelectiveWorkerObserver`` for the one it built, before it starts.

    Raises:
        RuntimeError: the worker's observer is not the plain ``WorkerObserver``
            pipecat 1.14 builds (pipecat changed; the runner must be updated).
    """
    built = worker._observer
    if type(built) is not WorkerObserver:
        raise RuntimeError(
            f"pipecat's worker observer is a {type(built).__name__}, not a WorkerObserver"
        )
    worker._observer = SelectiveWorkerObserver(observers=built._observers)
