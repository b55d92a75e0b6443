"""The runner's logs: a call's fields on every line, JSON lines, and only unexpected warnings.

pipecat has no warning codes, so the filter matches a logger name and a
fragment of text; a test runs the situation for real (a team member with a
Go tool) and fails if pipecat's wording moves and the warning would reach
the operator's log again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from loguru import logger

from playground.server import RunnerServer
from simulators.cloud import KEYS
from simulators.manager import Caller, CallRecord
from simulators.openai import Reply
from teamrunner.observe.logs import ExpectedWarningFilter

from conftest import Cloud
from runner_process import RunnerProcess
from scenarios import BILLING, GREETER, TEAM_CALL_ID, caller_says, team_request


@pytest.fixture
def filtered_log() -> Iterator[tuple[ExpectedWarningFilter, list[str]]]:
    expected = ExpectedWarningFilter()
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", filter=expected)
    yield expected, lines
    logger.remove(sink)


async def handed_off_and_stopped(cloud: Cloud, http: httpx.AsyncClient, url: str) -> CallRecord:
    """A team call at ``url``: the greeter hands the caller to billing, who answers; then /stop."""
    cloud.openai.push(Reply.say("Welcome to Acme."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.2)))
    response = await http.post(f"{url}/run", json=team_request())
    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "Billing please.")
    await call.wait_member_switches(1, timeout=15)
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 15, "billing's answer")
    await http.post(f"{url}/stop", params={"id": TEAM_CALL_ID})
    return call


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


async def test_a_team_call_that_goes_well_puts_no_warning_in_the_operators_log(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    filtered_log: tuple[ExpectedWarningFilter, list[str]],
) -> None:
    _, lines = filtered_log
    call = await handed_off_and_stopped(cloud, http, runner.url)
    await call.wait_closed(timeout=10)

    assert lines == []


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


async def test_json_lines_carry_the_call_id_on_pipecats_own_lines_and_end_with_a_summary(
    cloud: Cloud, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    environment = {**cloud.environment(), "RUNNER_LOG_JSON": "1", "RUNNER_LOG_LEVEL": "DEBUG"}
    runner = RunnerProcess(environment, tmp_path).start()
    try:
        # /stop answers once the call has ended and its summary is written.
        await handed_off_and_stopped(cloud, http, runner.url)
    finally:
        runner.stop()

    lines = [json.loads(line) for line in runner.log.splitlines() if line.startswith("{")]
    assert lines and all({"time", "level", "message", "logger"} <= set(line) for line in lines)
    of_call = [line for line in lines if line.get("call_id") == TEAM_CALL_ID]
    pipecats = [line for line in of_call if line["logger"].startswith("pipecat.")]
    assert pipecats, "pipecat's own lines carry the call id"
    # The member field follows the call: the greeter's lines, then billing's.
    assert {line["member"] for line in of_call} == {GREETER, BILLING}
    [summary] = [line["summary"] for line in of_call if "summary" in line]
    assert summary["members_visited"] == [GREETER, BILLING]
    assert summary["handoffs"] == 1
    assert summary["end_reason"] == "stopped"
    assert summary["duration_secs"] > 0
    assert not any(key in runner.log for key in KEYS.values())
