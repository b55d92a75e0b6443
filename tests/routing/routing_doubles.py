"""Small real processors for the routers' tests, and a way to run a router with pipecat's run_test.

``Member`` stands in for a member's STT, LLM or TTS: it records every frame
it is given and passes each one on, as a service passes on what it does not
consume. A ``SwitchTo`` cue that reaches the active member's service makes
it do what a transition does (``Script``, standing in for ``team_flow``):
call the router's ``set_active_member``, then queue the cue's frames at the
head of the pipeline, as pipecat.flows queues the next node. ``run_router``
runs a router with ``pipecat.tests.utils.run_test``.

Tests import this by module name (pytest puts this folder on ``sys.path``),
so it is named to clash with nothing, and this folder has no ``__init__.py``
and no ``conftest.py`` (see tests/simulators/pipeline_call.py for why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipecat.frames.frames import (
    CancelFrame,
    DataFrame,
    EndFrame,
    Frame,
    ManuallySwitchServiceFrame,
    ServiceSwitcherRequestMetadataFrame,
    StartFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.service_switcher import ServiceSwitcher
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.tests.utils import run_test

from routing.router import MemberRouting
from teamrunner.errors import MemberSwitchError

# What every service is handed by the switcher itself, whatever the test sends.
PLUMBING = (StartFrame, EndFrame, CancelFrame, ServiceSwitcherRequestMetadataFrame)


class Member(FrameProcessor):
    """A member's service: records each frame it is given, with its direction, and passes it on.

    Given a ``Script`` (``run_router`` gives one), it also acts on ``SwitchTo``
    cues, as an LLM calls a transition function: only the active member's
    service sees a cue, after everything ahead of it.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name=name)
        self.received: list[tuple[Frame, FrameDirection]] = []
        self.script: Script | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        self.received.append((frame, direction))
        if isinstance(frame, SwitchTo) and self.script is not None:
            await self.script.act(self, frame)
            return
        await self.push_frame(frame, direction)

    @property
    def frames(self) -> list[Frame]:
        """What the test sent that reached this service, in order (not the switcher's plumbing)."""
        return [f for f, _ in self.received if not isinstance(f, (*PLUMBING, SwitchTo))]

    def count(self, frame_type: type[Frame]) -> int:
        return sum(isinstance(f, frame_type) for f, _ in self.received)


@dataclass
class SwitchTo(DataFrame):
    """A cue: switch the router to ``member_id``, then queue ``then`` (``up``: from the end)."""

    member_id: str = ""
    then: Sequence[Frame] = ()
    up: Sequence[Frame] = ()


class Script:
    """Does what ``team_flow`` does on a transition, when a member's service is given a cue.

    Calls the router's ``set_active_member``, then queues the cue's frames as
    pipecat.flows queues the next node. Queues an ``EndFrame`` after the last
    cue's frames, since ``run_test``'s own would be queued ahead of them.
    """

    def __init__(self, router: MemberRouting, cues: int) -> None:
        self._router = router
        self._cues_left = cues
        self.errors: list[MemberSwitchError] = []
        self.unexpected: list[Exception] = []

    async def act(self, service: FrameProcessor, cue: SwitchTo) -> None:
        worker = service.pipeline_worker
        try:
            await self._router.set_active_member(cue.member_id)
        except MemberSwitchError as e:
            self.errors.append(e)
        except Exception as e:
            # Anything else is a bug; the run still ends, and run_router raises it.
            self.unexpected.append(e)
        for frame in cue.then:
            await worker.queue_frame(frame)
        for frame in cue.up:
            await worker.queue_frame(frame, FrameDirection.UPSTREAM)
        self._cues_left -= 1
        if self._cues_left == 0:
            await worker.queue_frame(EndFrame())


class SwitchWatch(FrameProcessor):
    """Sits in front of a router and records the switch frames on their way to it."""

    def __init__(self) -> None:
        super().__init__()
        self.switch_frames: list[ManuallySwitchServiceFrame] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, ManuallySwitchServiceFrame):
            self.switch_frames.append(frame)
        await self.push_frame(frame, direction)


def count_cues(frames: Sequence[Frame]) -> int:
    return sum(1 + count_cues(f.then) for f in frames if isinstance(f, SwitchTo))


@dataclass
class Run:
    """What came out of a router run, the switch frames sent to it, and the switches refused."""

    down: Sequence[Frame]
    up: Sequence[Frame]
    switch_frames: list[ManuallySwitchServiceFrame] = field(default_factory=list)
    errors: list[MemberSwitchError] = field(default_factory=list)


async def run_router(
    router: ServiceSwitcher,
    frames: Sequence[Frame],
    *,
    direction: FrameDirection = FrameDirection.DOWNSTREAM,
    ignore_start: bool = True,
) -> Run:
    """Run ``frames`` through ``router`` with pipecat's ``run_test``.

    ``SwitchTo`` cues (downstream only) are acted on by the active member's
    ``Member`` service. The frames out are the ones that left the router.
    """
    cues = count_cues(frames)
    if not cues:
        down, up = await run_test(
            router,
            frames_to_send=frames,
            frames_to_send_direction=direction,
            ignore_start=ignore_start,
        )
        return Run(down, up)
    assert isinstance(router, MemberRouting), "only a router acts on SwitchTo cues"
    assert direction == FrameDirection.DOWNSTREAM, "cues travel downstream"
    script = Script(router, cues)
    for service in router.services:
        assert isinstance(service, Member)
        service.script = script
    watch = SwitchWatch()
    down, up = await run_test(
        Pipeline([watch, router]),
        frames_to_send=frames,
        ignore_start=ignore_start,
        send_end_frame=False,
    )
    down = [f for f in down if not isinstance(f, EndFrame)]
    if script.unexpected:
        raise script.unexpected[0]
    return Run(down, up, watch.switch_frames, script.errors)
