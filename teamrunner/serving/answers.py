"""The one error shape every refused request is answered in, whatever refused it.

``{"status": "error", "error": "<what is wrong>", "problems": [{"field",
"message"}]}``, from the contract's checks (``RequestError``), a call that
could not start (``StartError``), FastAPI's own parser and routing, the
middleware in front of the application (``send_error``), or an unexpected
exception, and never quoting a request's values, so no key can leak through
one. Both applications install it: a single runner process (``main.py``)
and the front of a pool of workers (``teamrunner.workers``), so Go reads the
same answers from either. Each refused request is reported once to
``on_refused`` (``app.Refusals``), which logs and counts it.

None of these answers closes a kept-alive connection: Go pools its
connections and sends its next request on the one that was just answered.
An unexpected exception (a bug) is the one case Starlette cannot answer so:
its outermost middleware answers 500 and then raises the exception on to
uvicorn, which closes the connection. ``UnexpectedErrors``, just inside it,
answers the 500 itself and does not raise.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from loguru import logger
from starlette.exceptions import HTTPException

from teamrunner.errors import Problem, RequestError, StartError
from teamrunner.responses import ProblemItem, error_body

# Told of every refused request: (method, path, status, reason).
OnRefused = Callable[[str, str, int, str], None]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def error_answer(
    on_refused: OnRefused,
    method: str,
    path: str,
    status: int,
    message: str,
    problems: list[Problem] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """Report a refusal, and answer it in the error shape."""
    on_refused(method, path, status, message)
    items = [ProblemItem(field=p.field, message=p.message) for p in problems or []]
    return JSONResponse(error_body(message, items), status_code=status, headers=headers)


def runner_error_answer(
    on_refused: OnRefused,
    redact: Callable[[str], str],
    method: str,
    path: str,
    error: RequestError | StartError,
) -> JSONResponse:
    """The answer to one of the runner's own errors: a refused request, a call that did not start.

    The exception handlers answer with it, and so does what serves a route
    below FastAPI (the front's ``/run`` and ``/stop``), so both answer alike.
    """
    if isinstance(error, StartError):
        message = redact(f"call could not start: {error}")
        problems = [Problem(error.component, redact(error.reason))]
        return error_answer(on_refused, method, path, 500, message, problems)
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else None
    return error_answer(
        on_refused, method, path, error.status, error.message, error.problems, headers
    )


def install_error_answers(
    app: FastAPI, on_refused: OnRefused, redact: Callable[[str], str]
) -> None:
    """Answer every error ``app`` raises in the one shape; ``redact`` scrubs keys from text."""

    def answer(
        request: Request,
        status: int,
        message: str,
        problems: list[Problem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> JSONResponse:
        method, path = request.method, request.url.path
        return error_answer(on_refused, method, path, status, message, problems, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_shape(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type", "")
        if request.method == "POST" and request.url.path == "/run" and "json" not in content_type:
            return answer(
                request,
                422,
                "the /run body must be JSON sent with Content-Type: application/json",
                [Problem("body", "not JSON")],
            )
        problems = [_problem(error) for error in exc.errors()]
        summary = "; ".join(str(p) for p in problems)
        return answer(request, 422, f"request does not match the contract: {summary}", problems)

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return runner_error_answer(on_refused, redact, request.method, request.url.path, exc)

    @app.exception_handler(StartError)
    async def not_started(request: Request, exc: StartError) -> JSONResponse:
        return runner_error_answer(on_refused, redact, request.method, request.url.path, exc)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        # FastAPI's own answers (a body it cannot parse, an unknown route or method).
        message = exc.detail if isinstance(exc.detail, str) else "the request was refused"
        headers = dict(exc.headers) if exc.headers else None
        return answer(request, exc.status_code, message, headers=headers)


def _problem(error: dict[str, Any]) -> Problem:
    if error.get("type") == "json_invalid":
        # FastAPI's location of a parse error is a character offset, not a field.
        reason = error.get("ctx", {}).get("error", "invalid")
        return Problem("body", f"not JSON the runner can read: {reason}")
    return Problem(field_path(error.get("loc", ())), error.get("msg", "invalid"))


class UnexpectedErrors:
    """Answers an exception no handler took (a bug) with 500, keeping the connection open.

    Installed as the application's outermost middleware of its own, inside
    Starlette's ``ServerErrorMiddleware``, which would otherwise answer and
    then raise it on to uvicorn. Logged once, with its traceback. An
    exception raised once the answer has begun is raised on: the connection
    cannot be saved then.
    """

    def __init__(
        self, app: ASGIApp, *, on_refused: OnRefused, redact: Callable[[str], str]
    ) -> None:
        self._app = app
        self._on_refused = on_refused
        self._redact = redact

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, receive, watched)
        except Exception as e:
            if started:
                raise
            logger.exception(f"unexpected error on {scope['method']} {scope['path']}")
            message = self._redact(f"runner error: {type(e).__name__}: {e}")
            self._on_refused(scope["method"], scope["path"], 500, message)
            await send_error(send, 500, message)


async def send_error(
    send: Send,
    status: int,
    message: str,
    problems: list[Problem] | None = None,
    headers: dict[str, str] | None = None,
    *,
    close: bool = False,
) -> None:
    """Answer in the error shape from ASGI middleware; ``close`` ends the connection after it."""
    items = [ProblemItem(field=p.field, message=p.message) for p in problems or []]
    payload = json.dumps(error_body(message, items), separators=(",", ":")).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in (headers or {}).items()),
    ]
    if close:
        raw_headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})


def field_path(loc: tuple[Any, ...]) -> str:
    """``("body", "resolved_team", "members", 1, "ai")`` → ``resolved_team.members[1].ai``."""
    path = ""
    for part in loc:
        if part in ("body", "query") and not path:
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"
