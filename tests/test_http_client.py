"""The one HTTP client shape: answers read whole, each failure a typed error naming the peer.

Each test runs the real client against a real server on loopback, or against
nothing at all.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from teamrunner.errors import PeerFailed, PeerTimeout, PeerUnreachable
from teamrunner.http_client import PeerClient


async def answer(request: web.Request) -> web.Response:
    body = await request.read()
    return web.Response(
        status=503,
        body=b"echo:" + body,
        headers={"Retry-After": "2"},
        content_type="application/json",
        charset="latin-1",
    )


async def never(request: web.Request) -> web.Response:
    await asyncio.Event().wait()  # answers nothing until the client gives up
    raise AssertionError("unreachable")


def peer_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/answer", answer)
    app.router.add_post("/never", never)
    return app


@pytest.fixture
async def peer() -> AsyncIterator[str]:
    """A real HTTP server on loopback; its base URL."""
    runner = web.AppRunner(peer_app(), handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}"
    await runner.cleanup()


async def test_an_answer_is_read_whole_with_its_headers_in_any_case(peer: str) -> None:
    client = PeerClient("a peer", headers={"Authorization": "Bearer t"})
    answer = await client.request("POST", f"{peer}/answer", data=b"\xe9", timeout=5)
    await client.close()
    assert (answer.status, answer.body) == (503, b"echo:\xe9")
    assert answer.headers["retry-after"] == answer.headers["Retry-After"] == "2"
    assert answer.content_type == "application/json"
    assert answer.text() == "echo:é"  # in the charset the answer names


async def test_a_peer_that_does_not_answer_in_time_is_a_timeout_naming_it(peer: str) -> None:
    client = PeerClient("remote policy")
    with pytest.raises(PeerTimeout) as failed:
        await client.request("POST", f"{peer}/never", json={}, timeout=0.2)
    await client.close()
    assert str(failed.value) == "remote policy: no answer within 0.2s"
    assert isinstance(failed.value.cause, TimeoutError)


async def test_nothing_listening_is_unreachable_without_quoting_the_url() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    client = PeerClient("pipecat-manager")
    with pytest.raises(PeerUnreachable) as failed:
        await client.request("POST", f"http://user:pw@127.0.0.1:{port}/x", json={}, timeout=5)
    await client.close()
    assert str(failed.value) == "pipecat-manager: could not connect"
    assert str(port) not in failed.value.reason


async def test_a_connection_dropped_before_the_answer_is_a_failure_naming_its_kind() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = PeerClient("remote policy")
    with pytest.raises(PeerFailed) as failed:
        await client.request("GET", f"http://127.0.0.1:{port}/health", timeout=5)
    await client.close()
    server.close()
    await server.wait_closed()
    assert str(failed.value) == "remote policy: the connection failed: ServerDisconnectedError"
