"""A bug in a route is a 500 in the error shape, logged once, on a connection that goes on.

The runner here is served by uvicorn on a real port, in this process, so a
route with a bug can be added to it: no route of the runner's own raises on
purpose.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from loguru import logger

from playground.server import RunnerServer

from runner_process import RawConnection, http_request


@pytest.fixture
def captured_logs() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="DEBUG", backtrace=True)
    yield lines
    logger.remove(sink)


async def test_a_bug_in_a_route_is_a_500_in_the_error_shape_and_the_connection_goes_on(
    bare_runner: RunnerServer, captured_logs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    async def has_a_bug() -> None:
        raise KeyError("a bug")

    bare_runner.app.add_api_route("/bug", has_a_bug)

    async with RawConnection("127.0.0.1", bare_runner.port) as connection:
        bug = await connection.request(http_request("GET", "/bug"))
        health = await connection.request(http_request("GET", "/health"))

    assert bug.status == 500
    assert bug.json() == {"status": "error", "error": "runner error: KeyError: 'a bug'"}
    assert "connection" not in bug.headers
    assert health.status == 200
    # Logged once, with its traceback; uvicorn, which never saw it, logged nothing.
    logged = [line for line in captured_logs if "unexpected error on GET /bug" in line]
    assert len(logged) == 1 and "Traceback" in logged[0] and "KeyError" in logged[0]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
