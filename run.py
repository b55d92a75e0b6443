"""Building one call's pipeline from its plan.

A single-AI call and a team call have the same shape::

    [input socket → STT] → user context → LLM → [TTS → heard words] → output socket
        → [playout] → [idle] → cut-off calls → assistant context

A single-AI call puts its one LLM, STT and TTS in those slots; a team call
puts the routers there (``routing/``), each over the members' deduplicated
provider instances, and lets pipecat.flows (``team_flow.py``) drive which
member is active. The bracketed parts exist only when the call has caller
audio (``stt_type``) or spoken replies (``tts_type``), and ``heard words``
(``teamrunner/heard.py``) is in every call that speaks. ``playout`` (when the
caller hears the bot, ``teamrunner/playout.py``) is only in a call that says
lines of its own, and ``idle`` (``teamrunner/idle.py``) only in one that asks
for idle nudges; ``cut-off calls`` (``teamrunner/cut_off_calls.py``), in a
call whose model is offered functions, settles a function call the caller
cut off before the context had heard of it. Lines the runner says itself
(greetings, handoff lines, nudges, goodbyes) go through
``teamrunner.lines.Lines``, and a call that ends itself through
``teamrunner.ending.CallEnding``; a remote policy is asked for its first
state in ``Call.begin`` (``teamrunner.policy_call.PolicyCall``).
Everything about *what* to build was decided in :mod:`teamrunner.plan`; this
module only assembles it, and ``teamrunner.session`` runs it.
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
    LLMRunFrame,
    LLMUpdateSettingsFrame,
)
from pipecat.observers.base_observer import BaseObserver
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import NOT_GIVEN, LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService

from routing import RoutingLLMService, RoutingSTTService, RoutingTTSService
from routing.services import ServiceBuilder
from team_flow import TeamFlow
from teamrunner.activity import ActivityWatch
from teamrunner.call_observer import CallObserver
from teamrunner.caller_audio import CallerAudioStop
from teamrunner.cut_off_calls import CutOffCalls
from teamrunner.ending import CallEnding
from teamrunner.fallback import LLMFallback
from teamrunner.heard import HeardWords
from teamrunner.idle import IdleNudges
from teamrunner.journal import CallJournal
from teamrunner.lines import Lines
from teamrunner.manager.events import ManagerRTVI, rtvi_error
from teamrunner.manager.tools import ToolBridge
from teamrunner.manager.transport import SAMPLE_RATE, ManagerSockets, open_sockets
from teamrunner.plan import END_CALL_FUNCTION, CallPlan, MemberPlan, ToolPlan
from teamrunner.playout import Playout
from teamrunner.policy_call import PolicyCall
from teamrunner.runtime import Runtime
from teamrunner.turns import user_params
from teamrunner.voice_watch import VoiceWatch


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
        activity: Times how long the call has been idle.
        system_instruction: A single AI's system prompt, from the history.
        lines: Says the lines the runner says itself.
        ending: Ends the call from inside, after a last line.
        policy: The call's remote policy (None without one).
    """

    plan: CallPlan
    worker: PipelineWorker
    sockets: ManagerSockets
    components: list[tuple[str, FrameProcessor]]
    context: LLMContext
    lines: Lines
    ending: CallEnding
    vad: VADAnalyzer | None = None
    flow: TeamFlow | None = None
    flow_manager: FlowManager | None = None
    voice: VoiceWatch | None = None
    activity: ActivityWatch | None = None
    system_instruction: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    policy: PolicyCall | None = None

    @property
    def active_member(self) -> MemberPlan:
        return self.flow.active if self.flow is not None else self.plan.start_member

    async def begin(self) -> None:
        """Queue what makes the first AI speak: its flow node, its greeting, or a first LLM run.

        Raises:
            StartError: the remote policy gave no first state.
        """
        if self.policy is not None:
            await self.policy.start()
        if self.flow_manager is not None and self.flow is not None:
            await self.flow.start(self.flow_manager)
            return
        if self.policy is not None:
            await self.worker.queue_frames(self.policy.model_frames())
        elif self.system_instruction:
            await self.worker.queue_frame(
                LLMUpdateSettingsFrame(
                    delta=LLMSettings(system_instruction=self.system_instruction)
                )
            )
        greeting = self.plan.start_member.greeting
        if greeting:
            # The greeting is the AI's first turn, said without asking the model. A
            # caller's turn the history ends with is answered right behind it: the
            # plan put the greeting in the context before that turn, so it is not
            # remembered again, and the model runs while the greeting plays.
            await self.lines.say(greeting, remember=not self.plan.pending_turn)
            if self.plan.pending_turn:
                await self.worker.queue_frame(LLMRunFrame())
        elif _opens_with_llm(self.plan, self.system_instruction, self.history):
            await self.worker.queue_frame(LLMRunFrame())

    async def tell_manager_error(self, error: str, *, fatal: bool) -> None:
        await self.sockets.output.output().queue_frame(rtvi_error(error, fatal=fatal))

    async def close(self) -> None:
        if self.voice is not None:
            self.voice.close()
        await self.ending.close()
        if self.flow is not None:
            await self.flow.close()
        if self.policy is not None:
            await self.policy.close()


