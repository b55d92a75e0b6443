"""Building one call's pipeline from its plan.

A single-AI call and a team call have the same shape::

    [input socket → STT] → user context → LLM → [TTS] → output socket → assistant context

A single-AI call puts its one LLM, STT and TTS in those slots; a team call
puts the routers there (``routing/``), each over the members' deduplicated
provider instances, and lets pipecat.flows (``team_flow.py``) drive which
member is active. The bracketed parts exist only when the call has caller
audio (``stt_type``) or spoken replies (``tts_type``). Everything about
*what* to build was decided in :mod:`teamrunner.plan`; this module only
assembles it, and ``teamrunner.session`` runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.audio.vad.vad_analyzer import VADAnalyzer
from pipecat.flows import FlowManager
from pipecat.frames.frames import (
    BotSpeakingFrame,
    InputTransportMessageFrame,
    InterimTranscriptionFrame,
    LLMFullResponseEndFrame,
    LLMRunFrame,
    LLMUpdateSettingsFrame,
    TranscriptionFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import NOT_GIVEN, LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIProcessor
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService

from routing import RoutingLLMService, RoutingSTTService, RoutingTTSService, ServicePool
from team_flow import Routers, TeamFlow
from teamrunner.call_observer import CallObserver
from teamrunner.caller_audio import CallerAudioStop
from teamrunner.errors import StartError
from teamrunner.fallback import LLMFallback
from teamrunner.journal import CallJournal
from teamrunner.manager.events import ManagerEvents, rtvi_error
from teamrunner.manager.tools import ToolBridge
from teamrunner.manager.transport import SAMPLE_RATE, ManagerSockets, open_sockets
from teamrunner.plan import CallPlan, MemberPlan, ToolPlan
from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.registry import Registry
from teamrunner.runtime import Runtime
from teamrunner.turns import user_params
from teamrunner.voice_watch import VoiceWatch

# What counts as a call being alive, for the idle timeout: someone spoke or typed.
ACTIVITY_FRAMES = (
    BotSpeakingFrame,
    InputTransportMessageFrame,
    InterimTranscriptionFrame,
    LLMFullResponseEndFrame,
    TranscriptionFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
)


@dataclass
class Call:
    """A built, not yet running, call: what ``teamrunner.session`` runs.

    Attributes:
        plan: What the call is.
        worker: The pipeline worker that runs it.
        sockets: Its websockets to pipecat-manager.
        components: Each processor that must come up for the call to start,
            with the name a failure is reported under.
        context: The conversation the LLM sees.
        vad: The caller's voice activity detector (None for a text session).
        flow: The team's flow (None for a single-AI call).
        flow_manager: pipecat.flows' manager for a team call.
        voice: Watches the voice for stalls (None for a text session).
        system_instruction: A single AI's system prompt, from the history.
    """

    plan: CallPlan
    worker: PipelineWorker
    sockets: ManagerSockets
    components: list[tuple[str, FrameProcessor]]
    context: LLMContext
    vad: VADAnalyzer | None = None
    flow: TeamFlow | None = None
    flow_manager: FlowManager | None = None
    voice: VoiceWatch | None = None
    system_instruction: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def active_member(self) -> MemberPlan:
        return self.flow.active if self.flow is not None else self.plan.start_member

    async def begin(self) -> None:
        """Queue what makes the first AI speak: its flow node, or a first LLM run."""
        if self.flow_manager is not None and self.flow is not None:
            await self.flow.start(self.flow_manager)
            return
        if self.system_instruction:
            await self.worker.queue_frame(
                LLMUpdateSettingsFrame(
                    delta=LLMSettings(system_instruction=self.system_instruction)
                )
            )
        # With nothing to go on, the AI waits for the caller: providers refuse an empty context.
        if self.system_instruction or self.history:
            await self.worker.queue_frame(LLMRunFrame())

    async def tell_manager_error(self, error: str, *, fatal: bool) -> None:
        await self.sockets.output.output().queue_frame(rtvi_error(error, fatal=fatal))

    async def close(self) -> None:
        if self.voice is not None:
            self.voice.close()
        if self.flow is not None:
            await self.flow.close()


def build_call(
    plan: CallPlan,
    runtime: Runtime,
    journal: CallJournal,
    observers: Iterable[BaseObserver] = (),
) -> Call:
    """Assemble the pipeline, services and sockets of ``plan`` (nothing connects yet).

    Raises:
        StartError: a provider could not be constructed from its settings.
    """
    sockets = open_sockets(
        runtime.settings.manager_ws_url, plan.id, hears=plan.hears, redactor=runtime.redactor
    )
    parts = _Parts(plan, runtime, journal)
    slots = parts.team_slots() if plan.is_team else parts.single_slots()
    # The history was made valid for every provider in the plan; pipecat types it per role.
    context = LLMContext(messages=cast(Any, slots.history), tools=slots.tools)
    turn_params = user_params(plan.turn, runtime.shared.models, hears=plan.hears)
    aggregators = LLMContextAggregatorPair(context, user_params=turn_params)
    bridge = ToolBridge(plan.id, runtime.manager, slots.lookup_tool, journal)
    for name in slots.tool_names:
        slots.llm.register_function(name, bridge, cancel_on_interruption=True)

    # RTVI: pipecat's processor at the head (it handles what Go sends), and an
    # observer that sends Go only the events it reads, straight to its socket.
    rtvi = RTVIProcessor()
    events = ManagerEvents(rtvi, sockets.output.output())
    voice = _voice_watch(runtime, journal, sockets) if plan.speaks else None
    observer = CallObserver(journal, parts.providers, speaks=plan.speaks, voice=voice)
    processors = _processors(
        plan,
        sockets,
        slots,
        aggregators,
        rtvi,
        parts.components,
        runtime.settings.llm_fallback_line,
    )
    worker = _worker(plan, runtime, processors, [events, observer, *observers])
    call = Call(
        plan=plan,
        worker=worker,
        sockets=sockets,
        components=parts.components,
        context=context,
        vad=turn_params.vad_analyzer,
        flow=slots.flow,
        voice=voice,
        system_instruction=slots.system_instruction,
        history=slots.history,
    )
    if slots.flow is not None:
        call.flow_manager = slots.flow.flow_manager(worker, aggregators)
    return call


def _voice_watch(runtime: Runtime, journal: CallJournal, sockets: ManagerSockets) -> VoiceWatch:
    """A watch on the call's voice that reports a stall to the journal and to pipecat-manager."""

    async def stalled() -> None:
        tts = journal.member_tag.member.tts
        journal.provider_error("TTS", tts.provider if tts else "", "stall")
        error = "the voice stopped producing audio; the reply was abandoned"
        await sockets.output.output().queue_frame(rtvi_error(error, fatal=False))

    return VoiceWatch(runtime.settings.tts_timeout_secs, stalled)


