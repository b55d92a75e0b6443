"""pipecat's switchers: a manual strategy able to switch at once, a bounded memory, one gate.

``ServiceSwitcherStrategyManual`` switches when a ``ManuallySwitchServiceFrame``
reaches it, through ``_set_active_if_available`` (which refuses a service
that is not the switcher's or can no longer be used). Pinned pipecat 1.14 has
no public way to switch without sending that frame through the switcher.

A switcher is a ``ParallelPipeline``, which pushes a frame that leaves
several of its branches only once by keeping the id of every frame that has
left it in ``_seen_ids``, a set it never empties. In a router that is every
frame its active service puts out, for as long as the call lasts: the
caller's audio passed on by the STT (25 frames a second), each chunk of the
bot's voice, each token. ``forget_old_frames`` puts a set there that keeps
the last ``SEEN_FRAMES`` ids: a frame leaves a router's branches together
(each branch is a pipeline in direct mode, and only lifecycle frames pass
the inactive branches' filters), never thousands of frames apart.
``tests/routing/test_router_memory.py`` fails if pipecat uses
the set any other way, and checks that a router's memory stays bounded and
that every frame, its start included, still leaves once.

``ServiceSwitcher`` wraps each service in a branch of its own, a
``Pipeline`` of source, ``FunctionFilter``, service, ``FunctionFilter``,
sink: the first filter drops frames going down to a service that is not the
active one, the second those going up to it; both let ``StartFrame``,
``EndFrame`` and ``CancelFrame`` through. ``GatedBranches`` builds each branch
as source, service, sink, and puts the same test where a frame enters the
branch (its ``queue_frame``, which ``ParallelPipeline.process_frame`` calls
for every branch). The services are handed the same frames in the same order,
and two processors fewer per service are built, set up, started, stopped and
walked by the garbage collector for as long as the call lasts: a team call
holds thousands of objects, and a full collection walks them all while no
call's audio moves (BENCHMARKS.md section 15). ``tests/routing/test_router_shortcut.py``
fingerprints the pipecat code this rests on and runs stock switchers beside
the routers.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pipecat.frames.frames import CancelFrame, EndFrame, Frame, StartFrame
from pipecat.pipeline.parallel_pipeline import ParallelPipeline
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.service_switcher import (
    ServiceSwitcher,
    ServiceSwitcherStrategy,
    ServiceSwitcherStrategyManual,
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


def forget_old_frames(switcher: ParallelPipeline) -> None:
    """Make ``switcher`` keep only the latest ``SEEN_FRAMES`` frame ids."""
    switcher._seen_ids = RecentFrameIds()  # type: ignore[assignment]


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


class GatedBranches:
    """A ``ServiceSwitcher`` mixin: branches without filters, gated where frames enter them.

    Call ``gate_branches`` once pipecat's ``__init__`` has built the branches.
    """

    @staticmethod
    def _make_pipeline_definitions(
        services: list[FrameProcessor], strategy: ServiceSwitcherStrategy
    ) -> list[Any]:
        return [[service] for service in services]


def gate_branches(switcher: ServiceSwitcher) -> None:
    """Let a frame into a branch of ``switcher`` only if its service is the active one.

    ``StartFrame``, ``EndFrame`` and ``CancelFrame`` enter every branch.
    """
    for branch, service in zip(switcher._pipelines, switcher.services, strict=True):
        _gate(branch, service, switcher)


def _gate(branch: Pipeline, service: FrameProcessor, switcher: ServiceSwitcher) -> None:
    enter = branch.queue_frame

    async def queue_frame(
        frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM, callback: Any = None
    ) -> None:
        if switcher.strategy.active_service is service or isinstance(frame, EVERY_BRANCH):
            await enter(frame, direction, callback)

    branch.queue_frame = queue_frame  # type: ignore[method-assign]
