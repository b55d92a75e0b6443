"""A caller who goes quiet is nudged, in order, then hung up on; speaking starts the nudges over.

The silence is counted from when the caller has *heard* the bot's last word
(the media server's playout, as the pipecat-manager simulator records it),
not from when its audio was sent, and not while a tool runs. Nudges and the
hang-up line are said without the model, in the member's voice, and the
call ends once the hang-up line has been played.
"""

from __future__ import annotations

import itertools

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord, ToolResult
from simulators.openai import Reply
from simulators.voices import SpeechRequest

from conftest import Cloud
from scenarios import CALL_ID, SEND_EMAIL, caller_says, voice_request

NUDGES = ["Are you still there?", "Hello? Can you hear me?"]
HANG_UP = "I will end the call now. Goodbye."
TIMEOUT = 1.0
IDLE = {"timeout_secs": TIMEOUT, "nudges": NUDGES, "hangup_message": HANG_UP}
# One sentence that plays for 1.3 s, sent to Go in a few milliseconds.
LONG_REPLY = (
    "Hello, this is Ava, and I am here to help you with your account, "
    "your bills, your payments and anything else you need today"
)


def spoken(cloud: Cloud) -> list[str]:
    return cloud.cartesia.texts_for_voice("voice-a")


def request_for(cloud: Cloud, text: str, occurrence: int = 0) -> SpeechRequest:
    return [r for r in cloud.cartesia.requests if r.transcript == text][occurrence]


def heard_until(call: CallRecord, before: float) -> float:
    """When the caller had heard all the bot audio that had arrived by ``before``."""
    return max(start + len(pcm) / 32000 for start, pcm in call.heard_bot_audio() if start < before)


async def test_nudges_come_in_order_after_each_silence_then_the_call_hangs_up(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say(LONG_REPLY))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))

    body = voice_request(idle=IDLE, tools=[])
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait_closed(timeout=20)
    assert spoken(cloud) == [LONG_REPLY, *NUDGES, HANG_UP]
    # Each nudge came one timeout after the caller had heard the bot's last
    # word, not after its audio was sent (all of it within milliseconds).
    previous = LONG_REPLY
    for text in [*NUDGES, HANG_UP]:
        asked = request_for(cloud, text).received_at
        quiet_since = heard_until(call, asked)
        assert asked - quiet_since >= TIMEOUT
        assert asked - quiet_since < TIMEOUT + 1.5, f"{text!r} came late"
        assert request_for(cloud, previous).received_at < quiet_since - 0.1
        previous = text
    # Go read them as the bot's words, and the model wrote none of them.
    assert call.bot_llm_text() == [LONG_REPLY, *NUDGES, HANG_UP]
    assert len(cloud.openai.requests) == 1
    # The call ended after the hang-up line was heard.
    closed = min(e.at for e in call.connections() if not e.opened)
    voiced = [
        start + len(pcm) / 32000
        for start, pcm in call.heard_bot_audio()
        if cloud.voices.identify_voice(pcm, 16000, ["voice-a"]) == "voice-a"
    ]
    assert closed >= max(voiced)


async def test_caller_speech_starts_the_nudges_over(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."), Reply.say("Great, go on."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(idle=IDLE, tools=[])
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await cloud.cartesia.wait_until(lambda: spoken(cloud) == ["Hello.", NUDGES[0]], 10)

    await caller_says(cloud, "Yes, I am here.", call_id=CALL_ID)

    await call.wait_closed(timeout=20)
    assert spoken(cloud) == ["Hello.", NUDGES[0], "Great, go on.", *NUDGES, HANG_UP]
    # The nudge the caller answered is part of the conversation the LLM saw.
    answered = cloud.openai.requests[1]
    assert answered.messages[-2:] == [
        {"role": "assistant", "content": NUDGES[0]},
        {"role": "user", "content": "Yes, I am here."},
    ]


async def test_silence_is_not_counted_while_a_tool_runs(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Let me send that.").and_call("send_email", {"to": "a@example.com"}),
        Reply.say("Sent."),
    )
    call = cloud.manager.expect_call(
        CALL_ID,
        caller=Caller(Caller.silence(0.5)),
        tools={"send_email": ToolResult.ok({"result": "success"}, delay=3 * TIMEOUT)},
    )
    body = voice_request(idle={**IDLE, "nudges": NUDGES[:1]}, tools=[SEND_EMAIL])
    body["llm_messages"] = [{"role": "system", "content": "Send emails."}]
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait_closed(timeout=20)
    assert spoken(cloud) == ["Let me send that.", "Sent.", NUDGES[0], HANG_UP]
    [tool_call] = call.tool_calls
    nudged = request_for(cloud, NUDGES[0]).received_at
    assert nudged > tool_call.at + 3 * TIMEOUT
    assert nudged - heard_until(call, nudged) >= TIMEOUT


async def test_without_a_voice_nudges_are_the_bots_text(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(idle=IDLE, tools=[], tts_type=None, tts_voice_id=None)
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait_closed(timeout=20)
    assert call.bot_llm_text() == ["Hello.", *NUDGES, HANG_UP]
    texts = [m.at for m in call.rtvi("bot-llm-stopped")]
    assert all(later - earlier >= TIMEOUT for earlier, later in itertools.pairwise(texts))
    assert cloud.cartesia.connections_opened == 0
