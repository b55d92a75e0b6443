"""The caller's words said over the runner's own lines reach the LLM as a turn, and are answered.

A caller may start to speak just as the idle nudge fires, before the VAD has
confirmed the speech (so the runner still thinks the line is quiet), or
while a nudge or a handoff line is playing. Nothing mutes the caller during
the runner's own lines (only the goodbye of a call that is ending does, by
design: ``call.ending``), and pipecat's STT hears caller audio whatever the
bot is doing, so the words must come out as the caller's turn, answered by
the member that has the call. The lines themselves stay interruptible, as they
are today: a caller who talks over one cuts it off.

Under heavy load a recogniser can fall so far behind that pipecat's user-turn
watchdog (``user_turn_stop_timeout``, 5 s after the caller's last sound) ends
the turn before its transcript comes; the late words then start a turn of
their own and are answered. That is guarded here too, with the Deepgram
simulator holding its final transcripts back.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord
from simulators.openai import ChatRequest, Reply
from simulators.speech import speak

from conftest import Cloud
from scenarios import CALL_ID, TEAM_CALL_ID, caller_says, team_request, voice_request

TIMEOUT = 1.0
WORDS = "I would like to pay my bill."
ANSWER = "Sure, let us do that."


def idle(nudge: str) -> dict[str, object]:
    return {"timeout_secs": TIMEOUT, "nudges": [nudge], "hangup_message": "Goodbye then."}


def heard_until(call: CallRecord) -> float:
    """When the caller will have heard all the bot audio that has arrived."""
    return max(start + len(pcm) / 32000 for start, pcm in call.heard_bot_audio())


def ends_with_the_callers_words(request: ChatRequest) -> bool:
    return request.messages[-1] == {"role": "user", "content": WORDS}


async def test_words_begun_just_before_a_nudge_fires_are_answered(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    nudge = "Are you still there?"
    # The VAD confirms speech only after 1.5 s of it, and Deepgram sends no
    # interim results: the nudge is sure to fire while the caller is already
    # speaking but the runner has not noticed yet.
    confirm_secs = 1.5
    cloud.deepgram.interim = False
    words = Caller.pcm(speak(WORDS))
    cloud.openai.push(Reply.say("Hello."), Reply.say(ANSWER))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(idle=idle(nudge), tools=[], vad_config={"start_secs": confirm_secs})
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_bot_audio(min_secs=0.05, timeout=10)
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    # The caller's timing: half the confirmation time before the nudge is due.
    due = heard_until(call) + TIMEOUT
    await asyncio.sleep(max(0.0, due - confirm_secs / 2 - time.monotonic()))
    cloud.deepgram.push_transcripts(WORDS)
    spoke_at = time.monotonic()
    await cloud.manager.say(CALL_ID, words)

    await cloud.openai.wait_for_requests(2, timeout=15)
    await cloud.cartesia.wait_until(lambda: ANSWER in cloud.cartesia.texts_for_voice("voice-a"), 10)
    # The nudge fired while the caller was speaking, before the runner knew.
    [nudged] = [r for r in cloud.cartesia.requests if r.transcript == nudge]
    assert spoke_at < nudged.received_at < spoke_at + confirm_secs
    # The caller's words were the turn the LLM answered.
    [_, answered] = cloud.openai.requests
    assert ends_with_the_callers_words(answered)
    assert cloud.cartesia.texts_for_voice("voice-a") == ["Hello.", nudge, ANSWER]


async def test_words_said_over_a_nudge_cut_it_off_and_are_answered(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # About 1.3 s of audio (10 ms a character), sent to Go at once.
    nudge = "Are you still there? Take your time, I will wait here while you find what you need."
    cloud.openai.push(Reply.say("Hello."), Reply.say(ANSWER))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(idle=idle(nudge), tools=[])
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait(lambda c: nudge in c.bot_llm_text(), 15, "the nudge")

    await caller_says(cloud, WORDS, call_id=CALL_ID)

    [_, answered] = await cloud.openai.wait_for_requests(2, timeout=15)
    assert ends_with_the_callers_words(answered)
    # The nudge is interruptible: the caller's barge-in flushed what was left of it.
    assert call.flushes()
    assert call.heard_bot_secs() < call.received_bot_secs()
    await cloud.cartesia.wait_until(lambda: ANSWER in cloud.cartesia.texts_for_voice("voice-a"), 10)


async def test_words_said_over_a_handoff_line_are_answered_by_the_next_member(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    handoff = (
        "One moment please, I am putting you through to our billing team, "
        "who will be glad to help you with your account."
    )
    body = team_request()
    body["resolved_team"]["members"][0]["transitions"][0].update(handoff_message=handoff)
    cloud.openai.push(Reply.say("Welcome to Acme."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."), Reply.say(ANSWER))
    call = cloud.manager.expect_call(TEAM_CALL_ID, caller=Caller(Caller.silence(0.5)))
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "I have a billing question.")
    await call.wait(lambda c: handoff in c.bot_llm_text(), 15, "the handoff line")

    await caller_says(cloud, WORDS)

    await cloud.grok.wait_until(
        lambda: any(ends_with_the_callers_words(r) for r in cloud.grok.requests), 15
    )
    await call.wait(lambda c: ANSWER in c.bot_llm_text(), 15, "billing's answer")


async def test_words_over_a_nudge_whose_transcript_comes_late_still_reach_the_llm(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # A recogniser so far behind (a loaded machine) that pipecat's user-turn
    # watchdog (5 s after the caller's last sound) ends the caller's turn with no
    # words; when the turn had cut a line off, pipecat may have the model ask
    # the caller to repeat. The words, when they come, are a turn of their own.
    cloud.deepgram.final_delay = 7.0
    nudge = "Are you still there? Take your time, I will wait here while you find what you need."
    cloud.openai.push(Reply.say("Hello."), Reply.say(ANSWER), Reply.say(ANSWER))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    body = voice_request(idle=idle(nudge), tools=[])
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait(lambda c: nudge in c.bot_llm_text(), 15, "the nudge")

    await caller_says(cloud, WORDS, call_id=CALL_ID)

    await cloud.openai.wait_until(
        lambda: any(ends_with_the_callers_words(r) for r in cloud.openai.requests), 20
    )
    await call.wait(lambda c: ANSWER in c.bot_llm_text(), 15, "the answer")
