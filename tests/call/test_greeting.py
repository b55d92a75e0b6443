"""A greeting is the first thing the caller hears, said without a model, and remembered.

Single AI and team, voice and text: the greeting reaches the start member's
voice (or Go, as the bot's text) before the LLM is asked anything, and the
first LLM request, made when the caller answers, holds it as the
assistant's first message.
"""

from __future__ import annotations

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import ChatRequest, Reply

from conftest import Cloud
from scenarios import CALL_ID, TEAM_CALL_ID, caller_says, team_request, voice_request

GREETING = "Hello, this is Ava at Acme. How can I help?"


async def test_a_single_ai_greets_in_its_voice_before_any_llm_request(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Let me look into that."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))

    response = await http.post(f"{runner.url}/run", json=voice_request(greeting=GREETING))

    assert response.status_code == 200, response.text
    await cloud.cartesia.wait_until(lambda: bool(cloud.cartesia.texts_for_voice("voice-a")), 10)
    await call.wait_bot_audio(min_secs=0.3, timeout=10)
    assert cloud.cartesia.texts_for_voice("voice-a") == [GREETING]
    assert cloud.openai.requests == []
    # Go saw the greeting as the bot's words.
    await call.wait(lambda c: GREETING in c.bot_llm_text(), 10, "the greeting as bot text")
    assert GREETING in call.bot_transcripts()

    await caller_says(cloud, "My bill is wrong.", call_id=CALL_ID)

    [first] = await cloud.openai.wait_for_requests(1, timeout=15)
    greeted = next(r for r in cloud.cartesia.requests if r.transcript == GREETING)
    assert greeted.received_at < first.received_at
    assert first.system_prompt == "You are Ava, a helpful assistant."
    assert [m for m in first.messages if m["role"] != "system"] == [
        {"role": "assistant", "content": GREETING},
        {"role": "user", "content": "My bill is wrong."},
    ]


async def test_a_team_start_member_greets_in_its_voice_and_its_llm_waits_for_the_caller(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    greeter = body["resolved_team"]["members"][0]
    greeter["ai"]["greeting"] = "Welcome to {{ company }}, how can I help?"
    cloud.openai.push(Reply.say("Happy to help."))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    greeting = "Welcome to Acme, how can I help?"
    await cloud.cartesia.wait_until(
        lambda: cloud.cartesia.texts_for_voice("voice-greeter") == [greeting], 10
    )
    await call.wait(lambda c: greeting in c.bot_llm_text(), 10, "the greeting as bot text")
    assert cloud.openai.requests == [] and cloud.grok.requests == []

    await caller_says(cloud, "Hi there.")

    [first] = await cloud.openai.wait_for_requests(1, timeout=15)
    assert first.system_prompt == "You greet callers for Acme."
    assert [m for m in first.messages if m["role"] != "system"] == [
        {"role": "assistant", "content": greeting},
        {"role": "user", "content": "Hi there."},
    ]


async def test_a_call_without_a_voice_sends_the_greeting_to_go_as_the_bots_text(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Of course."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(greeting=GREETING, tts_type=None, tts_voice_id=None)

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait(lambda c: c.bot_llm_text() == [GREETING], 10, "the greeting as bot text")
    assert call.bot_transcripts() == [GREETING]
    assert call.audio_chunks() == []
    assert cloud.cartesia.connections_opened == 0
    assert cloud.openai.requests == []

    await caller_says(cloud, "Can you help me?", call_id=CALL_ID)

    [first] = await cloud.openai.wait_for_requests(1, timeout=15)
    assert [m for m in first.messages if m["role"] != "system"] == [
        {"role": "assistant", "content": GREETING},
        {"role": "user", "content": "Can you help me?"},
    ]
    await call.wait(lambda c: c.bot_llm_text() == [GREETING, "Of course."], 10, "the reply")


# --- A history that ends with the caller's turn: greeted, then answered. ---

PENDING = "I was charged twice this month."
ANSWER = "I can see the double charge and will refund it."


def _greeted_then_pending(request: ChatRequest, greeting: str) -> None:
    """The one LLM request: the greeting as the AI's, then the caller's turn it answers."""
    assert [m for m in request.messages if m["role"] != "system"] == [
        {"role": "assistant", "content": greeting},
        {"role": "user", "content": PENDING},
    ]


async def test_a_single_ai_greets_then_answers_the_callers_turn_the_history_ends_with(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say(ANSWER))
    call = cloud.manager.expect_call(CALL_ID)
    body = voice_request(
        greeting=GREETING,
        stt_type=None,
        tts_type=None,
        tts_voice_id=None,
        llm_messages=[
            {"role": "system", "content": "You are Ava, a helpful assistant."},
            {"role": "user", "content": PENDING},
        ],
    )

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait_rtvi("bot-llm-stopped", count=2, timeout=15)
    assert call.bot_llm_text() == [GREETING, ANSWER]
    [request] = cloud.openai.requests
    assert request.system_prompt == "You are Ava, a helpful assistant."
    _greeted_then_pending(request, GREETING)


async def test_a_single_ai_voice_says_its_greeting_then_the_answer_to_the_pending_turn(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say(ANSWER))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(
        greeting=GREETING,
        llm_messages=[
            {"role": "system", "content": "You are Ava, a helpful assistant."},
            {"role": "user", "content": PENDING},
        ],
    )

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await cloud.cartesia.wait_until(
        lambda: cloud.cartesia.texts_for_voice("voice-a") == [GREETING, ANSWER], 15
    )
    await call.wait(lambda c: c.bot_llm_text() == [GREETING, ANSWER], 10, "greeting, then answer")
    assert call.bot_transcripts() == [GREETING, ANSWER]
    [request] = cloud.openai.requests
    _greeted_then_pending(request, GREETING)


async def test_a_team_start_member_greets_then_answers_the_callers_turn_the_history_ends_with(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body.update(stt_type=None, tts_type=None, tts_voice_id=None)
    body["llm_messages"] = [{"role": "user", "content": PENDING}]
    body["resolved_team"]["members"][0]["ai"]["greeting"] = "Welcome to {{ company }}."
    cloud.openai.push(Reply.say(ANSWER))
    call = cloud.manager.expect_call(TEAM_CALL_ID)

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait_rtvi("bot-llm-stopped", count=2, timeout=15)
    assert call.bot_llm_text() == ["Welcome to Acme.", ANSWER]
    [request] = cloud.openai.requests
    assert request.system_prompt == "You greet callers for Acme."
    _greeted_then_pending(request, "Welcome to Acme.")
    assert cloud.grok.requests == []


async def test_a_team_start_member_voice_says_its_greeting_then_the_answer_to_the_pending_turn(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body["llm_messages"] = [{"role": "user", "content": PENDING}]
    body["resolved_team"]["members"][0]["ai"]["greeting"] = "Welcome to {{ company }}."
    cloud.openai.push(Reply.say(ANSWER))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    spoken = ["Welcome to Acme.", ANSWER]
    await cloud.cartesia.wait_until(
        lambda: cloud.cartesia.texts_for_voice("voice-greeter") == spoken, 15
    )
    await call.wait(lambda c: c.bot_llm_text() == spoken, 10, "greeting, then answer")
    [request] = cloud.openai.requests
    _greeted_then_pending(request, "Welcome to Acme.")


async def test_a_history_that_ends_with_the_ais_turn_is_greeted_and_waits_for_the_caller(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say(ANSWER))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    earlier = [
        {"role": "user", "content": PENDING},
        {"role": "assistant", "content": "Let me check."},
    ]
    body = voice_request(greeting=GREETING, tts_type=None, tts_voice_id=None, llm_messages=earlier)

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait(lambda c: c.bot_llm_text() == [GREETING], 10, "the greeting as bot text")
    await caller_says(cloud, "Any news?", call_id=CALL_ID)

    # The first request is the caller's new turn: nothing ran the LLM before it.
    [first] = await cloud.openai.wait_for_requests(1, timeout=15)
    assert first.messages == [
        *earlier,
        {"role": "assistant", "content": GREETING},
        {"role": "user", "content": "Any news?"},
    ]
