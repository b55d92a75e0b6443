"""The front's line to a worker, against a real server on a Unix socket scripted byte by byte.

Each test's worker reads a whole request and answers as its script says:
an answer in pieces, an answer cut off, no answer, a closing answer. What
is asserted is what the front gets back, and what the server saw: the
requests' bytes, and how many connections carried them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from teamrunner.workers.link import MAX_IDLE, WorkerGone, WorkerLink

# Answers a request (its head and body) on a connection, or returns False to close it.
Script = Callable[[bytes, bytes, asyncio.StreamWriter], Awaitable[bool]]

ANSWER_HEAD = b"HTTP/1.1 409 Conflict\r\ncontent-type: application/json\r\nRetry-After: 2\r\n"
ANSWER_BODY = b'{"status":"error","error":"already running","problems":[]}'


class ScriptedWorker:
    """A server on a Unix socket that answers every request by ``script``."""

    def __init__(self, path: str, script: Script) -> None:
        self.path = path
        self.script = script
        self.connections = 0
        self.requests: list[tuple[bytes, bytes]] = []
        self.ends: asyncio.Queue[None] = asyncio.Queue()  # one item per connection a client ended
        self.server: asyncio.Server | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.ends.put_nowait(None)
                    return
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                if not await self.script(head, body, writer):
                    return
        finally:
            writer.close()


@pytest.fixture
async def worker(tmp_path: Path) -> AsyncIterator[Callable[[Script], Awaitable[ScriptedWorker]]]:
    servers: list[asyncio.Server] = []

    async def start(script: Script) -> ScriptedWorker:
        scripted = ScriptedWorker(str(tmp_path / f"worker-{len(servers)}.sock"), script)
        server = await asyncio.start_unix_server(scripted.serve, scripted.path)
        servers.append(server)
        return scripted

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


def link_to(worker: ScriptedWorker) -> WorkerLink:
    return WorkerLink("worker 1", worker.path, keepalive_secs=120)


async def in_pieces(head: bytes, body: bytes, writer: asyncio.StreamWriter) -> bool:
    """The whole answer, chunked, in four writes, each on the wire before the next."""
    chunks = [ANSWER_BODY[:10], ANSWER_BODY[10:]]
    pieces = [ANSWER_HEAD + b"transfer-encoding: chunked\r\n\r\n"]
    pieces += [b"%x\r\n%s\r\n" % (len(c), c) for c in chunks] + [b"0\r\n\r\n"]
    for piece in pieces:
        writer.write(piece)
        await writer.drain()
    return True


async def test_an_answer_split_in_pieces_comes_back_whole_and_the_connection_is_kept(
    worker: Callable[[Script], Awaitable[ScriptedWorker]],
) -> None:
    scripted = await worker(in_pieces)
    link = link_to(scripted)
    body = b'{"id": "call-1"}'

    first = await link.request(
        "POST", "/run", body=body, content_type="application/json", timeout=5
    )
    second = await link.request("POST", "/stop?id=call-1", timeout=5)
    await link.close()

    assert first.status == 409 and first.body == ANSWER_BODY
    assert first.headers["content-type"] == "application/json"
    assert first.headers["retry-after"] == "2"  # names read in lower case
    assert second == first
    # One connection carried both, and each request's bytes are what the front was given.
    assert scripted.connections == 1
    (run_head, run_body), (stop_head, stop_body) = scripted.requests
    assert run_head.startswith(b"POST /run HTTP/1.1\r\n")
    assert b"content-type: application/json\r\n" in run_head
    assert run_body == body
    assert stop_head.startswith(b"POST /stop?id=call-1 HTTP/1.1\r\n")
    assert b"content-length: 0\r\n" in stop_head and stop_body == b""


async def test_a_burst_opens_a_connection_per_request_and_keeps_a_few(
    worker: Callable[[Script], Awaitable[ScriptedWorker]],
) -> None:
    scripted = await worker(in_pieces)
    link = link_to(scripted)
    burst = MAX_IDLE + 4

    answers = await asyncio.gather(
        *(link.request("GET", "/calls", timeout=5) for _ in range(burst))
    )
    for _ in range(burst - MAX_IDLE):  # the ones beyond MAX_IDLE are closed
        await asyncio.wait_for(scripted.ends.get(), 5)
    for _ in range(MAX_IDLE):  # the kept ones carry the next requests, one after another
        await link.request("GET", "/calls", timeout=5)
    await link.close()

    assert all(a.status == 409 for a in answers)
    assert scripted.connections == burst  # the kept ones carried the requests after


async def test_a_worker_that_closes_mid_answer_is_gone_and_the_next_request_works(
    worker: Callable[[Script], Awaitable[ScriptedWorker]],
) -> None:
    async def dies_once(head: bytes, body: bytes, writer: asyncio.StreamWriter) -> bool:
        if len(scripted.requests) == 1:
            writer.write(ANSWER_HEAD + b"content-length: 100\r\n\r\n" + ANSWER_BODY[:5])
            await writer.drain()
            return False  # closed with the answer half sent
        return await in_pieces(head, body, writer)

    scripted = await worker(dies_once)
    link = link_to(scripted)

    with pytest.raises(
        WorkerGone, match="worker 1: the connection closed before the whole"
    ) as gone:
        await link.request("POST", "/run", body=b"{}", timeout=5)
    assert gone.value.reached  # the worker had the request: it may have acted on it
    answer = await link.request("POST", "/run", body=b"{}", timeout=5)
    await link.close()

    assert answer.status == 409 and answer.body == ANSWER_BODY
    assert scripted.connections == 2


async def test_a_worker_silent_past_the_time_is_gone_and_its_connection_closed(
    worker: Callable[[Script], Awaitable[ScriptedWorker]],
) -> None:
    async def silent(head: bytes, body: bytes, writer: asyncio.StreamWriter) -> bool:
        return True  # reads the next request, never answering this one

    scripted = await worker(silent)
    link = link_to(scripted)

    with pytest.raises(WorkerGone, match=r"worker 1 did not answer within 0\.2s"):
        await link.request("GET", "/calls", timeout=0.2)
    # A late answer on that connection could be taken for the next request's: it is closed.
    await asyncio.wait_for(scripted.ends.get(), 5)


async def test_an_answer_that_closes_the_connection_is_not_followed_on_it(
    worker: Callable[[Script], Awaitable[ScriptedWorker]],
) -> None:
    async def closing(head: bytes, body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        return True  # the client, told so, ends the connection

    scripted = await worker(closing)
    link = link_to(scripted)

    first = await link.request("GET", "/health", timeout=5)
    second = await link.request("GET", "/health", timeout=5)
    await link.close()

    assert first.body == second.body == b"ok"
    assert scripted.connections == 2


async def test_no_worker_on_the_socket_is_gone_and_the_request_never_reached_it(
    tmp_path: Path,
) -> None:
    link = WorkerLink("worker 3", str(tmp_path / "nobody.sock"), keepalive_secs=120)

    with pytest.raises(WorkerGone, match="worker 3: could not connect") as gone:
        await link.request("GET", "/ready", timeout=5)
    assert not gone.value.reached
