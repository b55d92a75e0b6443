"""Building one call's pipeline from its plan, in one pass.

Every call, a single AI or a team, has the same shape::

    [input → STT] → user context → [caller audio stop] → [LLM fallback] → LLM
        → [TTS → heard words] → output → [lines] → [idle] → [cut-off calls]
        → assistant context

and runs the same way: a single AI is a team of one, driven like any team by
pipecat.flows (``team_flow.TeamFlow``). The slots hold the one member's
services as they are, or routers over several members' deduplicated
services (``routing.services``). The transport (``input``, ``output``) is
handed in from above: pipecat-manager's sockets in production.

The bracketed parts exist only when needed: ``input`` and the STT when the
call has caller audio (``stt_type``) and its transport an input, ``caller
audio stop`` (``teamrunner.call.caller_audio``) when it has caller audio, the
``LLM fallback`` (``teamrunner.call.fallback``), the TTS and ``heard words``
(``teamrunner.call.heard``) when its replies are spoken (``tts_type``),
``lines`` (``teamrunner.call.lines``: greetings, handoff lines, nudges,
goodbyes, and when the caller has heard them) when the call says lines of
its own, ``idle`` (``teamrunner.call.idle``) when it asks for idle nudges,
and ``cut-off calls`` (``teamrunner.call.cut_off_calls``) when the model is
offered functions. pipecat's worker puts its RTVI processor
(``teamrunner.manager.events.ManagerRTVI``) ahead of them all.

Each object gets what it needs when it is made: the processors first (those
that queue frames get the worker from pipecat at setup), then the worker,
then pipecat.flows' manager of that worker, then the flow over it. What to
build was decided in :mod:`teamrunner.plan`; this module only assembles it,
and ``teamrunner.lifecycle.session`` runs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from pipecat.audio.vad.vad_analyzer import VADAnalyzer
from pipecat.flows import FlowManager
from pipecat.observers.base_observer import BaseObserver
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.processors.frameworks.rtvi import RTVIProcessor

from routing.services import ServiceBuilder, Slots
from team_flow import TeamFlow
from teamrunner.call.activity import ActivityWatch
from teamrunner.call.caller_audio import CallerAudioStop
from teamrunner.call.cut_off_calls import CutOffCalls
from teamrunner.call.ending import CallEnding
from teamrunner.call.fallback import LLMFallback
from teamrunner.call.heard import HeardWords
from teamrunner.call.idle import IdleNudges
from teamrunner.call.lines import Lines
from teamrunner.call.observer import CallObserver, ProviderNames
from teamrunner.call.voice_watch import VoiceWatch
from teamrunner.config import Settings
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.manager.events import rtvi_error
from teamrunner.manager.tools import ToolBridge
from teamrunner.manager.transport import SAMPLE_RATE
from teamrunner.observe.journal import CallJournal
from teamrunner.pipecat_internals.worker_observer import select_observed
from teamrunner.plan import CallPlan, MemberPlan
from teamrunner.policy.control import PolicyControl
from teamrunner.speech.turn_taking import user_params
from teamrunner.transport import CallTransport


@dataclass
class Call:
    """A built, not yet running, call: what ``teamrunner.lifecycle.session`` runs.

    Attributes:
        plan: What the call is.
        worker: The pipeline worker that runs it.
        transport: Where its caller is (pipecat-manager's sockets in production).
        components: Each processor that must come up for the call to start,
            with the name a failure is reported under.
        flow: Its members, and which has the call.
        slots: Its services, or routers over its members' services.
        ending: Ends the call from inside, after a last line.
        voice: Watches the voice for stalls (None for a call that does not speak).
        activity: Times how long the call has been idle.
        policy: The call's remote policy (None without one).
        vad: The caller's voice activity detector (None for a call with no caller audio).
    """

    plan: CallPlan
    worker: PipelineWorker
    transport: CallTransport
    components: list[tuple[str, FrameProcessor]]
    flow: TeamFlow
    slots: Slots
    ending: CallEnding
    voice: VoiceWatch | None
    activity: ActivityWatch | None
    policy: PolicyControl | None
    vad: VADAnalyzer | None

    @property
    def active_member(self) -> MemberPlan:
        return self.flow.active

    async def prepare(self) -> None:
        """Ask the remote policy, if any, for the call's first state, before the call runs.

        Raises:
            StartError: the remote policy gave no first state.
        """
        if self.policy is not None:
            await self.policy.start()

    async def begin(self) -> None:
        """Queue what makes the first member speak, once the pipeline runs.

        Then connect the services that waited (the other members' voices and
        ears, ``Routers.open_rest``): the call answered without their handshakes.
        """
        await self.flow.start()
        await self.slots.open_rest()

    async def tell_manager_error(self, error: str, *, fatal: bool) -> None:
        await self.transport.output().queue_frame(rtvi_error(error, fatal=fatal))

    async def close(self) -> None:
        if self.voice is not None:
            self.voice.close()
        await self.ending.close()
        await self.flow.close()
        if self.policy is not None:
            await self.policy.close()


def build_call(
    plan: CallPlan,
    runtime: Runtime,
    journal: CallJournal,
    transport: CallTransport,
    observers: Iterable[BaseObserver] = (),
) -> Call:
    """Assemble the pipeline and services of ``plan`` over ``transport`` (nothing connects yet).

    Raises:
        StartError: a provider could not be constructed from its settings.
    """
    settings = runtime.settings
    builder = ServiceBuilder(plan, runtime.shared, settings.tts_timeout_secs)
    slots = builder.slots()
    lines = Lines(speaks=plan.speaks)
    ending = CallEnding(lines, journal, voice_timeout_secs=settings.tts_timeout_secs)
    policy = None
    if plan.policy is not None:
        policy = PolicyControl(plan, lines=lines, ending=ending, journal=journal)
    aggregators, turn_params = _context(plan, runtime, ending)
    voice = _voice_watch(runtime, journal, transport, slots, builder.providers)
    activity = ActivityWatch(settings.session_idle_secs)
    observer = CallObserver(
        journal, builder.providers, speaks=plan.speaks, voice=voice, activity=activity
    )
    # RTVI: pipecat's processor, which the worker puts at the head (it handles
    # what the other end sends), and its observer, which sends only the events the
    # other end reads, straight to the transport's output: the call's one observer
    # of its own, since pipecat hands each observer every frame.
    rtvi = transport.rtvi(companion=observer)
    components = [*transport.components(), *builder.components]
    processors = _processors(plan, transport, slots, aggregators, lines, ending, settings)
    worker = _worker(plan, runtime, processors, rtvi, list(observers))
    flow = TeamFlow(
        plan,
        slots,
        FlowManager(llm=slots.llm, context_aggregator=aggregators, worker=worker),
        runtime.manager,
        journal,
        lines=lines,
        ending=ending,
        summary_timeout_secs=settings.llm_timeout_secs,
        policy=policy,
    )
    _register_go_tools(plan, runtime, journal, flow, slots)
    return Call(
        plan,
        worker,
        transport,
        components,
        flow,
        slots,
        ending,
        voice,
        activity,
        policy,
        turn_params.vad_analyzer,
    )


def _context(
    plan: CallPlan, runtime: Runtime, ending: CallEnding
) -> tuple[LLMContextAggregatorPair, LLMUserAggregatorParams]:
    """The call's context and its aggregators, with how the caller's turns are taken."""
    # The history was made valid for every provider in the plan; pipecat types it per role.
    context = LLMContext(messages=cast(Any, plan.messages))
    turn_params = user_params(
        plan.turn.vad, plan.turn.smart_turn, runtime.shared.models, hears=plan.hears
    )
    if _can_end_itself(plan):
        turn_params.user_mute_strategies.append(ending.mute)
    return LLMContextAggregatorPair(context, user_params=turn_params), turn_params


def _register_go_tools(
    plan: CallPlan, runtime: Runtime, journal: CallJournal, flow: TeamFlow, slots: Slots
) -> None:
    """Register Go's tools on the LLM: run by pipecat-manager, as the active member's."""
    bridge = flow.tool_handler(ToolBridge(plan.id, runtime.manager, flow.tool, journal))
    for name in flow.tool_names():
        slots.llm.register_function(name, bridge, cancel_on_interruption=True)


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


def _voice_watch(
    runtime: Runtime,
    journal: CallJournal,
    transport: CallTransport,
    slots: Slots,
    providers: ProviderNames,
) -> VoiceWatch | None:
    """A watch on the call's voice that reports a stall to the journal and to pipecat-manager."""
    if slots.tts is None:
        return None

    async def stalled() -> None:
        voice = slots.active_tts()
        journal.provider_error("TTS", providers.get(voice.name, ("", ""))[1], "stall")
        error = "the voice stopped producing audio; the reply was abandoned"
        await transport.output().queue_frame(rtvi_error(error, fatal=False))

    return VoiceWatch(runtime.settings.tts_timeout_secs, stalled)


def _processors(
    plan: CallPlan,
    transport: CallTransport,
    slots: Slots,
    aggregators: LLMContextAggregatorPair,
    lines: Lines,
    ending: CallEnding,
    settings: Settings,
) -> list[FrameProcessor]:
    """The pipeline in order (see the module's drawing)."""
    processors: list[FrameProcessor] = []
    # A transport may bring an input without caller audio: text alone (send-text).
    caller = transport.input()
    if caller is not None:
        processors.append(caller)
    if slots.stt is not None:
        processors.append(slots.stt)
    processors.append(aggregators.user())
    if plan.hears:
        processors.append(CallerAudioStop())
    if slots.tts is not None:
        processors.append(LLMFallback(settings.llm_fallback_line))
    processors.append(slots.llm)
    if slots.tts is not None:
        processors += [slots.tts, HeardWords()]
    processors.append(transport.output())
    if _says_lines(plan):
        processors.append(lines)
    if plan.idle is not None:
        waits = not (plan.start_member.greeting or plan.opens_with_llm)
        processors.append(IdleNudges(plan.idle, lines, ending.hang_up, waits_for_caller=waits))
    if _calls_functions(plan):
        processors.append(CutOffCalls())
    processors.append(aggregators.assistant())
    return processors


def _worker(
    plan: CallPlan,
    runtime: Runtime,
    processors: list[FrameProcessor],
    rtvi: RTVIProcessor,
    observers: list[BaseObserver],
) -> PipelineWorker:
    tracing = runtime.settings.tracing
    worker = PipelineWorker(
        Pipeline(processors),
        params=PipelineParams(
            audio_in_sample_rate=SAMPLE_RATE,
            audio_out_sample_rate=SAMPLE_RATE,
            # For the providers' time to first byte (runner_provider_ttfb_seconds).
            enable_metrics=runtime.settings.provider_metrics,
            enable_usage_metrics=False,
        ),
        # The session times idleness itself (teamrunner.call.activity): pipecat's
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
    select_observed(worker)
    return worker
