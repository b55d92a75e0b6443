"""Team transitions complete, exactly once, whatever the caller and the model do around them.

The failures users of pipecat.flows and LiveKit report, each played against
a real runner with the simulators: a caller who talks over a transfer, a tool
call that was cut off and never answered, a transfer in one batch with a Go
tool, the next member answering twice, and a caller turn said while the call
changes hands. After each, the test reads what the parties saw: the member
switches and tool calls Go was sent, the bot's words, and every request the
members' LLMs received, which the OpenAI simulator refuses as OpenAI would
when a tool call in them has no result. Text calls (the caller types, RTVI
``send-text``) stand in wherever the failure needs no audio; where it needs
the caller to talk over words still being made, the voice is slowed down.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord, ToolResult
from simulators.openai import ChatRequest, Reply
from simulators.tts import Pacing

from conftest import Cloud
from scenarios import BILLING, GREETER, TEAM_CALL_ID, caller_says, team_request

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
# A voice that makes its audio at half real time: a function call in the same reply as
# LONG_LINE is still on its way behind it, through the voice, for about 4.5 s, which a
# caller who talks, or types, right after the reply began falls well within.
SLOW_VOICE = Pacing(speed=0.5)


async def start_voice_call(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, body: dict[str, Any], **expect: Any
) -> CallRecord:
    """Start the voice team ``body``; returns once the greeter's first words were spoken."""
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)), **expect)
    response = await http.post(f"{runner.url}/run", json=body)
    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=15)
    return call


# --- 1. A transfer the caller talks over -----------------------------------------------


