"""The runner's HTTP API, the one pipecat-manager calls.

``POST /run`` starts a call and answers 200 once its pipeline is up;
``POST /stop?id=`` ends one; ``GET /health`` says the process is alive;
``GET /calls`` lists the running calls for operators. ``/openapi.json``
describes every route and answer; the interactive ``/docs`` page is left off,
since it loads its assets from a CDN and would be blank on a pod without one.

Every error answer has one shape, ``{"status": "error", "error": "<what is
wrong>", "problems": [{"field", "message"}]}``: 422 when the JSON does not
have the contract's shape, 400 when its values cannot be served, 404/409 for
ids, 500 when a call could not be brought up (naming the component). No
answer quotes a request's values, so no key can leak through one.

Run it with ``python main.py`` (``--help`` for the options) or ``uvicorn
main:app``; it listens on ``RUNNER_HOST:RUNNER_PORT`` (default
``127.0.0.1:8000``). This module builds the application and hands the call
lifecycle (``teamrunner.sessions``) the call builder of ``run.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from loguru import logger

from run import build_call
from teamrunner.config import Settings
from teamrunner.contract import RunRequest
from teamrunner.errors import Problem, RequestError, StartError
from teamrunner.logs import configure_logging, install_redaction
from teamrunner.plan import plan_call
from teamrunner.responses import (
    CallInfo,
    Calls,
    Health,
    MemberRef,
    RunStarted,
    Stopped,
    error_responses,
)
from teamrunner.runtime import Runtime
from teamrunner.sessions import Session, Sessions


def create_app(settings: Settings | None = None, *, configure_logs: bool = True) -> FastAPI:
    """The application; ``settings`` default to the environment, read at start-up."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = settings or Settings.from_env()
        runtime = Runtime.create(resolved)
        if configure_logs:
            configure_logging(runtime.redactor, json_lines=resolved.log_json)
        else:
            install_redaction(runtime.redactor)
        app.state.runtime = runtime
        app.state.sessions = Sessions(runtime, build_call)
        logger.info(
            f"runner ready; pipecat-manager at {resolved.pipecatcall_address}, "
            f"listening on {resolved.host}:{resolved.port}"
        )
        try:
            yield
        finally:
            await app.state.sessions.stop_all("the runner is shutting down")
            await runtime.close()

    app = FastAPI(title="pipecat-team-runner", lifespan=lifespan, docs_url=None, redoc_url=None)
    _add_error_handlers(app)
    _add_routes(app)
    return app


def _add_routes(app: FastAPI) -> None:
    @app.post("/run", responses=error_responses(400, 409, 422, 500))
    async def run(request: RunRequest) -> RunStarted:
        """Start a call; answers once both sockets and every provider are up."""
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

    @app.post("/stop", responses=error_responses(404, 422))
    async def stop(id: str) -> Stopped:
        """End a call; answers once everything it opened is released."""
        await app.state.sessions.stop(id)
        return Stopped(id=id)

    @app.get("/health")
    async def health() -> Health:
        """Liveness: the process answers, and how much it holds."""
        runtime: Runtime = app.state.runtime
        return Health(
            sessions=len(app.state.sessions), speech_models_loaded=runtime.shared.models.loads
        )

    @app.get("/calls")
    async def calls() -> Calls:
        """The running calls, each team call with its active member."""
        return Calls(calls=[_call_info(s) for s in app.state.sessions.all()])


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


def _error(status: int, message: str, problems: list[Problem] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"status": "error", "error": message}
    if problems:
        body["problems"] = [{"field": p.field, "message": p.message} for p in problems]
    return JSONResponse(status_code=status, content=body)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_shape(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type", "")
        if request.method == "POST" and request.url.path == "/run" and "json" not in content_type:
            return _error(
                422,
                "the /run body must be JSON sent with Content-Type: application/json",
                [Problem("body", "not JSON")],
            )
        problems = [
            Problem(_field_path(error.get("loc", ())), error.get("msg", "invalid"))
            for error in exc.errors()
        ]
        summary = "; ".join(str(p) for p in problems)
        return _error(422, f"request does not match the /run contract: {summary}", problems)

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.problems)

    @app.exception_handler(StartError)
    async def not_started(request: Request, exc: StartError) -> JSONResponse:
        runtime: Runtime = app.state.runtime
        message = runtime.redactor.redact(f"call could not start: {exc}")
        logger.error(message)
        return _error(500, message, [Problem(exc.component, runtime.redactor.redact(exc.reason))])

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        runtime: Runtime = app.state.runtime
        logger.exception(f"unexpected error on {request.url.path}")
        message = runtime.redactor.redact(f"runner error: {type(exc).__name__}: {exc}")
        return _error(500, message)


def _field_path(loc: tuple[Any, ...]) -> str:
    """``("body", "resolved_team", "members", 1, "ai")`` → ``resolved_team.members[1].ai``."""
    path = ""
    for part in loc:
        if part == "body" and not path:
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


app = create_app()


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
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")


if __name__ == "__main__":
    main()
