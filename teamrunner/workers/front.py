"""The front of a worker pool: the one address Go calls, answering for the whole runner.

The front owns the port (``RUNNER_HOST``:``RUNNER_PORT``) and runs no call
itself. ``POST /run`` goes, body untouched, to the least-loaded worker (or
to the worker already holding that id, which refuses it as a conflict);
``POST /stop?id=`` to the worker holding the call; each answer comes back
as the worker gave it, so Go reads exactly what a single runner says. The
front never sees a call's audio: each worker dials Go's websockets for its
own calls. It answers for the whole runner itself: ``/health`` (alive, with
every worker), ``/ready`` (not draining, and some worker has room),
``/calls`` (every worker's, each call naming its worker) and ``/metrics``
(every worker's, summed). It refuses on its own only what no worker
should see: a body past the limits, a ``/run`` while draining, at capacity
or with no worker up.

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
import os
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from loguru import logger
from pydantic import BaseModel

from teamrunner.config import Settings
from teamrunner.contract import CallId
from teamrunner.errors import AtCapacity, Draining, RequestError, SessionNotFound, StartError
from teamrunner.logs import configure_logging
from teamrunner.metrics import CONTENT_TYPE, PoolMetrics
from teamrunner.redaction import Redactor
from teamrunner.responses import (
    Health,
    Providers,
    Ready,
    Stopped,
    error_body,
    error_responses,
)
from teamrunner.serving.answers import REFUSAL_REASONS, install_error_answers
from teamrunner.serving.limits import BodyLimits
from teamrunner.serving.server import Drain, RunnerHTTPServer, uvicorn_config
from teamrunner.workers.pool import WorkerPool, WorkerStartError
from teamrunner.workers.process import Answer, WorkerGone, WorkerTarget

NOT_FOUND = "no call with that id is running; GET /calls lists the running calls"


class NoWorker(RequestError):
    """No worker process is up to take a call (they are starting, or being replaced)."""

    status = 503
    retry_after = 2


class WorkerHealth(BaseModel):
    """One worker, as ``/health`` shows it."""

    index: int
    pid: int | None
    state: str
    calls: int
    speech_models_loaded: int


class PoolHealth(Health):
    """``GET /health`` of a pool: the runner's counts, and each worker."""

    workers: list[WorkerHealth]


class PoolReady(Ready):
    """``GET /ready`` of a pool: ``max_calls`` is every ready worker's ``RUNNER_MAX_CALLS``."""

    workers: int


def create_front_app(settings: Settings, pool: WorkerPool) -> FastAPI:
    """The front's application over ``pool``; the pool starts with it and ends with it."""
    redactor = Redactor(settings.secrets())

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
        logger.info(
            f"runner ready; pipecat-manager at {settings.pipecatcall_address}, listening on "
            f"{settings.host}:{settings.port}, {pool.count} workers, at most "
            f"{settings.max_calls} calls each"
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(redactor, level=settings.log_level, json_lines=settings.log_json)
        # The port opens at once, /health answering, while the workers start and warm up;
        # /ready and /run say 503 (Retry-After) until one is up.
        starting = asyncio.get_running_loop().create_task(start_pool())
        app.state.starting = starting
        try:
            yield
        finally:
            await pool.close()
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)

    def refused(method: str, path: str, status: int, reason: str) -> None:
        logger.warning(f"refused {method} {path}: {status} {reason}")
        if path == "/run":
            label = REFUSAL_REASONS.get(status, "other")
            if status == 503:
                label = "draining" if pool.draining else "capacity" if pool.ready else "unavailable"
            pool.metrics.calls_refused.labels(label).inc()

    app = FastAPI(
        title="pipecat-team-runner",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # a worker's is served instead: the same routes and answers
    )
    app.state.start_failed = False
    app.state.exit = lambda: None  # serve_front sets it: end the server
    app.add_middleware(
        BodyLimits,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_secs=settings.body_timeout_secs,
        on_refused=lambda scope, status, reason: refused(
            scope["method"], scope["path"], status, reason
        ),
    )
    install_error_answers(app, refused, redactor.redact)
    _add_routes(app, settings, pool)
    return app


