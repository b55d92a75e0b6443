"""An ASGI middleware bounding a request's body: its size and the time it takes to arrive.

A body is read whole before the application sees it (the runner's bodies
are JSON it parses whole anyway). One past ``max_body_bytes`` is refused with
413 as soon as its ``Content-Length`` says so, or as soon as that many bytes
have arrived, so a huge body costs neither memory nor the event loop that
every call shares. The whole body must have arrived within
``body_timeout_secs`` of the request's headers, however it is split: one
sent a byte at a time is refused with 408 at that deadline, not held for as
long as each byte comes before the last one's timeout. Both answers have
the runner's error shape, and close the connection: the rest of the body is
never read, so nothing more could be read from it.
"""

from __future__ import annotations

import asyncio

from teamrunner.serving.answers import (
    ASGIApp,
    Message,
    OnRefused,
    Receive,
    Scope,
    Send,
    send_error,
)


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class BodyLimits:
    """Refuses bodies that are too large or too slow, before the application runs."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        body_timeout_secs: float,
        on_refused: OnRefused,
    ) -> None:
        self._app = app
        self._max = max_body_bytes
        self._timeout = body_timeout_secs
        self._on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            self._check_declared_length(scope)
            body = await self._read_body(receive)
        except _Refused as refused:
            self._on_refused(scope["method"], scope["path"], refused.status, refused.reason)
            await send_error(send, refused.status, refused.reason, close=True)
            return
        await self._app(scope, _replay(body, receive), send)

    def _check_declared_length(self, scope: Scope) -> None:
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self._max:
                raise _Refused(413, self._too_large())

    async def _read_body(self, receive: Receive) -> bytes:
        parts: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self._timeout):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return b"".join(parts)  # the client went away; the app sees no body
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self._max:
                        raise _Refused(413, self._too_large())
                    parts.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(parts)
        except TimeoutError:
            raise _Refused(
                408,
                f"the request body did not arrive within {self._timeout:g}s "
                "(RUNNER_BODY_TIMEOUT_SECS on the runner)",
            ) from None

    def _too_large(self) -> str:
        return (
            f"the request body is larger than {self._max} bytes "
            "(RUNNER_MAX_BODY_BYTES on the runner)"
        )


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the buffered body once, then waits on the real one."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
