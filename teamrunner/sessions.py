"""Running calls: starting one, knowing it is up, ending it, and releasing all it held.

A ``Session`` runs one call on a ``WorkerRunner`` of its own, so nothing one
call does (a crash, a hung provider, a cancel) reaches another. ``start``
returns only once the pipeline is set up and running: both sockets to
pipecat-manager connected and every service set up; otherwise it raises
``StartError`` naming what failed, after tearing down whatever had come up.

A call ends when pipecat-manager closes either socket, when ``/stop`` asks,
when it has been idle too long, or when the pipeline ends on its own (a fatal
error, an ``EndFrame`` from inside). However it ends, the runner is run to
completion, which cleans up every processor and socket, and the session
leaves the registry.

This module knows nothing of how a call's pipeline is assembled: the
application hands ``Sessions`` a ``CallBuilder`` (``run.build_call``), and a
session asks of the call it gets only what ``BuiltCall`` says.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from loguru import logger
from pipecat.frames.frames import ErrorFrame
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.workers.runner import WorkerRunner

from teamrunner.errors import SessionConflict, SessionNotFound, StartError
from teamrunner.manager.transport import ManagerSockets, socket_url
from teamrunner.plan import CallPlan, MemberPlan
from teamrunner.runtime import Runtime

# How long a cancelled call may take to wind down before the session gives up on it.
STOP_TIMEOUT_SECS = 10.0


class BuiltCall(Protocol):
    """A call's pipeline, assembled and not yet running: what a session needs of it.

    Attributes:
        worker: Runs the pipeline.
        sockets: The call's websockets to pipecat-manager.
        components: Each processor that must come up for the call to start,
            with the name a failure is reported under.
    """

    worker: PipelineWorker
    sockets: ManagerSockets
    components: list[tuple[str, FrameProcessor]]

    @property
    def active_member(self) -> MemberPlan:
        """The member who has the call now."""
        ...

    async def begin(self) -> None:
        """Queue what makes the first AI speak, once the worker runs."""
        ...

    async def close(self) -> None:
        """Release what the call holds beyond its pipeline, once the pipeline has ended."""
        ...


# Assembles a call from its plan and the process's runtime, connecting nothing yet.
CallBuilder = Callable[[CallPlan, Runtime], BuiltCall]


class Session:
    """One running call."""

    def __init__(
        self,
        plan: CallPlan,
        runtime: Runtime,
        build: CallBuilder,
        on_finished: Callable[[Session], None] | None = None,
    ) -> None:
        self.plan = plan
        self.runtime = runtime
        self._build = build
        self._on_finished = on_finished
        self.call: BuiltCall | None = None
        self.started_at = 0.0
        self.startup_secs = 0.0
        self.end_reason: str | None = None
        self.finished = asyncio.Event()
        self._errors: list[ErrorFrame] = []
        self._connected: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None

    @property
    def id(self) -> str:
        return self.plan.id

    async def start(self) -> None:
        """Build the call, run it, and return once it is up.

        Raises:
            StartError: naming the component that did not come up.
        """
        self.started_at = time.monotonic()
        self.runtime.redactor.add(self.plan.secrets())
        try:
            call = self._build(self.plan, self.runtime)
        except BaseException:
            self.runtime.redactor.discard(self.plan.secrets())
            raise
        self.call = call
        started = asyncio.Event()
        self._watch(call.worker, started)
        runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        await runner.add_workers(call.worker)
        await call.begin()
        self._task = asyncio.get_running_loop().create_task(self._run(runner))
        try:
            await self._until_started(started)
            self._check_components()
        except StartError:
            await self.stop("the call could not start")
            raise
        self.startup_secs = time.monotonic() - self.started_at
        logger.info(
            f"[{self.id}] call up in {self.startup_secs:.3f}s "
            f"({'team of ' + str(len(self.plan.members)) if self.plan.is_team else 'single AI'})"
        )

    @property
    def active_member(self) -> MemberPlan:
        return self.call.active_member if self.call is not None else self.plan.start_member

    @property
    def age_secs(self) -> float:
        return time.monotonic() - self.started_at

    def _watch(self, worker: PipelineWorker, started: asyncio.Event) -> None:
        @worker.event_handler("on_pipeline_started")
        async def on_started(worker, frame):
            started.set()

        @worker.event_handler("on_pipeline_error")
        async def on_error(worker, frame: ErrorFrame):
            self._errors.append(frame)

        assert self.call is not None
        for direction, socket in (
            ("input", self.call.sockets.input),
            ("output", self.call.sockets.output),
        ):
            if socket is None:
                continue

            @socket.event_handler("on_connected")
            async def on_connected(transport, websocket, direction=direction):
                self._connected.add(direction)

            @socket.event_handler("on_disconnected")
            async def on_disconnected(transport, websocket, direction=direction):
                self._connected.discard(direction)
                self.end_soon(f"pipecat-manager closed the {direction} socket")

    async def _until_started(self, started: asyncio.Event) -> None:
        assert self._task is not None
        timeout = self.runtime.settings.start_timeout_secs
        waiter = asyncio.ensure_future(started.wait())
        done, _ = await asyncio.wait(
            {waiter, self._task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        waiter.cancel()
        if started.is_set():
            return
        if self._task in done:
            raise StartError("pipeline", self._first_error() or "ended before it started")
        raise StartError("pipeline", f"did not start within {timeout:g}s")

    def _check_components(self) -> None:
        assert self.call is not None
        base = self.runtime.settings.manager_ws_url
        sockets = (("input", self.call.sockets.input), ("output", self.call.sockets.output))
        for direction, socket in sockets:
            if socket is not None and direction not in self._connected:
                url = socket_url(base, self.id, direction)
                transport = socket.input() if direction == "input" else socket.output()
                detail = self._error_of(transport) or "no answer"
                raise StartError(
                    f"{direction} socket to pipecat-manager",
                    f"could not connect to {url} ({detail}); is pipecat-manager listening "
                    f"at PIPECATCALL_ADDRESS={self.runtime.settings.pipecatcall_address}?",
                )
        for name, processor in self.call.components:
            if not processor.is_usable:
                raise StartError(name, self._error_of(processor) or "failed to set up")

    def _error_of(self, processor: object) -> str | None:
        for error in self._errors:
            if error.processor is processor:
                return self.runtime.redactor.redact(error.error)
        return None

    def _first_error(self) -> str | None:
        return self.runtime.redactor.redact(self._errors[0].error) if self._errors else None

    async def _run(self, runner: WorkerRunner) -> None:
        try:
            await runner.run()
        except Exception as e:
            logger.exception(f"[{self.id}] pipeline failed: {type(e).__name__}")
            self.end_reason = self.end_reason or f"pipeline failed: {type(e).__name__}"
        finally:
            if self.call is not None:
                await self.call.close()
            self.runtime.redactor.discard(self.plan.secrets())
            self.end_reason = self.end_reason or "the pipeline ended"
            logger.info(f"[{self.id}] call ended: {self.end_reason}")
            self.finished.set()
            if self._on_finished is not None:
                self._on_finished(self)

    def end_soon(self, reason: str) -> None:
        """Ask the call to end, without waiting (safe from inside the pipeline's own tasks)."""
        if self._stopping is None and not self.finished.is_set():
            self._stopping = asyncio.get_running_loop().create_task(self.stop(reason))

    async def stop(self, reason: str) -> None:
        """End the call now and wait until everything it opened is released."""
        self.end_reason = self.end_reason or reason
        if self.call is not None and not self.finished.is_set():
            await self.call.worker.cancel(reason=reason)
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), STOP_TIMEOUT_SECS)
            except TimeoutError:
                logger.error(
                    f"[{self.id}] did not wind down in {STOP_TIMEOUT_SECS:g}s; abandoning it"
                )
                self._task.cancel()