def _add_routes(app: FastAPI, settings: Settings, pool: WorkerPool) -> None:
    @app.post("/run", responses=error_responses(400, 408, 409, 413, 422, 500, 503))
    async def run(request: Request) -> Response:
        """Place a call on the least-loaded worker; its answer is passed on as it is."""
        body = await request.body()
        if not pool.started and not pool.draining:
            # Go does not retry a /run: one that comes while the workers warm up waits.
            await asyncio.wait({app.state.starting}, timeout=settings.start_timeout_secs)
        if pool.draining:
            raise Draining("the runner is shutting down; start the call on another runner")
        call_id = _call_id(body)
        if call_id is None:
            # No id: not the contract's shape. Any worker says what is wrong with it.
            worker = min(pool.ready, key=lambda w: w.load, default=None)
        else:
            worker = pool.holder(call_id) or await pool.place()
        if worker is None:
            if not pool.ready:
                raise NoWorker("no worker process is up yet (starting or being replaced)")
            raise AtCapacity(
                f"the runner is at capacity ({pool.calls} calls: {len(pool.ready)} workers of "
                f"{settings.max_calls}, RUNNER_MAX_CALLS); try again shortly or on another runner"
            )
        try:
            answer = await pool.start_call(
                worker, call_id, body, request.headers.get("content-type")
            )
        except WorkerGone as e:
            raise StartError(
                "runner worker", f"worker {worker.index} ended before the call came up"
            ) from e
        return _passed(answer)

    @app.post("/stop", responses=error_responses(404, 422))
    async def stop(id: Annotated[CallId, Query()]) -> Response:
        """Stop a call on the worker that holds it."""
        worker = pool.holder(id)
        if worker is None:
            raise SessionNotFound(NOT_FOUND)
        try:
            return _passed(await pool.stop_call(worker, id))
        except WorkerGone:
            if not worker.ended.is_set():
                raise
            # Its worker ended, and with it everything the call held.
            return JSONResponse(Stopped(id=id).model_dump())

    @app.get("/health")
    async def health() -> PoolHealth:
        """Liveness of the front (also while it drains), with every worker."""
        workers = [
            WorkerHealth(
                index=w.index,
                pid=w.pid,
                state=w.state.value,
                calls=w.load,
                speech_models_loaded=w.speech_models_loaded,
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
        """Readiness: not draining, and some worker has room for a call."""
        ready = pool.ready
        capacity = len(ready) * settings.max_calls
        if pool.draining:
            reason, retry = "draining: the runner is shutting down", "5"
        elif not pool.started:
            # Ready once every worker is warm: the first calls spread over the whole pool.
            reason = f"starting: {len(ready)} of {pool.count} worker processes up"
            retry = "2"
        elif not ready:
            reason, retry = "starting: no worker process is up yet", "2"
        elif all(w.load >= settings.max_calls for w in ready):
            reason = (
                f"at capacity: {pool.calls} of {capacity} calls "
                f"({len(ready)} workers of {settings.max_calls}, RUNNER_MAX_CALLS)"
            )
            retry = "2"
        else:
            return PoolReady(calls=pool.calls, max_calls=capacity, workers=len(ready))
        return JSONResponse(error_body(reason), status_code=503, headers={"Retry-After": retry})

    @app.get("/calls")
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

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        """The whole runner's metrics, every worker's summed, in Prometheus' text format."""
        return Response(pool.metrics.exposition(), media_type=CONTENT_TYPE)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi() -> Response:
        """A worker's schema: the front serves the same routes and answers."""
        answers = await pool.ask("/openapi.json")
        if not answers:
            raise NoWorker("no worker process is up yet (starting or being replaced)")
        return _passed(answers[0][1])


def _call_id(body: bytes) -> str | None:
    """The call's id, if the body is a JSON object with a string ``id``."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    call_id = value.get("id") if isinstance(value, dict) else None
    return call_id if isinstance(call_id, str) else None


def _passed(answer: Answer) -> Response:
    return Response(answer.body, status_code=answer.status, headers=dict(answer.headers))


def serve_front(settings: Settings, count: int, target: WorkerTarget) -> None:
    """Serve the front of ``count`` workers running ``target`` until a signal, then drain."""
    with tempfile.TemporaryDirectory(prefix="teamrunner-") as scratch:
        sockets, metrics = Path(scratch, "sockets"), Path(scratch, "metrics")
        sockets.mkdir(mode=0o700)
        metrics.mkdir(mode=0o700)
        # Read by prometheus-client when a worker imports it: the workers count in files.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
        pool = WorkerPool(settings, count, target, str(sockets), PoolMetrics(str(metrics)))
        app = create_front_app(settings, pool)
        server = RunnerHTTPServer(
            uvicorn_config(app, settings), lambda: Drain(start=pool.drain, hurry=pool.hurry)
        )
        app.state.exit = lambda: setattr(server, "should_exit", True)
        server.run()
        if not server.started or app.state.start_failed:
            raise SystemExit(3)  # as uvicorn exits when the application could not start
