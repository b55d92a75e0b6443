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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from loguru import logger
from pipecat.frames.frames import ErrorFrame
from pipecat.pipeline.worker import PipelineWorker
from pipecat.workers.runner import WorkerRunner

from run import Call, Runtime, build_call
from teamrunner.errors import SessionConflict, SessionNotFound, StartError
from teamrunner.plan import CallPlan

# How long a cancelled call may take to wind down before the session gives up on it.
STOP_TIMEOUT_SECS = 10.0


class Session:
    """One running call."""

    def __init__(
        self,
        plan: CallPlan,
        runtime: Runtime,
        on_finished: Callable[[Session], None] | None = None,
    ) -> None:
        self.plan = plan
        self.runtime = runtime
        self._on_finished = on_finished
        self.call: Call | None = None
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
        call = build_call(self.plan, self.runtime)
        self.call = call
        self.runtime.redactor.add(call.secrets)
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

    def describe(self) -> dict[str, object]:
        """What an operator sees of the call in ``GET /calls``."""
        active = self.call.active_member if self.call is not None else self.plan.start_member
        return {
            "id": self.id,
            "team": self.plan.is_team,
            "members": len(self.plan.members),
            "active_member": {"id": active.id, "name": active.name},
            "hears": self.plan.hears,
            "speaks": self.plan.speaks,
            "age_secs": round(time.monotonic() - self.started_at, 1),
        }

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
                url = f"{base}/{self.id}/ws?direction={direction}"
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
            if self.call is not None and self.call.flow is not None:
                await self.call.flow.close()
            if self.call is not None:
                self.runtime.redactor.discard(self.call.secrets)
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

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
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
                f"a call with id {plan.id!r} is already running; stop it first or use a new id"
            )
        session = Session(plan, self._runtime, on_finished=self._forget)
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
            raise SessionNotFound(f"no call with id {call_id!r} is running")
        await session.stop(reason)
        self._forget(session)
        return session

    async def stop_all(self, reason: str) -> None:
        await asyncio.gather(*(s.stop(reason) for s in self.all()), return_exceptions=True)
