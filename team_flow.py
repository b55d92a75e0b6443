"""A call as a pipecat.flows graph: one node per member, one edge per transition.

Every call runs this way: a single AI is a team of one, one member and one
node, with the same greeting, ``end_call``, policy, prompt and tools as any
member, and no transition. A member's node carries its prompt (as the LLM's
system instruction: a single AI's system messages, a member's
``init_prompt``), its tools and its transitions. Calling a transition
function runs ``TeamFlow.transfer``: the STT, LLM and TTS routers are
switched to the next member (all three, or, if any cannot, none),
pipecat-manager is told, and the next member's node is returned for
pipecat.flows to enter, which gives the next member's LLM its prompt and
tools and lets it speak at once. A call of one member has no routers: its
services sit in the slots as they are (``routing.services``).

What a transition adds (``TransitionPlan``):

* ``handoff_message``: queued in the current member's voice before the
  routers switch, so it is said in that voice while the next member's LLM is
  already answering (``teamrunner.call.lines.Lines``); the voice router
  hands over once it has been said (``routing/tts.py``).
* ``context``: what the next member's LLM sees
  (``teamrunner.call.carryover``). ``append`` keeps the conversation whole
  (pipecat.flows' APPEND strategy, the default); ``reset`` and ``summary``
  run a flows pre-action that replaces the conversation, as it stands when
  the node is entered, with the caller's last turn, or with a short summary
  (or leaves it whole, and says why in the log, if none comes in time),
  before the node's LLM runs. What the caller says while the summary is
  written is kept after it.

The start member's ``greeting`` is said before its node is entered, and the
node waits for the caller instead of running its LLM (flows'
``respond_immediately``), unless the history ends with the caller's turn,
which the node then answers at once. Without a greeting the node runs its
LLM at once when it has anything to go on (``CallPlan.opens_with_llm``). A
member with ``end_call`` has that function in its node
(``ending.CallEnding``).

With a remote policy (``teamrunner.policy.control``), every member's node also
carries the policy's current prompt (after the member's own) and tools, and
is built afresh each time it is entered; a policy transition whose
``node_id`` is a member's id hands the call over through ``hand_over``,
exactly as a transition function does (the policy's ``say`` is its handoff
line, and pipecat-manager is told under the policy tool's name).

``TeamFlow.active`` is the one place that says which member has the call.

Every function a node offers is synchronous (``teamrunner.call.functions``):
the LLM waits for its result, and a caller who talks over it takes the
floor. A transition waits only for the Go tools called in the same response
(``teamrunner.call.tool_batch``), then finishes in microseconds.

Between the switch and pipecat.flows entering the next node (the transition's
result has to reach the end of the pipeline first, and a summary be written),
the next member's LLM has the call without its prompt and tools: the LLM
router holds its runs until the node's post-action says they are on their
way (``RoutingLLMService.hold_until_ready``), so the next member answers once,
under its own prompt, whatever the caller said meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from loguru import logger
from pipecat.flows import (
    ActionConfig,
    FlowArgs,
    FlowManager,
    FlowsDirectFunction,
    FlowsFunctionSchema,
    NodeConfig,
)
from pipecat.frames.frames import (
    Frame,
    LLMMessagesTransformFrame,
    LLMUpdateSettingsFrame,
    VADParamsUpdateFrame,
)
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings

from routing.services import Slots
from teamrunner.call.carryover import caller_last_turn, replacing, summary_message
from teamrunner.call.ending import CallEnding
from teamrunner.call.functions import offered
from teamrunner.call.lines import Lines
from teamrunner.call.tool_batch import Handler, ToolBatch
from teamrunner.contract import ContextMode
from teamrunner.errors import MemberSwitchError, SummaryError
from teamrunner.manager.client import ManagerClient
from teamrunner.observe.journal import CallJournal
from teamrunner.observe.tracing import handoff_span
from teamrunner.plan import CallPlan, MemberPlan, ToolPlan, TransitionPlan, placeholders
from teamrunner.policy.control import PolicyControl
from teamrunner.speech.turn_taking import vad_params

# The flows pre-actions that put the caller's last turn, or a summary, in place
# of the conversation.
RESET_ACTION = "reset_context"
SUMMARIZE_ACTION = "summarize_context"
# The flows post-action that lets the next member's LLM run (``RoutingLLMService``).
MEMBER_READY_ACTION = "member_ready"


class TeamFlow:
    """The members of a call (one, for a single AI) and the moves between them.

    Args:
        plan: The call's plan.
        slots: The call's services (routers for several members).
        flow_manager: pipecat.flows' manager of the call's worker.
        manager: Where member switches are reported.
        journal: The call's journal, told of each handoff.
        lines: Says greetings and handoff lines.
        ending: Ends the call for a member's ``end_call``.
        summary_timeout_secs: How long a ``summary`` handoff waits for its summary.
        policy: The call's remote policy, if it has one.
    """

    def __init__(
        self,
        plan: CallPlan,
        slots: Slots,
        flow_manager: FlowManager,
        manager: ManagerClient,
        journal: CallJournal,
        *,
        lines: Lines,
        ending: CallEnding,
        summary_timeout_secs: float,
        policy: PolicyControl | None = None,
    ) -> None:
        self._plan = plan
        self._slots = slots
        self._flow_manager = flow_manager
        self._manager = manager
        self._journal = journal
        self._lines = lines
        self._ending = ending
        self._summary_timeout = summary_timeout_secs
        self.active: MemberPlan = plan.start_member
        # A member's model is set on its LLM when it takes the call: members of one
        # account share an LLM, built with whichever member's model came first.
        self._models: dict[LLMService, str] = dict(slots.built_models())
        self._notifications: set[asyncio.Task[bool]] = set()
        self._batch = ToolBatch(
            {t.name for m in plan.members.values() for t in m.transitions}, self.tool_names()
        )
        for llm in slots.llms:
            llm.add_event_handler("on_function_calls_started", self._batch.started)
        flow_manager.register_action(RESET_ACTION, self._reset)
        flow_manager.register_action(SUMMARIZE_ACTION, self._summarize)
        flow_manager.register_action(MEMBER_READY_ACTION, self._member_ready)
        self._policy = policy
        self.nodes: dict[str, NodeConfig] = {
            member.id: self._node(member) for member in plan.members.values()
        }

    def tool(self, name: str) -> ToolPlan | None:
        """The active member's tool called ``name`` (what the LLM may run now)."""
        return self.active.tool(name)

    def tool_names(self) -> set[str]:
        """Every tool name any member has: each is registered once on the LLM slot."""
        return {t.name for m in self._plan.members.values() for t in m.tools}

    def tool_handler(self, handler: Handler) -> Handler:
        """``handler`` (the Go tools'), run so a transition in the same batch waits for it."""
        return self._batch.tool(handler)

    def node(self, member: MemberPlan) -> NodeConfig:
        """``member``'s node as it is entered now: with a remote policy, under its current state."""
        node = self.nodes[member.id]
        if self._policy is None:
            return node
        prompt = self._policy.prompt(member.prompt)
        return NodeConfig(
            **{
                **node,
                "role_message": placeholders.escape_for_flows(prompt),
                "functions": [*node["functions"], *self._policy.flows_functions(self)],
            }  # type: ignore[typeddict-item]
        )

    @property
    def start_node(self) -> NodeConfig:
        """The start member's node; its LLM runs at once only if it has something to answer."""
        node = self.node(self.active)
        if not (self._plan.pending_turn or self._plan.opens_with_llm):
            # A greeting is the member's first turn, or there is nothing to go on yet:
            # its LLM waits for the caller.
            return NodeConfig(**{**node, "respond_immediately": False})  # type: ignore[typeddict-item]
        return node

    async def start(self) -> None:
        """Give the start member the call: its model, its greeting, then its node.

        A caller's turn the history ends with is answered as the node is
        entered, right behind the greeting, which the plan already put in the
        context before that turn. A remote policy's first state was had
        before the call ran (``PolicyControl.start``).
        """
        await self._set_model(self.active)
        if self.active.greeting:
            await self._lines.say(self.active.greeting, remember=not self._plan.pending_turn)
        await self._flow_manager.initialize(self.start_node)

    async def _set_model(self, member: MemberPlan) -> None:
        """Set ``member``'s model on its LLM, which members of one account share.

        Queued at the head like the node pipecat.flows queues after it, so the
        member's first request already uses its model.
        """
        service = self._slots.llm_for(member.id)
        if service is None or self._models.get(service) == member.llm.model:
            return
        self._models[service] = member.llm.model
        frame = LLMUpdateSettingsFrame(delta=LLMSettings(model=member.llm.model), service=service)
        frame.interruptible = False
        await self._queue(frame)

    async def _queue(self, frame: Frame) -> None:
        """Queue ``frame`` at the head of the pipeline, in order with what is on its way."""
        await self._flow_manager.worker.queue_frame(frame)

    def _node(self, member: MemberPlan) -> NodeConfig:
        functions: list[FlowsFunctionSchema | FlowsDirectFunction] = [
            self._tool_schema(t) for t in member.tools
        ]
        functions += [self._transition_schema(member, t) for t in member.transitions]
        if member.end_call is not None:
            functions.append(self._ending.flows_function(member.end_call))
        node = NodeConfig(name=member.id, task_messages=[], functions=functions)
        if member.prompt:
            node["role_message"] = placeholders.escape_for_flows(member.prompt)
        return node

    def _tool_schema(self, tool: ToolPlan) -> FlowsFunctionSchema:
        """A Go tool, as this member's node advertises it.

        The call itself is run by the ``ToolBridge`` registered on the LLM
        slot, which pipecat prefers to the handler flows attaches here: only
        it is handed the LLM's tool_call_id, which pipecat-manager needs.
        """

        async def advertised_only(args: FlowArgs, flow_manager: FlowManager) -> Any:
            raise RuntimeError(f"tool {tool.name} must run through the LLM router's registration")

        return offered(tool.name, tool.description, advertised_only, tool.properties, tool.required)

    def _transition_schema(
        self, member: MemberPlan, transition: TransitionPlan
    ) -> FlowsFunctionSchema:
        async def transfer(args: FlowArgs, flow_manager: FlowManager) -> Any:
            return await self.transfer(transition)

        return offered(transition.name, transition.description, transfer)

    async def hand_over(
        self, member_id: str, function_name: str, line: str | None
    ) -> tuple[dict[str, Any], NodeConfig | None]:
        """Hand the call to ``member_id`` for a remote policy's transition (``PolicyControl``)."""
        transition = TransitionPlan(
            name=function_name,
            wire_name=function_name,
            description="",
            next_member_id=member_id,
            handoff_message=line,
        )
        return await self.transfer(transition)

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
            holding = False
            try:
                # The Go tools called with it go first (``teamrunner.call.tool_batch``).
                await self._batch.tools_returned()
                # The next member's connections, if they are not open yet (a handoff
                # straight after the call answered): waited for before the check.
                await self._slots.ready_for(target.id)
                # Every router is asked first whether it can switch; only if all
                # can does any switch. Checking, queueing the handoff line and
                # switching run without yielding to the event loop, so no service
                # can fail in between, and a refused transfer leaves nothing to
                # put back while the LLM's error result is on its way.
                self._slots.check_member(target.id)
                if transition.handoff_message:
                    # Ahead of the switch, so it is said in the current member's voice.
                    await self._lines.say(transition.handoff_message, remember=False)
                # Until the next member's node is entered, its LLM has the call
                # but not yet its prompt and tools: it runs once they are there.
                self._slots.hold_until_ready()
                holding = True
                await self._slots.switch(target.id)
            except MemberSwitchError as e:
                if holding:
                    await self._slots.member_ready()
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
        return {"status": "transferred", "to": target.name}, self._arrival(target, transition)

    def _arrival(self, target: MemberPlan, transition: TransitionPlan) -> NodeConfig:
        """``target``'s node as this transition enters it, with its ``context`` mode.

        Its post-action lets the member's LLM run once its prompt and tools are
        on their way (``RoutingLLMService.member_ready``).
        """
        ready = cast(ActionConfig, {"type": MEMBER_READY_ACTION})
        node = NodeConfig(**{**self.node(target), "post_actions": [ready]})  # type: ignore[typeddict-item]
        if transition.context is ContextMode.RESET:
            action = cast(ActionConfig, {"type": RESET_ACTION})
            return NodeConfig(**{**node, "pre_actions": [action]})  # type: ignore[typeddict-item]
        if transition.context is ContextMode.SUMMARY:
            action = cast(ActionConfig, {"type": SUMMARIZE_ACTION, "member": target.id})
            return NodeConfig(**{**node, "pre_actions": [action]})  # type: ignore[typeddict-item]
        return node

    async def _reset(self, action: dict[str, Any], flow_manager: FlowManager) -> None:
        """The pre-action of a ``reset`` handoff: the caller's last turn for the conversation.

        Read as the node is entered, so a turn the caller said during the
        handoff is the one kept.
        """
        seen = list(flow_manager.get_current_context())
        await self._replace_conversation(caller_last_turn(seen), seen)

    async def _summarize(self, action: dict[str, Any], flow_manager: FlowManager) -> None:
        """The pre-action of a ``summary`` handoff: a summary in place of the conversation.

        flows waits for it before it gives the node's LLM its prompt and runs
        it, so that first request already sees the summary.
        """
        member = self._plan.members[action["member"]]
        llm = self._slots.llm_for(member.id)
        assert llm is not None, "every member has an LLM"
        seen = list(flow_manager.get_current_context())
        try:
            message = await summary_message(llm, seen, self._summary_timeout)
        except SummaryError as e:
            logger.warning(
                f"no summary for {member.label} ({e}); it gets the whole conversation instead"
            )
            return
        await self._replace_conversation([message], seen)

    async def _replace_conversation(
        self, replacement: list[dict[str, Any]], seen: list[Any]
    ) -> None:
        """Put ``replacement`` in place of the messages ``seen``, keeping any said since."""
        frame = LLMMessagesTransformFrame(transform=replacing(replacement, seen))
        frame.interruptible = False
        await self._queue(frame)

    async def _member_ready(self, action: dict[str, Any], flow_manager: FlowManager) -> None:
        """The post-action of every handoff: flows has queued the node's prompt, tools and run."""
        await self._slots.member_ready()

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
