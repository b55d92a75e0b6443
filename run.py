"""Building one call's pipeline from its plan.

A single-AI call and a team call have the same shape::

    [input socket → STT] → user context → LLM → [TTS] → output socket → assistant context

A single-AI call puts its one LLM, STT and TTS in those slots; a team call
puts the routers there (``routing/``), each over the members' deduplicated
provider instances, and lets pipecat.flows (``team_flow.py``) drive which
member is active. The bracketed parts exist only when the call has caller
audio (``stt_type``) or spoken replies (``tts_type``). Everything about
*what* to build was decided in :mod:`teamrunner.plan`; this module only
assembles it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
from teamrunner.caller_audio import CallerAudioStop
from teamrunner.errors import StartError
from teamrunner.manager.events import ManagerEvents
from teamrunner.manager.tools import ToolBridge
from teamrunner.manager.transport import SAMPLE_RATE, ManagerSockets, open_sockets
from teamrunner.plan import CallPlan, MemberPlan, ToolPlan
from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.resources import SharedResources
from teamrunner.runtime import Runtime
from teamrunner.turns import user_params

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
    """A built, not yet running, call: what ``teamrunner.sessions`` runs.

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

    async def close(self) -> None:
        if self.flow is not None:
            await self.flow.close()


def build_call(plan: CallPlan, runtime: Runtime, observers: Iterable[BaseObserver] = ()) -> Call:
    """Assemble the pipeline, services and sockets of ``plan`` (nothing connects yet).

    Raises:
        StartError: a provider could not be constructed from its settings.
    """
    sockets = open_sockets(
        runtime.settings.manager_ws_url, plan.id, hears=plan.hears, redactor=runtime.redactor
    )
    components: list[tuple[str, FrameProcessor]] = []
    slots = (_team_slots if plan.is_team else _single_slots)(plan, runtime, components)
    context = LLMContext(messages=slots.history, tools=slots.tools)
    turn_params = user_params(plan.turn, runtime.shared.models, hears=plan.hears)
    aggregators = LLMContextAggregatorPair(context, user_params=turn_params)
    bridge = ToolBridge(plan.id, runtime.manager, slots.lookup_tool)
    for name in slots.tool_names:
        slots.llm.register_function(name, bridge, cancel_on_interruption=True)

    # RTVI: pipecat's processor at the head (it handles what Go sends), and an
    # observer that sends Go only the events it reads, straight to its socket.
    rtvi = RTVIProcessor()
    events = ManagerEvents(rtvi, sockets.output.output())
    processors = _processors(plan, sockets, slots, aggregators, rtvi, components)
    worker = _worker(plan, runtime, processors, [events, *observers])
    call = Call(
        plan=plan,
        worker=worker,
        sockets=sockets,
        components=components,
        context=context,
        vad=turn_params.vad_analyzer,
        flow=slots.flow,
        system_instruction=slots.system_instruction,
        history=slots.history,
    )
    if slots.flow is not None:
        call.flow_manager = slots.flow.flow_manager(worker, aggregators)
    return call