def _opens_with_llm(plan: CallPlan, instruction: str | None, history: list[dict[str, Any]]) -> bool:
    """Whether a single AI speaks first by asking its LLM.

    With nothing to go on, the AI waits for the caller: providers refuse an
    empty context. A remote policy always gives it a prompt.
    """
    return not plan.start_member.greeting and bool(instruction or history or plan.policy)


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
        runtime.settings.manager_ws_url,
        plan.id,
        hears=plan.hears,
        redactor=runtime.redactor,
        caller_audio_ms=runtime.settings.caller_audio_ms,
    )
    lines = Lines(speaks=plan.speaks)
    ending = CallEnding(lines, journal, voice_timeout_secs=runtime.settings.tts_timeout_secs)
    policy = PolicyCall(plan, lines=lines, ending=ending, journal=journal) if plan.policy else None
    filler = _SlotFiller(plan, runtime, journal, lines, ending, policy)
    slots = filler.team() if plan.is_team else filler.single()
    # The history was made valid for every provider in the plan; pipecat types it per role.
    context = LLMContext(messages=cast(Any, slots.history), tools=slots.tools)
    turn_params = user_params(plan.turn, runtime.shared.models, hears=plan.hears)
    if _can_end_itself(plan):
        turn_params.user_mute_strategies.append(ending.mute)
    aggregators = LLMContextAggregatorPair(context, user_params=turn_params)
    bridge = ToolBridge(plan.id, runtime.manager, slots.lookup_tool, journal)
    handler = bridge if slots.flow is None else slots.flow.tool_handler(bridge)
    for name in slots.tool_names:
        slots.llm.register_function(name, handler, cancel_on_interruption=True)

    voice = _voice_watch(runtime, journal, sockets) if plan.speaks else None
    activity = ActivityWatch(runtime.settings.session_idle_secs)
    observer = CallObserver(
        journal, filler.services.providers, speaks=plan.speaks, voice=voice, activity=activity
    )
    # RTVI: pipecat's processor, which the worker puts at the head (it handles
    # what Go sends), and its observer, which sends Go only the events it reads,
    # straight to its socket: the call's one observer of its own, since pipecat
    # hands each observer every frame.
    rtvi = ManagerRTVI(sockets.output.output(), companion=observer)
    playout = Playout(speaks=plan.speaks) if _says_lines(plan) else None
    idle = None
    if plan.idle is not None:
        opens = plan.is_team or _opens_with_llm(plan, slots.system_instruction, slots.history)
        idle = IdleNudges(
            plan.idle,
            lines,
            ending.hang_up,
            playout=playout if plan.speaks else None,
            waits_for_caller=not (opens or plan.start_member.greeting),
        )
    processors = _processors(
        plan,
        sockets,
        slots,
        aggregators,
        filler.services.components,
        runtime.settings.llm_fallback_line,
        [p for p in (playout, idle) if p is not None],
    )
    worker = _worker(plan, runtime, processors, rtvi, list(observers))
    lines.attach(worker)
    ending.attach(worker)
    if policy is not None:
        policy.attach(worker)
    call = Call(
        plan=plan,
        worker=worker,
        sockets=sockets,
        components=filler.services.components,
        context=context,
        lines=lines,
        ending=ending,
        vad=turn_params.vad_analyzer,
        flow=slots.flow,
        voice=voice,
        activity=activity,
        system_instruction=slots.system_instruction,
        history=slots.history,
        policy=policy,
    )
    if slots.flow is not None:
        call.flow_manager = slots.flow.flow_manager(worker, aggregators)
    return call


