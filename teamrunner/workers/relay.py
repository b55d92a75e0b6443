"""The front's ``/run`` and ``/stop``: each passed to its worker below FastAPI, answered as it was.

A ``/run`` is offered, body untouched, to the workers in turn until one
takes it (or to the worker already holding that id, which refuses it as a
conflict); a ``/stop?id=`` goes to the worker holding the call. Either way
the worker's answer comes back as it gave it, so Go reads exactly what a
single runner says. Nothing in the front reads these requests but their
id, so FastAPI's routing, its request objects and its exception layer
would be work for nothing on the two requests every call makes:
``CallRelay`` is an ASGI middleware installed inside the edge
(``teamrunner.serving.edge``: Host, token and body limits have passed when
it sees a request) that answers ``POST /run`` and the ``POST /stop`` of a
call some worker holds itself, and hands every other request on to the
front's routes. Its refusals are the runner's own errors, answered by
``runner_error_answer`` as the application's exception handlers answer
them; a ``/run`` by another method is refused as FastAPI refuses it (405).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from urllib.parse import parse_qsl

from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter, ValidationError

from teamrunner.config import Settings
from teamrunner.contract import CallId
from teamrunner.errors import (
    AtCapacity,
    Draining,
    NoWorker,
    RequestError,
    SessionNotFound,
    StartError,
)
from teamrunner.responses import Stopped
from teamrunner.serving.answers import (
    ASGIApp,
    OnRefused,
    Receive,
    Scope,
    Send,
    error_answer,
    runner_error_answer,
)
from teamrunner.serving.json_body import parse_json
from teamrunner.workers.pool import WorkerPool
from teamrunner.workers.process import Answer, WorkerGone, WorkerProcess

NOT_FOUND = "no call with that id is running; GET /calls lists the running calls"

_CALL_ID: TypeAdapter[str] = TypeAdapter(CallId)


class CallRelay:
    """Answers ``POST /run``, and ``POST /stop`` of a held call, from the worker concerned.

    Args:
        app: The front's application, for every other request.
        pool: The workers.
        settings: The runner's settings.
        refusals: Told of every refused request.
        redact: Scrubs keys from text an answer would carry.
        starting: The pool's start, which a ``/run`` that comes meanwhile waits on.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        pool: WorkerPool,
        settings: Settings,
        refusals: OnRefused,
        redact: Callable[[str], str],
        starting: Callable[[], asyncio.Future[None]],
    ) -> None:
        self._app = app
        self._pool = pool
        self._settings = settings
        self._refusals = refusals
        self._redact = redact
        self._starting = starting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["path"] == "/run":
                await self._run(scope, receive, send)
                return
            if scope["path"] == "/stop" and scope["method"] == "POST":
                call_id = _stop_id(scope)
                if call_id is not None and self._pool.holder(call_id) is not None:
                    response = await stop_on_holder(self._pool, call_id)
                    await response(scope, receive, send)
                    return
        await self._app(scope, receive, send)

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method != "POST":
            refused = error_answer(
                self._refusals, method, "/run", 405, "Method Not Allowed", headers={"Allow": "POST"}
            )
            await refused(scope, receive, send)
            return
        body = await _whole_body(receive)
        try:
            answer = await self._offer_call(body, _header(scope, b"content-type"))
        except (RequestError, StartError) as e:
            await runner_error_answer(self._refusals, self._redact, "POST", "/run", e)(
                scope, receive, send
            )
            return
        await passed(answer)(scope, receive, send)

    async def _offer_call(self, body: bytes, content_type: str | None) -> Answer:
        """Offer the call to the workers in turn; the answer is passed on as it is."""
        pool, settings = self._pool, self._settings
        if not pool.started and not pool.draining:
            # Go does not retry a /run: one that comes while the workers warm up waits.
            await asyncio.wait({self._starting()}, timeout=settings.start_timeout_secs)
        if pool.draining:
            raise Draining("the runner is shutting down; start the call on another runner")
        call_id = _call_id(body)
        holder = pool.holder(call_id) if call_id is not None else None
        if holder is not None:
            return await _start_on(pool, holder, call_id, body, content_type)  # 409
        if not pool.ready:
            raise NoWorker("no worker process is up yet (starting or being replaced)")
        if not await pool.under_cap():
            raise AtCapacity(
                f"at capacity: {pool.calls} of {settings.max_calls} calls (RUNNER_MAX_CALLS); "
                "try again shortly or on another runner"
            )
        answer = await _offer(pool, call_id, body, content_type)
        if answer.status == 503:
            # Workers leave a refusal for their load to the front: another may have taken it.
            self._refusals("POST", "/run", 503, json.loads(answer.body)["error"])
        return answer