class Sessions:
    """The calls this process is running, by pipecatcall id."""

    def __init__(self, runtime: Runtime, build: CallBuilder) -> None:
        self._runtime = runtime
        self._build = build
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, call_id: str) -> Session | None:
        return self._sessions.get(call_id)

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    async def start(self, plan: CallPlan) -> Session:
        """Start a call; it is registered before anything is awaited, so a duplicate is refused.

        Raises:
            SessionConflict: a call with this id is already running.
            StartError: the call could not start (nothing of it is left running).
        """
        if plan.id in self._sessions:
            raise SessionConflict(
                "a call with this id is already running; stop it first or use a new id"
            )
        session = Session(plan, self._runtime, self._build, on_finished=self._forget)
        self._sessions[plan.id] = session
        try:
            await session.start()
        except BaseException:
            self._forget(session)
            raise
        return session

    def _forget(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]

    async def stop(self, call_id: str, reason: str = "pipecat-manager called /stop") -> Session:
        """Stop a call and wait until it has released everything.

        Raises:
            SessionNotFound: no call with this id is running.
        """
        session = self._sessions.get(call_id)
        if session is None:
            raise SessionNotFound(
                "no call with that id is running; GET /calls lists the running calls"
            )
        await session.stop(reason)
        self._forget(session)
        return session

    async def stop_all(self, reason: str) -> None:
        await asyncio.gather(*(s.stop(reason) for s in self.all()), return_exceptions=True)
