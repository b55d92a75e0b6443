"""One worker process: started by the front, watched until it ends, and spoken to over HTTP.

A worker is forked from a template (``multiprocessing``'s forkserver start
method): an interpreter the front starts once, which imports the worker's
module and the call stack (``template.worker_modules``) and then forks every
worker from there, the first ones and their replacements. A worker
thus starts with pipecat and the providers' SDKs already imported (two of
the two and a half seconds a fresh interpreter takes) and loads only its
speech models; and on two cores the workers no longer import everything
twice at once beside the front. The template has run no event loop, opened
no socket and started no thread, so a worker inherits none
(``tests/workers/test_workers.py`` checks that importing the call stack
starts no thread and that no metric is counted before the fork); each
worker makes its own after the fork, as a fresh interpreter would.

A worker serves the runner's own application, calls and all, on a Unix
socket only the front can reach (the socket's directory is the front's, mode
0700). The front speaks to it with the runner's public API (``/run``,
``/stop``, ``/calls``, ``/health``) over that socket, on connections it keeps
(``link.py``): there is no second protocol.

The front learns that a worker ended from the process's sentinel (the
template reports the exit, however it exits), watched by the front's event
loop. The worker, for its part, leaves the front's process group, so a
Ctrl-C in a terminal reaches the front alone, which then tells each worker
to drain; and drains itself should the front die without telling it: it
watches its own sentinel of the front (``multiprocessing.parent_process``,
a pipe the front holds open while it lives). The kernel's parent-death
signal would not do: a worker's parent is the template, not the front, and
the template lives on while any worker does. The template starts as early as
the front can start it (``template.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from loguru import logger

from teamrunner.config import Settings
from teamrunner.responses import CallKind, LoadReport, ProcessHealth
from teamrunner.workers.link import Answer, WorkerGone, WorkerLink
from teamrunner.workers.template import WorkerContext

# Runs in the new process: (settings, socket path, worker index).
WorkerTarget = Callable[[Settings, str, int], None]

# How often a starting worker is asked whether it answers yet.
HEALTH_POLL_SECS = 0.05


class WorkerState(StrEnum):
    STARTING = "starting"  # importing, loading models; not yet answering
    READY = "ready"  # takes calls
    DRAINING = "draining"  # told to stop; its calls go on, it takes no new one
    ENDED = "ended"  # the process has exited


# The worker's answer headers the front passes on.
PASSED_HEADERS = ("content-type", "retry-after")


def become_worker(index: int) -> None:
    """Run first in a worker process: leave the front's process group, drain if the front dies."""
    os.setpgid(0, 0)
    front = multiprocessing.parent_process()
    if front is not None:
        watch = threading.Thread(
            target=_drain_when_gone, args=(front.sentinel,), name="front-watch", daemon=True
        )
        watch.start()
    logger.configure(extra={"worker": index})


def _drain_when_gone(front: int) -> None:
    """Wait until the front's end of the pipe closes (it has exited), then drain."""
    multiprocessing.connection.wait([front])
    os.kill(os.getpid(), signal.SIGTERM)


