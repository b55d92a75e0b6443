"""The calls this process runs: admitting new ones, stopping them, and draining on shutdown.

``SessionRegistry`` is the one registry of running calls, by id. It admits a call
only while the runner is not draining and its load can carry the call
(``teamrunner.lifecycle.admission``: the process's measured CPU, what the calls just
admitted will add, and the optional cap ``RUNNER_MAX_CALLS``); otherwise
``/run`` answers 503 at once, so a burst of starts past capacity does not
slow the calls already admitted. A drain
(on SIGTERM) refuses new calls, lets live ones carry on for up to
``RUNNER_DRAIN_SECS``, then ends each one still up: pipecat-manager is told
with an RTVI ``error`` that the runner is shutting down, and both sockets
close cleanly. Until the process is warm (``teamrunner.lifecycle.warmup``) it is not
ready, and a call that arrives meanwhile waits for the warm-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from loguru import logger

from teamrunner.errors import AtCapacity, Draining, SessionConflict, SessionNotFound, StartError
from teamrunner.lifecycle.admission import Admission, call_kind
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.lifecycle.session import CallBuilder, Session
from teamrunner.lifecycle.warmup import WarmUp
from teamrunner.observe.journal import EndReason
from teamrunner.plan import CallPlan
from teamrunner.responses import CallKind, LoadReport

SHUTDOWN_MESSAGE = "the runner is shutting down; the call was ended"


class SessionRegistry:
    """The calls this process is running, by pipecatcall id."""

    def __init__(
        self,
        runtime: Runtime,
        build: CallBuilder,
        warmup: WarmUp | None = None,
        admission: Admission | None = None,
    ) -> None:
        settings = runtime.settings
        self._runtime = runtime
        self._build = build
        self._warmup = warmup
        self.admission = admission or Admission(settings.load_threshold, settings.max_calls)
        self._sessions: dict[str, Session] = {}
        self._draining = False
        self._hurry = asyncio.Event()
        self._measuring: asyncio.Task[None] | None = None

    def open(self) -> None:
        """Start measuring the load, once warm: warming up is not the calls' work."""
        self._measuring = asyncio.get_running_loop().create_task(self._measure_once_warm())

    async def _measure_once_warm(self) -> None:
        if self._warmup is not None:
            with contextlib.suppress(RuntimeError):  # not_ready() says what failed
                await self._warmup.wait()
        self.admission.meter.start()

    async def close(self) -> None:
        if self._measuring is not None:
            self._measuring.cancel()
            await asyncio.gather(self._measuring, return_exceptions=True)
        await self.admission.meter.close()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, call_id: str) -> Session | None:
        return self._sessions.get(call_id)

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    @property
    def max_calls(self) -> int | None:
        return self.admission.max_calls

    def load(self) -> LoadReport:
        return self.admission.report(len(self._sessions))

    @property
    def draining(self) -> bool:
        return self._draining

    def not_ready(self) -> str | None:
        """Why the runner should be sent no new call now, or None when it takes one."""
        if self._draining:
            return "draining: the runner is shutting down"
        if self._warmup is not None and not self._warmup.ready:
            return self._warmup.failure or "warming up: loading the call stack and speech models"
        # Ready while a voice call, the costliest kind, would be taken.
        return self.admission.refusal(CallKind.VOICE, len(self._sessions))

    async def start(self, plan: CallPlan) -> Session:
        """Start a call; it is registered before anything is awaited, so a duplicate is refused.

        Raises:
            Draining: the runner is shutting down.
            AtCapacity: its load cannot carry the call, or it runs ``RUNNER_MAX_CALLS``.
            SessionConflict: a call with this id is already running.
            StartError: the call could not start (nothing of it is left running).
        """
        if self._draining:
            raise Draining("the runner is shutting down; start the call on another runner")
        if plan.id in self._sessions:
            raise SessionConflict(
                "a call with this id is already running; stop it first or use a new id"
            )
        kind = call_kind(hears=plan.hears, speaks=plan.speaks, team=plan.is_team)
        refusal = self.admission.refusal(kind, len(self._sessions))
        if refusal is not None:
            raise AtCapacity(f"{refusal}; try again shortly or on another runner")
        session = Session(plan, self._runtime, self._build, on_finished=self._forget)
        self._sessions[plan.id] = session
        self.admission.admitted(plan.id, kind)
        self._runtime.metrics.calls_active.set(len(self._sessions))
        try:
            with self.admission.meter.starting():
                if self._warmup is not None:
                    await self._warmup_done()
                await session.start()
        except BaseException:
            self.admission.withdrawn(plan.id)
            self._forget(session)
            raise
        self.admission.started(plan.id)
        self._runtime.metrics.calls_started.labels("team" if plan.is_team else "single").inc()
        return session

    async def _warmup_done(self) -> None:
        """Wait for the warm-up (a call that comes early waits for it rather than failing)."""
        assert self._warmup is not None
        try:
            await self._warmup.wait()
        except RuntimeError as e:
            raise StartError("runner", str(e)) from e

    def _forget(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
            reason = session.journal.end_reason
            if session.finished.is_set() and reason and reason != EndReason.START_FAILED:
                self._runtime.metrics.calls_ended.labels(reason).inc()
        self._runtime.metrics.calls_active.set(len(self._sessions))

    async def stop(self, call_id: str) -> Session:
        """Stop a call (pipecat-manager's ``/stop``) and wait until it has released everything.

        Raises:
            SessionNotFound: no call with this id is running.
        """
        session = self._sessions.get(call_id)
        if session is None:
            raise SessionNotFound(
                "no call with that id is running; GET /calls lists the running calls"
            )
        await session.stop(EndReason.STOPPED, "pipecat-manager called /stop")
        self._forget(session)
        return session

    async def drain(self, seconds: float) -> None:
        """Refuse new calls, give live ones up to ``seconds`` to end, then end the rest."""
        self._draining = True
        deadline = time.monotonic() + seconds
        logger.info(f"draining: {len(self)} calls may go on for up to {seconds:g}s")
        while self._sessions and not self._hurry.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            waiters = [asyncio.ensure_future(s.finished.wait()) for s in self.all()]
            hurry = asyncio.ensure_future(self._hurry.wait())
            await asyncio.wait(
                [*waiters, hurry], timeout=min(left, 1.0), return_when=asyncio.FIRST_COMPLETED
            )
            for waiter in [*waiters, hurry]:
                waiter.cancel()
        await self.end_all(EndReason.SHUTDOWN, "the runner drained")

    def hurry(self) -> None:
        """Cut a drain short: end every call now."""
        self._draining = True
        self._hurry.set()

    async def end_all(self, reason: EndReason, detail: str) -> None:
        """End every call cleanly, telling pipecat-manager the runner is shutting down."""
        sessions = self.all()
        if sessions:
            logger.info(f"ending {len(sessions)} calls: {detail}")
        await asyncio.gather(
            *(s.end(reason, detail, tell_manager=SHUTDOWN_MESSAGE) for s in sessions),
            return_exceptions=True,
        )
        for session in sessions:
            self._forget(session)
