"""A remote policy service that answers as scripted, and records what it was sent.

It is not a policy: the example service in ``examples/receptionist_policy.py``
is one. This simulator stands in for a policy service misbehaving the ways
the runner must survive (an error status, no answer, a body that is not
JSON, a transition without its prompt and tools), and for reading exactly
what the runner sent: each request's path, JSON body and Authorization
header.

    sim = PolicySimulator(session={...})
    sim.push(PolicyAnswer.ok({...}), PolicyAnswer.fail(500), PolicyAnswer.hang(10))
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from simulators.server import Simulator


@dataclass(frozen=True)
class PolicyAnswer:
    """One scripted answer: a JSON body, an error status, garbage, or silence."""

    body: Any = None
    status: int = 200
    raw: bytes | None = None
    hang_secs: float = 0.0

    @classmethod
    def ok(cls, body: dict[str, Any]) -> PolicyAnswer:
        return cls(body=body)

    @classmethod
    def fail(cls, status: int = 500) -> PolicyAnswer:
        return cls(body={"error": "scripted failure"}, status=status)

    @classmethod
    def garbage(cls) -> PolicyAnswer:
        return cls(raw=b"<html>not json</html>")

    @classmethod
    def hang(cls, seconds: float) -> PolicyAnswer:
        return cls(body={"action": "stay"}, hang_secs=seconds)


@dataclass(frozen=True)
class PolicyRequest:
    path: str
    body: Any
    authorization: str | None


class PolicySimulator(Simulator):
    """``POST /session`` answers ``session``; each ``POST /tool-call`` the next scripted answer.

    With nothing scripted, a tool call is answered ``stay`` at the current node.
    """

    name = "policy"

    def __init__(self, session: dict[str, Any] | PolicyAnswer | None = None) -> None:
        super().__init__()
        self.session = (
            session
            if isinstance(session, PolicyAnswer)
            else PolicyAnswer.ok(
                session
                or {
                    "system_prompt": "You help.",
                    "tools": [],
                    "node_id": "start",
                    "collected_vars": {},
                }
            )
        )
        self._script: deque[PolicyAnswer] = deque()
        self.requests: list[PolicyRequest] = []

    @property
    def url(self) -> str:
        return self.http_url

    def push(self, *answers: PolicyAnswer) -> None:
        self._script.extend(answers)

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/session", self._handle)
        app.router.add_post("/tool-call", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = None
        self.requests.append(
            PolicyRequest(request.path, body, request.headers.get("Authorization"))
        )
        await self.notify()
        if request.path == "/session":
            answer = self.session
        elif self._script:
            answer = self._script.popleft()
        else:
            node = (body or {}).get("node_id", "")
            answer = PolicyAnswer.ok(
                {
                    "action": "stay",
                    "node_id": node,
                    "collected_vars": (body or {}).get("collected_vars", {}),
                    "finished": False,
                }
            )
        if answer.hang_secs:
            await asyncio.sleep(answer.hang_secs)
        if answer.raw is not None:
            return web.Response(body=answer.raw, content_type="text/html")
        return web.json_response(answer.body, status=answer.status)
