"""Team transitions complete, exactly once, whatever the caller and the model do around them.

The failures users of pipecat.flows and LiveKit report, each played against
a real runner with the simulators: a caller who talks over a transfer, a tool
call that was cut off and never answered, a transfer in one batch with a Go
tool, the next member answering twice, and a caller turn said while the call
changes hands. After each, the test reads what the parties saw: the member
switches and tool calls Go was sent, the bot's words, and every request the
members' LLMs received, which the OpenAI simulator refuses as OpenAI would
when a tool call in them has no result.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord, ToolResult
from simulators.openai import ChatRequest, Reply
from simulators.tts import PROVIDER_PACING

from conftest import Cloud
from scenarios import BILLING, TEAM_CALL_ID, caller_says, team_request

BILLING_PROMPT = "You handle billing for Acme."
GREETER_PROMPT = "You greet callers for Acme."
EMAIL = {"to": "ann@example.com"}


def text_team(**changes: Any) -> dict[str, Any]:
    """The team as a text call: the caller types (RTVI send-text), the bot's words are text."""
    body = team_request()
    body.update(tts_type=None, tts_voice_id=None)
    body.update(changes)
    return body


async def start_text_call(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    body: dict[str, Any],
    **expect: Any,
) -> CallRecord:
    """Start ``body``; returns once the greeter has said its first words."""
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.2)), **expect)
    response = await http.post(f"{runner.url}/run", json=body)
    assert response.status_code == 200, response.text
    await call.wait(lambda c: len(c.bot_llm_text()) >= 1, 15, "the greeter's first words")
    return call


async def types(cloud: Cloud, text: str) -> None:
    await cloud.manager.send_text(TEAM_CALL_ID, text)


def results(request: ChatRequest) -> dict[str, Any]:
    """Each tool call's result in ``request``, by the called function's name."""
    names = {
        call["id"]: call["function"]["name"]
        for message in request.messages
        for call in message.get("tool_calls") or []
    }
    return {
        names[m["tool_call_id"]]: _json_or_text(m["content"])
        for m in request.messages
        if m.get("role") == "tool"
    }


def _json_or_text(content: str) -> Any:
    """A tool result as the LLM reads it: JSON, or pipecat's plain ``CANCELLED``."""
    try:
        return json.loads(content)
    except ValueError:
        return content


def user_turns(request: ChatRequest) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "user"]


def assert_every_request_was_served(cloud: Cloud) -> None:
    """No LLM request was one OpenAI refuses (a tool call with no result, or the reverse)."""
    refused = [(r.model, r.reply) for r in cloud.openai.rejected + cloud.grok.rejected]
    assert refused == []


LONG_LINE = (
    "Of course. I will send that invoice to your email address right away, and while the "
    "message goes out let me tell you a little about how our billing cycle works, so that "
    "the next invoice does not come as a surprise to you at the end of the month."
)


async def start_voice_call(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, body: dict[str, Any], **expect: Any
) -> CallRecord:
    """Start the voice team ``body``; returns once the greeter's first words were spoken."""
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)), **expect)
    response = await http.post(f"{runner.url}/run", json=body)
    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=15)
    return call


# --- 2. A tool call cut off by the caller ----------------------------------------------


async def test_a_go_tool_cut_off_by_the_caller_leaves_no_open_call_and_a_later_transfer_works(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Welcome to Acme."),
        Reply.call("send_email", EMAIL),
        Reply.say("Sure, what else?"),
        Reply.call("transfer_to_billing"),
    )
    cloud.grok.push(Reply.say("Billing here."))
    # Go never answers in time: the caller talks over the call.
    call = await start_text_call(
        cloud, runner, http, text_team(), tools={"send_email": ToolResult.ok(delay=30)}
    )
    await types(cloud, "Email me my invoice.")
    await call.wait_tool_calls(1, timeout=15)

    await types(cloud, "Never mind that.")
    await call.wait(lambda c: len(c.bot_llm_text()) >= 2, 15, "the greeter's answer")
    await types(cloud, "Put me through to billing.")

    await call.wait(lambda c: len(c.bot_llm_text()) >= 3, 15, "billing's answer")
    assert call.bot_llm_text() == ["Welcome to Acme.", "Sure, what else?", "Billing here."]
    [switch] = call.member_switches
    assert switch.to_member["id"] == BILLING
    [arrival] = cloud.grok.requests
    assert arrival.system_prompt == BILLING_PROMPT
    assert results(arrival)["send_email"] == "CANCELLED"
    assert_every_request_was_served(cloud)


async def test_a_go_tool_cut_off_while_its_words_are_spoken_does_not_block_a_later_transfer(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # The greeter's voice streams like a real provider's, so the call's start is
    # still on its way behind the words when the caller talks over them.
    cloud.cartesia.pacing = PROVIDER_PACING
    cloud.openai.push(
        Reply.say("Welcome to Acme."),
        Reply.say(LONG_LINE).and_call("send_email", EMAIL),
        Reply.call("transfer_to_billing"),
    )
    cloud.grok.push(Reply.say("Billing here."))
    call = await start_voice_call(
        cloud, runner, http, team_request(), tools={"send_email": ToolResult.ok(delay=30)}
    )
    await caller_says(cloud, "Email me my invoice, please.")
    await call.wait_tool_calls(1, timeout=15)

    await caller_says(cloud, "Stop, put me through to billing.")

    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 20, "billing's answer")
    [switch] = call.member_switches
    assert switch.to_member["id"] == BILLING
    [arrival] = cloud.grok.requests
    assert arrival.system_prompt == BILLING_PROMPT
    assert results(arrival)["send_email"] == "CANCELLED"
    assert_every_request_was_served(cloud)
