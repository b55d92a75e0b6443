"""The front of a worker pool: the one address Go calls, answering for the whole runner.

The front owns the port (``RUNNER_HOST``:``RUNNER_PORT``), and the probes'
own (``RUNNER_METRICS_PORT``) when they have one, and runs no call itself.
``POST /run`` goes, body untouched, to each worker in turn until one takes
it (or to the worker already holding that id, which refuses it as a conflict);
``POST /stop?id=`` to the worker holding the call; each answer comes back
as the worker gave it, so Go reads exactly what a single runner says. The
front never sees a call's audio: each worker dials Go's websockets for its
own calls. It answers for the whole runner itself: ``/health`` (alive, with
every worker and its load), ``/ready`` (not draining, and some worker
would admit a voice call),
``/calls`` (every worker's, each call naming its worker) and ``/metrics``
(every worker's, summed). It refuses on its own only what no worker
should see: a foreign ``Host`` or a missing token (``teamrunner.serving``
installs the same checks here as on a single runner), a body past the
limits, a ``/run`` while draining, past ``RUNNER_MAX_CALLS`` or with no
worker up. A ``/run`` that every worker refuses for its load is answered
with the last worker's 503.

The port opens at once: ``/health`` answers while the workers start and
warm up, and ``/ready`` and ``/run`` answer 503 with ``Retry-After`` until
one is up (a ``/run`` that comes meanwhile waits for them, for up to
``RUNNER_START_TIMEOUT_SECS``). If a worker cannot start, the runner logs why and exits with
status 3, as a single runner that cannot start does.

On SIGTERM the front drains the pool: ``/ready`` and ``/run`` answer 503 at
once, every worker drains its calls, ``/stop`` still reaches them, and the
front exits 0 once the last worker has. A second signal ends every call.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import Response
from loguru import logger
from pydantic import BaseModel
from starlette.middleware import Middleware

from teamrunner.config import Settings
from teamrunner.contract import CallId
from teamrunner.errors import NoWorker, WorkerStartError
from teamrunner.observe.logs import configure_logging
from teamrunner.observe.metrics import CONTENT_TYPE, PoolMetrics
from teamrunner.observe.redaction import Redactor
from teamrunner.responses import (
    CallKind,
    Health,
    LoadReport,
    Providers,
    Ready,
    error_responses,
)
from teamrunner.serving.app import Closer, Refusals, Unavailable, not_ready, runner_app
from teamrunner.serving.listeners import listening_on, listening_sockets
from teamrunner.serving.server import Drain, RunnerHTTPServer, uvicorn_config
from teamrunner.workers.pool import WorkerPool
from teamrunner.workers.process import WorkerProcess, WorkerTarget
from teamrunner.workers.relay import CallRelay, passed, stop_on_holder
from teamrunner.workers.template import start_template, take_early


class WorkerHealth(BaseModel):
    """One worker, as ``/health`` shows it."""

    index: int
    pid: int | None
    state: str
    calls: int
    speech_models_loaded: int
    load: LoadReport | None


class PoolHealth(Health):
    """``GET /health`` of a pool: the runner's counts, and each worker."""

    workers: list[WorkerHealth]


class PoolReady(Ready):
    """``GET /ready`` of a pool: the ready workers, and how many would admit a voice call."""

    workers: int
    admitting: int


def create_front_app(settings: Settings, pool: WorkerPool) -> FastAPI:
    """The front's application over ``pool``; the pool starts with it and ends with it."""
    redactor = Redactor(settings.secrets())
    app: FastAPI  # made below; the closures here read it once it serves

    async def start_pool() -> None:
        try:
            await pool.start()
        except WorkerStartError as e:
            if pool.draining:
                return  # told to stop while its workers were starting: nothing failed
            logger.error(f"{e}; the runner stops (exit status 3)")
            app.state.start_failed = True
            app.state.exit()
            return
        cap = f", at most {settings.max_calls} calls at once" if settings.max_calls else ""
        logger.info(
            f"runner ready; pipecat-manager at {settings.pipecatcall_address}, listening on "
            f"{listening_on(settings)}, {pool.count} workers, each admitting calls up "
            f"to {settings.load_threshold:g} of its core's load{cap}"
        )

    async def open_pool(app: FastAPI) -> Closer:
        configure_logging(redactor, level=settings.log_level, json_lines=settings.log_json)
        # The port opens at once, /health answering, while the workers start and warm up;
        # /ready and /run say 503 (Retry-After) until one is up.
        starting = asyncio.get_running_loop().create_task(start_pool())
        app.state.starting = starting

        async def close() -> None:
            await pool.close()
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)

        return close

    def unavailable() -> Unavailable:
        if pool.draining:
            return Unavailable.DRAINING
        return Unavailable.CAPACITY if pool.ready else Unavailable.NO_WORKER

    refusals = Refusals(lambda: pool.metrics.calls_refused, unavailable)
    relay = Middleware(
        CallRelay,
        pool=pool,
        settings=settings,
        refusals=refusals,
        redact=redactor.redact,
        starting=lambda: app.state.starting,
    )
    # A worker's schema is served instead (``_add_probe_routes``): the same routes and answers.
    app = runner_app(settings, open_pool, refusals, redactor.redact, openapi=False, inner=relay)
    app.state.start_failed = False
    app.state.exit = lambda: None  # serve_front sets it: end the server
    _add_call_routes(app, pool)
    _add_probe_routes(app, settings, pool)
    return app


