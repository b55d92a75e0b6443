"""HTTP calls from the runner to pipecat-manager: tools and member switches (docs/contract.md 4-5).

One ``ManagerClient`` per process holds one connection pool to
pipecat-manager (a ``teamrunner.http_client.PeerClient``). Neither call can
break a call: a tool that fails, times out or cannot be reached becomes an
error result for the LLM, and a member-switched notification that fails is
logged and forgotten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from loguru import logger

from teamrunner.config import Settings
from teamrunner.errors import PeerError, PeerTimeout
from teamrunner.http_client import PeerClient


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool call came to: the result for the LLM, and its outcome in one word.

    ``outcome`` is ``ok``, ``error`` (pipecat-manager answered an error status),
    ``timeout`` or ``unreachable``.
    """

    result: dict[str, Any]
    outcome: str


class ManagerClient:
    """pipecat-manager's HTTP side, as the runner uses it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._http = PeerClient("pipecat-manager", connection_limit=64, keepalive_secs=30)

    async def close(self) -> None:
        await self._http.close()

    async def execute_tool(
        self, call_id: str, tool_call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolAnswer:
        """Ask pipecat-manager to run a tool; return the result to hand the LLM.

        The result is ``{"status": "ok", "data": <Go's JSON, or {"raw": text}>}``
        or ``{"status": "error", "error": "..."}``; this never raises.
        """
        url = f"{self._settings.manager_http_url}/{call_id}/tools"
        body = {
            "id": tool_call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }
        timeout = self._settings.tool_timeout_secs
        try:
            answer = await self._http.request("POST", url, json=body, timeout=timeout)
        except PeerTimeout:
            logger.warning(f"tool {name}: no answer in {timeout:g}s")
            error = {"status": "error", "error": f"Request timed out after {timeout:g}s"}
            return ToolAnswer(error, "timeout")
        except PeerError as e:
            logger.warning(f"tool {name}: {type(e.cause).__name__}: {e.cause}")
            error = {"status": "error", "error": f"pipecat-manager unreachable: {e.cause}"}
            return ToolAnswer(error, "unreachable")
        text = answer.text()
        if answer.status >= 400:
            logger.warning(f"tool {name}: HTTP {answer.status}")
            error = {"status": "error", "error": f"HTTP {answer.status}: {text}"}
            return ToolAnswer(error, "error")
        return ToolAnswer({"status": "ok", "data": _json_or_raw(text, answer.content_type)}, "ok")

    async def member_switched(self, call_id: str, body: dict[str, Any]) -> bool:
        """Tell pipecat-manager that a team call moved to another member.

        Returns whether pipecat-manager accepted it; never raises, and gives up
        after ``notify_timeout_secs`` so a slow manager costs the call nothing.
        """
        url = f"{self._settings.manager_http_url}/{call_id}/member-switched"
        timeout = self._settings.notify_timeout_secs
        try:
            answer = await self._http.request("POST", url, json=body, timeout=timeout)
        except PeerError as e:
            logger.warning(f"member-switched not delivered: {type(e.cause).__name__}")
            return False
        if answer.status >= 400:
            logger.warning(f"member-switched: HTTP {answer.status}")
            return False
        return True


def _json_or_raw(text: str, content_type: str) -> Any:
    if content_type == "application/json":
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    return {"raw": text}
