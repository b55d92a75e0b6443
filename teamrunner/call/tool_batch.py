"""A team member's function calls from one LLM response, while they run, as one batch.

One response can call a Go tool and a transition together (``send_email`` and
``transfer_to_billing``), and pipecat runs them side by side. A transition
that went first would hand the call over with the Go tool still running: the
tool, looked up among the next member's, would be refused, or its result,
landing after the transition's, would run the next member's LLM under the
previous member's prompt, and pipecat.flows, which enters the next member's
node only on the transition's own result when no call is left running, would
never enter it.

So within a batch the transition waits (``tools_returned``) until the batch's
Go tools have returned, and their results ask for no LLM run (the next
member's first run, or the current member's if the transition is refused,
reads them). Their results reach the context first, so the transition's
result is the last of the batch, and pipecat.flows enters the next node on
it. A caller who talks over the batch cancels all of it, the transition
still waiting, so nothing is handed over.

This module holds no transition and no tool: ``team_flow`` waits, and the Go
tools' handler (``teamrunner.manager.tools.ToolBridge``) is wrapped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace
from typing import Any

from pipecat.frames.frames import FunctionCallFromLLM, FunctionCallResultProperties
from pipecat.services.llm_service import FunctionCallParams, FunctionCallResultCallback

from teamrunner.errors import MemberSwitchError

Handler = Callable[[FunctionCallParams], Awaitable[None]]

# How long a transition whose batch was cut off waits to be cancelled with it.
CUT_OFF_GRACE_SECS = 5.0


class ToolBatch:
    """The Go tools of the latest LLM response still running, and whether it hands over.

    Args:
        transitions: The function names that hand the call to another member.
        tools: The function names of Go tools (run by the wrapped handler).
    """

    def __init__(
        self,
        transitions: Collection[str],
        tools: Collection[str],
        *,
        cut_off_grace_secs: float = CUT_OFF_GRACE_SECS,
    ) -> None:
        self._transitions = frozenset(transitions)
        self._tools = frozenset(tools)
        self._cut_off_grace = cut_off_grace_secs
        self._hands_over = False
        self._returned: dict[str, asyncio.Event] = {}
        self._cancelled: set[str] = set()

    def started(self, _llm: object, calls: Sequence[FunctionCallFromLLM]) -> None:
        """A new response's calls are about to run (pipecat's ``on_function_calls_started``).

        pipecat fires it before it starts any of the calls, and asyncio runs
        its handler first, so every Go tool of the batch is known before a
        transition of the batch can wait for it.
        """
        self._hands_over = any(c.function_name in self._transitions for c in calls)
        self._cancelled = set()
        self._returned = {
            c.tool_call_id: self._returned.get(c.tool_call_id) or asyncio.Event()
            for c in calls
            if c.function_name in self._tools
        }

    def tool(self, handler: Handler) -> Handler:
        """``handler``, run as a member of its batch: a Go tool's handler."""

        async def run(params: FunctionCallParams) -> None:
            returned = self._returned.setdefault(params.tool_call_id, asyncio.Event())
            params = replace(params, result_callback=self._delivering(params.result_callback))
            try:
                await handler(params)
            except asyncio.CancelledError:
                self._cancelled.add(params.tool_call_id)
                raise
            finally:
                returned.set()

        return run

    async def tools_returned(self) -> None:
        """Wait until every Go tool of the latest batch has returned its result.

        A caller who talks over the batch has pipecat cancel its calls one at a
        time, the waiting transition among them. One woken by a tool cancelled
        before it waits for its own cancellation, rather than hand the call
        over in between.

        Raises:
            MemberSwitchError: a tool of the batch was cancelled and, after
                ``cut_off_grace_secs``, the transition still was not.
        """
        for returned in list(self._returned.values()):
            await returned.wait()
        if self._cancelled.intersection(self._returned):
            await asyncio.sleep(self._cut_off_grace)
            raise MemberSwitchError("the response it was called in was cut off")

    def _delivering(
        self, result_callback: FunctionCallResultCallback
    ) -> FunctionCallResultCallback:
        """``result_callback``, asking for no LLM run when the batch hands the call over."""

        async def deliver(
            result: Any, *, properties: FunctionCallResultProperties | None = None
        ) -> None:
            if self._hands_over:
                properties = (
                    replace(properties, run_llm=False)
                    if properties is not None
                    else FunctionCallResultProperties(run_llm=False)
                )
            await result_callback(result, properties=properties)

        return deliver
