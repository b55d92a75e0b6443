"""After a barge-in the context keeps what the caller could have heard of the reply, for any voice.

A long reply is interrupted a few seconds into its playout. What the caller
heard is read off the pipecat-manager simulator, which plays bot audio as the
media server does and drops what ``FLUSH_MEDIA`` cut. The LLM's next request
must hold, as the assistant's reply, a prefix of it about that share long:

* espeak sends no word timestamps, and makes all the reply's audio long
  before it is played; the runner estimates each word's time from the audio
  played since the sentence's first chunk;
* Cartesia sends word timestamps, which pipecat already honours;
* at a handoff, the next member's voice makes its answer while the caller
  still hears the previous member's line: its words are counted heard only
  once the media server plays them, after that line.
"""

from __future__ import annotations

import asyncio

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord
from simulators.openai import ChatRequest, Reply
from simulators.tts import Pacing

from conftest import Cloud
from scenarios import CALL_ID, TEAM_CALL_ID, caller_says, team_request, voice_request

REPLY = (
    "Your account has three open invoices. The first one is for forty two dollars and is "
    "due on the fifteenth of December. The second one is for eighteen dollars and fifty "
    "cents, and it is already paid in part. The third one is for one hundred and five "
    "dollars, due next month. Would you like me to email all three of them to you now?"
)
STOP = "Wait, please stop."


def heard_share(call: CallRecord) -> float:
    """The share of the reply's audio the caller heard before the barge-in cut it."""
    heard = call.heard_bot_secs()
    sent = call.received_bot_secs()
    return heard / sent


async def interrupt_reply(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient, body: dict, after_secs: float
) -> tuple[CallRecord, ChatRequest]:
    """The caller talks over the reply ``after_secs`` into it; returns the next LLM request."""
    cloud.openai.push(Reply.say(REPLY), Reply.say("Of course."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_bot_audio(min_secs=0.1, timeout=15)
    # The caller's timing: a few seconds into the reply, as the media server plays it.
    await asyncio.sleep(after_secs)
    await caller_says(cloud, STOP, call_id=CALL_ID)
    await call.wait(lambda c: bool(c.flushes()), 10, "the barge-in")
    [_, after] = await cloud.openai.wait_for_requests(2, timeout=15)
    return call, after


def assistant_reply(request: ChatRequest) -> str:
    assert request.messages[-1] == {"role": "user", "content": STOP}
    message = request.messages[-2]
    assert message["role"] == "assistant"
    return str(message["content"])


async def test_a_voice_without_word_timestamps_keeps_the_share_of_the_reply_that_was_heard(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = voice_request(tts_type="espeak", tts_voice_id="en-us", tts_language=None, tools=[])

    call, after = await interrupt_reply(cloud, runner, http, body, after_secs=3.0)

    kept = assistant_reply(after)
    share = heard_share(call)
    assert 0.05 < share < 0.6  # the caller heard some of the reply, not all of it
    assert REPLY.startswith(kept) and len(kept) < len(REPLY)
    assert abs(len(kept) / len(REPLY) - share) < 0.12, (kept, share)


async def test_a_voice_with_word_timestamps_keeps_the_share_of_the_reply_that_was_heard(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = voice_request(tools=[])  # Cartesia, 10 ms of audio per character

    call, after = await interrupt_reply(cloud, runner, http, body, after_secs=1.2)

    kept = assistant_reply(after)
    share = heard_share(call)
    assert 0.05 < share < 0.8
    assert REPLY.startswith(kept) and len(kept) < len(REPLY)
    assert abs(len(kept) / len(REPLY) - share) < 0.12, (kept, share)


async def test_an_interrupted_greeting_is_remembered_as_far_as_it_was_heard(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    greeting = (
        "Hello and welcome to Acme, the home of every gadget you could ever want, where "
        "our friendly team is always ready to help you find exactly what you need today."
    )
    cloud.openai.push(Reply.say("Sure."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(
        tts_type="espeak", tts_voice_id="en-us", tts_language=None, tools=[], greeting=greeting
    )
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_bot_audio(min_secs=0.1, timeout=15)
    await asyncio.sleep(1.5)

    await caller_says(cloud, STOP, call_id=CALL_ID)

    [first] = await cloud.openai.wait_for_requests(1, timeout=15)
    kept = assistant_reply(first)
    assert greeting.startswith(kept) and 0 < len(kept) < len(greeting)
    assert abs(len(kept) / len(greeting) - heard_share(call)) < 0.15


async def test_at_a_handoff_the_next_members_words_count_as_heard_only_once_played(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # The greeter's line: 6.6 s of audio, which its voice makes at three times real
    # time. Billing is asked at once, and its voice makes its answer as soon as the
    # greeter's voice is done, while the caller still hears the line for seconds more.
    line = REPLY + " " + REPLY
    answer = "Billing here, how can I help you today?"
    cloud.cartesia.pacing = Pacing(speed=3.0)
    cloud.openai.push(Reply.say("Hi."), Reply.say(line).and_call("transfer_to_billing"))
    cloud.grok.push(Reply.say(answer), Reply.say("Of course."))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=team_request())).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "Billing, please.", call_id=TEAM_CALL_ID)
    await cloud.elevenlabs.wait_until(lambda: bool(cloud.elevenlabs.requests), 15)
    made_at = cloud.elevenlabs.requests[0].received_at
    # Talk over the line after billing's voice has made its answer, before the line ends.
    playing = max(start + len(pcm) / 32000 for start, pcm in call.heard_bot_audio())
    await asyncio.sleep(max(0.0, made_at + 0.5 - asyncio.get_running_loop().time()))
    assert asyncio.get_running_loop().time() < playing - 1.0, "the line ended too soon"

    await caller_says(cloud, STOP, call_id=TEAM_CALL_ID)

    await call.wait(lambda c: bool(c.flushes()), 10, "the barge-in")
    [_, after] = await cloud.grok.wait_for_requests(2, timeout=15)
    assert after.messages[-1] == {"role": "user", "content": STOP}
    said = [m.get("content") for m in after.messages if m.get("role") == "assistant"]
    # None of billing's answer was played: the caller talked over the greeter's line.
    assert all(answer.split(",")[0] not in str(content) for content in said), said
    # The greeter's line is kept as far as it was heard.
    kept = next(str(c) for c in reversed(said) if c and str(c)[:20] == line[:20])
    assert line.startswith(kept) and len(kept) < len(line)
