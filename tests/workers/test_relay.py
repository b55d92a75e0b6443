"""The front's ``/run`` and ``/stop``: what Go reads from a pool is what a single runner says.

Each test starts ``python main.py`` with two workers and speaks to its front
as Go does, over one kept-alive connection whose every answer is read off
the socket: an answer that closed the connection would end the test there.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from playground.server import RunnerServer

from conftest import OPENAI_KEY
from runner_process import RunnerProcess

# A single AI's text call: it comes up once both its sockets to pipecat-manager are open.
TEXT_CALL = {
    "id": "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3",
    "llm_type": "openai.gpt-4o",
    "llm_key": OPENAI_KEY,
    "llm_messages": [{"role": "system", "content": "Greet the caller."}],
}
# Headers the answering server sets itself, whoever answered.
SERVER_HEADERS = {"date", "server"}


class Connection:
    """One HTTP/1.1 connection to a server, each answer read whole off the socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        host, _, port = url.removeprefix("http://").partition(":")
        return cls(*await asyncio.open_connection(host, int(port)))

    def send(self, method: str, target: str, body: bytes = b"", *, json: bool = True) -> None:
        head = f"{method} {target} HTTP/1.1\r\nhost: localhost\r\n"
        if json:
            head += "content-type: application/json\r\n"
        head += f"content-length: {len(body)}\r\n\r\n"
        self._writer.write(head.encode() + body)

    async def answer(self, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
        """The next answer: its status, its headers (but the server's own), its body."""
        async with asyncio.timeout(timeout):
            head = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            status_line, *lines = head.removesuffix("\r\n\r\n").split("\r\n")
            headers = {}
            for line in lines:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await self._reader.readexactly(int(headers["content-length"]))
        assert "close" not in headers.get("connection", ""), "the answer closed the connection"
        kept = {k: v for k, v in headers.items() if k not in SERVER_HEADERS}
        return int(status_line.split()[1]), kept, body

    async def exchange(
        self, method: str, target: str, body: bytes = b"", *, json: bool = True
    ) -> tuple[int, dict[str, str], bytes]:
        self.send(method, target, body, json=json)
        return await self.answer()

    def close(self) -> None:
        self._writer.close()


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[RunnerProcess]:
    """A front and two workers whose pipecat-manager is nowhere: for answers that need none."""
    process = RunnerProcess({"RUNNER_WORKERS": "2", "RUNNER_PRELOAD_MODELS": ""}, tmp_path).start()
    yield process
    process.stop()


@pytest.fixture
async def connection(pool: RunnerProcess) -> AsyncIterator[Connection]:
    connection = await Connection.open(pool.url)
    yield connection
    connection.close()


# Requests a runner refuses, each sent on to a worker by the front or answered by it.
REFUSED = [
    ("POST", "/run", b"{not json", True),
    ("POST", "/run", b'{"id": "call-1"}', False),  # no Content-Type
    ("POST", "/run", b'{"id": "call-1", "llm_type": 7}', True),
    ("POST", "/run", b"[]", True),
    ("GET", "/run", b"", False),
    ("POST", "/stop?id=call-1", b"", False),
    ("POST", "/stop?id=../x", b"", False),
    ("POST", "/stop", b"", False),
]


async def test_refused_requests_get_a_single_runners_answers_and_the_connection_goes_on(
    connection: Connection, bare_runner: RunnerServer
) -> None:
    single = await Connection.open(bare_runner.url)
    try:
        for method, target, body, is_json in REFUSED:
            from_front = await connection.exchange(method, target, body, json=is_json)
            from_single = await single.exchange(method, target, body, json=is_json)

            assert from_front == from_single, (method, target, body)
            assert 400 <= from_front[0] < 500 and from_front[2].startswith(b'{"status":"error"')
    finally:
        single.close()


@pytest.fixture
async def silent_manager() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A pipecat-manager that accepts a call's sockets and never answers on them."""
    dialled = asyncio.Event()
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        dialled.set()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"127.0.0.1:{port}", dialled
    for writer in held:
        writer.close()
    server.close()


async def test_a_worker_that_dies_under_a_run_is_a_500_and_the_next_request_goes_on(
    silent_manager: tuple[str, asyncio.Event], tmp_path: Path, http: httpx.AsyncClient
) -> None:
    address, dialled = silent_manager
    environment = {
        "RUNNER_WORKERS": "2",
        "RUNNER_PRELOAD_MODELS": "",
        "PIPECATCALL_ADDRESS": address,
        "RUNNER_LOG_LEVEL": "INFO",
    }
    pool = RunnerProcess(environment, tmp_path).start()
    connection = await Connection.open(pool.url)
    try:
        connection.send("POST", "/run", json.dumps(TEXT_CALL).encode())
        await asyncio.wait_for(dialled.wait(), 30)  # the call is starting on a worker
        workers = (await http.get(f"{pool.url}/health")).json()["workers"]
        [starting] = [w for w in workers if w["calls"] == 1]
        os.kill(starting["pid"], signal.SIGKILL)

        status, headers, body = await connection.answer()
        refused = await connection.exchange("POST", "/run", b"{not json")
        listed = await connection.exchange("GET", "/calls")
    finally:
        connection.close()
        pool.stop()

    assert status == 500 and headers["content-type"] == "application/json"
    assert httpx.Response(500, content=body).json() == {
        "status": "error",
        "error": "call could not start: runner worker: "
        f"worker {starting['index']} ended before the call came up",
        "problems": [
            {
                "field": "runner worker",
                "message": f"worker {starting['index']} ended before the call came up",
            }
        ],
    }
    # The other worker answers the next request, on the same connection.
    assert refused[0] == 422 and b"not JSON" in refused[2]
    assert listed[0] == 200 and listed[2] == b'{"calls":[]}'
