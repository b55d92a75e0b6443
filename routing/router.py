"""What the three routers share: members mapped to shared services, switching, a shortcut.

Why pipecat's switchers: every wrapped service is set up, started, stopped and
observed like any processor in a pipeline, and keeps its own queue; the Go
side's previous runner replaced its services' ``push_frame`` by hand and lost
all of that. Inactive services are set up with the pipeline; those that
connect to a provider connect once the call is up, in the background
(``routing.services.Routers``), and stay connected, so a switch costs no
connect. A ``ServicePool`` builds one service per distinct setting,
so members that sound or hear alike share one instance and one connection.

Why the STT and TTS routers switch by a frame: ``set_active_member`` queues a
``ManuallySwitchServiceFrame`` at the head of the pipeline, where it queues
behind every data and control frame already on its way down. On its way to
the TTS router it also passes through the active LLM, behind whatever that LLM
has still to say, so the voice changes only after the previous member's last
words have reached the previous member's voice. Caller audio is not ordered
with the switch: it is a system frame that enters at the input transport, so
the STT router changes ears between two audio frames, when the switch frame
gets there.

Why the LLM router switches at once: see ``routing/llm.py``. Both ways go
through ``RoutingStrategy``, pipecat's manual strategy with a method for the
immediate case (``teamrunner.pipecat_internals.switcher``, since that takes a
pipecat private); which member is active is decided by ``team_flow.TeamFlow``.

This module does not decide which member is active, build providers, or know
about pipecat.flows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from pipecat.frames.frames import (
    BotSpeakingFrame,
    Frame,
    InputAudioRawFrame,
    LLMTextFrame,
    ManuallySwitchServiceFrame,
    UserSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from teamrunner.errors import MemberSwitchError
from teamrunner.pipecat_internals.switcher import DirectSwitcher, RoutingStrategy

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
        """The service for ``spec``, built the first time its key is seen."""
        key = self._key(spec)
        if key not in self._services:
            self._services[key] = self._build(spec)
        return self._services[key]

    def for_members(self, specs: Mapping[str, SpecT | None]) -> dict[str, ServiceT | None]:
        """Member id to service, building each distinct spec once (None stays None)."""
        return {member: None if spec is None else self.get(spec) for member, spec in specs.items()}

    @property
    def services(self) -> list[ServiceT]:
        """Every service built so far, in the order they were first needed."""
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


# The shortcut: the frame types the routers hand straight to the active
# service, because they are most of what a call carries and pipecat's
# switcher does nothing with them but deliver them there. Counted over a
# scripted team voice call (three members, one handoff):
#
#   InputAudioRawFrame  STT router, down   50 a second, the whole call
#   UserSpeakingFrame   all three          about 5 a second while the caller speaks
#   BotSpeakingFrame    all three, up      5 a second while the bot speaks
#   LLMTextFrame        TTS router, down   one per token of every reply
#
# Every other type, rare and often special (lifecycle, switch, settings,
# context, interruption), takes pipecat's whole way. Types match exactly: a
# subclass (UserAudioRawFrame, VisionTextFrame) may mean something a later
# pipecat handles, so it takes the whole way until it is listed here.
#
# Why the two ways deliver the same frames in the same order (pipecat 1.14):
# pipecat's way runs the switcher's process_frame, which hands the frame to
# its branches. In a stock switcher each branch is a Pipeline of
# PipelineSource → FunctionFilter → service → FunctionFilter → PipelineSink,
# all in direct mode, whose filters pass a frame only to the active service
# (and Start/End/Cancel to every one); a router's branches are the services
# themselves, and the switcher hands the frame to the active one
# (``DirectSwitcher``, in teamrunner.pipecat_internals.switcher). Either ends
# in the active service's ``queue_frame`` before the switcher's
# ``process_frame`` returns. The shortcut makes that same ``queue_frame``
# call, at the same point of the switcher's processing, without the checks
# for switch and settings frames on the way. Both run the switcher's own
# ``FrameProcessor.process_frame`` (observers), and whatever the service
# pushes out leaves the same way. The parallel pipeline's pause around
# Start/End/Cancel still holds: it pauses the switcher's own queues, which
# come before either way.
#
# tests/routing/test_router_shortcut.py fails when pipecat changes any
# function this relies on, and checks that both ways give the same frames out.
SHORTCUT_FRAMES: frozenset[type[Frame]] = frozenset(
    {InputAudioRawFrame, UserSpeakingFrame, BotSpeakingFrame, LLMTextFrame}
)


class MemberRouting(DirectSwitcher[RoutingStrategy], Generic[ServiceT]):
    """A ``ServiceSwitcher`` that knows which service each member uses, and switches to it.

    A member mapped to None has no service of this kind of its own and keeps
    whichever one is in use when the call reaches it. Frames take pipecat's
    way through the switcher, except the ``SHORTCUT_FRAMES``, which are
    handed straight to the active service.

    Args:
        by_member: Member id to that member's service; members may share one.
        start_member_id: The member whose service is active at the start.
    """

    kind = "service"

    def __init__(self, by_member: Mapping[str, ServiceT | None], start_member_id: str) -> None:
        super().__init__(
            ordered_services(by_member, start_member_id), strategy_type=RoutingStrategy
        )
        self._by_member: dict[str, ServiceT | None] = dict(by_member)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        """pipecat's switcher, except for the ``SHORTCUT_FRAMES`` (see there)."""
        if type(frame) not in SHORTCUT_FRAMES:
            await super().process_frame(frame, direction)
            return
        # What the switcher's own process_frame does before fanning a frame
        # out (tell observers), then the one delivery that survives the fan-out.
        await FrameProcessor.process_frame(self, frame, direction)
        await self.strategy.active_service.queue_frame(frame, direction)

    def service_for(self, member_id: str) -> ServiceT | None:
        """The service ``member_id`` uses (None: it keeps the one in use).

        Raises:
            MemberSwitchError: the router knows no such member.
        """
        if member_id not in self._by_member:
            raise MemberSwitchError(f"the {self.kind} router knows no member {member_id!r}")
        return self._by_member[member_id]

    def check_member(self, member_id: str) -> None:
        """Raise ``MemberSwitchError`` unless a switch to ``member_id`` can be made now."""
        service = self.service_for(member_id)
        if service is not None and not service.is_usable:
            raise MemberSwitchError(f"{self.kind} {service.name} can no longer be used")

    async def set_active_member(self, member_id: str) -> None:
        """Make ``member_id``'s service the active one, in order with the frames on their way.

        Queues the switch at the head of the pipeline, even if the service
        looks active already: a switch away from it may still be on its way.

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
        await self.pipeline_worker.queue_frame(frame)
