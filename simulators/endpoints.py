"""pipecat-manager's two HTTP endpoints: what each request must carry, and the reply.

``POST /{id}/tools`` and ``POST /{id}/member-switched`` are read here into a
``ToolCall`` or ``MemberSwitch`` event (with ``error`` set when the body breaks
the contract, which is answered 400), and answered with a ``Reply``: Go's
default success body, a scripted body or status, plain text, or a delay. This
module holds no routing and no call state: ``manager.py`` finds the call,
records the event and sends the answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from simulators.events import MemberSwitch, ToolCall


@dataclass(frozen=True)
class Reply:
    """How the simulator answers a tool call or a member-switch notification.

    ``body=None`` means the endpoint's default: Go's success object for a tool
    call (with the request's ``tool_call_id``), ``{"status": "ok"}`` for a
    member switch.
    """

    status: int = 200
    body: Any = None
    plain: str | None = None
    delay: float = 0.0

    @classmethod
    def ok(cls, data: Mapping[str, Any] | None = None, *, delay: float = 0.0) -> Reply:
        return cls(200, None if data is None else dict(data), delay=delay)

    @classmethod
    def error(
        cls, status: int = 500, error: Any = "simulated failure", *, delay: float = 0.0
    ) -> Reply:
        """``status`` with ``{"error": error}`` (Go's error shape)."""
        return cls(status, {"error": error}, delay=delay)

    @classmethod
    def text(cls, text: str, *, status: int = 200, delay: float = 0.0) -> Reply:
        """A ``text/plain`` body, which the runner must pass on as ``{"raw": text}``."""
        return cls(status, plain=text, delay=delay)

    def response(self, default_body: Any) -> web.Response:
        if self.plain is not None:
            return web.Response(status=self.status, text=self.plain, content_type="text/plain")
        body = default_body if self.body is None else self.body
        return web.json_response(body, status=self.status)

    async def answer(self, default_body: Any) -> web.Response:
        """``response``, after the scripted ``delay`` (e.g. to hit the runner's timeout)."""
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        return self.response(default_body)


ToolResult = Reply
"""The name tests use for a tool's reply."""

MEMBER_SWITCHED_BODY = {"status": "ok"}
"""What Go answers a member-switch notification with."""


def tool_success(tool_call_id: str) -> dict[str, str]:
    """Go's success object for a tool call."""
    return {
        "tool_call_id": tool_call_id,
        "result": "success",
        "message": "ok",
        "resource_type": "",
        "resource_id": "",
    }


def read_tool_call(
    raw: bytes, *, seq: int, at: float, reply_for: Callable[[str], Reply]
) -> tuple[ToolCall, Reply]:
    """The event for a ``POST /{id}/tools`` body, and the reply it gets.

    A body that breaks the contract is answered 400 with the reason; otherwise
    ``reply_for(tool name)`` decides.
    """
    body, error = _json_object(raw)
    parts = body if isinstance(body, dict) else {}
    function = parts.get("function")
    name, arguments = "", None
    if error is None:
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            error = "body must have function.name (a string)"
        else:
            name = function["name"]
            arguments, error = _arguments(function.get("arguments"))
    reply = reply_for(name) if error is None else Reply.error(400, error)
    event = ToolCall(
        seq=seq,
        at=at,
        tool_call_id=str(parts.get("id", "")),
        name=name,
        arguments=arguments,
        body=body,
        raw_body=raw,
        reply_status=reply.status,
        error=error,
    )
    return event, reply


def read_member_switch(
    raw: bytes, *, seq: int, at: float, reply: Reply
) -> tuple[MemberSwitch, Reply]:
    """The event for a ``POST /{id}/member-switched`` body, and the reply it gets
    (``reply``, or 400 with the reason when the body breaks the contract)."""
    body, error = _json_object(raw)
    parts = body if isinstance(body, dict) else {}
    transition = parts.get("transition_function_name")
    from_member, to_member = parts.get("from_member"), parts.get("to_member")
    well_formed = (
        isinstance(transition, str)
        and isinstance(from_member, dict)
        and isinstance(to_member, dict)
    )
    if error is None and not well_formed:
        error = (
            "body must have transition_function_name (a string), "
            "from_member and to_member (objects)"
        )
    if error is not None:
        reply = Reply.error(400, error)
    event = MemberSwitch(
        seq=seq,
        at=at,
        transition_function_name=transition if isinstance(transition, str) else "",
        from_member=from_member if isinstance(from_member, dict) else {},
        to_member=to_member if isinstance(to_member, dict) else {},
        body=body,
        raw_body=raw,
        reply_status=reply.status,
        error=error,
    )
    return event, reply


def _json_object(raw: bytes) -> tuple[Any, str | None]:
    try:
        body = json.loads(raw)
    except ValueError as e:
        return None, f"body is not JSON: {e}"
    if not isinstance(body, dict):
        return body, f"body must be a JSON object, got {type(body).__name__}"
    return body, None


def _arguments(value: Any) -> tuple[Any, str | None]:
    """Parse ``function.arguments``, which the contract makes a JSON-encoded string."""
    if not isinstance(value, str):
        return value, (
            f"function.arguments must be a JSON-encoded string, got {type(value).__name__}"
        )
    try:
        return json.loads(value), None
    except ValueError as e:
        return None, f"function.arguments is not valid JSON: {e}"