def _processors(
    plan: CallPlan,
    sockets: ManagerSockets,
    slots: _Slots,
    aggregators: LLMContextAggregatorPair,
    rtvi: RTVIProcessor,
    components: list[tuple[str, FrameProcessor]],
) -> list[FrameProcessor]:
    """The pipeline in order; each socket is put first among the components that must come up."""
    processors: list[FrameProcessor] = [rtvi]
    if sockets.input is not None and slots.stt is not None:
        processors += [sockets.input.input(), slots.stt]
        components.insert(0, ("input socket to pipecat-manager", sockets.input.input()))
    processors.append(aggregators.user())
    if plan.hears:
        processors.append(CallerAudioStop())
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
    return PipelineWorker(
        Pipeline(processors),
        params=PipelineParams(
            audio_in_sample_rate=SAMPLE_RATE,
            audio_out_sample_rate=SAMPLE_RATE,
            # Nothing reads pipecat's metrics (Go does not ask for them), and each
            # LLM or TTS request would send four more frames down the pipeline.
            enable_metrics=False,
            enable_usage_metrics=False,
        ),
        idle_timeout_secs=runtime.settings.session_idle_secs,
        # pipecat's turn tracking only feeds its tracing, which the runner does not use;
        # it would be one more observer to hand every frame of the call to.
        enable_turn_tracking=False,
        idle_timeout_frames=ACTIVITY_FRAMES,
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


def _single_slots(
    plan: CallPlan, runtime: Runtime, components: list[tuple[str, FrameProcessor]]
) -> _Slots:
    member = plan.start_member
    shared = runtime.shared
    llm = _builder(LLM, "LLM", shared)(member.llm)
    components.append((f"LLM {member.llm.describe()}", llm))
    stt = _builder(STT, "STT", shared)(member.stt) if plan.hears and member.stt else None
    if stt is not None:
        components.append((f"STT {member.stt.describe()}", stt))  # type: ignore[union-attr]
    tts = _builder(TTS, "TTS", shared)(member.tts) if plan.speaks and member.tts else None
    if tts is not None:
        components.append((f"TTS {member.tts.describe()}", tts))  # type: ignore[union-attr]
    instruction, history = _split_system_prompt(plan.messages)
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


def _team_slots(
    plan: CallPlan, runtime: Runtime, components: list[tuple[str, FrameProcessor]]
) -> _Slots:
    members = list(plan.members.values())
    shared = runtime.shared
    llm_specs = {m.id: m.llm for m in members}
    # One LLM per account: each member's model is set when it takes the call.
    llms: ServicePool[LLMSpec, LLMService] = ServicePool(
        _builder(LLM, "LLM", shared), key=lambda spec: spec.account
    )
    llm = RoutingLLMService(llms.for_members(llm_specs), plan.start_member_id)
    components += _labelled("LLM", llms, members, llm_specs)
    stt = tts = None
    if plan.hears:
        stt_specs = {m.id: m.stt for m in members}
        stts: ServicePool[STTSpec, STTService] = ServicePool(_builder(STT, "STT", shared))
        stt = RoutingSTTService(stts.for_members(stt_specs), plan.start_member_id)
        components += _labelled("STT", stts, members, stt_specs)
    if plan.speaks:
        tts_specs = {m.id: m.tts for m in members}
        ttss: ServicePool[TTSSpec, TTSService] = ServicePool(_builder(TTS, "TTS", shared))
        tts = RoutingTTSService(ttss.for_members(tts_specs), plan.start_member_id)
        components += _labelled("TTS", ttss, members, tts_specs)
    flow = TeamFlow(plan, Routers(llm=llm, stt=stt, tts=tts), runtime.manager)
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


def _builder(registry: Any, kind: str, shared: SharedResources) -> Callable[[Any], Any]:
    """A function building a service of ``registry`` for a spec."""

    def build(spec: Any) -> Any:
        provider = registry.get(spec.provider)
        assert provider is not None, f"{spec.provider} was checked when the call was planned"
        try:
            return provider.factory(spec, shared)
        except Exception as e:
            raise StartError(
                f"{kind} {spec.describe()}", f"could not be created: {type(e).__name__}: {e}"
            ) from e

    return build


def _labelled(
    kind: str,
    pool: ServicePool[Any, Any],
    members: list[MemberPlan],
    specs: dict[str, Any],
) -> list[tuple[str, FrameProcessor]]:
    """Name each pooled service after what it is and the members it serves."""
    names = {m.id: m.label for m in members}
    labelled = []
    for service in pool.services:
        users = pool.users(service, specs)
        described = sorted({specs[u].describe() for u in users})
        label = f"{kind} {', '.join(described)} (members: {', '.join(names[u] for u in users)})"
        labelled.append((label, service))
    return labelled


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
