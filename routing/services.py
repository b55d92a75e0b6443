"""Building a call's provider services, and the one way its flow moves them between members.

A call has three service slots in its pipeline: LLM, and STT and TTS when it
hears and speaks. With one member (a single AI, a team of one) each slot
holds that member's service as it is (``Services``): a router would only
add a hop to every frame. With more, each holds a router over the members'
services (``Routers``), but for ears all the members share: an STT router
over one service only switches it to itself, and would put a hop before it
on every frame of the caller's audio (fifty a second), so the slot holds the
one STT as it is. The LLM and TTS routers do more than switch (they hold the
next member's first run, wait for the previous voice), so they stay even over
one service. Both answer the flow (``team_flow.TeamFlow``) the
same questions: which LLM a member uses, whether it can take the call, and
switch to it; for ``Services`` no switch ever comes, since a team of one has
no one to hand over to.

Every service is built from its spec through the provider registry, once per
distinct setting (``ServicePool``). Of a team's, only those the routers start
on connect before the call answers; the others (the other members' voices
and ears) connect right after, or when a handoff first needs them
(``Routers.open_rest``, ``Routers.ready_for``). Each is named twice: for the start-up error
that names it if it does not come up ("TTS cartesia voice x (members: A, B)"),
and by processor name for the call's metrics (its kind and provider). What
the slots do with them (prompts, functions, flows) is the flow's business;
this module only makes, names and switches the services.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.llm_service import LLMService
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService

from routing.llm import RoutingLLMService
from routing.parting_words import PartingWords
from routing.router import MemberRouting, ServicePool
from routing.stt import RoutingSTTService
from routing.tts import RoutingTTSService
from teamrunner.errors import MemberSwitchError, StartError
from teamrunner.pipecat_internals.connecting import ConnectsWhenOpened
from teamrunner.plan import CallPlan, MemberPlan
from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.registry import Registry
from teamrunner.providers.resources import SharedResources


@dataclass
class Routers:
    """The routers of a call of several members; STT and TTS None when it has no audio.

    ``stt`` is the one STT itself, not a router, when every member hears through it.

    ``waiting`` are the services no router starts on that connect to their
    provider: set up without connecting, so the call answers without waiting
    for their handshakes, they connect on ``open_rest`` once it is up, or when a
    handoff first needs them (``ready_for``), whichever comes first.
    """

    llm: RoutingLLMService
    stt: RoutingSTTService | STTService | None = None
    tts: RoutingTTSService | None = None
    waiting: list[ConnectsWhenOpened] = field(default_factory=list)

    @property
    def llms(self) -> list[LLMService]:
        """Every LLM the members use."""
        return self.llm.llms

    def llm_for(self, member_id: str) -> LLMService | None:
        return self.llm.service_for(member_id)

    def built_models(self) -> dict[LLMService, str]:
        """The model each LLM was built with, where it is known: not for shared ones."""
        return {}

    async def open_rest(self) -> None:
        """Connect every service still waiting to, all at once (the call is up)."""
        await asyncio.gather(*(service.open() for service in self.waiting))

    async def ready_for(self, member_id: str) -> None:
        """Return once ``member_id``'s services are connected, connecting them now if need be.

        Raises:
            MemberSwitchError: a router knows no such member.
        """
        services = [router.service_for(member_id) for router in self.routing_slots]
        # Nearly always none: a handoff then neither waits nor yields.
        unopened = [s for s in self.waiting if s in services and not s.opened]
        if unopened:
            await asyncio.gather(*(s.open() for s in unopened))

    def check_member(self, member_id: str) -> None:
        """Raise ``MemberSwitchError`` unless every router can switch to ``member_id`` now."""
        for router in self.routing_slots:
            router.check_member(member_id)

    async def switch(self, member_id: str) -> None:
        """Switch every router to ``member_id`` (checked by ``check_member`` first)."""
        for router in self.routing_slots:
            await router.set_active_member(member_id)

    def active_tts(self) -> FrameProcessor:
        """The voice in use now (the call speaks)."""
        assert self.tts is not None, "asked only of a call that speaks"
        return self.tts.strategy.active_service

    def hold_until_ready(self) -> None:
        """Hold the LLM's runs until ``member_ready`` (``RoutingLLMService``)."""
        self.llm.hold_until_ready()

    async def member_ready(self) -> None:
        await self.llm.member_ready()

    @property
    def routing_slots(self) -> list[MemberRouting[Any]]:
        """The slots that hold a router (not a shared STT, nor the slots a call has not)."""
        return [r for r in (self.stt, self.llm, self.tts) if isinstance(r, MemberRouting)]


@dataclass
class Services:
    """One member's services, in the slots as they are: its LLM, STT and TTS."""

    member_id: str
    model: str
    llm: LLMService
    stt: STTService | None
    tts: TTSService | None

    @property
    def llms(self) -> list[LLMService]:
        return [self.llm]

    def llm_for(self, member_id: str) -> LLMService | None:
        return self.llm

    def built_models(self) -> dict[LLMService, str]:
        """The one LLM was built with its member's model."""
        return {self.llm: self.model}

    async def open_rest(self) -> None:
        """Nothing waits: the one member's services connected with the pipeline."""

    async def ready_for(self, member_id: str) -> None:
        self.check_member(member_id)

    def check_member(self, member_id: str) -> None:
        if member_id != self.member_id:
            raise MemberSwitchError(f"the call has no member {member_id!r}")

    async def switch(self, member_id: str) -> None:
        self.check_member(member_id)

    def active_tts(self) -> FrameProcessor:
        """The voice (the call speaks)."""
        assert self.tts is not None, "asked only of a call that speaks"
        return self.tts

    def hold_until_ready(self) -> None:
        """Nothing to hold: the one LLM never changes hands."""

    async def member_ready(self) -> None:
        """Nothing was held."""


