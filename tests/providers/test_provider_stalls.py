"""A provider that stalls mid-call is timed out, reported to Go, and the call goes on.

The LLM simulator is scripted to accept a request and then say nothing (no
first byte), or to stream a little and go quiet; the voice simulator to take
text and send no audio. The runner must abandon the request within
``RUNNER_LLM_TIMEOUT_SECS`` / ``RUNNER_TTS_TIMEOUT_SECS``, send pipecat-manager
an RTVI ``error``, speak a fallback line in the caller's voice when the LLM
failed, never send a request again once the caller has heard part of it,
and answer the caller's next turn as usual.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from playground.server import RunnerServer
from simulators.manager import Caller
from simulators.openai import Reply

from conftest import Cloud, cloud_settings
from scenarios import CALL_ID, caller_says, voice_request

FALLBACK = "Sorry, I had trouble with that. Could you say it again?"


@pytest.fixture
async def impatient_runner(cloud: Cloud) -> AsyncIterator[RunnerServer]:
    settings = cloud_settings(cloud, llm_timeout_secs=1.0, llm_retries=1, tts_timeout_secs=1.0)
    async with RunnerServer(settings) as server:
        yield server


async def metric(http: httpx.AsyncClient, url: str, sample: str) -> float:
    for line in (await http.get(f"{url}/metrics")).text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


async def test_an_llm_that_never_answers_is_retried_once_then_reported_and_covered(
    cloud: Cloud, impatient_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Hello, how can I help?"),
        Reply.say("Too late.").after_hanging(5),
        Reply.say("Too late again.").after_hanging(5),
        Reply.say("Back with you now."),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.3)))
    started = await http.post(f"{impatient_runner.url}/run", json=voice_request(tools=[]))
    assert started.status_code == 200, started.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    await caller_says(cloud, "What is my balance?", call_id=CALL_ID)
    [error] = await call.wait_rtvi("error", timeout=15)
    await cloud.cartesia.wait_until(
        lambda: FALLBACK in cloud.cartesia.texts_for_voice("voice-a"), timeout=10
    )

    # One request and one retry, both unanswered; the caller heard the fallback line.
    assert len(cloud.openai.requests) == 3
    assert error.data["fatal"] is False
    assert call.is_open("output") and call.is_open("input")
    # The caller's next turn asks the LLM again, and is answered.
    await caller_says(cloud, "Hello?", call_id=CALL_ID)
    await call.wait(lambda c: "Back with you now." in c.bot_llm_text(), 15, "the next answer")
    assert len(cloud.openai.requests) == 4
    sample = 'runner_provider_errors_total{error="timeout",kind="LLM",provider="openai"}'
    assert await metric(http, impatient_runner.url, sample) == 1


async def test_an_llm_stream_that_stalls_is_abandoned_and_never_sent_again(
    cloud: Cloud, impatient_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Hello, how can I help?"),
        Reply.say("Your balance is forty two dollars and ten cents.").stalling_after(3, 5),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.3)))
    started = await http.post(f"{impatient_runner.url}/run", json=voice_request(tools=[]))
    assert started.status_code == 200, started.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    await caller_says(cloud, "What is my balance?", call_id=CALL_ID)
    await call.wait_rtvi("error", timeout=15)
    await cloud.cartesia.wait_until(
        lambda: FALLBACK in cloud.cartesia.texts_for_voice("voice-a"), timeout=10
    )

    # Part of the answer went out before the stall, so it was not sent again.
    assert len(cloud.openai.requests) == 2
    assert call.is_open("output")


async def test_a_voice_that_sends_no_audio_is_reported_and_the_next_reply_is_spoken(
    cloud: Cloud, impatient_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello, how can I help?"), Reply.say("Your balance is ten."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.3)))
    cloud.cartesia.stalled = True
    started = await http.post(f"{impatient_runner.url}/run", json=voice_request(tools=[]))
    assert started.status_code == 200, started.text

    [error] = await call.wait_rtvi("error", timeout=15)
    assert "voice stopped producing audio" in error.data["error"]
    assert not call.audio_chunks()
    sample = 'runner_provider_errors_total{error="stall",kind="TTS",provider="cartesia"}'
    assert await metric(http, impatient_runner.url, sample) == 1

    cloud.cartesia.stalled = False
    await caller_says(cloud, "What is my balance?", call_id=CALL_ID)
    await call.wait(lambda c: "Your balance is ten." in c.bot_llm_text(), 15, "the next answer")
    await call.wait_bot_audio(min_secs=0.1, timeout=10)
    assert call.is_open("output")
