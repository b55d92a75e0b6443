"""Each answer in one write: uvicorn's protocol as the runner configures it, write by write.

The protocol runs on a transport that records each write it is given, so a
test reads exactly what would go to the socket and in how many system calls;
everything above it (uvicorn's parser and request cycle, the ASGI app) is real.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from uvicorn.server import ServerState

from teamrunner.serving.server import uvicorn_config

from conftest import runner_settings


class RecordingTransport(asyncio.Transport):
    """A transport that keeps every write as it was made."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def served(app: Any, request: bytes) -> tuple[RecordingTransport, ServerState]:
    """Feed ``request`` to the runner's protocol serving ``app``; its transport and its tasks."""
    config = uvicorn_config(app, runner_settings(), lifespan="off")
    config.load()
    state = ServerState()
    protocol = config.http_protocol_class(config=config, server_state=state, app_state={})
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(request)
    return transport, state


async def test_an_answer_goes_out_in_one_write_its_head_with_its_body() -> None:
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/health", health)])
    transport, state = await served(app, b"GET /health HTTP/1.1\r\nhost: localhost\r\n\r\n")
    await asyncio.gather(*state.tasks)

    [written] = transport.writes
    assert written.startswith(b"HTTP/1.1 200 OK\r\n")
    assert written.endswith(b"\r\n\r\n" + b'{"status":"ok"}')
    assert not transport.closed  # kept alive


async def test_a_head_whose_body_waits_goes_out_alone_at_the_next_turn() -> None:
    body_may_go = asyncio.Event()

    async def slow_body(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await body_may_go.wait()
        await send({"type": "http.response.body", "body": b"ok"})

    transport, state = await served(slow_body, b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n")
    for _ in range(10):  # a few turns of the loop: the app's, then the held head's
        if transport.writes:
            break
        await asyncio.sleep(0)
    head_alone = list(transport.writes)
    body_may_go.set()
    await asyncio.gather(*state.tasks)

    assert len(head_alone) == 1 and head_alone[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert head_alone[0].endswith(b"\r\n\r\n")
    assert transport.writes == [*head_alone, b"ok"]