async def test_a_caller_who_talks_over_a_transfer_is_answered_by_the_next_member(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # The greeter's words are still being made when the caller talks. The transfer does
    # not wait for them (routing/tts.py): billing is asked at once, and its first answer
    # waits behind the greeter's words, where the caller's barge-in finds it.
    cloud.cartesia.pacing = SLOW_VOICE
    cloud.openai.push(
        Reply.say("Welcome to Acme."), Reply.say(LONG_LINE).and_call("transfer_to_billing")
    )
    cloud.grok.push(
        Reply.say("Billing here, how can I help?"),
        Reply.say("Yes, invoice 42 is paid."),
        Reply.say("Goodbye then."),
    )
    call = await start_voice_call(cloud, runner, http, team_request())
    await caller_says(cloud, "Send my invoice to billing, please.")
    await call.wait_member_switches(1, timeout=15)

    await caller_says(cloud, "Wait, is invoice 42 paid?")

    await call.wait(
        lambda c: "Yes, invoice 42 is paid." in c.bot_llm_text(), 20, "billing's answer"
    )
    await caller_says(cloud, "Thanks, bye.")
    await call.wait(lambda c: "Goodbye then." in c.bot_llm_text(), 20, "billing's next answer")
    assert len(call.member_switches) == 1
    assert len(cloud.openai.requests) == 2
    arrival, answer, goodbye = cloud.grok.requests
    assert arrival.system_prompt == answer.system_prompt == goodbye.system_prompt
    assert answer.system_prompt == BILLING_PROMPT
    assert user_turns(arrival)[-1] == "Send my invoice to billing, please."
    assert user_turns(answer)[-1] == "Wait, is invoice 42 paid?"
    assert user_turns(goodbye)[-1] == "Thanks, bye."
    assert results(answer)["transfer_to_billing"] == {"status": "transferred", "to": "Billing"}
    # Billing's first answer was still waiting behind the greeter's words when the
    # caller talked over them: it was never said.
    assert cloud.elevenlabs.texts_for_voice("voice-billing") == [
        "Yes, invoice 42 is paid.",
        "Goodbye then.",
    ]
    assert_every_request_was_served(cloud)


async def test_a_caller_who_talks_over_a_transfer_still_waiting_for_its_tool_keeps_the_greeter(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.cartesia.pacing = SLOW_VOICE
    cloud.openai.push(
        Reply.say("Welcome to Acme."),
        Reply.say(LONG_LINE).and_call("send_email", EMAIL).and_call("transfer_to_billing"),
        Reply.say("Sure, what else?"),
        Reply.call("transfer_to_billing"),
    )
    cloud.grok.push(Reply.say("Billing here."))
    # Go is slow with the email, so the transfer is still waiting when the caller talks.
    call = await start_voice_call(
        cloud, runner, http, team_request(), tools={"send_email": ToolResult.ok(delay=30)}
    )
    await caller_says(cloud, "Email me my invoice and get me billing.")
    await call.wait_tool_calls(1, timeout=15)

    await caller_says(cloud, "Hold on, one more thing first.")

    await call.wait(lambda c: "Sure, what else?" in c.bot_llm_text(), 20, "the greeter's answer")
    assert call.member_switches == []
    answer = cloud.openai.requests[2]
    assert answer.system_prompt == GREETER_PROMPT
    assert user_turns(answer)[-1] == "Hold on, one more thing first."
    assert results(answer) == {"send_email": "CANCELLED", "transfer_to_billing": "CANCELLED"}
    # The greeter still hands over later, once.
    await caller_says(cloud, "Now billing, please.")
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 20, "billing's answer")
    [switch] = call.member_switches
    assert switch.to_member["id"] == BILLING
    [arrival] = cloud.grok.requests
    assert arrival.system_prompt == BILLING_PROMPT
    assert_every_request_was_served(cloud)


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
    # The call's start is still on its way behind the words when the caller talks over
    # them, so the cancel overtakes it.
    cloud.cartesia.pacing = SLOW_VOICE
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


# --- 3. A transfer in one batch with a Go tool -----------------------------------------


@pytest.mark.parametrize("go_tool_first", [True, False], ids=["tool-first", "transfer-first"])
@pytest.mark.parametrize("run_llm", [True, False], ids=["tool-runs-llm", "tool-quiet"])
async def test_a_transfer_batched_with_a_go_tool_runs_both_once_and_hands_over_once(
    cloud: Cloud,
    runner: RunnerServer,
    http: httpx.AsyncClient,
    go_tool_first: bool,
    run_llm: bool,
) -> None:
    body = text_team()
    body["resolved_team"]["members"][0]["tools"][0]["run_llm"] = run_llm
    batch = [("send_email", EMAIL), ("transfer_to_billing", {})]
    if not go_tool_first:
        batch.reverse()
    (first, first_args), (second, second_args) = batch
    cloud.openai.push(
        Reply.say("Welcome to Acme."), Reply.call(first, first_args).and_call(second, second_args)
    )
    cloud.grok.push(
        Reply.say("Billing here, the invoice is on its way."), Reply.say("You are welcome.")
    )
    # Go takes a moment over the email, far longer than the transfer takes.
    call = await start_text_call(
        cloud, runner, http, body, tools={"send_email": ToolResult.ok({"sent": True}, delay=0.5)}
    )

    await types(cloud, "Email me my invoice and put me through to billing.")

    await call.wait(lambda c: len(c.bot_llm_text()) >= 2, 15, "billing's answer")
    await types(cloud, "Thank you.")
    await call.wait(lambda c: len(c.bot_llm_text()) >= 3, 15, "billing's second answer")
    assert call.bot_llm_text() == [
        "Welcome to Acme.",
        "Billing here, the invoice is on its way.",
        "You are welcome.",
    ]
    [switch] = call.member_switches
    assert (switch.from_member["id"], switch.to_member["id"]) == (GREETER, BILLING)
    [email] = call.tool_calls
    assert (email.name, email.arguments) == ("send_email", EMAIL)
    # The greeter's LLM was asked nothing after the batch; billing once for the handoff.
    assert len(cloud.openai.requests) == 2
    arrival, answer = cloud.grok.requests
    assert arrival.system_prompt == BILLING_PROMPT
    assert sorted(arrival.tool_names) == ["get_invoice", "transfer_to_greeter"]
    assert results(arrival) == {
        "send_email": {"status": "ok", "data": {"sent": True}},
        "transfer_to_billing": {"status": "transferred", "to": "Billing"},
    }
    assert user_turns(answer)[-1] == "Thank you."
    assert_every_request_was_served(cloud)


# --- 4. The next member answers once ---------------------------------------------------


async def test_the_next_member_is_asked_once_per_handoff_and_its_answer_is_said_once(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body["resolved_team"]["members"][0]["transitions"][0]["handoff_message"] = "One moment."
    cloud.openai.push(
        Reply.say("Welcome to Acme."), Reply.say("Sure.").and_call("transfer_to_billing")
    )
    cloud.grok.push(Reply.say("Billing here, how can I help?"), Reply.say("You are welcome."))
    call = await start_voice_call(cloud, runner, http, body)
    await caller_says(cloud, "Billing, please.")

    await call.wait(
        lambda c: "Billing here, how can I help?" in c.bot_transcripts(), 20, "billing's answer"
    )
    await caller_says(cloud, "Thanks.")
    await call.wait(lambda c: "You are welcome." in c.bot_transcripts(), 20, "the next answer")

    arrival, thanks = cloud.grok.requests
    assert arrival.system_prompt == BILLING_PROMPT
    assert user_turns(arrival)[-1] == "Billing, please."
    assert user_turns(thanks)[-1] == "Thanks."
    assert cloud.elevenlabs.texts_for_voice("voice-billing") == [
        "Billing here, how can I help?",
        "You are welcome.",
    ]
    assert call.bot_llm_text() == [
        "Welcome to Acme.",
        "Sure.",
        "One moment.",
        "Billing here, how can I help?",
        "You are welcome.",
    ]
    assert call.bot_transcripts().count("Billing here, how can I help?") == 1
    assert_every_request_was_served(cloud)


# --- 5. A caller turn that crosses a handoff -------------------------------------------


async def test_a_caller_turn_said_while_a_summary_is_written_reaches_the_next_member(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = text_team()
    body["resolved_team"]["members"][0]["transitions"][0]["context"] = "summary"
    cloud.openai.push(Reply.say("Welcome to Acme."), Reply.call("transfer_to_billing"))
    # Billing's LLM takes a while over the summary; the caller types meanwhile.
    cloud.grok.push(
        Reply.say("The caller has a billing question.").after_hanging(2.0),
        Reply.say("Billing here, I see invoice 42."),
    )
    call = await start_text_call(cloud, runner, http, body)
    await types(cloud, "I have a billing question.")
    await cloud.grok.wait_for_requests(1, timeout=15)

    await types(cloud, "It is about invoice 42.")

    await call.wait(lambda c: len(c.bot_llm_text()) >= 2, 15, "billing's answer")
    summarizing, arrival = await cloud.grok.wait_for_requests(2, timeout=5)
    assert summarizing.stream is False
    assert arrival.system_prompt == BILLING_PROMPT
    assert user_turns(arrival) == [
        "Conversation summary: The caller has a billing question.",
        "It is about invoice 42.",
    ]
    assert call.bot_llm_text() == ["Welcome to Acme.", "Billing here, I see invoice 42."]
    await types(cloud, "Thanks.")
    await call.wait(lambda c: len(c.bot_llm_text()) >= 3, 15, "billing's next answer")
    assert len(cloud.grok.requests) == 3
    assert_every_request_was_served(cloud)


async def test_a_line_typed_while_a_reset_handoff_is_on_its_way_is_the_turn_it_keeps(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body["resolved_team"]["members"][0]["transitions"][0]["context"] = "reset"
    # The transfer waits for the Go tool called with it (a second at Go): billing's
    # node is entered only once it has returned.
    cloud.openai.push(
        Reply.say("Welcome to Acme."),
        Reply.say("Sure.").and_call("send_email", EMAIL).and_call("transfer_to_billing"),
    )
    cloud.grok.push(Reply.say("Billing here, I see invoice 42."))
    call = await start_voice_call(
        cloud, runner, http, body, tools={"send_email": ToolResult.ok({"sent": True}, delay=1.0)}
    )
    await caller_says(cloud, "I have a billing question.")
    await call.wait_tool_calls(1, timeout=15)

    # Typed meanwhile, not to be answered at once (as Go's send-text can ask).
    await cloud.manager.send_text(TEAM_CALL_ID, "It is about invoice 42.", run_immediately=False)

    await call.wait(
        lambda c: "Billing here, I see invoice 42." in c.bot_llm_text(), 20, "billing's answer"
    )
    [arrival] = cloud.grok.requests
    assert arrival.system_prompt == BILLING_PROMPT
    assert arrival.messages[1:] == [{"role": "user", "content": "It is about invoice 42."}]
    assert_every_request_was_served(cloud)
