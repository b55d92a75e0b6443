"""The worker processes behind the front: placing calls, routing stops, replacing the dead.

``WorkerPool`` forks ``RUNNER_WORKERS`` workers from their template
(``teamrunner.workers.process``) and waits until every one is ready (its
speech models loaded); the front answers ``/health`` meanwhile
and is ready once the pool has started. It knows
which worker holds which call: a ``/run`` is offered to the workers in turn,
those with room and the fewest calls first (``candidates``), a ``/stop`` goes to the worker holding
the call, and a ``/run`` for an id already held goes to its holder, which
refuses it as a conflict. Admission by load is the workers' own
(``teamrunner.lifecycle.admission``): each measures its own core, and a worker that
cannot carry the call answers 503, and the front offers it to the next.
``RUNNER_MAX_CALLS``, if set, caps the whole pod, and the front checks it.
Calls also end by themselves (Go hangs up, silence, a drain); the pool asks
each worker for its calls and its load every second and forgets the calls it
no longer runs, and asks at once when the pod looks full, so a freed place
is never refused.

A worker that dies takes only its own calls with it: the kernel closes their
sockets, so Go sees them close; the pool forgets them, logs and counts each
one, and starts a replacement in the dead worker's place (after a pause that
grows while replacements keep dying young). Nothing else is touched. On a
drain every worker is told (SIGTERM) and drains its own calls as a single
runner does; the pool waits for them all to exit and replaces none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Awaitable

from loguru import logger
from prometheus_client.multiprocess import mark_process_dead

from teamrunner.config import Settings
from teamrunner.errors import WorkerStartError
from teamrunner.observe.metrics import PoolMetrics
from teamrunner.responses import CallKind
from teamrunner.serving.server import HURRY_SIGNAL
from teamrunner.workers.process import (
    Answer,
    WorkerContext,
    WorkerGone,
    WorkerProcess,
    WorkerState,
    WorkerTarget,
)

# How often the pool asks each worker which calls it runs.
REFRESH_SECS = 1.0
# A worker that has not answered this long after it started is given up on.
WORKER_START_TIMEOUT_SECS = 120.0
# A worker that dies sooner than this after it started is dying young: wait before the next.
YOUNG_SECS = 30.0
MAX_RESTART_PAUSE_SECS = 30.0
# Beyond RUNNER_DRAIN_SECS, how long a draining worker may take to end its last calls and exit.
DRAIN_MARGIN_SECS = 30.0
# How long a worker told to stop outside a drain has before it is killed.
STOP_GRACE_SECS = 10.0
# Longest a /stop (a call winding down) or a /calls question may take a worker.
STOP_TIMEOUT_SECS = 30.0
QUESTION_TIMEOUT_SECS = 5.0


class WorkerPool:
    """``count`` worker processes, each running ``target``, and the calls placed on them.

    Args:
        settings: The runner's settings; every worker gets them as they are.
        count: How many workers.
        context: Where the workers are forked from (``template.start_template``).
        target: What each worker process runs (``main.serve_worker``).
        sockets: A directory only this process can reach, for the workers' sockets.
        metrics: The front's metrics, whose ``workers_dir`` the workers write to.
    """

    def __init__(
        self,
        settings: Settings,
        count: int,
        context: WorkerContext,
        target: WorkerTarget,
        sockets: str,
        metrics: PoolMetrics,
    ) -> None:
        self.settings = settings
        self.count = count
        self.metrics = metrics
        self.draining = False
        self._context = context
        self._target = target
        self._sockets = sockets
        self._workers: list[WorkerProcess] = []
        self._generation = 0
        self._young_deaths = [0] * count
        self._started = False
        self._refreshing: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def workers(self) -> list[WorkerProcess]:
        return list(self._workers)

    @property
    def started(self) -> bool:
        """Whether every worker has come up once (the runner is ready from then on)."""
        return self._started

    @property
    def ready(self) -> list[WorkerProcess]:
        """The workers taking calls now."""
        return [w for w in self._workers if w.state == WorkerState.READY]

    @property
    def live(self) -> list[WorkerProcess]:
        """The workers serving now: ready, or draining their calls."""
        return [w for w in self._workers if w.state in (WorkerState.READY, WorkerState.DRAINING)]

    @property
    def calls(self) -> int:
        return sum(w.held for w in self._workers)

    async def start(self) -> None:
        """Start every worker and return once each answers.

        Raises:
            WorkerStartError: a worker ended, or did not answer, first.
        """
        self._workers = [self._worker(index) for index in range(self.count)]
        started = time.monotonic()
        try:
            await asyncio.gather(*(self._start(w) for w in self._workers))
        except WorkerGone as e:
            raise WorkerStartError(f"a worker process did not start: {e}") from e
        self._started = True
        self._workers_changed()
        self._spawn_task(self._refresh_forever())
        pids = ", ".join(str(w.pid) for w in self._workers)
        logger.info(f"{self.count} workers up in {time.monotonic() - started:.1f}s (pids {pids})")

    def holder(self, call_id: str) -> WorkerProcess | None:
        """The worker running (or starting) the call with this id, if any."""
        return next((w for w in self._workers if w.holds(call_id)), None)

    async def under_cap(self) -> bool:
        """Whether the pod runs fewer calls than ``RUNNER_MAX_CALLS`` (always, when unset).

        At the cap, the calls are counted afresh first: one may have ended in the last second.
        """
        cap = self.settings.max_calls
        if cap is None or self.calls < cap:
            return True
        await self.refresh()
        return self.calls < cap

    def candidates(self) -> list[WorkerProcess]:
        """The ready workers in the order a new call is offered to them.

        Those whose last report (each second) said they would take a voice
        call come first, then the ones with the fewest calls: balancing by
        count, not by the measured load, which lags a call by seconds and would
        pile a burst onto whichever worker looked least loaded a second ago.
        The worker itself decides: one that cannot carry the call answers 503,
        and the call is offered to the next.
        """
        return sorted(self.ready, key=lambda w: (not w.admits(CallKind.VOICE), w.held, w.index))

    async def start_call(
        self, worker: WorkerProcess, call_id: str | None, body: bytes, content_type: str | None
    ) -> Answer:
        """Pass a ``/run`` to ``worker``; the call is its own from now on if it answers 200.

        Raises:
            WorkerGone: the worker ended before it answered.
        """
        if call_id is not None:
            worker.starting[call_id] += 1
        try:
            answer = await worker.request(
                "POST",
                "/run",
                body=body,
                content_type=content_type,
                timeout=self.settings.start_timeout_secs + STOP_TIMEOUT_SECS,
            )
        finally:
            if call_id is not None:
                worker.starting[call_id] -= 1
                if worker.starting[call_id] <= 0:
                    del worker.starting[call_id]
        if answer.status == 200 and call_id is not None and worker.state != WorkerState.ENDED:
            worker.calls[call_id] = time.monotonic()
        return answer

    async def stop_call(self, worker: WorkerProcess, call_id: str) -> Answer:
        """Pass a ``/stop`` to the worker holding the call.

        Raises:
            WorkerGone: the worker ended before it answered (and the call with it).
        """
        answer = await worker.request(
            "POST", "/stop", params={"id": call_id}, timeout=STOP_TIMEOUT_SECS
        )
        if answer.status in (200, 404):
            worker.calls.pop(call_id, None)
        return answer

    async def ask(self, path: str) -> list[tuple[WorkerProcess, Answer]]:
        """Ask every live worker the same question (``GET path``); the ones that answered."""

        async def one(worker: WorkerProcess) -> tuple[WorkerProcess, Answer] | None:
            try:
                return worker, await worker.request("GET", path, timeout=QUESTION_TIMEOUT_SECS)
            except WorkerGone:
                return None

        answers = await asyncio.gather(*(one(w) for w in self.live))
        return [a for a in answers if a is not None]

    async def refresh(self) -> None:
        """Count each worker's calls afresh, from its ``/calls``.

        One question at a time: a burst of ``/run`` at capacity waits for the
        same answers instead of asking every worker once per request.
        """
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._refresh())
        await asyncio.shield(self._refreshing)

    async def _refresh(self) -> None:
        asked_at = time.monotonic()
        for worker, answer in await self.ask("/calls"):
            self.take_calls(worker, answer, asked_at)

    def take_calls(self, worker: WorkerProcess, answer: Answer, asked_at: float) -> None:
        """Bring the pool's view of ``worker`` up to date with its ``/calls`` answer."""
        if answer.status == 200:
            running = {c["id"] for c in json.loads(answer.body)["calls"]}
            worker.reconcile(running, asked_at)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_SECS)
            await self.refresh()
            for worker, answer in await self.ask("/health"):
                worker.take_health(answer)

    def _worker(self, index: int) -> WorkerProcess:
        self._generation += 1
        return WorkerProcess(index, self._generation, self._target, self.settings, self._sockets)

    async def _start(self, worker: WorkerProcess) -> None:
        """Fork ``worker`` and wait until it is ready.

        Raises:
            WorkerGone: it ended, or did not answer, first.
        """
        await worker.start(self._context, self._on_exit)
        await worker.until_ready(WORKER_START_TIMEOUT_SECS)

    def _on_exit(self, worker: WorkerProcess) -> None:
        """A worker's process has ended: forget its calls; replace it unless draining."""
        if worker.pid is not None:
            mark_process_dead(worker.pid, self.metrics.workers_dir)
        # A call still starting is answered 500 by the /run waiting on it; these were up.
        lost = sorted(worker.calls)
        worker.calls.clear()
        self._workers_changed()
        self._spawn_task(worker.close())
        if not self._started:
            return  # start() reports it, and the runner does not start
        if self.draining:
            logger.info(f"worker {worker.index} (pid {worker.pid}) exited ({worker.exitcode})")
            return
        self.metrics.worker_exits.inc()
        logger.error(
            f"worker {worker.index} (pid {worker.pid}) ended unexpectedly "
            f"(exit code {worker.exitcode}); {len(lost)} of its calls ended with it; "
            "starting a replacement"
        )
        for call_id in lost:
            self.metrics.calls_ended.labels("worker_lost").inc()
            logger.bind(call_id=call_id).error(
                f"call ended (worker_lost: worker {worker.index} ended with the call up)"
            )
        young = time.monotonic() - worker.started_at < YOUNG_SECS
        self._young_deaths[worker.index] = self._young_deaths[worker.index] + 1 if young else 0
        self._spawn_task(self._replace(worker))

    async def _replace(self, dead: WorkerProcess) -> None:
        deaths = self._young_deaths[dead.index]
        pause = min(MAX_RESTART_PAUSE_SECS, 2.0 ** (deaths - 1)) if deaths else 0.0
        await asyncio.sleep(pause)
        if self.draining:
            return
        worker = self._worker(dead.index)
        self._workers[self._workers.index(dead)] = worker
        try:
            await self._start(worker)
        except WorkerGone as e:
            logger.error(f"replacement {e}")
            worker.signal(signal.SIGKILL)  # on_exit replaces it in turn
            return
        self._workers_changed()
        logger.info(f"worker {worker.index} replaced (pid {worker.pid})")

    def _workers_changed(self) -> None:
        self.metrics.workers_up.set(len(self.ready))

    def _spawn_task(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Tell every worker to drain and wait until all have exited (replacing none)."""
        self.draining = True
        live = [w for w in self._workers if w.state != WorkerState.ENDED]
        logger.info(f"draining {len(live)} workers with {self.calls} calls")
        for worker in live:
            if worker.state == WorkerState.READY:
                worker.state = WorkerState.DRAINING
            worker.signal(signal.SIGTERM)
        await self._until_ended(live, self.settings.drain_secs + DRAIN_MARGIN_SECS)

    def hurry(self) -> None:
        """A second signal: every worker ends its calls now."""
        self.draining = True
        for worker in self._workers:
            worker.signal(HURRY_SIGNAL)

    async def close(self) -> None:
        """Stop what is still running (after a drain, nothing is) and release it."""
        self.draining = True
        live = [w for w in self._workers if w.state != WorkerState.ENDED]
        for worker in live:
            worker.signal(HURRY_SIGNAL)  # no drain here: end the calls now
        await self._until_ended(live, STOP_GRACE_SECS)
        pending = [*self._tasks, *([self._refreshing] if self._refreshing else [])]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for worker in self._workers:
            await worker.close()

    async def _until_ended(self, workers: list[WorkerProcess], timeout: float) -> None:
        waits = [asyncio.ensure_future(w.ended.wait()) for w in workers]
        if waits:
            await asyncio.wait(waits, timeout=timeout)
        for wait in waits:
            wait.cancel()
        for worker in workers:
            if not worker.ended.is_set():
                logger.error(f"worker {worker.index} (pid {worker.pid}) did not exit; killing it")
                worker.signal(signal.SIGKILL)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(worker.ended.wait(), 5)
