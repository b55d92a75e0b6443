"""A transition waits for the Go tools of its response, whose results then run no LLM.

``ToolBatch`` on its own, with real asyncio tasks standing for pipecat's
function calls: what a transition sees while it waits, and the properties a
tool's result is delivered with. The whole of it, in a call, is in
``tests/test_transitions.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pipecat.frames.frames import FunctionCallFromLLM, FunctionCallResultProperties
from pipecat.services.llm_service import FunctionCallParams

from teamrunner.call.tool_batch import ToolBatch
from teamrunner.errors import MemberSwitchError

Delivered = list[tuple[Any, FunctionCallResultProperties | None]]


def batch(*names: str) -> tuple[ToolBatch, list[FunctionCallFromLLM]]:
    tools = ToolBatch({"transfer_to_billing"}, {"send_email"}, cut_off_grace_secs=0.1)
    calls = [FunctionCallFromLLM(name, f"call_{n}", {}, None) for n, name in enumerate(names)]
    tools.started(None, calls)
    return tools, calls


def params(call: FunctionCallFromLLM, delivered: Delivered) -> FunctionCallParams:
    async def result_callback(
        result: Any, *, properties: FunctionCallResultProperties | None = None
    ) -> None:
        delivered.append((result, properties))

    return FunctionCallParams(
        function_name=call.function_name,
        tool_call_id=call.tool_call_id,
        arguments=call.arguments,
        llm=None,  # type: ignore[arg-type]
        pipeline_worker=None,  # type: ignore[arg-type]
        context=None,  # type: ignore[arg-type]
        result_callback=result_callback,
    )


def go_tool(
    answered: asyncio.Event, run_llm: bool = True, running: asyncio.Event | None = None
) -> Any:
    """A Go tool's handler that sets ``running`` when it starts and answers once ``answered`` is."""

    async def handler(params: FunctionCallParams) -> None:
        if running is not None:
            running.set()
        await answered.wait()
        properties = FunctionCallResultProperties(run_llm=run_llm)
        await params.result_callback({"status": "ok"}, properties=properties)

    return handler


async def test_a_transition_waits_for_the_tools_of_its_batch_whose_results_run_no_llm() -> None:
    tools, [email, _] = batch("send_email", "transfer_to_billing")
    delivered: Delivered = []
    answered, running = asyncio.Event(), asyncio.Event()
    tool = asyncio.create_task(
        tools.tool(go_tool(answered, running=running))(params(email, delivered))
    )
    waiting = asyncio.create_task(tools.tools_returned())
    # Once the tool runs, the transition has had its turn to wait (it was created next).
    await running.wait()
    assert not waiting.done()

    answered.set()
    await asyncio.wait_for(waiting, 1)

    await tool
    [(result, properties)] = delivered
    assert result == {"status": "ok"}
    assert properties is not None and properties.run_llm is False


async def test_a_tool_without_a_transition_keeps_its_own_run() -> None:
    tools, [email] = batch("send_email")
    delivered: Delivered = []
    answered = asyncio.Event()
    answered.set()

    await tools.tool(go_tool(answered, run_llm=True))(params(email, delivered))

    [(_, properties)] = delivered
    assert properties is not None and properties.run_llm is True


async def test_a_transition_whose_tool_was_cancelled_does_not_go_ahead() -> None:
    tools, [email, _] = batch("send_email", "transfer_to_billing")
    running = asyncio.Event()
    tool = asyncio.create_task(
        tools.tool(go_tool(asyncio.Event(), running=running))(params(email, []))
    )
    waiting = asyncio.create_task(tools.tools_returned())
    await running.wait()

    tool.cancel()  # the caller talked over the batch

    with pytest.raises(MemberSwitchError, match="cut off"):
        await asyncio.wait_for(waiting, 1)
