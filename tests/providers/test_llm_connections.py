"""A call's LLM requests, a conversational turn apart, go over one kept connection.

httpx keeps an idle connection 5 s by default, so a call whose turns came
further apart than that opened a new connection (TCP and TLS handshakes) on
the way to each answer's first token. The runner's LLM clients keep theirs a
minute (``LLM_KEEPALIVE_SECS``); an endpoint that closes one sooner costs a
new connection, and no error. The OpenAI simulator records each request's
client address and port: requests on one connection share them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from playground.server import RunnerServer
from simulators.cloud import Cloud
from simulators.manager import Caller
from simulators.openai import Reply
from simulators.voices import VoiceBook

from conftest import VOICES, cloud_settings
from scenarios import CALL_ID, voice_request

TURN_GAP_SECS = 6.0  # past httpx's default of 5 s


async def _two_turns_apart(cloud: Cloud, http: httpx.AsyncClient, gap_secs: float) -> None:
    """A voice call's opening, then two typed turns ``gap_secs`` apart, each answered."""
    cloud.openai.push(Reply.say("Hello."), Reply.say("One."), Reply.say("Two."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))
    async with RunnerServer(cloud_settings(cloud)) as runner:
        assert (await http.post(f"{runner.url}/run", json=voice_request())).status_code == 200
        await cloud.openai.wait_for_requests(1, timeout=10)
        await cloud.manager.send_text(CALL_ID, "First question.")
        await cloud.openai.wait_for_requests(2, timeout=10)
        await asyncio.sleep(gap_secs)
        await cloud.manager.send_text(CALL_ID, "Second question.")
        await cloud.openai.wait_for_requests(3, timeout=10)
        await call.wait(lambda c: "Two." in c.bot_llm_text(), 10, "the second answer")
        await http.post(f"{runner.url}/stop", params={"id": CALL_ID})


async def test_a_calls_turns_seconds_apart_reuse_one_connection_to_the_llm(
    cloud: Cloud, http: httpx.AsyncClient
) -> None:
    await _two_turns_apart(cloud, http, TURN_GAP_SECS)
    peers = [request.peer for request in cloud.openai.requests]
    assert None not in peers
    assert len(set(peers)) == 1, peers


@pytest.fixture
async def forgetful_cloud() -> AsyncIterator[Cloud]:
    """An LLM endpoint that closes a connection idle for half a second."""
    cloud = Cloud(voices=VoiceBook(VOICES), ms_per_char=10)
    cloud.openai.keepalive_secs = 0.5
    async with cloud:
        yield cloud


async def test_a_connection_the_llm_closed_while_idle_is_replaced_without_an_error(
    forgetful_cloud: Cloud, http: httpx.AsyncClient
) -> None:
    await _two_turns_apart(forgetful_cloud, http, 1.5)
    requests = forgetful_cloud.openai.requests
    assert requests[-1].peer != requests[-2].peer
    assert [r.reply.text for r in requests if r.reply] == ["Hello.", "One.", "Two."]
