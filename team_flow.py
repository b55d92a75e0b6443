"""A team call as a pipecat.flows graph: one node per member, one edge per transition.

A member's node carries its prompt (as the LLM's system instruction), its
tools and its transitions. Calling a transition function runs
``TeamFlow.transfer``: the STT, LLM and TTS routers are switched to the next
member (all three, or, if any cannot, none), pipecat-manager is told, and
the next member's node is returned for pipecat.flows to enter, which gives
the next member's LLM its prompt and tools and lets it speak at once. The
context is kept whole (pipecat.flows' APPEND strategy), so the next member
hears the conversation so far.

``TeamFlow.active`` is the one place that says which member has the call.

Function kinds and interruption: tools and transitions are both synchronous
(``cancel_on_interruption=True``). A transition finishes in microseconds, and
a Go tool behaves as in a single-AI call: the LLM waits for its result, and a
caller who talks over it takes the floor. Asynchronous functions would also
add pipecat's "ASYNC TOOLS" block to every member's system prompt, which
nothing here needs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from loguru import logger
from pipecat.flows import (
    FlowArgs,
    FlowManager,
    FlowsDirectFunction,
    FlowsFunctionSchema,
    NodeConfig,
)
from pipecat.frames.frames import Frame, LLMUpdateSettingsFrame, VADParamsUpdateFrame
from pipecat.pipeline.worker import PipelineWorker
from pipecat.services.settings import LLMSettings

from routing import RoutingLLMService, RoutingSTTService, RoutingTTSService
from routing.router import MemberRouting
from teamrunner.errors import MemberSwitchError
from teamrunner.journal import CallJournal
from teamrunner.manager.client import ManagerClient
from teamrunner.plan import CallPlan, MemberPlan, ToolPlan, TransitionPlan, placeholders
from teamrunner.tracing import handoff_span
from teamrunner.turns import vad_params


@dataclass
class Routers:
    """The three routers of a team call; STT and TTS are None when the call has no audio."""

    llm: RoutingLLMService
    stt: RoutingSTTService | None = None
    tts: RoutingTTSService | None = None

    @property
    def all(self) -> list[MemberRouting]:
        return [r for r in (self.stt, self.llm, self.tts) if r is not None]


class TeamFlow:
    """The members of a team call and the moves between them.

    Args:
        plan: The call's plan.
        routers: The call's routers.
        manager: Where member switches are reported.
        journal: The call's journal, told of each handoff.
    """

    def __init__(
        self, plan: CallPlan, routers: Routers, manager: ManagerClient, journal: CallJournal
    ) -> None:
        self._plan = plan
        self._routers = routers
        self._manager = manager
        self._journal = journal
        self.active: MemberPlan = plan.start_member
        self._models: dict[object, str] = {}
        self._worker: PipelineWorker | None = None
        self._notifications: set[asyncio.Task[bool]] = set()
        self.nodes: dict[str, NodeConfig] = {
            member.id: self._node(member) for member in plan.members.values()
        }

    def tool(self, name: str) -> ToolPlan | None:
        """The active member's tool called ``name`` (what the LLM may run now)."""
        return self.active.tool(name)

    def tool_names(self) -> set[str]:
        """Every tool name any member has: each is registered once on the LLM router."""
        return {t.name for m in self._plan.members.values() for t in m.tools}

    def flow_manager(self, worker: PipelineWorker, context_aggregator: Any) -> FlowManager:
        return FlowManager(
            llm=self._routers.llm, context_aggregator=context_aggregator, worker=worker
        )

    @property
    def start_node(self) -> NodeConfig:
        return self.nodes[self._plan.start_member_id]

    async def start(self, flow_manager: FlowManager) -> None:
        """Give the start member the call: its model, then its node (prompt, functions)."""
        self._worker = flow_manager.worker
        await self._set_model(self.active)
        await flow_manager.initialize(self.start_node)

    async def _set_model(self, member: MemberPlan) -> None:
        """Set ``member``'s model on its LLM, which members of one account share.

        Queued at the head like the node pipecat.flows queues after it, so the
        member's first request already uses its model.
        """
        service = self._routers.llm.service_for(member.id)
        if service is None or self._models.get(service) == member.llm.model:
            return
        self._models[service] = member.llm.model
        frame = LLMUpdateSettingsFrame(delta=LLMSettings(model=member.llm.model), service=service)
        frame.interruptible = False
        await self._queue(frame)

    async def _queue(self, frame: Frame) -> None:
        """Queue ``frame`` at the head of the pipeline, in order with what is on its way."""
        assert self._worker is not None, "the flow has not been started"
        await self._worker.queue_frame(frame)

    def _node(self, member: MemberPlan) -> NodeConfig:
        functions: list[FlowsFunctionSchema | FlowsDirectFunction] = [
            self._tool_schema(t) for t in member.tools
        ]
        functions += [self._transition_schema(member, t) for t in member.transitions]
        return NodeConfig(
            name=member.id,
            role_message=placeholders.escape_for_flows(member.prompt or f"You are {member.name}."),
            task_messages=[],
            functions=functions,
        )

    def _tool_schema(self, tool: ToolPlan) -> FlowsFunctionSchema:
        """A Go tool, as this member's node advertises it.

        The call itself is run by the ``ToolBridge`` registered on the LLM
        router, which pipecat prefers to the handler flows attaches here: only
        it is handed the LLM's tool_call_id, which pipecat-manager needs.
        """

        async def advertised_only(args: FlowArgs, flow_manager: FlowManager) -> Any:
            raise RuntimeError(f"tool {tool.name} must run through the LLM router's registration")

        return FlowsFunctionSchema(
            name=tool.name,
            description=tool.description,
            properties=tool.properties,
            required=tool.required,
            handler=advertised_only,
            cancel_on_interruption=True,
        )

    def _transition_schema(
        self, member: MemberPlan, transition: TransitionPlan
    ) -> FlowsFunctionSchema:
        async def transfer(args: FlowArgs, flow_manager: FlowManager) -> Any:
            return await self.transfer(transition)

        return FlowsFunctionSchema(
            name=transition.name,
            description=transition.description,
            properties={},
            required=[],
            handler=transfer,
            cancel_on_interruption=True,
        )

    async def transfer(
        self, transition: TransitionPlan
    ) -> tuple[dict[str, Any], NodeConfig | None]:
        """Hand the call to ``transition.next_member_id``; stay put if any router refuses.

        Returns:
            The result for the LLM, and the next member's node (None to stay).
        """
        previous = self.active
        target = self._plan.members[transition.next_member_id]
        with handoff_span(self._plan.id, transition.wire_name, previous.id, target.id) as span:
            try:
                await self._switch_routers(target.id)
            except MemberSwitchError as e:
                logger.warning(f"{transition.name}: staying with {previous.label}: {e}")
                span.set_attribute("handoff.refused", str(e))
                return {
                    "status": "error",
                    "error": f"could not transfer to {target.name}: {e}. "
                    "Stay with the caller and offer to help or try again later.",
                }, None
            await self._set_model(target)
            await self._apply_turn_settings(previous, target)
        self.active = target
        self._journal.handoff(previous, target)
        logger.info(f"{transition.name}: {previous.label} -> {target.label}")
        self._notify(previous, target, transition.wire_name)
        return {"status": "transferred", "to": target.name}, self.nodes[target.id]

    async def _switch_routers(self, to_id: str) -> None:
        """Switch every router to ``to_id``, or none of them.

        Every router is asked first whether it can switch; only if all can does
        any switch. Checking and switching run without yielding to the event
        loop, so no service can fail in between, and a refused transfer leaves
        nothing to put back: no switch frame is ever queued that a later one
        would have to undo while the LLM's error result is on its way.
        """
        for router in self._routers.all:
            router.check_member(to_id)
        for router in self._routers.all:
            await router.set_active_member(to_id)

    async def _apply_turn_settings(self, previous: MemberPlan, target: MemberPlan) -> None:
        """Give the VAD the next member's parameters when they differ from the current ones."""
        if not self._plan.hears:
            return
        before = (previous.turn or self._plan.turn).vad
        after = (target.turn or self._plan.turn).vad
        if before != after:
            frame = VADParamsUpdateFrame(params=vad_params(after))
            frame.interruptible = False
            await self._queue(frame)

    def _notify(self, previous: MemberPlan, target: MemberPlan, function_name: str) -> None:
        """Tell pipecat-manager without waiting: a slow or failed notice costs the call nothing."""
        body = {
            "transition_function_name": function_name,
            "from_member": _member_info(previous),
            "to_member": _member_info(target),
        }
        task = asyncio.get_running_loop().create_task(
            self._manager.member_switched(self._plan.id, body)
        )
        self._notifications.add(task)
        task.add_done_callback(self._notifications.discard)

    async def close(self) -> None:
        """Cancel notifications still in flight when the call ends."""
        for task in list(self._notifications):
            task.cancel()
        if self._notifications:
            await asyncio.gather(*self._notifications, return_exceptions=True)


def _member_info(member: MemberPlan) -> dict[str, str]:
    """The member as docs/contract.md section 5 describes it: never its key."""
    return {
        "id": member.id,
        "name": member.name,
        "engine_model": member.engine_model,
        "tts_type": member.tts_type,
        "tts_voice_id": member.tts_voice_id,
        "stt_type": member.stt_type,
    }