def _says_lines(plan: CallPlan) -> bool:
    """Whether the call says lines of its own (greeting, handoff line, nudge, goodbye, policy's)."""
    members = plan.members.values()
    return (
        plan.idle is not None
        or plan.policy is not None
        or any(m.greeting or m.end_call for m in members)
        or any(t.handoff_message for m in members for t in m.transitions)
    )


def _calls_functions(plan: CallPlan) -> bool:
    """Whether the model is offered any function (a Go tool, a transition, end_call, a policy's)."""
    members = plan.members.values()
    return plan.is_team or plan.policy is not None or any(m.tools or m.end_call for m in members)


def _can_end_itself(plan: CallPlan) -> bool:
    members = plan.members.values()
    return plan.idle is not None or plan.policy is not None or any(m.end_call for m in members)


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
    components: list[tuple[str, FrameProcessor]],
    fallback_line: str,
    after_output: list[FrameProcessor],
) -> list[FrameProcessor]:
    """The pipeline in order; each socket is put first among the components that must come up."""
    processors: list[FrameProcessor] = []
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
        processors += [slots.tts, HeardWords()]
    processors += [sockets.output.output(), *after_output]
    if _calls_functions(plan):
        processors.append(CutOffCalls())
    processors.append(aggregators.assistant())
    components.insert(0, ("output socket to pipecat-manager", sockets.output.output()))
    return processors


def _worker(
    plan: CallPlan,
    runtime: Runtime,
    processors: list[FrameProcessor],
    rtvi: ManagerRTVI,
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
        # The session times idleness itself (teamrunner.activity): pipecat's
        # own timeout would add an observer of every frame.
        idle_timeout_secs=None,
        # pipecat's turn tracking only feeds its tracing: one more observer of every
        # frame, so it runs only when tracing does.
        enable_turn_tracking=tracing,
        enable_tracing=tracing,
        conversation_id=plan.id,
        rtvi_processor=rtvi,
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


class _SlotFiller:
    """Fills the pipeline's slots: the services, and what each AI's LLM is told and offered."""

    def __init__(
        self,
        plan: CallPlan,
        runtime: Runtime,
        journal: CallJournal,
        lines: Lines,
        ending: CallEnding,
        policy: PolicyCall | None,
    ) -> None:
        self.plan = plan
        self.runtime = runtime
        self.journal = journal
        self.lines = lines
        self.ending = ending
        self.policy = policy
        self.services = ServiceBuilder(plan, runtime.shared, runtime.settings.tts_timeout_secs)

    def single(self) -> _Slots:
        member = self.plan.start_member
        services = self.services.single(member)
        instruction, history = _split_system_prompt(self.plan.messages)
        advertised = [
            FunctionSchema(
                name=t.name, description=t.description, properties=t.properties, required=t.required
            )
            for t in member.tools
        ]
        if member.end_call is not None:
            advertised.append(
                FunctionSchema(
                    name=END_CALL_FUNCTION,
                    description=member.end_call.description,
                    properties={},
                    required=[],
                )
            )
            # The handler returns at once (the ending is scheduled), so a barge-in has
            # nothing to cancel; False would add pipecat's ASYNC TOOLS prompt block.
            services.llm.register_function(
                END_CALL_FUNCTION,
                self.ending.function_handler(member.end_call),
                cancel_on_interruption=True,
            )
        if self.policy is not None:
            self.policy.serve_single_ai(instruction, advertised)
        return _Slots(
            llm=services.llm,
            stt=services.stt,
            tts=services.tts,
            history=history,
            tools=ToolsSchema(standard_tools=advertised) if advertised else NOT_GIVEN,
            tool_names={t.name for t in member.tools},
            lookup_tool=member.tool,
            system_instruction=instruction,
        )

    def team(self) -> _Slots:
        routers = self.services.routers()
        flow = TeamFlow(
            self.plan,
            routers,
            self.runtime.manager,
            self.journal,
            lines=self.lines,
            ending=self.ending,
            summary_timeout_secs=self.runtime.settings.llm_timeout_secs,
            policy=self.policy,
        )
        # Member prompts come from the team; a system message in the history would
        # speak for whichever member wrote it to every member after.
        history = [m for m in self.plan.messages if m.get("role") != "system"]
        return _Slots(
            llm=routers.llm,
            stt=routers.stt,
            tts=routers.tts,
            history=history,
            tools=NOT_GIVEN,
            tool_names=flow.tool_names(),
            lookup_tool=flow.tool,
            flow=flow,
        )


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
