"""The LLM's function calls, executed by pipecat-manager.

A ``ToolBridge`` is a pipecat function-call handler: pipecat hands it the
call (with the LLM's own tool_call_id), it forwards the call to
``/{id}/tools`` under the name Go knows the tool by, and returns Go's answer
to the LLM. Whether the LLM speaks again on the result follows the tool's
``run_llm``, which the model may override by passing ``run_llm`` among the
arguments (removed before forwarding). An error result always lets the LLM
speak, so the caller hears that something went wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from loguru import logger
from pipecat.frames.frames import FunctionCallResultProperties
from pipecat.services.llm_service import FunctionCallParams

from teamrunner.manager.client import ManagerClient
from teamrunner.observe.journal import CallJournal
from teamrunner.plan import ToolPlan


class ToolBridge:
    """Runs the LLM's tool calls through pipecat-manager for one call.

    Args:
        call_id: The pipecatcall id.
        client: The process's pipecat-manager client.
        lookup: The tool the active AI knows by a function name, or None; a team
            call answers with the active member's tools, so a member cannot
            run another member's tool.
        journal: Where each call's outcome and round trip are recorded.
    """

    def __init__(
        self,
        call_id: str,
        client: ManagerClient,
        lookup: Callable[[str], ToolPlan | None],
        journal: CallJournal,
    ) -> None:
        self._call_id = call_id
        self._client = client
        self._lookup = lookup
        self._journal = journal

    async def __call__(self, params: FunctionCallParams) -> None:
        tool = self._lookup(params.function_name)
        if tool is None:
            logger.warning(f"LLM called unavailable tool {params.function_name}")
            self._journal.tool("unavailable", 0.0)
            await params.result_callback(
                {"status": "error", "error": f"tool {params.function_name} is not available now"}
            )
            return
        arguments = dict(params.arguments)
        run_llm = _as_bool(arguments.pop("run_llm", tool.run_llm), tool.run_llm)
        started = time.monotonic()
        answer = await self._client.execute_tool(
            self._call_id, params.tool_call_id, tool.wire_name, arguments
        )
        self._journal.tool(answer.outcome, time.monotonic() - started)
        if answer.outcome != "ok":
            run_llm = True
        await params.result_callback(
            answer.result, properties=FunctionCallResultProperties(run_llm=run_llm)
        )


def _as_bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return default
