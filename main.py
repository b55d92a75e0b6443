"""The runner's HTTP API, the one pipecat-manager calls, and the process that serves it.

``POST /run`` starts a call and answers 200 once its pipeline is up;
``POST /stop?id=`` ends one; ``GET /health`` says the process is alive;
``GET /ready`` whether it takes a new call (no while draining, or while
its load could not carry a voice call: ``teamrunner.lifecycle.admission``);
``GET /calls`` lists the running calls; ``GET /metrics`` is for
Prometheus. ``/openapi.json`` describes every route and answer; the
interactive ``/docs`` page is left off, since it loads its assets from a CDN
and would be blank on a pod without one. With ``RUNNER_METRICS_PORT`` the
probes (``/health``, ``/ready``, ``/metrics``) also answer on a port of
their own, so the API can stay on loopback; only the ``Host`` names the
runner is served as, and with ``RUNNER_API_TOKEN`` only its holder, may use
the rest (``teamrunner.serving``).

Every error answer has one shape, ``{"status": "error", "error": "<what is
wrong>", "problems": [{"field", "message"}]}``, whatever raised it (the
contract's checks, the body limits, the JSON parser, a bug), and none quotes
a request's values, so no key can leak through one, and none closes a
kept-alive connection that could go on. Every refused request is logged
once, with its status and why.

Run it with ``python main.py`` (``--help`` for the options). On SIGTERM it
drains: ``/ready`` and ``/run`` answer 503 at once while live calls go on
for up to ``RUNNER_DRAIN_SECS``; a second signal ends them all at once.
This module builds the application and hands the call lifecycle
(``teamrunner.lifecycle.registry``) the call builder of ``run.py``.

With ``RUNNER_WORKERS`` above 1 (by default, one per core) ``python main.py``
is the front of a pool (``teamrunner.workers``): it serves the same API on
the same port and places each call on one of its worker processes, each of
which runs this application, as a single runner does, on a socket of its
own (``serve_worker``). With 1 there is no front: the process is the runner.
``uvicorn main:app`` always serves a single process.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    # A pool's template imports the call stack on the other core while this
    # process imports the API below (``teamrunner.workers.template``).
    from teamrunner.workers.template import start_early

    start_early(sys.argv[1:])

import argparse
import socket
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import Response
from loguru import logger
from prometheus_client import Counter

from teamrunner.config import Settings
from teamrunner.contract import CallId, RunRequest
from teamrunner.lifecycle.registry import SessionRegistry
from teamrunner.lifecycle.runtime import Runtime
from teamrunner.lifecycle.session import BuiltCall, Session
from teamrunner.lifecycle.warmup import WarmUp, call_modules, preload_names
from teamrunner.observe import tracing
from teamrunner.observe.journal import CallJournal, EndReason
from teamrunner.observe.logs import configure_logging, install_redaction
from teamrunner.observe.metrics import CONTENT_TYPE
from teamrunner.plan import CallPlan, plan_call
from teamrunner.responses import (
    CallInfo,
    Calls,
    MemberRef,
    ProcessHealth,
    ProcessReady,
    Providers,
    RunStarted,
    Stopped,
    error_responses,
)
from teamrunner.serving.app import Closer, Refusals, Unavailable, not_ready, runner_app
from teamrunner.serving.listeners import listening_on, listening_sockets
from teamrunner.serving.server import Drain, RunnerHTTPServer, uvicorn_config
from teamrunner.workers import worker_count
from teamrunner.workers.template import worker_modules

if TYPE_CHECKING:
    from pipecat.observers.base_observer import BaseObserver
    from pipecat.pipeline.worker import PipelineWorker

# Observers a tool running the runner adds to each call it builds (the playground's
# timeline and Whisker), given the call's plan and worker, as pipecat's own
# ``setup_pipeline_worker`` hook is given the worker. Production adds none.
CallObservers = Callable[[CallPlan, "PipelineWorker"], Iterable["BaseObserver"]]


def build_call(
    plan: CallPlan,
    runtime: Runtime,
    journal: CallJournal,
    observers: CallObservers | None = None,
) -> BuiltCall:
    """``run.build_call`` over pipecat-manager's sockets, the transport of production.

    ``run`` (pipecat and the call stack) is imported by the warm-up or the first
    call, not with the API. ``observers`` are added to the call's worker before it runs.
    """
    import run
    from teamrunner.manager.transport import open_sockets

    settings = runtime.settings
    sockets = open_sockets(
        settings.manager_ws_url,
        plan.id,
        hears=plan.hears,
        redactor=runtime.redactor,
        caller_audio_ms=settings.caller_audio_ms,
        address=settings.pipecatcall_address,
    )
    call = run.build_call(plan, runtime, journal, sockets)
    if observers is not None:
        for observer in observers(plan, call.worker):
            call.worker.add_observer(observer)
    return call


def create_app(
    settings: Settings | None = None,
    *,
    configure_logs: bool = True,
    warm: bool = False,
    behind_front: bool = False,
    observers: CallObservers | None = None,
) -> FastAPI:
    """The application; ``settings`` default to the environment, read now.

    The call stack is imported and the speech models of
    ``RUNNER_PRELOAD_MODELS`` loaded in the background (``teamrunner.lifecycle.warmup``):
    the API answers at once, ``/ready`` says no until that is done. ``warm``
    does it before the application answers at all instead (a pool's workers
    do: the front already answers for them, and a worker that cannot warm up
    should not start). ``behind_front`` leaves the probes' listener and the
    ``Host`` and token checks to a pool's front (``teamrunner.serving.edge``
    says why). ``observers`` watch each call (``CallObservers``; none in production).
    """
    resolved = settings or Settings.from_env()

    def refused_counter() -> Counter | None:
        # The runtime, and with it the metrics, is made as the application starts.
        runtime: Runtime | None = getattr(app.state, "runtime", None)
        return runtime.metrics.calls_refused if runtime is not None else None

    def unavailable() -> Unavailable:
        draining = app.state.sessions.draining
        return Unavailable.DRAINING if draining else Unavailable.CAPACITY

    refusals = Refusals(
        refused_counter,
        unavailable,
        leave_capacity_to_front=behind_front,
    )
    app = runner_app(
        resolved,
        lambda app: _open(app, resolved, observers, configure_logs=configure_logs, warm=warm),
        refusals,
        lambda text: app.state.runtime.redactor.redact(text),
        behind_front=behind_front,
    )
    app.state.settings = resolved
    _add_routes(app)
    return app


async def _open(
    app: FastAPI,
    settings: Settings,
    observers: CallObservers | None,
    *,
    configure_logs: bool,
    warm: bool,
) -> Closer:
    """Start what the application serves with: its runtime, warm-up and call registry."""
    runtime = Runtime.create(settings)
    if configure_logs:
        configure_logging(runtime.redactor, level=settings.log_level, json_lines=settings.log_json)
    else:
        install_redaction(runtime.redactor)
    warmup = WarmUp(call_modules(settings), runtime.shared, preload_names(settings.preload_models))
    if warm:
        await warmup.wait()
    else:
        warmup.start()
    # A tracer provider made here is shut down (its spans flushed) at the end.
    provider = tracing.setup_tracing() if settings.tracing else None
    app.state.runtime = runtime
    app.state.warmup = warmup
    sessions = SessionRegistry(runtime, partial(build_call, observers=observers), warmup)
    sessions.open()
    app.state.sessions = sessions
    # A pool's worker listens on the front's private socket; the front logs the port.
    where = "" if warm else f"listening on {listening_on(settings)}, "
    logger.info(
        f"{'worker' if warm else 'runner'} ready; pipecat-manager at "
        f"{settings.pipecatcall_address}, {where}{_admission(settings)}"
    )

    async def close() -> None:
        await sessions.end_all(EndReason.SHUTDOWN, "the runner stopped")
        await sessions.close()
        await warmup.close()
        await runtime.close()
        if provider is not None:
            provider.shutdown()

    return close


def _add_routes(app: FastAPI) -> None:
    @app.post("/run", responses=error_responses(400, 401, 408, 409, 413, 422, 500, 503))
    async def run(request: RunRequest) -> RunStarted:
        """Start a call; answers once both sockets and the start member's providers are up."""
        runtime: Runtime = app.state.runtime
        plan = plan_call(request, runtime.settings)
        session = await app.state.sessions.start(plan)
        return RunStarted(
            id=plan.id,
            team=plan.is_team,
            members=len(plan.members),
            active_member=session.active_member.id if plan.is_team else None,
            startup_secs=round(session.startup_secs, 4),
        )

    @app.post("/stop", responses=error_responses(401, 404, 422))
    async def stop(id: Annotated[CallId, Query()]) -> Stopped:
        """End a call; answers once everything it opened is released."""
        await app.state.sessions.stop(id)
        return Stopped(id=id)

    @app.get("/health")
    async def health() -> ProcessHealth:
        """Liveness: the process answers (also while it drains), and how much it holds."""
        runtime: Runtime = app.state.runtime
        sessions: SessionRegistry = app.state.sessions
        return ProcessHealth(
            sessions=len(sessions),
            speech_models_loaded=runtime.shared.models.loads,
            providers=Providers.servable(),
            load=sessions.load(),
        )

    @app.get("/ready", response_model=ProcessReady, responses=error_responses(503))
    async def ready() -> Any:
        """Readiness: whether a voice call would be taken now (no while draining or loaded)."""
        sessions: SessionRegistry = app.state.sessions
        reason = sessions.not_ready()
        if reason is not None:
            return not_ready(reason, draining=sessions.draining)
        return ProcessReady(calls=len(sessions), max_calls=sessions.max_calls, load=sessions.load())

    @app.get("/calls", responses=error_responses(401))
    async def calls() -> Calls:
        """The running calls, each team call with its active member."""
        return Calls(calls=[_call_info(s) for s in app.state.sessions.all()])

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        """The runner's metrics, in Prometheus' text format."""
        runtime: Runtime = app.state.runtime
        sessions: SessionRegistry = app.state.sessions
        exposition = runtime.metrics.exposition(load={"0": sessions.load()})
        return Response(exposition, media_type=CONTENT_TYPE)