def _processors(
    plan: CallPlan,
    sockets: ManagerSockets,
    slots: _Slots,
    aggregators: LLMContextAggregatorPair,
    rtvi: RTVIProcessor,
    components: list[tuple[str, FrameProcessor]],
    fallback_line: str,
) -> list[FrameProcessor]:
    """The pipeline in order; each socket is put first among the components that must come up."""
    processors: list[FrameProcessor] = [rtvi]
    if sockets.input is not None and slots.stt is not None:
        processors += [sockets.input.input(), slots.stt]
        components.insert(0, ("input socket to pipecat-manager", sockets.input.input()))
    processors.append(aggregators.user())
    if plan.hears:
        processors.append(CallerAudioStop())
    if slots.tts is not None:
        processors.append(LLMFallback(fallback_line))
    processors.append(slots.llm)
    if slots.tts is not None:
        processors.append(slots.tts)
    processors += [sockets.output.output(), aggregators.assistant()]
    components.insert(0, ("output socket to pipecat-manager", sockets.output.output()))
    return processors


def _worker(
    plan: CallPlan,
    runtime: Runtime,
    processors: list[FrameProcessor],
    observers: list[BaseObserver],
) -> PipelineWorker:
    tracing = runtime.settings.tracing
    return PipelineWorker(
        Pipeline(processors),
        params=PipelineParams(
            audio_in_sample_rate=SAMPLE_RATE,
            audio_out_sample_rate=SAMPLE_RATE,
            # For the providers' time to first byte (runner_provider_ttfb_seconds).
            enable_metrics=runtime.settings.provider_metrics,
            enable_usage_metrics=False,
        ),
        idle_timeout_secs=runtime.settings.session_idle_secs,
        idle_timeout_frames=ACTIVITY_FRAMES,
        # pipecat's turn tracking only feeds its tracing: one more observer of every
        # frame, so it runs only when tracing does.
        enable_turn_tracking=tracing,
        enable_tracing=tracing,
        conversation_id=plan.id,
        observers=observers,
        name=f"call-{plan.id}",
    )


@dataclass
class _Slots:
    """What fills the service slots of the pipeline."""

    llm: LLMService | RoutingLLMService
    stt: STTService | RoutingSTTService | None
    tts: TTSService | RoutingTTSService | None
    history: list[dict[str, Any]]
    tools: ToolsSchema | Any
    tool_names: set[str]
    lookup_tool: Callable[[str], ToolPlan | None]
    flow: TeamFlow | None = None
    system_instruction: str | None = None


