"""The runner's HTTP API, the one pipecat-manager calls (CONTRACT.md section 1).

``POST /run`` starts a call and answers 200 once its pipeline is up;
``POST /stop?id=`` ends one; ``GET /health`` says the process is alive, how
many calls it runs and how many speech models it has loaded (each is loaded
once per process). ``GET /calls`` lists the running calls for operators.

Every error answer is ``{"status": "error", "error": "<what is wrong>",
"problems": [{"field", "message"}]}``: 422 when the JSON does not have the
contract's shape, 400 when its values cannot be served (an unsupported
provider, a team whose transitions lead nowhere), 404/409 for ids, 500 when a
call could not be brought up (naming the component). No answer ever quotes a
request's values, so no key can leak through one.

Run it with ``python main.py`` or ``uvicorn main:app``; it listens on
``RUNNER_HOST:RUNNER_PORT`` (default ``127.0.0.1:8000``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from loguru import logger

from run import Runtime
from teamrunner.config import KEY_VARIABLES, Settings
from teamrunner.contract import RunRequest
from teamrunner.errors import Problem, RequestError, StartError
from teamrunner.logs import configure_logging, install_redaction
from teamrunner.manager.client import ManagerClient
from teamrunner.plan import plan_call
from teamrunner.providers.resources import SharedResources
from teamrunner.redaction import Redactor
from teamrunner.sessions import Sessions


def create_app(settings: Settings | None = None, *, configure_logs: bool = True) -> FastAPI:
    """The application; ``settings`` default to the environment, read at start-up."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = settings or Settings.from_env()
        redactor = Redactor(resolved.key(name) or "" for name in KEY_VARIABLES)
        if configure_logs:
            configure_logging(redactor, json_lines=resolved.log_json)
        else:
            install_redaction(redactor)
        runtime = Runtime(
            settings=resolved,
            shared=SharedResources(),
            manager=ManagerClient(resolved),
            redactor=redactor,
        )
        app.state.runtime = runtime
        app.state.sessions = Sessions(runtime)
        logger.info(
            f"runner ready; pipecat-manager at {resolved.pipecatcall_address}, "
            f"listening on {resolved.host}:{resolved.port}"
        )
        try:
            yield
        finally:
            await app.state.sessions.stop_all("the runner is shutting down")
            await runtime.manager.close()
            await runtime.shared.close()

    app = FastAPI(title="pipecat-team-runner", lifespan=lifespan)
    _add_error_handlers(app)

    @app.post("/run")
    async def run(request: RunRequest) -> dict[str, Any]:
        runtime: Runtime = app.state.runtime
        plan = plan_call(request, runtime.settings)
        session = await app.state.sessions.start(plan)
        return {
            "status": "ok",
            "id": plan.id,
            "team": plan.is_team,
            "members": len(plan.members),
            "active_member": session.call.active_member.id if plan.is_team else None,
            "startup_secs": round(session.startup_secs, 4),
        }

    @app.post("/stop")
    async def stop(id: str) -> dict[str, Any]:
        await app.state.sessions.stop(id)
        return {"status": "stopped", "id": id}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        runtime: Runtime = app.state.runtime
        return {
            "status": "ok",
            "sessions": len(app.state.sessions),
            "speech_models_loaded": runtime.shared.models.loads,
        }

    @app.get("/calls")
    async def calls() -> dict[str, Any]:
        return {"calls": [s.describe() for s in app.state.sessions.all()]}

    return app


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
                f"the /run body must be JSON sent with Content-Type: application/json "
                f"(got {content_type or 'no Content-Type'})",
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


if __name__ == "__main__":
    settings = Settings.from_env()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")