def _admission(settings: Settings) -> str:
    """How the runner admits calls, for its start-up line."""
    load = (
        f"admitting calls up to {settings.load_threshold:g} of a core's load"
        if settings.load_threshold
        else "admitting calls whatever its load"
    )
    cap = f", at most {settings.max_calls} at once" if settings.max_calls else ""
    return load + cap


def _call_info(session: Session) -> CallInfo:
    active = session.active_member
    return CallInfo(
        id=session.id,
        team=session.plan.is_team,
        members=len(session.plan.members),
        active_member=MemberRef(id=active.id, name=active.name),
        hears=session.plan.hears,
        speaks=session.plan.speaks,
        age_secs=round(session.age_secs, 1),
    )


def serve(app: FastAPI, settings: Settings, *, worker_socket: str | None = None) -> None:
    """Serve ``app`` until a signal, draining its calls first.

    On the API's address and, with ``RUNNER_METRICS_PORT``, the probes' own
    (``teamrunner.serving.listeners``); a pool's worker on ``worker_socket`` alone.
    """

    def drain() -> Drain | None:
        sessions: SessionRegistry | None = getattr(app.state, "sessions", None)
        if sessions is None:
            return None
        return Drain(start=lambda: sessions.drain(settings.drain_secs), hurry=sessions.hurry)

    if worker_socket is None:
        config = uvicorn_config(app, settings)
        sockets: list[socket.socket] | None = listening_sockets(config, settings)
    else:
        config = uvicorn_config(app, settings, uds=worker_socket)
        sockets = None
    server = RunnerHTTPServer(config, drain)
    server.run(sockets)
    if not server.started:
        raise SystemExit(3)  # as uvicorn exits when the application could not start


