"""How a call ends, and how it survives what goes wrong while it runs.

A call ends when pipecat-manager hangs up, when /stop asks, when it idles, and
it releases everything it opened; a provider, tool or network hiccup never
ends it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import weakref

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, ToolResult
from simulators.openai import Reply
from simulators.speech import speak

from conftest import Cloud, cloud_settings
from scenarios import CALL_ID, SEND_EMAIL, voice_request

LONG_REPLY = (
    "Let me tell you everything about our plans, starting with the basic plan, "
    "then the standard plan, and finally the premium plan with all its extras."
)


async def start(http: httpx.AsyncClient, runner: RunnerServer, **changes: object) -> None:
    response = await http.post(f"{runner.url}/run", json=voice_request(**changes))
    assert response.status_code == 200, response.text


async def test_manager_hanging_up_ends_the_call_and_closes_provider_sockets(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_ID)
    await start(http, runner)
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    assert cloud.deepgram.active_connections == 1

    session = runner.sessions.get(CALL_ID)

    await cloud.manager.hangup(CALL_ID, abrupt=True)

    await asyncio.wait_for(session.finished.wait(), 10)
    assert session.journal.end_reason == "hung_up"
    assert session.end_detail is not None and "closed the" in session.end_detail
    assert len(runner.sessions) == 0
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.active_connections == 0, 10)
    await cloud.cartesia.wait_until(lambda: cloud.cartesia.active_connections == 0, 10)


async def test_calls_leave_no_task_or_socket_behind(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    """Task and connection counts come back to where they were after each call.

    The first call warms what the process keeps for every call (the LLM
    client's connection pool); from then on, nothing may accumulate.
    """
    settled: list[set[str]] = []
    for round_ in range(3):
        cloud.openai.push(Reply.say("Hello."))
        call_id = f"{CALL_ID}-{round_}"
        call = cloud.manager.expect_call(call_id)
        during_tasks = {t.get_name() for t in asyncio.all_tasks()}
        await start(http, runner, id=call_id)
        await call.wait_rtvi("bot-llm-stopped", timeout=10)
        assert cloud.deepgram.active_connections == 1
        assert len({t.get_name() for t in asyncio.all_tasks()} - during_tasks) > 3

        stopped = await http.post(f"{runner.url}/stop", params={"id": call_id})
        assert stopped.status_code == 200
        await call.wait_closed(timeout=5)
        for sim in (cloud.deepgram, cloud.cartesia):
            await sim.wait_until(lambda sim=sim: sim.active_connections == 0, 5)
        assert cloud.manager.active_connections == 0
        settled.append({t.get_name() for t in asyncio.all_tasks() if not t.done()})

    first, *later = settled
    for tasks in later:
        assert len(tasks) <= len(first), tasks - first


async def test_an_ended_call_leaves_none_of_its_objects_behind(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    """Once a call has ended, its session, pipeline and services can all be freed.

    Everything the loop runs for a call keeps a copy of its log context, which
    names the call: here, on asyncio's own loop, cancelled timers until the time
    they were set for, and on uvloop, as the runner ships, the shared LLM client's
    keep-alive connections (BENCHMARKS.md section 15).
    """
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_ID)
    await start(http, runner)
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    session = runner.sessions.get(CALL_ID)
    assert session is not None and session.call is not None
    kept = [weakref.ref(session), *(weakref.ref(p) for _, p in session.call.components)]
    assert len(kept) > 3

    await http.post(f"{runner.url}/stop", params={"id": CALL_ID})
    await asyncio.wait_for(session.finished.wait(), 10)
    await call.wait_closed(timeout=5)
    del session
    await asyncio.sleep(0.1)
    gc.collect()

    assert [ref() for ref in kept if ref() is not None] == []


async def test_barge_in_flushes_the_media_server(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say(LONG_REPLY), Reply.say("Sure, go ahead."))
    cloud.deepgram.push_transcripts("Wait, stop.")
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))
    await start(http, runner)
    await call.wait_bot_audio(min_secs=1.0, timeout=10)
    assert call.flushes() == []

    await cloud.manager.say(CALL_ID, Caller.pcm(speak("Wait, stop.")))

    await call.wait(lambda c: c.flushes(), timeout=10, what="FLUSH_MEDIA")
    flush = call.flushes()[0]
    first_audio = call.audio_chunks()[0]
    assert flush.seq > first_audio.seq
    # The caller heard only the part played before the flush.
    assert call.heard_bot_secs() < call.received_bot_secs()


async def test_caller_audio_sent_before_the_pipeline_starts_is_kept(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."), Reply.say("You said hello."))
    cloud.deepgram.push_transcripts("Hello there.")
    speech = speak("Hello there.")
    call = cloud.manager.expect_call(
        CALL_ID, caller=Caller(Caller.pcm(speech), start="on_connect", realtime=False, speed=0)
    )

    await start(http, runner)

    await call.wait(lambda c: c.user_transcripts(), timeout=10, what="the caller's transcript")
    assert call.user_transcripts() == ["Hello there."]
    assert cloud.deepgram.audio_bytes_received >= len(speech)
    assert call.is_open("input")


async def test_tool_errors_and_timeouts_become_results_for_the_llm(
    cloud: Cloud, http: httpx.AsyncClient
) -> None:
    slow_tool = {**SEND_EMAIL, "name": "lookup", "description": "Slow lookup"}
    cloud.openai.push(
        Reply.call("send_email", {"to": "x"}),
        Reply.call("lookup", {"to": "y"}),
        Reply.say("Sorry, that did not work."),
    )
    call = cloud.manager.expect_call(
        CALL_ID,
        tools={
            "send_email": ToolResult.error(400, "bad address"),
            "lookup": ToolResult.ok({"result": "late"}, delay=2.0),
        },
    )
    async with RunnerServer(cloud_settings(cloud, tool_timeout_secs=0.5)) as runner:
        await start(http, runner, tools=[SEND_EMAIL, slow_tool], stt_type=None, tts_type=None)

        await call.wait_rtvi("bot-llm-stopped", count=1, timeout=15)
        requests = await cloud.openai.wait_for_requests(3, timeout=10)

    after_error, after_timeout = requests[1], requests[2]
    assert json.loads(after_error.messages[-1]["content"]) == {
        "status": "error",
        "error": 'HTTP 400: {"error": "bad address"}',
    }
    assert json.loads(after_timeout.messages[-1]["content"]) == {
        "status": "error",
        "error": "Request timed out after 0.5s",
    }
    assert call.bot_llm_text() == ["Sorry, that did not work."]


async def test_run_llm_false_leaves_the_llm_silent_after_the_result(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    quiet_tool = {**SEND_EMAIL, "run_llm": False}
    cloud.openai.push(
        Reply.say("Sending it.").and_call("send_email", {"to": "a@b.c"}),
        Reply.say("You are welcome."),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))
    await start(http, runner, tools=[quiet_tool])
    await call.wait_tool_calls(name="send_email", timeout=10)

    await cloud.manager.send_text(CALL_ID, "Thanks.")

    _, second = await cloud.openai.wait_for_requests(2, timeout=10)
    # The next LLM run is the caller's, with the tool result already in context.
    assert second.messages[-1] == {"role": "user", "content": "Thanks."}
    assert any(m.get("role") == "tool" for m in second.messages)


async def test_the_model_may_ask_for_run_llm_and_it_is_not_forwarded(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    quiet_tool = {**SEND_EMAIL, "run_llm": False}
    cloud.openai.push(
        Reply.call("send_email", {"to": "a@b.c", "run_llm": True}),
        Reply.say("Done."),
    )
    call = cloud.manager.expect_call(CALL_ID)

    await start(http, runner, tools=[quiet_tool], stt_type=None, tts_type=None)

    [tool_call] = await call.wait_tool_calls(name="send_email", timeout=10)
    assert tool_call.arguments == {"to": "a@b.c"}
    await call.wait(lambda c: c.bot_llm_text(), timeout=10, what="the reply after the tool")
    assert call.bot_llm_text() == ["Done."]


async def test_an_llm_failure_mid_call_is_reported_and_the_call_goes_on(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.fail(500, "upstream exploded", retry=False), Reply.say("Back again."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))
    await start(http, runner)
    [error] = await call.wait_rtvi("error", timeout=10)
    assert "upstream exploded" in json.dumps(error.data)

    await cloud.manager.send_text(CALL_ID, "Are you there?")

    await call.wait(lambda c: c.bot_llm_text(), timeout=10, what="a reply after the failure")
    assert call.bot_llm_text() == ["Back again."]
    assert len(runner.sessions) == 1


async def test_an_idle_call_ends_by_itself(cloud: Cloud, http: httpx.AsyncClient) -> None:
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_ID)
    async with RunnerServer(cloud_settings(cloud, session_idle_secs=1.0)) as runner:
        await start(http, runner, stt_type=None, tts_type=None)
        session = runner.sessions.get(CALL_ID)

        await asyncio.wait_for(session.finished.wait(), 10)

        assert len(runner.sessions) == 0
        assert call.closed


async def test_history_with_tool_calls_reaches_the_llm_as_valid_pairs(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    history = [
        {"role": "system", "content": "You are Ava."},
        {"role": "user", "content": "Email me."},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "send_email", "arguments": "{}"},
                },
                {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sent"},
        {"role": "tool", "tool_call_id": "orphan", "content": "no call asked for this"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": ""},
    ]
    cloud.openai.push(Reply.say("Anything else?"))
    call = cloud.manager.expect_call(CALL_ID)

    await start(http, runner, llm_messages=history, stt_type=None, tts_type=None)

    [request] = await cloud.openai.wait_for_requests(1, timeout=10)
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    assert request.messages == [
        {"role": "system", "content": "You are Ava."},
        {"role": "user", "content": "Email me."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "send_email", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sent"},
        {"role": "assistant", "content": "Done."},
    ]


async def test_a_start_that_cannot_reach_pipecat_manager_is_500_and_leaves_nothing(
    http: httpx.AsyncClient, cloud: Cloud
) -> None:
    settings = cloud_settings(cloud, pipecatcall_address="127.0.0.1:9")
    tasks_before = {t.get_name() for t in asyncio.all_tasks()}
    async with RunnerServer(settings) as runner:
        response = await http.post(
            f"{runner.url}/run", json=voice_request(stt_type=None, tts_type=None)
        )

        assert response.status_code == 500
        answer = response.json()
        assert answer["problems"][0]["field"] == "output socket to pipecat-manager"
        assert "could not connect to ws://127.0.0.1:9/{id}/ws?direction=output" in (answer["error"])
        assert "PIPECATCALL_ADDRESS" in answer["error"]
        assert len(runner.sessions) == 0
        assert cloud.openai.requests == []
    assert {t.get_name() for t in asyncio.all_tasks() if not t.done()} - tasks_before == set()


async def test_a_provider_that_refuses_the_key_fails_the_start_naming_it(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.deepgram.refuse_connections = True
    cloud.deepgram.refusal_status = 401
    call = cloud.manager.expect_call(CALL_ID)

    response = await http.post(f"{runner.url}/run", json=voice_request())

    assert response.status_code == 500
    assert response.json()["problems"][0]["field"].startswith("STT deepgram")
    assert len(runner.sessions) == 0
    await call.wait_closed(timeout=5)
    await cloud.cartesia.wait_until(lambda: cloud.cartesia.active_connections == 0, 5)
