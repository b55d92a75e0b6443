"""pipecat's switchers: a manual strategy able to switch at once, services linked directly.

``ServiceSwitcherStrategyManual`` switches when a ``ManuallySwitchServiceFrame``
reaches it, through ``_set_active_if_available`` (which refuses a service
that is not the switcher's or can no longer be used). Pinned pipecat 1.14 has
no public way to switch without sending that frame through the switcher.

``ServiceSwitcher`` is a ``ParallelPipeline`` that wraps each service in a
branch of its own, a ``Pipeline`` of source, ``FunctionFilter``, service,
``FunctionFilter``, sink: the filters pass a frame only to and from the active
service (and ``StartFrame``, ``EndFrame`` and ``CancelFrame`` to every one),
and the source and sink hand what the service pushes to the switcher's
``_parallel_push_frame`` (up) and ``_pipeline_sink_push_frame`` (down).
``DirectSwitcher`` keeps pipecat's switcher and drops the branches' plumbing:
its branches are the services themselves, a frame goes from the switcher to
the active service's ``queue_frame`` (the lifecycle frames to every
service's, with pipecat's pause until each has passed them on), and each
service's neighbours are two ``BranchEnd`` objects that hand what it pushes to
those same two methods. A service costs five processors fewer than in pipecat's
switcher, each of which would be built, set up, started, stopped, and walked by the
garbage collector while the call lasts:
a team call holds thousands of objects, and a full collection walks them all
while no call's audio moves (BENCHMARKS.md sections 15 and 16).
``tests/routing/test_router_shortcut.py`` fingerprints the pipecat code this
rests on and runs stock switchers beside the routers.

A ``ParallelPipeline`` pushes a frame that leaves several of its branches
only once by keeping the id of every frame that has left it in ``_seen_ids``,
a set pipecat never empties. In a router that is every frame its active
service puts out, for as long as the call lasts: the caller's audio passed on
by the STT (25 frames a second), each chunk of the bot's voice, each token.
``DirectSwitcher`` keeps the last ``SEEN_FRAMES`` (``RecentFrameIds``): a
frame leaves a router's branches together, never thousands of frames apart.
``tests/routing/test_router_memory.py`` fails if pipecat uses the set any
other way, and checks that a router's memory stays bounded and that every
frame, its start included, still leaves once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from pipecat.frames.frames import CancelFrame, EndFrame, Frame, StartFrame
from pipecat.pipeline.parallel_pipeline import ParallelPipeline
from pipecat.pipeline.service_switcher import (
    ServiceSwitcher,
    ServiceSwitcherStrategy,
    ServiceSwitcherStrategyManual,
    StrategyType,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

# How many of the latest frame ids a switcher keeps to push each frame once.
SEEN_FRAMES = 1024


class RecentFrameIds:
    """A set of frame ids that keeps only the ``limit`` latest added."""

    def __init__(self, limit: int = SEEN_FRAMES) -> None:
        self._limit = limit
        self._ids: set[int] = set()
        self._order: deque[int] = deque()

    def __contains__(self, frame_id: object) -> bool:
        return frame_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, frame_id: int) -> None:
        if frame_id in self._ids:
            return
        self._ids.add(frame_id)
        self._order.append(frame_id)
        if len(self._order) > self._limit:
            self._ids.discard(self._order.popleft())


class RoutingStrategy(ServiceSwitcherStrategyManual):
    """pipecat's manual strategy, which can also switch at once.

    A ``ManuallySwitchServiceFrame`` switches as with the manual strategy
    (the STT and TTS routers). ``activate`` switches without waiting for a
    frame to arrive (the LLM router).
    """

    async def activate(self, service: FrameProcessor) -> FrameProcessor | None:
        """Make ``service`` the active service now.

        Returns:
            ``service``; or None, and nothing changes, if it is not one of the
            switcher's services or can no longer be used.
        """
        return await self._set_active_if_available(service)


# The frames every branch is handed, whichever service is active (as pipecat's filters let them by).
EVERY_BRANCH = (StartFrame, EndFrame, CancelFrame)


class BranchEnd:
    """Where a service's pushes leave its branch: straight into the switcher's own handling.

    It stands where pipecat puts a ``PipelineSource`` (frames the service
    pushes up) or a ``PipelineSink`` (frames it pushes down), which hand the
    frame to the same switcher method once their own processing is done, and
    pass nothing on once a ``CancelFrame`` has gone through them: this end
    closes the same way, after a ``CancelFrame`` leaves through it, or when one
    enters its branch from its side (``close``). It is what observers see a
    service push to (``FramePushed.destination``), so it has a name, and what
    Whisker's topology walks past a service (``next``, ``entry_processors``).
    """

    __slots__ = ("_closed", "_deliver", "name")

    entry_processors: tuple[FrameProcessor, ...] = ()
    next: FrameProcessor | None = None

    def __init__(
        self, name: str, deliver: Callable[[Frame, FrameDirection], Awaitable[None]]
    ) -> None:
        self.name = name
        self._deliver = deliver
        self._closed = False

    def close(self) -> None:
        """Pass nothing more on (a ``CancelFrame`` entered the branch through this side)."""
        self._closed = True

    async def queue_frame(
        self,
        frame: Frame,
        direction: FrameDirection = FrameDirection.DOWNSTREAM,
        callback: Any = None,
    ) -> None:
        if self._closed:
            return
        if isinstance(frame, CancelFrame):
            self._closed = True
        await self._deliver(frame, direction)

    def __str__(self) -> str:
        return self.name


class _ServicesAsBranches(ParallelPipeline):
    """pipecat's ``ParallelPipeline`` whose branches are its services themselves.

    Only as ``DirectSwitcher``'s base, after ``ServiceSwitcher`` in its order,
    so that ``ServiceSwitcher.__init__`` calls this ``__init__``, not
    ``ParallelPipeline``'s (which would build a pipeline, source and sink for
    each service).
    """

    def __init__(self, *branches: list[FrameProcessor]) -> None:
        super(ParallelPipeline, self).__init__()
        # ParallelPipeline.__init__'s state, with a bounded memory of frames out.
        self._seen_ids = RecentFrameIds()  # type: ignore[assignment]
        self._frame_counter: dict[int, int] = {}
        self._synchronizing = False
        self._buffered_frames: list[tuple[Frame, FrameDirection]] = []
        self._pipelines = [service for [service] in branches]  # type: ignore[misc]
        # Each service's two ends, by the direction a frame enters its branch through them.
        self._entries: dict[FrameDirection, list[BranchEnd]] = {d: [] for d in FrameDirection}
        for n, service in enumerate(self._pipelines):
            up = BranchEnd(f"{self}::Source{n}", self._parallel_push_frame)
            down = BranchEnd(f"{self}::Sink{n}", self._pipeline_sink_push_frame)
            service._prev = up  # type: ignore[assignment]
            service._next = down  # type: ignore[assignment]
            self._entries[FrameDirection.DOWNSTREAM].append(up)
            self._entries[FrameDirection.UPSTREAM].append(down)

    def _active_branch(self) -> FrameProcessor:
        raise NotImplementedError

    def processors_with_metrics(self) -> list[FrameProcessor]:
        """The services that make metrics, as a ``Pipeline`` of them would list them."""
        found: list[FrameProcessor] = []
        for service in self._pipelines:
            if service.can_generate_metrics():
                found.append(service)
            found.extend(service.processors_with_metrics())
        return found

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        """``ParallelPipeline.process_frame``, handing a frame to the active branch alone.

        Start, end and cancel go to every service, with the same pause until
        each has passed them on.
        """
        await super(ParallelPipeline, self).process_frame(frame, direction)
        if not isinstance(frame, EVERY_BRANCH):
            await self._active_branch().queue_frame(frame, direction)
            return
        self._frame_counter[frame.id] = len(self._pipelines)
        self._synchronizing = True
        await self.pause_processing_system_frames()
        await self.pause_processing_frames()
        cancels = isinstance(frame, CancelFrame)
        for service, entry in zip(self._pipelines, self._entries[direction], strict=True):
            if cancels:
                entry.close()  # as pipecat's source or sink would, the frame going through it
            await service.queue_frame(frame, direction)


class DirectSwitcher(ServiceSwitcher[StrategyType], _ServicesAsBranches):
    """pipecat's ``ServiceSwitcher``, each service linked to it with nothing between.

    A frame goes from the switcher to the active service's ``queue_frame``
    (start, end and cancel to every service's), and what a service pushes goes
    to the switcher's own handling, where pipecat's ``PipelineSink`` and
    ``PipelineSource`` would have sent it: the same frames in the same order,
    and no pipeline, source, sink or filter per service.
    """

    @staticmethod
    def _make_pipeline_definitions(
        services: list[FrameProcessor], strategy: ServiceSwitcherStrategy
    ) -> list[Any]:
        return [[service] for service in services]

    def _active_branch(self) -> FrameProcessor:
        return self.strategy.active_service
