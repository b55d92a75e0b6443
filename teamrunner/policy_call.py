"""A call driven by its remote policy: what the model sees, and what each decision does.

``PolicyCall`` stands between a call's LLM and its ``policy.PolicyClient``.
It asks the service for the first state before the call says anything
(``start``, from ``run.Call.begin``; a failure there fails the start, with
the component "remote policy"), offers the model the policy's tools beside
the call's own, and runs each policy tool the model calls:

* ``transition``: ``say`` is spoken, then the model's system prompt and
  policy tools are replaced by the answer's (Go's tools, transitions and
  ``end_call`` stay) and the model answers under them. In a team call, a
  ``node_id`` that is a member's id also hands the call to that member
  (``TeamHandoff``, which ``team_flow.TeamFlow`` is), ``say`` being said in
  the current voice first, as a handoff line is;
* ``stay``: nothing changes; ``say`` is spoken and the model answers the result;
* ``end``: ``say`` is spoken and the call ends once it has been heard
  (``ending.CallEnding``); the ``disposition`` goes to the call's journal;
* a policy that failed (``Decision.error``) is a ``stay`` without words:
  the model is told, and the call goes on.

The model's system instruction is the call's own prompt (a single AI's
system messages from ``llm_messages``; a member's ``init_prompt``), a blank
line, and the policy's ``system_prompt``; a transition replaces only the
policy's part. ``say`` is not put in the context as the assistant's: the
model reads it in the tool's result (``"said"``), which is where it asked.

How the new state reaches the model follows pipecat.flows. In a team call
each member's node carries the policy's prompt and tools (``flows_functions``),
and a transition returns the node to enter. A single AI has no flow: its
policy tools are ``FunctionSchema``s carrying their handlers (pipecat
registers them as they are advertised and drops them when they are not),
and after a transition the new prompt and tools are queued at the head of
the pipeline, with an LLM run, once the result is in the context
(``on_context_updated``), as flows does for a node.

Requests to the policy are made one at a time. A caller who talks over one
cancels it, as for any tool: the call keeps the state it last applied, and
sends that with the next request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.flows import NO_RESPONSE, FlowArgs, FlowManager, FlowsFunctionSchema, NodeConfig
from pipecat.frames.frames import (
    Frame,
    FunctionCallResultProperties,
    LLMRunFrame,
    LLMSetToolsFrame,
    LLMUpdateSettingsFrame,
)
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.aggregators.llm_context import NOT_GIVEN
from pipecat.services.llm_service import FunctionCallParams
from pipecat.services.settings import LLMSettings

from teamrunner.ending import CallEnding
from teamrunner.errors import StartError
from teamrunner.journal import CallJournal
from teamrunner.lines import Lines
from teamrunner.plan import END_CALL_FUNCTION, CallPlan, MemberPlan
from teamrunner.policy import Action, Decision, PolicyClient, PolicyError, PolicyState, PolicyTool
from teamrunner.session import EndReason

COMPONENT = "remote policy"


class TeamHandoff(Protocol):
    """What a team call's policy needs of the team's flow (``team_flow.TeamFlow``)."""

    @property
    def active(self) -> MemberPlan:
        """The member who has the call."""
        ...

    def node(self, member: MemberPlan) -> NodeConfig:
        """``member``'s node as it is entered now, with the policy's current prompt and tools."""
        ...

    async def hand_over(
        self, member_id: str, function_name: str, line: str | None
    ) -> tuple[dict[str, Any], NodeConfig | None]:
        """Hand the call to ``member_id`` as a transition would, ``line`` said first.

        Returns:
            The result for the model, and the member's node (None: it stays put).
        """
        ...


class PolicyCall:
    """One call's remote policy, in the call.

    Args:
        plan: The call's plan (``plan.policy`` says where the service is).
        lines: Says the policy's ``say``.
        ending: Ends the call for ``end``.
        journal: Told of each decision and of the disposition.
    """

    def __init__(
        self, plan: CallPlan, *, lines: Lines, ending: CallEnding, journal: CallJournal
    ) -> None:
        policy = plan.policy
        assert policy is not None, "a PolicyCall is built only for a call with a remote policy"
        self._plan = plan
        self._lines = lines
        self._ending = ending
        self._journal = journal
        self._client = PolicyClient(
            policy.url,
            policy.config,
            plan.start_member.llm.provider,
            token=policy.token,
            timeout_secs=policy.timeout_secs,
            reserved=_call_functions(plan),
        )
        self._lock = asyncio.Lock()
        self._worker: PipelineWorker | None = None
        self._team: TeamHandoff | None = None
        self._own_prompt: str | None = None
        self._own_tools: list[FunctionSchema] = []

    @property
    def state(self) -> PolicyState:
        return self._client.state

    def attach(self, worker: PipelineWorker) -> None:
        """Queue a single AI's prompt and tool changes into ``worker``'s pipeline."""
        self._worker = worker

    def serve_single_ai(self, prompt: str | None, tools: list[FunctionSchema]) -> None:
        """Drive a single AI whose own prompt and functions are ``prompt`` and ``tools``."""
        self._own_prompt = prompt
        self._own_tools = list(tools)

    def serve_team(self, team: TeamHandoff) -> None:
        """Drive a team call through ``team``."""
        self._team = team

    async def start(self) -> None:
        """Ask the service for the call's first state.

        Raises:
            StartError: the service could not be reached or answered out of contract.
        """
        try:
            await self._client.start()
        except PolicyError as e:
            raise StartError(COMPONENT, e.reason) from None

    def prompt(self, own: str | None) -> str:
        """The system instruction: the call's own prompt, then the policy's."""
        parts = (own or "", self.state.system_prompt)
        return "\n\n".join(p for p in parts if p.strip())

    # A single AI.

    def model_frames(self) -> list[Frame]:
        """What gives a single AI the current state: its system instruction and its tools."""
        tools = [*self._own_tools, *(self._schema(t) for t in self.state.tools)]
        instruction = self.prompt(self._own_prompt)
        frames: list[Frame] = [
            LLMUpdateSettingsFrame(delta=LLMSettings(system_instruction=instruction)),
            LLMSetToolsFrame(tools=ToolsSchema(standard_tools=tools) if tools else NOT_GIVEN),
        ]
        for frame in frames:
            # Like a flows node's: they must land even if the caller talks meanwhile.
            frame.interruptible = False
        return frames

    def _schema(self, tool: PolicyTool) -> FunctionSchema:
        async def run(params: FunctionCallParams) -> None:
            decision = await self._decide(tool, params.arguments)
            if _is(decision, Action.END):
                quiet = FunctionCallResultProperties(run_llm=False)
                await params.result_callback(decision.result(), properties=quiet)
                self._end(decision)
                return
            await self._say(decision)
            properties = FunctionCallResultProperties(run_llm=True)
            if _is(decision, Action.TRANSITION):
                # The model runs once the new prompt and tools are in, as flows enters a node.
                properties = FunctionCallResultProperties(
                    run_llm=False, on_context_updated=self._enter_state
                )
            await params.result_callback(decision.result(), properties=properties)

        return FunctionSchema(
            name=tool.function,
            description=tool.description,
            properties=tool.properties,
            required=tool.required,
            handler=run,
        )

    async def _enter_state(self) -> None:
        """After a transition's result is in the context: the new prompt and tools, then a run."""
        assert self._worker is not None, "the call's pipeline is not built yet"
        await self._worker.queue_frames([*self.model_frames(), LLMRunFrame()])

    # A team call.

    def flows_functions(self) -> list[FlowsFunctionSchema]:
        """The policy's current tools, as a member's node offers them."""
        return [self._flows_function(t) for t in self.state.tools]

    def _flows_function(self, tool: PolicyTool) -> FlowsFunctionSchema:
        async def run(args: FlowArgs, flow_manager: FlowManager) -> Any:
            decision = await self._decide(tool, args)
            return await self._in_team(tool, decision)

        return FlowsFunctionSchema(
            name=tool.function,
            description=tool.description,
            properties=tool.properties,
            required=tool.required,
            handler=run,
            cancel_on_interruption=True,
        )

    async def _in_team(self, tool: PolicyTool, decision: Decision) -> tuple[Any, Any]:
        """What pipecat.flows does next: stay (the model answers), enter a node, or say nothing."""
        team = self._team
        assert team is not None, "serve_team was not called"
        if _is(decision, Action.END):
            self._end(decision)
            return decision.result(), NO_RESPONSE
        if not _is(decision, Action.TRANSITION):
            await self._say(decision)
            return decision.result(), None
        target = self._plan.members.get(decision.state.node_id)
        if target is not None and target.id != team.active.id:
            result, node = await team.hand_over(target.id, tool.name, decision.say)
            # Refused (the member's provider has failed): the member keeps the call,
            # under the policy's new state all the same, since the policy has moved on.
            return {**decision.result(), **result}, node or team.node(team.active)
        await self._say(decision)
        return decision.result(), team.node(team.active)

    # Both.

    async def _decide(self, tool: PolicyTool, args: Mapping[str, Any]) -> Decision:
        async with self._lock:
            decision = await self._client.tool_call(tool.name, args)
        self._journal.policy_decided("error" if decision.error else str(decision.action))
        return decision

    async def _say(self, decision: Decision) -> None:
        if decision.say:
            await self._lines.say(decision.say, remember=False)

    def _end(self, decision: Decision) -> None:
        disposition = decision.disposition
        self._journal.disposition = disposition
        detail = "the remote policy ended the call" + (
            f" (disposition {disposition})" if disposition else ""
        )
        self._ending.end_after(decision.say, EndReason.POLICY_ENDED, detail)

    async def close(self) -> None:
        await self._client.close()


def _is(decision: Decision, action: Action) -> bool:
    """Whether the policy decided ``action`` (a failed policy decided nothing: a stay)."""
    return decision.error is None and decision.action is action


def _call_functions(plan: CallPlan) -> set[str]:
    """Every function name the call has of its own, which no policy tool may take."""
    names = {END_CALL_FUNCTION}
    for member in plan.members.values():
        names |= {t.name for t in member.tools} | {t.name for t in member.transitions}
    return names
