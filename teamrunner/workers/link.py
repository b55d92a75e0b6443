"""The front's line to one worker: HTTP/1.1 over the worker's Unix socket, its connections kept.

The front speaks to a worker with the runner's public API and nothing else
(``process.py``), so this is an HTTP client, but one cut to that single
peer: every request is one write (its head and body together) on a
connection kept open from the last, and its answer is read whole by
httptools' parser (the C parser uvicorn reads requests with) as it arrives,
the waiting request woken once, when the last byte is in. It is not
``teamrunner.http_client.PeerClient``, the runner's client for peers
across a network: aiohttp's request and answer objects were half of the
front's CPU for each ``/run`` it passes on (BENCHMARKS.md, section 3), and a
worker on a socket of the front's own needs none of what they offer
(redirects, cookies, proxies, TLS, encodings).

A request takes an idle connection or opens one; many can be in flight at
once, each on its own connection, and a few stay open for the next
requests (``MAX_IDLE``). A connection the worker closed, or
answered with ``Connection: close``, is dropped; so is one idle for half the
worker's keep-alive, before the worker would close it under a request. Every
way a request can fail (no connection, the connection lost before the whole
answer, no answer within its time) is one ``WorkerGone``; the connection it
was on is closed, and the next request opens a new one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httptools

# Idle connections kept to one worker: enough for the front's own questions and a burst
# of calls; a connection beyond them is closed once its answer is in.
MAX_IDLE = 8


class WorkerGone(Exception):
    """The worker ended, or stopped answering, before it answered a request.

    Attributes:
        reached: Whether the request may have reached the worker: False when no
            connection to it could even be made (it had ended before the request).
    """

    def __init__(self, reason: str, *, reached: bool = True) -> None:
        super().__init__(reason)
        self.reached = reached


@dataclass(frozen=True)
class Answer:
    """A worker's answer, read whole: its status, body and headers (names in lower case)."""

    status: int
    body: bytes
    headers: Mapping[str, str]


class _Connection(asyncio.Protocol):
    """One kept-alive connection to the worker, carrying one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = time.monotonic()
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[Answer] | None = None
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []

    @property
    def busy(self) -> bool:
        """Whether a request on it waits for its answer still."""
        return self._answer is not None

    def send(self, request: bytes, body: bytes) -> asyncio.Future[Answer]:
        """Write a request; the future is its answer, or ``WorkerGone``."""
        assert self.transport is not None and self._answer is None
        self._answer = asyncio.get_running_loop().create_future()
        self._headers = {}
        self._body = []
        if body:
            self.transport.writelines((request, body))
        else:
            self.transport.write(request)
        return self._answer

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # asyncio's protocol callbacks.

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(f"its answer is not HTTP the front can read ({e})")
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail("the connection closed before the whole answer came")

    # httptools' parser callbacks.

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        answer, self._answer = self._answer, None
        if not self._parser.should_keep_alive():
            self.close()
        self.idle_since = time.monotonic()
        if answer is not None and not answer.done():
            status = self._parser.get_status_code()
            answer.set_result(Answer(status, b"".join(self._body), self._headers))

    def _fail(self, reason: str) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_exception(WorkerGone(reason))


class WorkerLink:
    """Requests to one worker over its Unix socket, on connections kept between them.

    Args:
        name: Names the worker in every error (``worker 1``).
        socket_path: The worker's socket.
        keepalive_secs: How long the worker keeps an idle connection open
            (``RUNNER_KEEPALIVE_SECS``, the workers' uvicorn's setting).
    """

    def __init__(self, name: str, socket_path: str, *, keepalive_secs: float) -> None:
        self.name = name
        self._path = socket_path
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._max_idle_secs = keepalive_secs / 2

    async def request(
        self,
        method: str,
        target: str,
        *,
        timeout: float,
        body: bytes = b"",
        content_type: str | None = None,
    ) -> Answer:
        """Send ``method target`` and read the whole answer within ``timeout`` seconds.

        Raises:
            WorkerGone: no whole answer came (no connection, the connection
                lost, or ``timeout`` passed).
        """
        head = f"{method} {target} HTTP/1.1\r\nhost: worker\r\n"
        if content_type is not None:
            head += f"content-type: {content_type}\r\n"
        if body or method == "POST":
            head += f"content-length: {len(body)}\r\n"
        connection: _Connection | None = None
        try:
            async with asyncio.timeout(timeout):
                connection = await self._connection()
                answer = await connection.send((head + "\r\n").encode("latin-1"), body)
        except TimeoutError:
            raise WorkerGone(f"{self.name} did not answer within {timeout:g}s") from None
        except OSError as e:
            raise WorkerGone(f"{self.name}: could not connect: {e}", reached=False) from e
        except WorkerGone as e:
            raise WorkerGone(f"{self.name}: {e}", reached=e.reached) from e
        finally:
            if connection is not None:
                self._release(connection)
        return answer

    async def close(self) -> None:
        """Close every connection; a later request opens a new one."""
        for connection in [*self._idle, *self._busy]:
            connection.close()
        self._idle.clear()
        self._busy.clear()

    async def _connection(self) -> _Connection:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < self._max_idle_secs:
                self._busy.add(connection)
                return connection
            connection.close()
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_unix_connection(_Connection, self._path)
        self._busy.add(connection)
        return connection

    def _release(self, connection: _Connection) -> None:
        """Back to the idle ones if it finished its answer and stays open; closed otherwise."""
        self._busy.discard(connection)
        # Closed, given up on mid-answer (its bytes are not the next request's), or one too many.
        if connection.closed or connection.busy or len(self._idle) >= MAX_IDLE:
            connection.close()
        else:
            self._idle.append(connection)