def _add_call_routes(app: FastAPI, pool: WorkerPool) -> None:
    """What the relay (``relay.py``) leaves to routes: the calls, and a stop of no held call."""

    @app.post("/stop", responses=error_responses(401, 404, 422))
    async def stop(id: Annotated[CallId, Query()]) -> Response:
        """Stop a call on the worker that holds it (the relay passes on a held one first)."""
        return await stop_on_holder(pool, id)

    @app.get("/calls", responses=error_responses(401))
    async def calls() -> dict[str, list[dict[str, Any]]]:
        """Every worker's running calls, each naming its worker."""
        asked_at = time.monotonic()
        listed: list[dict[str, Any]] = []
        for worker, answer in await pool.ask("/calls"):
            pool.take_calls(worker, answer, asked_at)
            listed += [
                {**call, "worker": worker.index} for call in json.loads(answer.body)["calls"]
            ]
        return {"calls": listed}


def _add_probe_routes(app: FastAPI, settings: Settings, pool: WorkerPool) -> None:
    """The routes that answer for the whole runner: the probes, the metrics and the schema."""

    @app.get("/health")
    async def health() -> PoolHealth:
        """Liveness of the front (also while it drains), with every worker."""
        workers = [
            WorkerHealth(
                index=w.index,
                pid=w.pid,
                state=w.state.value,
                calls=w.held,
                speech_models_loaded=w.speech_models_loaded,
                load=w.load_report,
            )
            for w in pool.workers
        ]
        return PoolHealth(
            sessions=pool.calls,
            speech_models_loaded=sum(w.speech_models_loaded for w in workers),
            # The workers run in this install, so they serve what the front finds here.
            providers=Providers.servable(),
            workers=workers,
        )

    @app.get("/ready", responses=error_responses(503))
    async def ready() -> Any:
        """Readiness: not draining, and some worker would admit a voice call."""
        reason = _not_ready(pool, settings)
        if reason is not None:
            return not_ready(reason, draining=pool.draining)
        return PoolReady(
            calls=pool.calls,
            max_calls=settings.max_calls,
            workers=len(pool.ready),
            admitting=len(_admitting(pool)),
        )

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        """The whole runner's metrics, every worker's summed, in Prometheus' text format."""
        load = {str(w.index): w.load_report for w in pool.live if w.load_report is not None}
        return Response(pool.metrics.exposition(load), media_type=CONTENT_TYPE)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi() -> Response:
        """A worker's schema: the front serves the same routes and answers."""
        answers = await pool.ask("/openapi.json")
        if not answers:
            raise NoWorker("no worker process is up yet (starting or being replaced)")
        return passed(answers[0][1])


def _not_ready(pool: WorkerPool, settings: Settings) -> str | None:
    """Why the runner should be sent no new call now, or None when it takes one."""
    ready = pool.ready
    if pool.draining:
        return "draining: the runner is shutting down"
    if not pool.started:
        # Ready once every worker is warm: the first calls spread over the whole pool.
        return f"starting: {len(ready)} of {pool.count} worker processes up"
    if not ready:
        return "starting: no worker process is up yet"
    if settings.max_calls is not None and pool.calls >= settings.max_calls:
        return f"at capacity: {pool.calls} of {settings.max_calls} calls (RUNNER_MAX_CALLS)"
    if not _admitting(pool):
        return (
            f"at capacity: none of the {len(ready)} workers' load would carry a voice call "
            f"(RUNNER_LOAD_THRESHOLD {settings.load_threshold:g})"
        )
    return None


def _admitting(pool: WorkerPool) -> list[WorkerProcess]:
    """The ready workers that would admit a voice call, as each last reported."""
    return [w for w in pool.ready if w.admits(CallKind.VOICE)]


def serve_front(
    settings: Settings, count: int, target: WorkerTarget, preload: Sequence[str]
) -> None:
    """Serve the front of ``count`` workers running ``target`` until a signal, then drain.

    The workers are forked from a template that imports ``preload`` (``target``'s
    module and a call's): the one ``template.start_early`` started before this
    process's imports, or else one started now.
    """
    template = take_early() or start_template(preload)
    with template.scratch:
        context, sockets, metrics = template.context, template.sockets, template.metrics
        pool = WorkerPool(settings, count, context, target, str(sockets), PoolMetrics(str(metrics)))
        app = create_front_app(settings, pool)
        config = uvicorn_config(app, settings)
        server = RunnerHTTPServer(config, lambda: Drain(start=pool.drain, hurry=pool.hurry))
        app.state.exit = lambda: setattr(server, "should_exit", True)
        server.run(listening_sockets(config, settings))
        if not server.started or app.state.start_failed:
            raise SystemExit(3)  # as uvicorn exits when the application could not start
