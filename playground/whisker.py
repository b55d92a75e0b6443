"""pipecat's Whisker debugger on the playground's calls, for designers who use it.

``Whisker`` serves pipecat's ``WhiskerServer`` (``pipecat-ai-whisker``) on a
websocket while a command runs, on a ``WorkerRunner`` of its own as pipecat
runs it, and gives each call an observer of it (``observer``) that sends
the call's frames there; the Whisker UI connects to ``ws://localhost:9090``
(``RUNNER_WHISKER_PORT``). Frames sent before the UI connects are kept and
sent when it does, and the session is also recorded to a ``.whisk`` file
beside the call's transcript, to load into Whisker after the call.

Off unless asked for (``--whisker``, or ``RUNNER_WHISKER=1``); the runner
itself never imports this module or the package, so production cannot
serve it. The package comes with the ``design`` extra, which the production
image does not install.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from pipecat.observers.base_observer import BaseObserver
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.workers.runner import WorkerRunner
    from pipecat_whisker import WhiskerServer

DEFAULT_PORT = 9090


class WhiskerError(Exception):
    """Whisker cannot be served as asked (not installed, or a port that is no port)."""


def wanted(flag: bool) -> bool:
    """Whether Whisker is asked for: the command's flag, or ``RUNNER_WHISKER=1``."""
    return flag or os.environ.get("RUNNER_WHISKER", "").strip().lower() in ("1", "true", "yes")


def port_from_env() -> int:
    """``RUNNER_WHISKER_PORT``, or 9090, Whisker's own default.

    Raises:
        WhiskerError: the variable holds no port number.
    """
    value = os.environ.get("RUNNER_WHISKER_PORT", "").strip()
    if not value:
        return DEFAULT_PORT
    if not value.isdigit():
        raise WhiskerError(f"RUNNER_WHISKER_PORT has value {value!r}: not a port number")
    return int(value)


class Whisker:
    """pipecat's Whisker server, serving while the ``async with`` block runs.

    Args:
        recording: Where to record the session for later replay (None: no file).
        host: Where the websocket listens.
        port: Its port.
    """

    def __init__(self, recording: Path | None, *, host: str = "localhost", port: int) -> None:
        self.url = f"ws://{host}:{port}"
        self._recording = recording
        self._host, self._port = host, port
        self._server: WhiskerServer | None = None
        self._runner: WorkerRunner | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        from pipecat.workers.runner import WorkerRunner

        try:
            from pipecat_whisker import WhiskerServer
        except ImportError as e:
            raise WhiskerError(
                "Whisker is not installed: pip install -e '.[design]' (or pipecat-ai-whisker)"
            ) from e

        if self._recording is not None:
            self._recording.parent.mkdir(parents=True, exist_ok=True)
        self._server = WhiskerServer(
            host=self._host,
            port=self._port,
            file_name=str(self._recording) if self._recording is not None else None,
        )
        self._runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        await self._runner.add_workers(self._server)
        ready = asyncio.Event()

        @self._runner.event_handler("on_ready")
        async def on_ready(runner: WorkerRunner) -> None:
            ready.set()

        self._task = asyncio.get_running_loop().create_task(self._runner.run(auto_end=False))
        waiter = asyncio.ensure_future(ready.wait())
        await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED, timeout=10)
        waiter.cancel()
        if self._task.done():
            self._task.result()  # it failed to start: say why
        return self

    def observer(self, worker: PipelineWorker) -> BaseObserver:
        """An observer that sends ``worker``'s frames to Whisker."""
        assert self._server is not None, "use Whisker in an async with block"
        return self._server.create_observer(worker)

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cancel("the command is done")
        if self._task is not None:
            await self._task
