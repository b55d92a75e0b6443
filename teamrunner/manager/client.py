"""HTTP calls from the runner to pipecat-manager: tools and member switches (docs/contract.md 4-5).

One ``ManagerClient`` per process holds one connection pool to
pipecat-manager. Neither call can break a call: a tool that fails, times out
or cannot be reached becomes an error result for the LLM, and a member-switched
notification that fails is logged and forgotten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loguru import logger

if TYPE_CHECKING:
    import aiohttp

from teamrunner.config import Settings


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
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        # Imported when a call first needs pipecat-manager, not when the runner starts.
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=64, keepalive_timeout=30)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

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
        import aiohttp

        timeout = self._settings.tool_timeout_secs
        try:
            async with self._http().post(
                url, json=body, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as response:
                text = await response.text()
                if response.status >= 400:
                    logger.warning(f"tool {name}: HTTP {response.status}")
                    error = {"status": "error", "error": f"HTTP {response.status}: {text}"}
                    return ToolAnswer(error, "error")
                data = _json_or_raw(text, response.content_type)
                return ToolAnswer({"status": "ok", "data": data}, "ok")
        except TimeoutError:
            logger.warning(f"tool {name}: no answer in {timeout:g}s")
            error = {"status": "error", "error": f"Request timed out after {timeout:g}s"}
            return ToolAnswer(error, "timeout")
        except aiohttp.ClientError as e:
            logger.warning(f"tool {name}: {type(e).__name__}: {e}")
            error = {"status": "error", "error": f"pipecat-manager unreachable: {e}"}
            return ToolAnswer(error, "unreachable")

    async def member_switched(self, call_id: str, body: dict[str, Any]) -> bool:
        """Tell pipecat-manager that a team call moved to another member.

        Returns whether pipecat-manager accepted it; never raises, and gives up
        after ``notify_timeout_secs`` so a slow manager costs the call nothing.
        """
        url = f"{self._settings.manager_http_url}/{call_id}/member-switched"
        import aiohttp

        timeout = self._settings.notify_timeout_secs
        try:
            async with self._http().post(
                url, json=body, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as response:
                if response.status >= 400:
                    logger.warning(f"member-switched: HTTP {response.status}")
                    return False
                return True
        except (TimeoutError, aiohttp.ClientError) as e:
            logger.warning(f"member-switched not delivered: {type(e).__name__}")
            return False


def _json_or_raw(text: str, content_type: str) -> Any:
    if content_type == "application/json":
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    return {"raw": text}