# What fills a call's slots: the member's services, or routers over the members'.
Slots = Services | Routers


class ServiceBuilder:
    """Makes a call's services and keeps their names.

    Args:
        plan: The call's plan.
        shared: What providers share across calls (clients, models).
        voice_stall_secs: How long the team's voice router waits, at a switch,
            for a previous voice that makes no audio (``RoutingTTSService``).

    Attributes:
        components: Each service that must come up, with the name a failure is reported under.
        providers: Each service's kind and provider, by processor name.
    """

    def __init__(self, plan: CallPlan, shared: SharedResources, voice_stall_secs: float) -> None:
        self._plan = plan
        self._shared = shared
        self._voice_stall = voice_stall_secs
        self.components: list[tuple[str, FrameProcessor]] = []
        self.providers: dict[str, tuple[str, str]] = {}

    def slots(self) -> Slots:
        """The call's slots: its one member's services, or a router each over many."""
        if len(self._plan.members) == 1:
            return self.single(self._plan.start_member)
        return self.routers()

    def single(self, member: MemberPlan) -> Services:
        """One service per slot, for a call of one member."""
        llm = self._builder(LLM)(member.llm)
        self.components.append((f"LLM {member.llm.describe()}", llm))
        stt = tts = None
        if self._plan.hears and member.stt is not None:
            stt = self._builder(STT)(member.stt)
            self.components.append((f"STT {member.stt.describe()}", stt))
        if self._plan.speaks and member.tts is not None:
            tts = self._builder(TTS)(member.tts)
            self.components.append((f"TTS {member.tts.describe()}", tts))
        return Services(member_id=member.id, model=member.llm.model, llm=llm, stt=stt, tts=tts)

    def routers(self) -> Routers:
        """A router per slot over the members' services, each distinct setting built once.

        The STT slot holds the one STT itself when the members all share it.
        """
        plan, members = self._plan, self._plan.members.values()
        # One LLM per account: each member's model is set when it takes the call.
        llm_specs = {m.id: m.llm for m in members}
        llms: ServicePool[LLMSpec, LLMService] = ServicePool(
            self._builder(LLM), key=lambda spec: spec.account
        )
        # The line a member says as it transfers, for the next member's first request.
        parting = PartingWords()
        llm = RoutingLLMService(llms.for_members(llm_specs), plan.start_member_id, parting=parting)
        self._name_pooled("LLM", llms, llm_specs)
        stt = tts = None
        if plan.hears:
            stt_specs = {m.id: m.stt for m in members}
            stts: ServicePool[STTSpec, STTService] = ServicePool(self._builder(STT))
            stt_by_member = stts.for_members(stt_specs)
            stt = (
                stts.services[0]
                if len(stts.services) == 1
                else RoutingSTTService(stt_by_member, plan.start_member_id)
            )
            self._name_pooled("STT", stts, stt_specs)
        if plan.speaks:
            tts_specs = {m.id: m.tts for m in members}
            ttss: ServicePool[TTSSpec, TTSService] = ServicePool(self._builder(TTS))
            tts = RoutingTTSService(
                ttss.for_members(tts_specs),
                plan.start_member_id,
                stall_secs=self._voice_stall,
                transitions={t.name for m in members for t in m.transitions},
                parting=parting,
            )
            self._name_pooled("TTS", ttss, tts_specs)
        routers = Routers(llm=llm, stt=stt, tts=tts)
        # Only what the start member uses connects before the call answers.
        routers.waiting = [
            service
            for router in routers.routing_slots
            for service in router.services
            if service is not router.strategy.active_service
            and isinstance(service, ConnectsWhenOpened)
        ]
        for service in routers.waiting:
            service.defer_connecting()
        return routers

    def _builder(self, registry: Registry[Any, Any]) -> Callable[[Any], Any]:
        """A function building a service of ``registry`` for a spec."""

        def build(spec: Any) -> Any:
            provider = registry.get(spec.provider)
            assert provider is not None, f"{spec.provider} was checked when the call was planned"
            try:
                service = provider.factory(spec, self._shared)
            except Exception as e:
                raise StartError(
                    f"{registry.kind} {spec.describe()}",
                    f"could not be created: {type(e).__name__}: {e}",
                ) from e
            self.providers[service.name] = (registry.kind, spec.provider)
            return service

        return build

    def _name_pooled(self, kind: str, pool: ServicePool[Any, Any], specs: dict[str, Any]) -> None:
        """Name each pooled service after what it is and the members it serves."""
        names = {m.id: m.label for m in self._plan.members.values()}
        for service in pool.services:
            users = pool.users(service, specs)
            described = sorted({specs[u].describe() for u in users})
            label = f"{kind} {', '.join(described)} (members: {', '.join(names[u] for u in users)})"
            self.components.append((label, service))
