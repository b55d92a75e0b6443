"""The common shape of every simulator: a real aiohttp server on loopback.

A simulator stands where a cloud provider or pipecat-manager would be, so the
runner's real client code (pipecat's services, its websocket transports, the
OpenAI SDK) talks to it over a real socket. This module holds only the server
plumbing they share: start on an ephemeral port, stop, wait for something to
have happened (``Simulator``); for the providers that speak one websocket,
count, refuse and drop its connections (``ProviderSimulator``); serve from the
command line until Ctrl-C (``serve_until_interrupted``). What each one speaks
lives in its own module.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Callable
from typing import Generic, Protocol, Self, TypeVar

from aiohttp import web


class Simulator:
    """Base class: an aiohttp application served on 127.0.0.1.

    Subclasses add their routes in ``build_app`` and record what they receive.
    ``changed`` is notified whenever a subclass records something, so tests can
    await a condition instead of sleeping.
    """

    name = "simulator"

    def __init__(self) -> None:
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._host = "127.0.0.1"
        self._port = 0
        self._tls = False
        #: How long the server keeps an idle HTTP connection open (aiohttp's default).
        self.keepalive_secs = 75.0
        self._changed = asyncio.Condition()
        self.connections_opened = 0
        self.active_connections = 0

    def build_app(self) -> web.Application:
        """Return the application to serve; subclasses add their routes."""
        raise NotImplementedError

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
    ) -> None:
        """Serve on ``host:port`` (port 0 picks a free one), over TLS with ``tls`` if given.

        Over TLS the URLs name ``localhost``, the name the simulators' certificate
        is for (``simulators.tls``).
        """
        app = self.build_app()
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=0.5,
            keepalive_timeout=self.keepalive_secs,
        )
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, host, port, ssl_context=tls)
        await self._site.start()
        self._host, self._port = self._runner.addresses[0][:2]
        self._tls = tls is not None

    async def stop(self) -> None:
        """Stop serving and close every open connection."""
        await self.close_connections()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def close_connections(self) -> None:
        """Close the open websocket connections; subclasses that hold any override this."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        """``host:port``, the form pipecat-manager's ``PIPECATCALL_ADDRESS`` takes."""
        return f"{self._host}:{self._port}"

    @property
    def http_url(self) -> str:
        if self._tls:
            return f"https://localhost:{self._port}"
        return f"http://{self.address}"

    @property
    def ws_url(self) -> str:
        if self._tls:
            return f"wss://localhost:{self._port}"
        return f"ws://{self.address}"

    async def notify(self) -> None:
        """Wake everyone waiting in ``wait_until``; call after recording anything."""
        async with self._changed:
            self._changed.notify_all()

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until ``predicate()`` is true, re-checking whenever something is recorded.

        Raises:
            TimeoutError: naming this simulator, when ``timeout`` passes first.
        """
        deadline = time.monotonic() + timeout
        async with self._changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self.name} simulator: condition not met in {timeout}s")
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    if not predicate():
                        raise TimeoutError(
                            f"{self.name} simulator: condition not met in {timeout}s"
                        ) from None


class Connection(Protocol):
    """What a provider simulator records about one client connection."""

    closed: bool


ConnT = TypeVar("ConnT", bound=Connection)


class ProviderSimulator(Simulator, Generic[ConnT]):
    """A provider's websocket service: connections counted, refusable, droppable, reported.

    A subclass's websocket handler answers ``refusal()`` when there is one,
    and holds each accepted socket inside ``connection()``, which keeps its
    record in ``connections``.

    Args:
        on_event: Called with one readable line per notable event (the CLI prints them).
    """

    def __init__(self, *, on_event: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.on_event = on_event
        #: When True, handshakes are answered with HTTP ``refusal_status`` instead.
        self.refuse_connections = False
        self.refusal_status = 503
        self.connections: list[ConnT] = []
        self._sockets: set[web.WebSocketResponse] = set()

    def report(self, event: str) -> None:
        """Pass one line about what happened to ``on_event``, if set."""
        if self.on_event is not None:
            self.on_event(event)

    def refusal(self) -> web.Response | None:
        """The answer to a handshake while ``refuse_connections`` is set; None otherwise."""
        if not self.refuse_connections:
            return None
        self.report(f"refused a connection with HTTP {self.refusal_status}")
        return web.Response(status=self.refusal_status, text="simulated refusal")

    @contextlib.asynccontextmanager
    async def connection(
        self, ws: web.WebSocketResponse, conn: ConnT, opened: str
    ) -> AsyncIterator[None]:
        """Hold ``ws`` open while the block runs: ``conn`` is recorded, then marked closed.

        ``opened`` is reported when it opens, and every change wakes the waiters.
        """
        self.connections.append(conn)
        self.connections_opened += 1
        self.active_connections += 1
        self._sockets.add(ws)
        self.report(opened)
        await self.notify()
        try:
            yield
        finally:
            self._sockets.discard(ws)
            conn.closed = True
            self.active_connections -= 1
            self.report("connection closed")
            await self.notify()

    async def close_connections(self, code: int = 1011) -> None:
        """Drop every open connection, as a provider failing mid-call would."""
        for ws in list(self._sockets):
            await ws.close(code=code, message=b"simulated provider failure")


def serve_until_interrupted(
    sim: Simulator, host: str, port: int, banner: Callable[[], str]
) -> None:
    """Serve ``sim`` on ``host:port`` until Ctrl-C, printing ``banner()`` once it listens."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(sim, host, port, banner))


def print_event(event: str) -> None:
    """An ``on_event`` for the command line: one flushed line per event."""
    print(event, flush=True)


async def _serve(sim: Simulator, host: str, port: int, banner: Callable[[], str]) -> None:
    await sim.start(host, port)
    print(banner(), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await sim.stop()
