"""Serving the runner's HTTP API from inside another program's event loop.

``python main.py`` is how the runner is deployed. The demo and the tests
also need a real runner on a real port, started and stopped from their own
code; ``RunnerServer`` is that: uvicorn serving ``main``'s application on
127.0.0.1, on an ephemeral port unless told otherwise. (The benchmarks run
``python main.py`` as a process of its own instead, as deployed.)

The embedded server leaves signals alone. uvicorn's own ``Server`` takes
SIGINT and SIGTERM for itself while it serves and, on Ctrl-C, shuts only
itself down and re-raises the signal once it has finished, so the program
around it cannot end its own work in its own order. Whoever embeds the
runner handles signals (``interrupt.py`` does for the ``teamrunner``
command) and calls ``stop``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self

import uvicorn
from fastapi import FastAPI

from main import CallObservers, create_app
from teamrunner.config import Settings
from teamrunner.lifecycle.registry import SessionRegistry
from teamrunner.serving.server import uvicorn_config

# A request still being served when the runner is stopped (a /run whose caller
# was interrupted) is cancelled after this long instead of awaited to its end.
GRACEFUL_SHUTDOWN_SECS = 1


class _EmbeddedServer(uvicorn.Server):
    """uvicorn's server, without its signal handlers: the embedding program owns signals."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class RunnerServer:
    """The runner, served in the background of the current event loop.

    ``observers`` are added to each call it runs (``main.CallObservers``).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        configure_logs: bool = False,
        observers: CallObservers | None = None,
    ) -> None:
        self.settings = settings
        self.app: FastAPI = create_app(settings, configure_logs=configure_logs, observers=observers)
        # Served as main.py serves it (keep-alive, header deadline), but signals stay ours.
        self._server = _EmbeddedServer(
            uvicorn_config(self.app, settings, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECS)
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._server.serve())
        try:
            while not self._server.started:
                if self._task.done():
                    self._task.result()
                    raise RuntimeError("the runner's HTTP server stopped before it started")
                await asyncio.sleep(0.01)
            # Ready for a call at full speed, as /ready says: the call stack and models loaded.
            await self.app.state.warmup.wait()
        except BaseException:
            # Failed or cancelled while starting: no ``__aexit__`` follows, so stop here.
            self._server.should_exit = True
            await asyncio.wait({self._task})
            self._task = None
            raise

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            await self._task
            self._task = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        return self._server.servers[0].sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    @property
    def sessions(self) -> SessionRegistry:
        """The running calls (for tests and tools that inspect them)."""
        return self.app.state.sessions
