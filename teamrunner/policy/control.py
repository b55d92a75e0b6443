"""A call driven by its remote policy: what the model sees, and what each decision does.

``PolicyControl`` stands between a call's LLM and its ``policy.PolicyClient``.
It asks the service for the first state before the call says anything
(``start``, from ``run.Call.prepare``; a failure there fails the start, with
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

How the new state reaches the model follows pipecat.flows, for a single AI
(a team of one) as for a team: each member's node carries the policy's
prompt and tools (``flows_functions``), and a transition returns the node to
enter, built afresh under the new state.

Requests to the policy are made one at a time. A caller who talks over one
cancels it, as for any tool: the call keeps the state it last applied, and
sends that with the next request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

from pipecat.flows import NO_RESPONSE, FlowArgs, FlowManager, FlowsFunctionSchema, NodeConfig

from teamrunner.call.ending import CallEnding
from teamrunner.call.functions import offered
from teamrunner.call.lines import Lines
from teamrunner.errors import PolicyError, StartError
from teamrunner.observe.journal import CallJournal, EndReason
from teamrunner.plan import END_CALL_FUNCTION, CallPlan, MemberPlan
from teamrunner.policy.client import (
    Action,
    Decision,
    PolicyClient,
    PolicyState,
    PolicyTool,
)

COMPONENT = "remote policy"


class TeamHandoff(Protocol):
    """What a call's policy needs of its flow (``team_flow.TeamFlow``)."""

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


class PolicyControl:
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
        assert policy is not None, "a PolicyControl is built only for a call with a remote policy"
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

    @property
    def state(self) -> PolicyState:
        return self._client.state

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

    def flows_functions(self, team: TeamHandoff) -> list[FlowsFunctionSchema]:
        """The policy's current tools, as a node of ``team`` offers them."""
        return [self._flows_function(t, team) for t in self.state.tools]

    def _flows_function(self, tool: PolicyTool, team: TeamHandoff) -> FlowsFunctionSchema:
        async def run(args: FlowArgs, flow_manager: FlowManager) -> Any:
            decision = await self._decide(tool, args)
            return await self._in_flow(tool, decision, team)

        return offered(tool.function, tool.description, run, tool.properties, tool.required)

    async def _in_flow(
        self, tool: PolicyTool, decision: Decision, team: TeamHandoff
    ) -> tuple[Any, Any]:
        """What pipecat.flows does next: stay (the model answers), enter a node, or say nothing."""
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
