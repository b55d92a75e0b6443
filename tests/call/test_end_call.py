"""``end_call``: the model ends the call; the goodbye is said, heard whole, and then it ends.

The model is offered ``end_call`` with the request's description. When it
calls it, the goodbye is spoken in the member's voice (or sent as text), Go
gets it as the bot's last transcription, both sockets close only after the
media server has played it, the LLM is asked nothing more, and everything
the call opened is released.
"""

from __future__ import annotations

import asyncio

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import Reply

from conftest import Cloud
from scenarios import (
    CALL_ID,
    TEAM_CALL_ID,
    caller_says,
    closed_at,
    played_until,
    team_request,
    voice_request,
)

GOODBYE = "Thank you for calling Acme. Goodbye!"
END_CALL = {"description": "End the call when the caller says goodbye.", "goodbye": GOODBYE}


async def metric(http: httpx.AsyncClient, url: str, sample: str) -> float:
    for line in (await http.get(f"{url}/metrics")).text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


async def test_end_call_says_the_goodbye_and_closes_both_sockets_once_it_was_heard(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello, how can I help?"), Reply.call("end_call"))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(end_call=END_CALL)
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    session = runner.sessions.get(CALL_ID)
    assert session is not None
    first = (await cloud.openai.wait_for_requests(1, timeout=10))[0]
    [offered] = [t["function"] for t in first.tools if t["function"]["name"] == "end_call"]
    assert offered["description"] == END_CALL["description"]
    # Offering end_call leaves the prompt the call's own (no asynchronous-tools block).
    assert "ASYNC TOOLS" not in (first.system_prompt or "")
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    await caller_says(cloud, "That is all, goodbye.", call_id=CALL_ID)

    await call.wait_closed(timeout=15)
    assert GOODBYE in cloud.cartesia.texts_for_voice("voice-a")
    assert call.bot_transcripts()[-1] == GOODBYE
    assert call.bot_llm_text()[-1] == GOODBYE
    # Both sockets closed after the media server had played the goodbye.
    assert {e.direction.value for e in call.connections() if not e.opened} == {"input", "output"}
    assert closed_at(call) >= played_until(call, cloud, "voice-a")
    # The LLM was asked nothing after it called end_call.
    assert len(cloud.openai.requests) == 2
    # Everything the call opened is released, and the call ended for its own reason.
    await asyncio.wait_for(session.finished.wait(), 10)
    await cloud.cartesia.wait_until(lambda: cloud.cartesia.active_connections == 0, 5)
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.active_connections == 0, 5)
    assert (await http.get(f"{runner.url}/health")).json()["sessions"] == 0
    ended = 'runner_calls_ended_total{reason="bot_ended"}'
    assert await metric(http, runner.url, ended) == 1


async def test_a_team_member_ends_the_call_in_its_own_voice(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    billing = body["resolved_team"]["members"][1]
    billing["ai"]["end_call"] = {"goodbye": "Goodbye from {{ company }} billing."}
    cloud.openai.push(Reply.say("Welcome."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."), Reply.call("end_call"))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    [greeting] = await cloud.openai.wait_for_requests(1, timeout=10)
    assert "end_call" not in greeting.tool_names  # only billing may end the call

    await caller_says(cloud, "Billing, please.")
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 15, "billing")
    assert "end_call" in cloud.grok.requests[0].tool_names
    assert "ASYNC TOOLS" not in (cloud.grok.requests[0].system_prompt or "")
    await caller_says(cloud, "Thanks, bye.")

    await call.wait_closed(timeout=15)
    goodbye = "Goodbye from Acme billing."
    assert cloud.elevenlabs.texts_for_voice("voice-billing")[-1] == goodbye
    assert call.bot_transcripts()[-1] == goodbye
    assert closed_at(call) >= played_until(call, cloud, "voice-billing")
    assert len(cloud.grok.requests) == 2


async def test_without_a_voice_the_goodbye_is_the_bots_last_text_before_the_socket_closes(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."), Reply.call("end_call"))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(end_call=END_CALL, tts_type=None, tts_voice_id=None)
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    await caller_says(cloud, "Bye.", call_id=CALL_ID)

    await call.wait_closed(timeout=15)
    assert call.bot_llm_text() == ["Hello.", GOODBYE]
    assert call.bot_transcripts()[-1] == GOODBYE
    last_text = max(m.at for m in call.rtvi("bot-transcription"))
    assert closed_at(call) >= last_text
