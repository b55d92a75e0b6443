"""Building a call's provider services: one per slot for a single AI, routers for a team.

Every service is built from its spec through the provider registry, once per
distinct setting (``ServicePool``), and named twice: for the start-up error
that names it if it does not come up ("TTS cartesia voice x (members: A, B)"),
and by processor name for the call's metrics (its kind and provider). What
the slots do with them (prompts, functions, flows) is the call builder's
business (``run.py``); this module only makes and names the services.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.llm_service import LLMService
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService

from routing.llm import RoutingLLMService
from routing.router import MemberRouting, ServicePool
from routing.stt import RoutingSTTService
from routing.tts import RoutingTTSService
from teamrunner.errors import StartError
from teamrunner.plan import CallPlan, MemberPlan
from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.registry import Registry
from teamrunner.providers.resources import SharedResources


@dataclass
class Routers:
    """The three routers of a team call; STT and TTS are None when the call has no audio."""

    llm: RoutingLLMService
    stt: RoutingSTTService | None = None
    tts: RoutingTTSService | None = None

    @property
    def all(self) -> list[MemberRouting[Any]]:
        return [r for r in (self.stt, self.llm, self.tts) if r is not None]


@dataclass
class Services:
    """A single AI's services: its LLM, and its STT and TTS when the call hears and speaks."""

    llm: LLMService
    stt: STTService | None
    tts: TTSService | None


class ServiceBuilder:
    """Makes a call's services and keeps their names.

    Args:
        plan: The call's plan.
        shared: What providers share across calls (clients, models).
        voice_handover_secs: How long the team's voice router waits for the
            previous voice at a switch (``RoutingTTSService``).

    Attributes:
        components: Each service that must come up, with the name a failure is reported under.
        providers: Each service's kind and provider, by processor name.
    """

    def __init__(self, plan: CallPlan, shared: SharedResources, voice_handover_secs: float) -> None:
        self._plan = plan
        self._shared = shared
        self._handover = voice_handover_secs
        self.components: list[tuple[str, FrameProcessor]] = []
        self.providers: dict[str, tuple[str, str]] = {}

    def single(self, member: MemberPlan) -> Services:
        """One service per slot, for the one AI of a single-AI call."""
        llm = self._builder(LLM)(member.llm)
        self.components.append((f"LLM {member.llm.describe()}", llm))
        stt = tts = None
        if self._plan.hears and member.stt is not None:
            stt = self._builder(STT)(member.stt)
            self.components.append((f"STT {member.stt.describe()}", stt))
        if self._plan.speaks and member.tts is not None:
            tts = self._builder(TTS)(member.tts)
            self.components.append((f"TTS {member.tts.describe()}", tts))
        return Services(llm=llm, stt=stt, tts=tts)

    def routers(self) -> Routers:
        """A router per slot over the members' services, each distinct setting built once."""
        plan, members = self._plan, self._plan.members.values()
        # One LLM per account: each member's model is set when it takes the call.
        llm_specs = {m.id: m.llm for m in members}
        llms: ServicePool[LLMSpec, LLMService] = ServicePool(
            self._builder(LLM), key=lambda spec: spec.account
        )
        llm = RoutingLLMService(llms.for_members(llm_specs), plan.start_member_id)
        self._name_pooled("LLM", llms, llm_specs)
        stt = tts = None
        if plan.hears:
            stt_specs = {m.id: m.stt for m in members}
            stts: ServicePool[STTSpec, STTService] = ServicePool(self._builder(STT))
            stt = RoutingSTTService(stts.for_members(stt_specs), plan.start_member_id)
            self._name_pooled("STT", stts, stt_specs)
        if plan.speaks:
            tts_specs = {m.id: m.tts for m in members}
            ttss: ServicePool[TTSSpec, TTSService] = ServicePool(self._builder(TTS))
            tts = RoutingTTSService(
                ttss.for_members(tts_specs),
                plan.start_member_id,
                handover_timeout_secs=self._handover,
            )
            self._name_pooled("TTS", ttss, tts_specs)
        return Routers(llm=llm, stt=stt, tts=tts)

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
