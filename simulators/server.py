"""The common shape of every simulator: a real aiohttp server on loopback.

A simulator stands where a cloud provider or pipecat-manager would be, so the
runner's real client code (pipecat's services, its websocket transports, the
OpenAI SDK) talks to it over a real socket. This module holds only the server
plumbing they share: start on an ephemeral port, stop, wait for something to
have happened. What each one speaks lives in its own module.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Self

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
        self._changed = asyncio.Condition()
        self.connections_opened = 0
        self.active_connections = 0

    def build_app(self) -> web.Application:
        """Return the application to serve; subclasses add their routes."""
        raise NotImplementedError

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on ``host:port`` (port 0 picks a free one)."""
        app = self.build_app()
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=0.5
        )
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, host, port)
        await self._site.start()
        self._host, self._port = self._runner.addresses[0][:2]

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
        return f"http://{self.address}"

    @property
    def ws_url(self) -> str:
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