class _Parts:
    """Builds a call's provider services, naming each for start-up errors and its metrics.

    Attributes:
        components: Each service that must come up, with the name a failure is reported under.
        providers: Each service's kind and provider, by processor name (for ``CallObserver``).
    """

    def __init__(self, plan: CallPlan, runtime: Runtime, journal: CallJournal) -> None:
        self.plan = plan
        self.runtime = runtime
        self.journal = journal
        self.components: list[tuple[str, FrameProcessor]] = []
        self.providers: dict[str, tuple[str, str]] = {}

    def builder(self, registry: Registry[Any, Any]) -> Callable[[Any], Any]:
        """A function building a service of ``registry`` for a spec."""

        def build(spec: Any) -> Any:
            provider = registry.get(spec.provider)
            assert provider is not None, f"{spec.provider} was checked when the call was planned"
            try:
                service = provider.factory(spec, self.runtime.shared)
            except Exception as e:
                raise StartError(
                    f"{registry.kind} {spec.describe()}",
                    f"could not be created: {type(e).__name__}: {e}",
                ) from e
            self.providers[service.name] = (registry.kind, spec.provider)
            return service

        return build

    def single_slots(self) -> _Slots:
        member = self.plan.start_member
        llm = self.builder(LLM)(member.llm)
        self.components.append((f"LLM {member.llm.describe()}", llm))
        stt = tts = None
        if self.plan.hears and member.stt is not None:
            stt = self.builder(STT)(member.stt)
            self.components.append((f"STT {member.stt.describe()}", stt))
        if self.plan.speaks and member.tts is not None:
            tts = self.builder(TTS)(member.tts)
            self.components.append((f"TTS {member.tts.describe()}", tts))
        instruction, history = _split_system_prompt(self.plan.messages)
        advertised = [
            FunctionSchema(
                name=t.name, description=t.description, properties=t.properties, required=t.required
            )
            for t in member.tools
        ]
        return _Slots(
            llm=llm,
            stt=stt,
            tts=tts,
            history=history,
            tools=ToolsSchema(standard_tools=advertised) if advertised else NOT_GIVEN,
            tool_names={t.name for t in member.tools},
            lookup_tool=member.tool,
            system_instruction=instruction,
        )

    def team_slots(self) -> _Slots:
        plan = self.plan
        # One LLM per account: each member's model is set when it takes the call.
        llm_specs = {m.id: m.llm for m in plan.members.values()}
        llms: ServicePool[LLMSpec, LLMService] = ServicePool(
            self.builder(LLM), key=lambda spec: spec.account
        )
        llm = RoutingLLMService(llms.for_members(llm_specs), plan.start_member_id)
        self._name_pooled("LLM", llms, llm_specs)
        stt = tts = None
        if plan.hears:
            stt_specs = {m.id: m.stt for m in plan.members.values()}
            stts: ServicePool[STTSpec, STTService] = ServicePool(self.builder(STT))
            stt = RoutingSTTService(stts.for_members(stt_specs), plan.start_member_id)
            self._name_pooled("STT", stts, stt_specs)
        if plan.speaks:
            tts_specs = {m.id: m.tts for m in plan.members.values()}
            ttss: ServicePool[TTSSpec, TTSService] = ServicePool(self.builder(TTS))
            tts = RoutingTTSService(ttss.for_members(tts_specs), plan.start_member_id)
            self._name_pooled("TTS", ttss, tts_specs)
        flow = TeamFlow(
            plan, Routers(llm=llm, stt=stt, tts=tts), self.runtime.manager, self.journal
        )
        # Member prompts come from the team; a system message in the history would
        # speak for whichever member wrote it to every member after.
        history = [m for m in plan.messages if m.get("role") != "system"]
        return _Slots(
            llm=llm,
            stt=stt,
            tts=tts,
            history=history,
            tools=NOT_GIVEN,
            tool_names=flow.tool_names(),
            lookup_tool=flow.tool,
            flow=flow,
        )

    def _name_pooled(self, kind: str, pool: ServicePool[Any, Any], specs: dict[str, Any]) -> None:
        """Name each pooled service after what it is and the members it serves."""
        names = {m.id: m.label for m in self.plan.members.values()}
        for service in pool.services:
            users = pool.users(service, specs)
            described = sorted({specs[u].describe() for u in users})
            label = f"{kind} {', '.join(described)} (members: {', '.join(names[u] for u in users)})"
            self.components.append((label, service))


def _split_system_prompt(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Take the leading system messages out of the history, as the LLM's system instruction.

    That is where pipecat wants a system prompt since 1.9; the LLM receives
    the same first message either way.
    """
    index = 0
    while index < len(messages) and messages[index].get("role") == "system":
        index += 1
    parts = [str(m.get("content") or "") for m in messages[:index]]
    instruction = "\n\n".join(p for p in parts if p)
    return instruction or None, messages[index:]
