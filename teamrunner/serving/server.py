"""uvicorn's server, with SIGTERM starting a drain, and its configuration from the settings.

On the first SIGTERM or SIGINT the server keeps serving (``/stop`` must
still reach the calls that are ending, and ``/ready`` must say no) and runs
the application's drain; when the drain is over it closes as uvicorn does.
A second signal asks the drain to end every call at once. uvicorn re-raises
the signals it caught once it has closed, which would end the process by
the signal instead of with status 0; this server does not record them.

``HURRY_SIGNAL`` ends every call at once, draining first if it was not: a
pool's front sends it to its workers to pass on a second signal. Two
SIGTERMs sent one right after the other can reach a process as one (the
kernel keeps one of each signal pending), and a worker that had not yet
handled the first drained its calls for ``RUNNER_DRAIN_SECS`` instead of
ending them.

``RunnerHTTPServer.run()`` (uvicorn's) runs it on the event loop uvicorn
picks: uvloop, which ``uvicorn[standard]`` installs. Every call of the
process runs on that loop, and uvloop's C event loop and socket transports
cost each call's audio frames about a fifth less CPU than asyncio's own
(BENCHMARKS.md, section 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn
from loguru import logger

from teamrunner.config import Settings
from teamrunner.serving.protocol import header_timeout_protocol

# Ends every call at once (see the module's docstring); Kubernetes and Docker never send it.
HURRY_SIGNAL = signal.SIGUSR2


def uvicorn_config(app: Any, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """uvicorn's configuration for the runner's application under ``settings``."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "warning",
        "lifespan": "on",
        # uvloop when installed (it is, with uvicorn[standard]); asyncio's loop otherwise.
        "loop": "auto",
        # Longer than Go's idle pool (90 s): Go never sends on a connection being closed.
        "timeout_keep_alive": settings.keepalive_secs,
        "http": header_timeout_protocol(settings.header_timeout_secs),
        # The drain decides how long calls may go on; connections then close at once.
        "timeout_graceful_shutdown": 5,
    }
    options.update(overrides)
    return uvicorn.Config(app, **options)


class Drain:
    """What the application does when told to shut down: ``start`` once, ``hurry`` after."""

    def __init__(self, start: Callable[[], Awaitable[None]], hurry: Callable[[], None]) -> None:
        self.start = start
        self.hurry = hurry


class RunnerHTTPServer(uvicorn.Server):
    """uvicorn, draining the application's calls before it closes on a signal.

    Args:
        config: From :func:`uvicorn_config`.
        drain: Called for the application's drain; None closes at once like uvicorn.
    """

    def __init__(self, config: uvicorn.Config, drain: Callable[[], Drain | None]) -> None:
        super().__init__(config)
        self._drain = drain
        self._draining: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's signal handlers, and ``HURRY_SIGNAL``'s."""
        with super().capture_signals():
            if threading.current_thread() is not threading.main_thread():
                yield  # signals reach the main thread alone, as uvicorn says
                return
            previous = signal.signal(HURRY_SIGNAL, self.handle_exit)
            try:
                yield
            finally:
                signal.signal(HURRY_SIGNAL, previous)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Called by the signal handler, between two bytecodes of whatever runs:
        # hand the work to the event loop.
        if self._loop is None:
            self.should_exit = True
            return
        self._loop.call_soon_threadsafe(self._on_signal, signal.Signals(sig))

    def _on_signal(self, sig: signal.Signals) -> None:
        drain = self._drain()
        if drain is None:
            self.should_exit = True
            return
        if self._draining is None:
            logger.info(f"{sig.name}: draining; /ready and /run now answer 503")
            self._draining = asyncio.get_running_loop().create_task(self._drain_then_exit(drain))
            if sig != HURRY_SIGNAL:
                return
        logger.warning(
            f"{sig.name}{'' if sig == HURRY_SIGNAL else ' again'}: ending every call now"
        )
        drain.hurry()

    async def _drain_then_exit(self, drain: Drain) -> None:
        try:
            await drain.start()
        finally:
            self.should_exit = True
