"""A transition's ``context`` decides what the next member's LLM sees, exactly.

The greeter (openai) hands "I have a billing question." to billing (grok).
Billing's first request is read at the grok simulator: ``append`` carries
the whole conversation, ``reset`` only billing's prompt and the caller's last
turn, ``summary`` billing's prompt and a summary billing's own LLM wrote
first. A summary that fails or takes too long leaves the conversation whole,
says why in the log, and is never the caller's problem: no fallback line, no
error sent to Go.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from loguru import logger

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord
from simulators.openai import ChatRequest, Reply
from teamrunner.call.carryover import SUMMARY_PROMPT

from conftest import Cloud, cloud_settings
from scenarios import TEAM_CALL_ID, caller_says, team_request

BILLING_PROMPT = {"role": "system", "content": "You handle billing for Acme."}
QUESTION = "I have a billing question."


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING")
    yield lines
    logger.remove(sink)


@pytest.fixture
async def quick_runner(cloud: Cloud) -> AsyncIterator[RunnerServer]:
    """A runner that bounds a summary (and any LLM request) to one second."""
    async with RunnerServer(cloud_settings(cloud, llm_timeout_secs=1.0)) as server:
        yield server


async def hand_over(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, context: str | None
) -> tuple[CallRecord, ChatRequest, ChatRequest]:
    """Run the handoff; the call, the greeter's request that transferred, billing's first."""
    body = team_request()
    if context is not None:
        body["resolved_team"]["members"][0]["transitions"][0]["context"] = context
    cloud.openai.push(Reply.say("Welcome to Acme."), Reply.call("transfer_to_billing"))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, QUESTION)
    await call.wait_member_switches(1, timeout=15)
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 15, "billing's answer")
    transferring = cloud.openai.requests[1]
    return call, transferring, cloud.grok.requests[-1]


def transfer_messages(billing_first: ChatRequest) -> list[dict]:
    """The transfer's own call and result, as they close an appended conversation."""
    call, result = billing_first.messages[-2:]
    assert call["role"] == "assistant"
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["transfer_to_billing"]
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert json.loads(result["content"]) == {"status": "transferred", "to": "Billing"}
    return [call, result]


async def test_append_gives_the_next_member_the_whole_conversation(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.grok.push(Reply.say("Billing here."))

    _, transferring, billing_first = await hand_over(cloud, runner, http, "append")

    assert len(cloud.grok.requests) == 1
    assert billing_first.messages == [
        BILLING_PROMPT,
        *transferring.messages[1:],
        *transfer_messages(billing_first),
    ]
    assert transferring.messages[1:] == [
        {"role": "assistant", "content": "Welcome to Acme."},
        {"role": "user", "content": QUESTION},
    ]


async def test_reset_gives_the_next_member_its_prompt_and_the_callers_last_turn(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.grok.push(Reply.say("Billing here."))

    await hand_over(cloud, runner, http, "reset")

    [billing_first] = cloud.grok.requests
    assert billing_first.messages == [BILLING_PROMPT, {"role": "user", "content": QUESTION}]
    assert billing_first.system_prompt == BILLING_PROMPT["content"]


async def test_summary_gives_the_next_member_its_prompt_and_a_summary_of_the_call(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.grok.push(Reply.say("The caller has a billing question."), Reply.say("Billing here."))

    await hand_over(cloud, runner, http, "summary")

    summarizing, billing_first = cloud.grok.requests
    # The summary was written first, out of band, by billing's own LLM.
    assert summarizing.stream is False
    assert summarizing.system_prompt == SUMMARY_PROMPT
    [transcript] = [m["content"] for m in summarizing.messages if m["role"] == "user"]
    assert transcript.startswith("Conversation history:")
    assert f"USER: {QUESTION}" in transcript and "ASSISTANT: Welcome to Acme." in transcript
    assert billing_first.messages == [
        BILLING_PROMPT,
        {"role": "user", "content": "Conversation summary: The caller has a billing question."},
    ]
    assert billing_first.received_at >= summarizing.responded_at


async def test_a_summary_that_fails_falls_back_to_append_and_says_why(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, warnings: list[str]
) -> None:
    cloud.grok.push(Reply.fail(400, "summaries are off today"), Reply.say("Billing here."))

    call, transferring, billing_first = await hand_over(cloud, runner, http, "summary")

    assert len(cloud.grok.requests) == 2
    assert billing_first.messages == [
        BILLING_PROMPT,
        *transferring.messages[1:],
        *transfer_messages(billing_first),
    ]
    [why] = [line for line in warnings if "no summary for Billing" in line]
    assert "failed" in why and "BadRequestError" in why
    # The caller never heard of it: no fallback line, and Go was sent no error.
    assert call.rtvi("error") == []
    assert all("trouble" not in t for t in cloud.elevenlabs.texts_for_voice("voice-billing"))


async def test_a_summary_that_takes_too_long_falls_back_to_append_in_bounded_time(
    cloud: Cloud, quick_runner: RunnerServer, http: httpx.AsyncClient, warnings: list[str]
) -> None:
    cloud.grok.push(Reply.say("Too late.").after_hanging(5), Reply.say("Billing here."))

    _, transferring, billing_first = await hand_over(cloud, quick_runner, http, "summary")

    # Billing was asked long before the hanging summary would have come (5 s).
    summarizing = cloud.grok.requests[0]
    assert billing_first.received_at < summarizing.received_at + 5
    assert billing_first.messages[1:-2] == transferring.messages[1:]
    assert any("no summary for Billing" in line for line in warnings)
