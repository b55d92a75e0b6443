"""What the three routers share: members mapped to deduplicated services, and switching.

Why pipecat's switchers: every wrapped service is set up, started, stopped and
observed like any processor in a pipeline, and keeps its own queue; the Go
side's previous runner replaced its services' ``push_frame`` by hand and lost
all of that. Inactive services stay connected, so a switch costs no connect.

Why a switch is a frame: ``set_active_member`` queues a
``ManuallySwitchServiceFrame`` at the head of the pipeline. It travels behind
everything already on its way: in particular, the TTS router switches only
after the previous member's last words have reached the previous member's
voice. The LLM router is the exception and switches at once (see
``routing/llm.py``), before pipecat.flows queues the next member's prompt, so
that prompt lands on the next member's LLM and not the previous one's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    ManuallySwitchServiceFrame,
    ServiceSwitcherFrame,
    ServiceUpdateSettingsFrame,
    StartFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from teamrunner.errors import MemberSwitchError

SpecT = TypeVar("SpecT", bound=Hashable)
ServiceT = TypeVar("ServiceT", bound=FrameProcessor)


class ServicePool(Generic[SpecT, ServiceT]):
    """One service per distinct spec: members with equal settings share an instance.

    Args:
        build: Makes the service for a spec; called once per distinct key.
        key: What makes two specs need two services (default: the whole spec).
    """

    def __init__(
        self,
        build: Callable[[SpecT], ServiceT],
        key: Callable[[SpecT], Hashable] = lambda spec: spec,
    ) -> None:
        self._build = build
        self._key = key
        self._services: dict[Hashable, ServiceT] = {}

    def get(self, spec: SpecT) -> ServiceT:
        key = self._key(spec)
        if key not in self._services:
            self._services[key] = self._build(spec)
        return self._services[key]

    def for_members(self, specs: Mapping[str, SpecT | None]) -> dict[str, ServiceT | None]:
        """Member id to service, building each distinct spec once (None stays None)."""
        return {member: None if spec is None else self.get(spec) for member, spec in specs.items()}

    @property
    def services(self) -> list[ServiceT]:
        return list(self._services.values())

    def users(self, service: ServiceT, specs: Mapping[str, SpecT | None]) -> list[str]:
        """The members (of ``specs``) that ``service`` serves."""
        return [
            member
            for member, spec in specs.items()
            if spec is not None and self._services.get(self._key(spec)) is service
        ]


def ordered_services(
    by_member: Mapping[str, FrameProcessor | None], start_member_id: str
) -> list[FrameProcessor]:
    """The distinct services, the start member's first (a switcher starts on its first)."""
    services: list[FrameProcessor] = []
    start = by_member.get(start_member_id)
    if start is not None:
        services.append(start)
    for service in by_member.values():
        if service is not None and service not in services:
            services.append(service)
    return services


class MemberRouting:
    """Mixin for a ``ServiceSwitcher``: which service each member uses, and switching to it.

    A member mapped to None has no service of this kind of its own and keeps
    whichever one is in use when the call reaches it.

    It also shortens the way of every frame the switcher has no special use
    for. pipecat's switcher is a parallel pipeline: each frame is queued into
    every branch, where a filter in front of each inactive service drops it.
    Only the active service ever receives such a frame, so it is queued to that
    service directly; what the service pushes out still leaves through its
    branch. Lifecycle frames (which every service must see), switch frames and
    settings updates (which the switcher handles) take pipecat's way. Measured
    with ``bench/routing_overhead.py``: caller audio, 50 frames a second, is
    most of what a call carries; see BENCHMARKS.md.
    """

    kind = "service"
    # Frames the switcher itself must handle: they go the whole way through it.
    switcher_frames: tuple[type[Frame], ...] = (
        StartFrame,
        EndFrame,
        CancelFrame,
        ServiceSwitcherFrame,
        ServiceUpdateSettingsFrame,
    )

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, self.switcher_frames):
            await super().process_frame(frame, direction)  # type: ignore[misc]
            return
        # What every processor does with a frame (observers, interruptions),
        # without the parallel pipeline's fan-out to every branch.
        await FrameProcessor.process_frame(self, frame, direction)  # type: ignore[arg-type]
        await self.strategy.active_service.queue_frame(frame, direction)  # type: ignore[attr-defined]

    def _init_members(self, by_member: Mapping[str, FrameProcessor | None]) -> None:
        self._by_member = dict(by_member)

    def service_for(self, member_id: str) -> FrameProcessor | None:
        """The service ``member_id`` uses (None: it keeps the one in use)."""
        if member_id not in self._by_member:
            raise MemberSwitchError(f"the {self.kind} router knows no member {member_id!r}")
        return self._by_member[member_id]

    def check_member(self, member_id: str) -> None:
        """Raise ``MemberSwitchError`` unless a switch to ``member_id`` can be made now."""
        service = self.service_for(member_id)
        if service is not None and not service.is_usable:
            raise MemberSwitchError(f"{self.kind} {service.name} can no longer be used")

    async def set_active_member(self, member_id: str) -> None:
        """Make ``member_id``'s service the active one, in order with the frames in flight.

        Raises:
            MemberSwitchError: the member is unknown or its service has failed.
        """
        self.check_member(member_id)
        service = self.service_for(member_id)
        if service is None:
            return
        frame = ManuallySwitchServiceFrame(service=service)
        # A barge-in must not drop a switch: the call would be split between members.
        frame.interruptible = False
        await self.pipeline_worker.queue_frame(frame)  # type: ignore[attr-defined]
