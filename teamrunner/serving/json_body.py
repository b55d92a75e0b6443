"""Reading a request's JSON body: one parser, with its limits, for the runner and the front.

The body is parsed by pydantic-core's JSON parser (jiter, in Rust), not the
standard library's. It refuses, as a plain ``ValueError`` naming where it
stopped, everything a runner cannot use: nesting deeper than
``MAX_DEPTH`` levels, bytes that are not UTF-8, a lone surrogate, a number
too long to be one, broken syntax. The standard library's parser instead
raises ``RecursionError`` on deep nesting (a 500 and a traceback, and its
limit depends on how deep the stack already is), ``UnicodeDecodeError`` on
bad bytes, and takes two to three times as long over a 2.5 MB team.

A refusal is raised as ``json.JSONDecodeError``, which is how FastAPI
expects a body parser to fail: it becomes a ``RequestValidationError`` of
type ``json_invalid``, answered 422 in the runner's error shape
(``answers.py``) naming the field ``body``, on a connection that stays open.
``JSONBodyRoute`` is FastAPI's documented hook for that: a route class
whose requests parse their JSON here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic_core import from_json

# The deepest nesting jiter reads (its recursion limit); a team's deepest part, a
# tool's parameter schema, is a few levels.
MAX_DEPTH = 200


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``.

    Raises:
        json.JSONDecodeError: with the parser's reason (never a quote of the body).
    """
    try:
        return from_json(body)
    except ValueError as e:
        raise json.JSONDecodeError(str(e), "", 0) from None


class JSONRequest(Request):
    """A request whose ``json()`` is :func:`parse_json` of its body."""

    async def json(self) -> Any:
        if not hasattr(self, "_parsed_json"):
            self._parsed_json = parse_json(await self.body())
        return self._parsed_json


class JSONBodyRoute(APIRoute):
    """FastAPI's route, reading its JSON body with :func:`parse_json`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_json_request(request: Request) -> Response:
            return await handle(JSONRequest(request.scope, request.receive))

        return handle_json_request