async def stop_on_holder(pool: WorkerPool, call_id: str) -> Response:
    """Stop a call on the worker that holds it; its answer as it gave it.

    Raises:
        SessionNotFound: no worker holds a call with that id.
    """
    worker = pool.holder(call_id)
    if worker is None:
        raise SessionNotFound(NOT_FOUND)
    try:
        return passed(await pool.stop_call(worker, call_id))
    except WorkerGone:
        if not worker.ended.is_set():
            raise
        # Its worker ended, and with it everything the call held.
        return JSONResponse(Stopped(id=call_id).model_dump())


def passed(answer: Answer) -> Response:
    """A worker's answer, as the front's own."""
    return Response(answer.body, status_code=answer.status, headers=dict(answer.headers))


async def _offer(
    pool: WorkerPool, call_id: str | None, body: bytes, content_type: str | None
) -> Answer:
    """Offer the call to each worker in turn (``candidates``) until one takes it.

    Each judges its own load. A body with no id is not the contract's shape,
    and the first worker says what is wrong with it. A worker that could not
    even be reached had ended before the request (its exit not yet seen by
    the pool: a killed worker's socket refuses at once), so the request goes
    to the next; one that ended under the request is the call's end (a 500).
    A body with no id starts no call wherever it goes, so it goes to the next
    worker either way, and its sender gets what is wrong with it, not a 500.
    """
    answer: Answer | None = None
    for worker in pool.candidates():
        try:
            answer = await pool.start_call(worker, call_id, body, content_type)
        except WorkerGone as e:
            if e.reached and call_id is not None:
                raise _ended_under(worker) from e
            continue
        if answer.status != 503 or call_id is None:
            break
    if answer is None:
        raise NoWorker("no worker process is up (every one had ended)")
    return answer


async def _start_on(
    pool: WorkerPool,
    worker: WorkerProcess,
    call_id: str | None,
    body: bytes,
    content_type: str | None,
) -> Answer:
    """Offer the call to ``worker``; its answer as it gave it."""
    try:
        return await pool.start_call(worker, call_id, body, content_type)
    except WorkerGone as e:
        raise _ended_under(worker) from e


def _ended_under(worker: WorkerProcess) -> StartError:
    return StartError("runner worker", f"worker {worker.index} ended before the call came up")


def _call_id(body: bytes) -> str | None:
    """The call's id, if the body is a JSON object with a string ``id``.

    Read with the workers' own parser: a body it refuses has no id, and a
    worker answers what is wrong with it, as it would to a single runner.
    """
    try:
        value = parse_json(body)
    except ValueError:
        return None
    call_id = value.get("id") if isinstance(value, dict) else None
    return call_id if isinstance(call_id, str) else None


def _stop_id(scope: Scope) -> str | None:
    """The ``id`` a ``/stop`` names, as FastAPI would read it, if it is a call id."""
    query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
    values = [value for name, value in query if name == "id"]
    if not values:
        return None
    try:
        return _CALL_ID.validate_python(values[-1])
    except ValidationError:
        return None  # the front's route answers what is wrong with it


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope["headers"]:
        if name == wanted:
            return bytes(value).decode("latin-1")
    return None


async def _whole_body(receive: Receive) -> bytes:
    """The request's body (the edge's ``BodyLimits`` has read it whole already)."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)
