"""No key ever appears in a log line, an error body, an RTVI event or a notification.

Calls are run with every key set, logs captured at DEBUG, and the failures
most likely to quote a key provoked: a provider refusing the key at start,
an LLM error mid-call, a team transition (which pipecat-manager is told of).
Then every byte the runner wrote is searched for every key.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from loguru import logger

from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import Reply

from conftest import (
    CARTESIA_KEY,
    DEEPGRAM_KEY,
    ELEVENLABS_KEY,
    OPENAI_KEY,
    XAI_KEY,
    Cloud,
)
from scenarios import TEAM_CALL_ID, caller_says, team_request, voice_request

KEYS = [OPENAI_KEY, XAI_KEY, DEEPGRAM_KEY, CARTESIA_KEY, ELEVENLABS_KEY]


@pytest.fixture
def captured_logs() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="DEBUG", backtrace=True)
    yield lines
    logger.remove(sink)


def leaks(texts: list[str]) -> list[str]:
    return [key for key in KEYS for text in texts if key in text]


async def test_keys_never_reach_logs_bodies_events_or_notifications(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, captured_logs: list[str]
) -> None:
    written: list[str] = []

    # 1. A start that fails because the provider refuses its key.
    cloud.deepgram.refuse_connections = True
    cloud.deepgram.refusal_status = 401
    refused = await http.post(f"{runner.url}/run", json=voice_request())
    assert refused.status_code == 500
    written.append(refused.text)
    cloud.deepgram.refuse_connections = False

    # 2. A single-AI call whose LLM fails mid-call, reported to Go as an RTVI error.
    # Written so that pipecat's own pattern-based masking does not catch it.
    cloud.openai.push(
        Reply.fail(500, f"The project of {ELEVENLABS_KEY} is over quota", retry=False)
    )
    call = cloud.manager.expect_call("leaky-1", caller=Caller(Caller.silence(0.2)))
    started = await http.post(f"{runner.url}/run", json=voice_request(id="leaky-1"))
    assert started.status_code == 200, started.text
    [error] = await call.wait_rtvi("error", timeout=10)
    assert "is over quota" in str(error.data), error
    written += [str(m.message) for m in call.rtvi()]
    await http.post(f"{runner.url}/stop", params={"id": "leaky-1"})

    # 3. A team call with a transition, so pipecat-manager is told of a switch.
    cloud.openai.push(Reply.say("Welcome."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."))
    team_call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.2)))
    started = await http.post(f"{runner.url}/run", json=team_request())
    assert started.status_code == 200, started.text
    await team_call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "Billing please.")
    [switch] = await team_call.wait_member_switches(1, timeout=15)
    written += [str(switch.raw_body), *(str(m.message) for m in team_call.rtvi())]
    written += [str(t.raw_body) for t in team_call.tool_calls]
    written.append((await http.get(f"{runner.url}/calls")).text)

    assert captured_logs, "the runner wrote no logs at all"
    assert leaks(written) == []
    assert leaks(captured_logs) == []
    # The provider's own error text did carry the key: the runner scrubbed it.
    assert any("[redacted]" in text for text in written + captured_logs)