def serve_worker(settings: Settings, socket_path: str, index: int) -> None:
    """One worker of a pool, in a process the front started: this runner on a private socket."""
    from teamrunner.workers.process import become_worker

    become_worker(index)
    # RUNNER_MAX_CALLS caps the whole pod, and the front checks it; each worker admits by load.
    worker_settings = replace(settings, max_calls=None)
    serve(
        create_app(worker_settings, warm=True, behind_front=True),
        worker_settings,
        worker_socket=socket_path,
    )


def main(argv: list[str] | None = None) -> None:
    """``python main.py``: serve the API, configured by the environment (see README)."""
    parser = argparse.ArgumentParser(
        prog="python main.py",
        description="Serve the runner's HTTP API for pipecat-manager. Every setting is an "
        "environment variable (RUNNER_*, PIPECATCALL_ADDRESS, provider keys); see README.md.",
    )
    parser.add_argument("--host", help="listen address (default: RUNNER_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default: RUNNER_PORT or 8000)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    settings = replace(
        settings,
        host=args.host or settings.host,
        port=args.port if args.port is not None else settings.port,
    )
    workers = worker_count(settings)
    if workers == 1:
        serve(create_app(settings), settings)
    else:
        from teamrunner.workers.front import serve_front

        serve_front(settings, workers, serve_worker, worker_modules(settings))


def __getattr__(name: str) -> Any:
    """``uvicorn main:app``: the application, made when asked for, not at import."""
    if name == "app":
        return create_app()
    raise AttributeError(name)


if __name__ == "__main__":
    main()
