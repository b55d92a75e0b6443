"""One running call: starting it, knowing it is up, ending it, and releasing all it held.

A ``Session`` runs one call on a ``WorkerRunner`` and a task of its own, so
what ends one call (an exception in its pipeline, a cancel, a ``/stop``)
ends no other, and a provider that never answers holds up the calls waiting
on it, not the others. The calls of a process still share its one event
loop, and what ``teamrunner.providers.resources`` keeps for them (an
endpoint's connections, a local model and its lock): code that blocks the
loop (a synchronous call, a long stretch of CPU) holds up every call of the
process while it runs; each worker process of a pool (``teamrunner.workers``)
has a loop of its own. ``start`` returns only once the pipeline is set up
and running: every link of the call's transport connected (pipecat-manager's
two sockets, in production) and every service set up; otherwise it raises
``StartError`` naming what failed, after tearing down whatever had come up.

A call ends when the far end closes a link of its transport (either of
pipecat-manager's sockets), when ``/stop`` asks, when it has been idle too
long, when the runner drains, or when the pipeline ends on its own (a fatal
error, an ``EndFrame`` from inside). However it ends, the runner is run to
completion, which cleans up every processor and socket, and one summary line
is logged. Every log line written while the call runs, pipecat's own
included, carries the call's id and its member as fields (loguru's
``contextualize``; tasks inherit it from the call's task).

This module knows nothing of how a call's pipeline is assembled: it is handed
a ``CallBuilder`` (in production ``main.build_call``: ``run.build_call`` over
pipecat-manager's sockets) and asks of the call it gets only what
``BuiltCall`` says.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from loguru import logger

from teamrunner.errors import StartError
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.observe.journal import CallJournal, EndReason
from teamrunner.plan import CallPlan, MemberPlan

if TYPE_CHECKING:
    # pipecat is imported when the first call is built, not when the runner starts.
    from pipecat.frames.frames import ErrorFrame
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.frame_processor import FrameProcessor
    from pipecat.workers.runner import WorkerRunner

    from teamrunner.call.activity import ActivityWatch
    from teamrunner.transport import CallTransport

# How long a cancelled call may take to wind down before the session gives up on it.
STOP_TIMEOUT_SECS = 10.0
# How long an ended call may take to say its last words and close cleanly.
END_TIMEOUT_SECS = 5.0


class BuiltCall(Protocol):
    """A call's pipeline, assembled and not yet running: what a session needs of it.

    Attributes:
        worker: Runs the pipeline.
        transport: Where the call's caller is (pipecat-manager's sockets, in production).
        components: Each processor that must come up for the call to start,
            with the name a failure is reported under.
        activity: Times how long the call has gone idle (None: never ends for it).
    """

    worker: PipelineWorker
    transport: CallTransport
    components: list[tuple[str, FrameProcessor]]
    activity: ActivityWatch | None

    @property
    def active_member(self) -> MemberPlan:
        """The member who has the call now."""
        ...

    async def prepare(self) -> None:
        """Get what the call needs before it runs (its remote policy's first state).

        Raises:
            StartError: it could not be had; nothing of the call runs yet.
        """
        ...

    async def begin(self) -> None:
        """Queue what makes the first member speak, once the pipeline runs, and
        connect what the call answered without (the other members' services)."""
        ...

    async def tell_manager_error(self, error: str, *, fatal: bool) -> None:
        """Send pipecat-manager an RTVI ``error`` message on the output socket."""
        ...

    async def close(self) -> None:
        """Release what the call holds beyond its pipeline, once the pipeline has ended."""
        ...


# Assembles a call from its plan, the process's runtime and the call's journal.
CallBuilder = Callable[[CallPlan, Runtime, CallJournal], BuiltCall]


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
        self.journal = CallJournal(plan, runtime.metrics)
        self._build = build
        self._on_finished = on_finished
        self.call: BuiltCall | None = None
        self.started_at = time.monotonic()
        self.startup_secs = 0.0
        self.end_detail: str | None = None
        self.finished = asyncio.Event()
        self._errors: list[ErrorFrame] = []
        self._connected: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._idle: asyncio.Task[None] | None = None
        self._beginning: asyncio.Task[None] | None = None

    @property
    def id(self) -> str:
        return self.plan.id

    @property
    def active_member(self) -> MemberPlan:
        return self.call.active_member if self.call is not None else self.plan.start_member

    @property
    def age_secs(self) -> float:
        return time.monotonic() - self.started_at

    async def start(self) -> None:
        """Build the call, run it, and return once it is up.

        Raises:
            StartError: naming the component that did not come up.
        """
        with logger.contextualize(call_id=self.id, member=self.plan.start_member_id):
            self.runtime.redactor.add(self.plan.secrets())
            try:
                call = self._build(self.plan, self.runtime, self.journal)
            except BaseException:
                self.runtime.redactor.discard(self.plan.secrets())
                raise
            # From here on, every line names the member who has the call when it is written.
            with logger.contextualize(member=_ActiveMember(call)):
                await self._start(call)

    async def _start(self, call: BuiltCall) -> None:
        self.call = call
        started = asyncio.Event()
        self._watch(call.worker, started)
        from pipecat.workers.runner import WorkerRunner

        runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        await runner.add_workers(call.worker)
        try:
            # May ask a remote policy for the call's first state, and fail.
            await call.prepare()
        except BaseException:
            self._set_end(EndReason.START_FAILED, "the call could not start")
            await call.close()
            self.runtime.redactor.discard(self.plan.secrets())
            raise
        # Created inside the log context, so the call's tasks all carry it.
        self._task = asyncio.get_running_loop().create_task(self._run(runner))
        try:
            await self._until_started(started)
            self._check_components()
        except StartError:
            await self.stop(EndReason.START_FAILED, "the call could not start")
            raise
        self.startup_secs = time.monotonic() - self.started_at
        loop = asyncio.get_running_loop()
        # Its processors are set up now, and those that say lines can queue them. The
        # call is up: /run answers while its first words are on their way.
        self._beginning = loop.create_task(self._begin(call))
        if call.activity is not None:
            self._idle = loop.create_task(self._end_when_idle(call.activity))
        kind = f"team of {len(self.plan.members)}" if self.plan.is_team else "single AI"
        logger.info(f"call up in {self.startup_secs:.3f}s ({kind})")

    def _watch(self, worker: PipelineWorker, started: asyncio.Event) -> None:
        @worker.event_handler("on_pipeline_started")
        async def on_started(worker, frame):
            started.set()

        @worker.event_handler("on_pipeline_error")
        async def on_error(worker, frame: ErrorFrame):
            self._errors.append(frame)
            if frame.fatal:
                self._set_end(EndReason.FAILED, f"fatal error: {frame.error}")

        assert self.call is not None
        for link in self.call.transport.links():

            @link.events.event_handler(link.connected)
            async def on_connected(transport, websocket, link=link):
                self._connected.add(link.name)

            @link.events.event_handler(link.disconnected)
            async def on_disconnected(transport, websocket, link=link):
                self._connected.discard(link.name)
                self.end_soon(EndReason.HUNG_UP, f"{link.peer} closed the {link.name}")

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
        for link in self.call.transport.links():
            if link.name not in self._connected:
                detail = self._error_of(link.processor) or "no answer"
                raise StartError(
                    f"{link.name} to {link.peer}",
                    f"could not connect to {link.address} ({detail}); {link.hint}",
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

    def _set_end(self, reason: EndReason, detail: str) -> None:
        """Record why the call ends; the first reason given stands."""
        if self.journal.end_reason is None:
            self.journal.end_reason = reason
            self.end_detail = detail

    async def _begin(self, call: BuiltCall) -> None:
        try:
            await call.begin()
        except Exception as e:
            logger.exception(f"the call could not begin: {type(e).__name__}")
            self.end_soon(EndReason.FAILED, f"the call could not begin: {type(e).__name__}")

    async def _end_when_idle(self, activity: ActivityWatch) -> None:
        await activity.idle()
        logger.info("ending the call: idle for RUNNER_SESSION_IDLE_SECS")
        self.end_soon(EndReason.IDLE, "nobody spoke for RUNNER_SESSION_IDLE_SECS")

    async def _run(self, runner: WorkerRunner) -> None:
        try:
            await runner.run()
        except Exception as e:
            logger.exception(f"pipeline failed: {type(e).__name__}")
            self._set_end(EndReason.FAILED, f"pipeline failed: {type(e).__name__}")
        finally:
            for task in (self._idle, self._beginning):
                if task is not None:
                    task.cancel()
            if self.call is not None:
                await self.call.close()
            self.runtime.redactor.discard(self.plan.secrets())
            self._set_end(EndReason.ENDED, "the pipeline ended")
            self._log_summary()
            self.finished.set()
            if self._on_finished is not None:
                self._on_finished(self)

    def _log_summary(self) -> None:
        summary = self.journal.summary()
        text = ", ".join(f"{k}={v}" for k, v in summary.items() if k != "end_reason")
        logger.bind(summary=summary).info(
            f"call ended ({summary['end_reason']}: {self.end_detail or self.journal.end_detail}): "
            f"{text}"
        )

    def end_soon(self, reason: EndReason, detail: str) -> None:
        """Ask the call to end, without waiting (safe from inside the pipeline's own tasks)."""
        if self._stopping is None and not self.finished.is_set():
            self._stopping = asyncio.get_running_loop().create_task(self.stop(reason, detail))

    async def stop(self, reason: EndReason, detail: str) -> None:
        """End the call now and wait until everything it opened is released."""
        self._set_end(reason, detail)
        if self.call is not None and not self.finished.is_set():
            await self.call.worker.cancel(reason=detail)
        await self._wait_finished(STOP_TIMEOUT_SECS)

    async def end(self, reason: EndReason, detail: str, *, tell_manager: str) -> None:
        """End the call cleanly: tell pipecat-manager why, close both sockets, release all.

        pipecat-manager gets an RTVI ``error`` message saying ``tell_manager``,
        then an ``EndFrame`` closes the pipeline in order; a call that has not
        closed within ``END_TIMEOUT_SECS`` is cancelled.
        """
        self._set_end(reason, detail)
        if self.call is None or self.finished.is_set():
            return
        from pipecat.frames.frames import EndFrame

        await self.call.tell_manager_error(tell_manager, fatal=True)
        await self.call.worker.queue_frame(EndFrame(reason=detail))
        try:
            await asyncio.wait_for(asyncio.shield(self.finished.wait()), END_TIMEOUT_SECS)
        except TimeoutError:
            await self.stop(reason, detail)

    async def _wait_finished(self, timeout: float) -> None:
        if self._task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            logger.error(f"did not wind down in {timeout:g}s; abandoning it")
            self._task.cancel()


class _ActiveMember:
    """The member who has the call, as a log field: it follows the call's handoffs.

    It holds the call weakly. The field lives in the log context, and everything
    the loop runs for the call keeps a copy of that context, some of it past the
    call's end: a connection the call opened in a shared pool (uvloop's transport
    runs its callbacks in the context it was made in, for as long as the pool keeps
    the connection), and on asyncio's own loop every cancelled timer until the time
    it was set for. A strong hold here kept each ended call whole for that long.
    """

    def __init__(self, call: BuiltCall) -> None:
        self._call = weakref.ref(call)
        self._last = call.active_member.id

    def __str__(self) -> str:
        call = self._call()
        if call is not None:
            self._last = call.active_member.id
        return self._last