class WorkerProcess:
    """One worker: its process, its socket, and the calls the front placed on it.

    Attributes:
        index: Its place in the pool (a replacement takes the index of the worker it replaces).
        calls: The ids of the calls it runs, with the time each was placed.
        starting: The ids of the calls being started on it now (a ``/run`` not yet answered).
        speech_models_loaded: As its ``/health`` last said.
        load_report: Its load and admission, as its ``/health`` last said.
    """

    def __init__(
        self, index: int, generation: int, target: WorkerTarget, settings: Settings, sockets: str
    ) -> None:
        self.index = index
        self.socket = os.path.join(sockets, f"worker-{index}-{generation}.sock")
        self.state = WorkerState.STARTING
        self.calls: dict[str, float] = {}
        self.starting: Counter[str] = Counter()
        self.speech_models_loaded = 0
        self.load_report: LoadReport | None = None
        self.exitcode: int | None = None
        self.ended = asyncio.Event()
        self.started_at = time.monotonic()
        self._target = target
        self._settings = settings
        self._process: Any = None
        self._signals: list[signal.Signals] = []
        self._link = WorkerLink(
            f"worker {index}", self.socket, keepalive_secs=settings.keepalive_secs
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def held(self) -> int:
        """The calls it runs or is starting."""
        return len(self.calls.keys() | self.starting.keys())

    def admits(self, kind: CallKind) -> bool:
        """Whether, as it last reported, it would admit a call of ``kind``."""
        return self.load_report is None or self.load_report.admits[kind]

    def take_health(self, answer: Answer) -> None:
        """Bring what the front knows of the worker up to date with its ``/health`` answer."""
        if answer.status != 200:
            return
        health = ProcessHealth.model_validate_json(answer.body)
        self.speech_models_loaded = health.speech_models_loaded
        self.load_report = health.load

    def holds(self, call_id: str) -> bool:
        return call_id in self.calls or self.starting[call_id] > 0

    async def start(self, context: WorkerContext, on_exit: Callable[[WorkerProcess], None]) -> None:
        """Fork the process from the template; ``on_exit`` runs in the event loop once it ends.

        The template answers once it has imported what it preloads, so the
        request waits in a thread, the front's event loop serving meanwhile. A
        template that cannot fork it counts as a worker that ended at once.
        """
        process = context.Process(
            target=self._target,
            args=(self._settings, self.socket, self.index),
            name=f"runner-worker-{self.index}",
        )
        self._process = process
        loop = asyncio.get_running_loop()
        try:
            await asyncio.to_thread(process.start)
        except (OSError, EOFError) as e:
            logger.error(f"worker {self.index} could not be started: {type(e).__name__}: {e}")
            self._process = None
            self._ended(on_exit)
            return
        for sig in self._signals:  # sent while it was being forked
            self.signal(sig)

        def exited() -> None:
            loop.remove_reader(process.sentinel)
            process.join(1.0)  # the sentinel closed: the process has exited or is exiting
            self.exitcode = process.exitcode
            self._ended(on_exit)

        loop.add_reader(process.sentinel, exited)

    def _ended(self, on_exit: Callable[[WorkerProcess], None]) -> None:
        self.state = WorkerState.ENDED
        self.ended.set()
        on_exit(self)

    async def until_ready(self, timeout: float) -> None:
        """Wait until its ``/ready`` says yes: imported, warmed up, serving.

        Raises:
            WorkerGone: it ended first, or did not answer within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while not self.ended.is_set():
            try:
                answer = await self.request("GET", "/ready", timeout=1.0)
                if answer.status == 200:
                    self.take_health(await self.request("GET", "/health", timeout=1.0))
                    if self.state == WorkerState.STARTING:
                        self.state = WorkerState.READY
                    return
            except WorkerGone:
                pass
            if time.monotonic() > deadline:
                raise WorkerGone(f"worker {self.index} did not answer within {timeout:g}s")
            await asyncio.sleep(HEALTH_POLL_SECS)
        raise WorkerGone(f"worker {self.index} ended while starting (exit code {self.exitcode})")

    async def request(
        self,
        method: str,
        path: str,
        *,
        timeout: float,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Answer:
        """Send a request to the worker and read its whole answer.

        Raises:
            WorkerGone: no answer came (the worker ended, or ``timeout`` passed).
        """
        target = f"{path}?{urlencode(params)}" if params else path
        answer = await self._link.request(
            method, target, body=body or b"", content_type=content_type, timeout=timeout
        )
        passed = {h: answer.headers[h] for h in PASSED_HEADERS if h in answer.headers}
        return Answer(answer.status, answer.body, passed)

    def reconcile(self, running: set[str], asked_at: float) -> None:
        """Forget calls that the worker, asked at ``asked_at``, no longer runs."""
        for call_id, placed_at in list(self.calls.items()):
            if call_id not in running and placed_at < asked_at:
                del self.calls[call_id]
        for call_id in running - self.calls.keys() - self.starting.keys():
            self.calls[call_id] = asked_at

    def signal(self, sig: signal.Signals) -> None:
        """Send the process ``sig``, if it still runs (once forked, if it is being forked)."""
        if self.ended.is_set():
            return
        pid = self.pid
        if pid is None:
            self._signals.append(sig)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    async def close(self) -> None:
        """Release the front's side of the worker (its connections)."""
        await self._link.close()
