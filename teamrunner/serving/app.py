"""The runner's application, put together one way for a single runner and a pool's front.

Go reads the same answers from a single runner (``main.py``) and from the
front of a pool (``teamrunner.workers.front``), so what they share is made
here once: ``runner_app`` assembles the FastAPI application with the edge
installed (``edge.py``) and its lifespan (open what it serves with at
start-up, close it at the end); ``Refusals`` logs every refused request
once and counts a refused ``/run`` in ``runner_calls_refused_total{reason}``;
``not_ready`` is a "no" from ``/ready`` (503, the error shape, and when to
ask again). What each application serves, and why it is not ready, is its
own: this module knows nothing of calls or workers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from enum import StrEnum

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from loguru import logger
from prometheus_client import Counter
from starlette.middleware import Middleware

from teamrunner.config import Settings
from teamrunner.errors import AtCapacity, Draining
from teamrunner.responses import error_body
from teamrunner.serving.edge import install_edge

TITLE = "pipecat-team-runner"

# Run as the application stops, closing what its opener opened.
Closer = Callable[[], Awaitable[None]]
# Run as the application starts, opening what it serves with.
Opener = Callable[[FastAPI], Awaitable[Closer]]


# The reason label of a refused /run, by its status (a 503's is ``Unavailable``).
REFUSAL_REASONS = {
    400: "invalid",
    404: "not_found",
    408: "timeout",
    409: "conflict",
    413: "too_large",
    422: "invalid",
    500: "start_failed",
}


class Unavailable(StrEnum):
    """Why the runner answers 503 now, as the reason label of a refused ``/run``."""

    DRAINING = "draining"  # shutting down
    CAPACITY = "capacity"  # its load, or RUNNER_MAX_CALLS, leaves no room
    NO_WORKER = "unavailable"  # a pool with no worker up (starting, or being replaced)


def runner_app(
    settings: Settings,
    opener: Opener,
    on_refused: Refusals,
    redact: Callable[[str], str],
    *,
    behind_front: bool = False,
    openapi: bool = True,
    inner: Middleware | None = None,
) -> FastAPI:
    """The application, with the edge installed and no routes yet.

    Args:
        opener: Opens what the application serves with as it starts, and returns
            what closes it as it stops.
        on_refused: Told of every refused request.
        redact: Scrubs keys from text an answer or a log line would carry.
        behind_front: It is a pool's worker (``install_edge`` says what that leaves out).
        openapi: It serves ``/openapi.json`` itself (a front passes on a worker's).
        inner: Serves some requests below the routes, inside the edge (``install_edge``).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        close = await opener(app)
        try:
            yield
        finally:
            await close()

    app = FastAPI(
        title=TITLE,
        lifespan=lifespan,
        # The interactive pages load their assets from a CDN, blank on a pod without one.
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if openapi else None,
    )
    install_edge(app, settings, on_refused, redact, behind_front=behind_front, inner=inner)
    return app


class Refusals:
    """Logs a refused request once, and counts a refused ``/run`` by its reason.

    Args:
        counter: ``runner_calls_refused_total``, once there is one (a single
            runner's metrics are made as it starts).
        unavailable: Why a 503 is answered now.
        leave_capacity_to_front: The application is a pool's worker: a ``/run`` it
            has no room for is the front's to report, since the front offers it to
            the next worker and reports it only if none takes it.
    """

    def __init__(
        self,
        counter: Callable[[], Counter | None],
        unavailable: Callable[[], Unavailable],
        *,
        leave_capacity_to_front: bool = False,
    ) -> None:
        self._counter = counter
        self._unavailable = unavailable
        self._leave_capacity_to_front = leave_capacity_to_front

    def __call__(self, method: str, path: str, status: int, reason: str) -> None:
        if (
            status == 503
            and self._leave_capacity_to_front
            and self._unavailable() is not Unavailable.DRAINING
        ):
            return
        logger.warning(f"refused {method} {path}: {status} {reason}")
        counter = self._counter()
        if counter is not None and path == "/run":
            label = REFUSAL_REASONS.get(status, "other")
            if status == 503:
                label = str(self._unavailable())
            counter.labels(label).inc()


def not_ready(reason: str, *, draining: bool) -> JSONResponse:
    """``/ready``'s "no": 503 in the error shape, with when to ask again."""
    # As a /run refused now would say: a draining runner will not come back soon.
    retry = Draining.retry_after if draining else AtCapacity.retry_after
    return JSONResponse(error_body(reason), status_code=503, headers={"Retry-After": str(retry)})
