"""The runner's log filter recognises the pipecat warnings it causes on purpose, and only those.

pipecat has no warning codes, so the filter matches a logger name and a
fragment of text. These tests run the situation for real (a team member
with a Go tool) and fail if pipecat's wording moves and the warning would
reach the operator's log again.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from loguru import logger

from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import Reply
from teamrunner.logs import ExpectedWarningFilter

from conftest import Cloud
from scenarios import TEAM_CALL_ID, team_request


@pytest.fixture
def filtered_log() -> Iterator[tuple[ExpectedWarningFilter, list[str]]]:
    expected = ExpectedWarningFilter()
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", filter=expected)
    yield expected, lines
    logger.remove(sink)


async def test_pipecats_warning_about_go_tool_registration_is_recognised_and_dropped(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    filtered_log: tuple[ExpectedWarningFilter, list[str]],
) -> None:
    expected, lines = filtered_log
    cloud.openai.push(Reply.say("Welcome to Acme."))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.2)))

    response = await http.post(f"{runner.url}/run", json=team_request())
    assert response.status_code == 200, response.text
    [request] = await cloud.openai.wait_for_requests(1, timeout=10)
    assert "send_email" in request.tool_names  # the greeter's Go tool was advertised
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    assert expected.dropped["redundant manual registration"] >= 1
    assert not any("register_function" in line for line in lines)


def test_other_warnings_pass_the_filter() -> None:
    expected = ExpectedWarningFilter()
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", filter=expected)
    try:
        logger.warning("is registered with register_function() but its advertised FunctionSchema")
        logger.warning("a provider failed")
    finally:
        logger.remove(sink)

    # The same words from another logger are not pipecat's warning: both lines pass.
    assert len(lines) == 2
    assert sum(expected.dropped.values()) == 0
