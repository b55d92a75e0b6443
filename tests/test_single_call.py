"""Single-AI calls end to end, between the pipecat-manager and provider simulators.

Each test starts a real runner on a real port, posts the request pipecat-manager
would post, and reads what every simulator received and sent.
"""

from __future__ import annotations

import json

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, ToolResult
from simulators.openai import Reply
from simulators.speech import speak

from conftest import OPENAI_KEY, Cloud
from scenarios import CALL_ID, voice_request


async def test_voice_call_hears_the_caller_runs_a_tool_and_speaks_at_16khz(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Hi, I am Ava. How can I help?"),
        Reply.call("send_email", {"to": "caller@example.com"}),
        Reply.say("Your email is on its way."),
    )
    cloud.deepgram.push_transcripts("I need to send an email.")
    call = cloud.manager.expect_call(
        CALL_ID,
        caller=Caller(Caller.silence(1.0), Caller.pcm(speak("I need to send an email."))),
        tools={"send_email": ToolResult.ok({"result": "success", "message": "sent"})},
    )

    response = await http.post(f"{runner.url}/run", json=voice_request())

    assert response.status_code == 200, response.text
    assert response.json()["status"] == "ok"
    [tool_call] = await call.wait_tool_calls(name="send_email", timeout=15)
    await call.wait_rtvi("bot-llm-stopped", count=3, timeout=15)
    await call.wait_bot_audio(min_secs=0.5, timeout=10)

    first, second, third = cloud.openai.requests[:3]
    assert first.system_prompt == "You are Ava, a helpful assistant."
    assert first.tool_names == ["send_email"]
    assert first.model == "gpt-4o"
    assert first.authorization == f"Bearer {OPENAI_KEY}"
    assert second.user_text == "I need to send an email."
    # The tool call reached Go with the exact body, under the LLM's own tool_call_id.
    assert tool_call.body == {
        "id": second.tool_call_ids[0],
        "type": "function",
        "function": {"name": "send_email", "arguments": json.dumps({"to": "caller@example.com"})},
    }
    assert tool_call.tool_call_id == third.messages[-1]["tool_call_id"]
    # Go's answer reached the LLM in the contract's shape.
    assert json.loads(third.messages[-1]["content"]) == {
        "status": "ok",
        "data": {"result": "success", "message": "sent"},
    }
    # Caller audio reached Deepgram; the final transcript reached Go as RTVI.
    assert cloud.deepgram.audio_bytes_received > 16000 * 2
    assert call.user_transcripts() == ["I need to send an email."]
    assert call.bot_llm_text() == [
        "Hi, I am Ava. How can I help?",
        "Your email is on its way.",
    ]
    # Bot audio left on the output socket as 16 kHz mono, in voice-a.
    chunks = call.audio_chunks()
    assert {(c.sample_rate, c.num_channels) for c in chunks} == {(16000, 1)}
    assert (
        cloud.voices.identify_voice(call.received_bot_audio(), 16000, ["voice-a", "voice-b"])
        == "voice-a"
    )
    assert cloud.cartesia.texts_for_voice("voice-a")
    assert {m.type for m in call.rtvi()} >= {
        "user-transcription",
        "user-llm-text",
        "bot-transcription",
        "bot-llm-text",
        "bot-llm-stopped",
    }
    [user_llm] = call.rtvi("user-llm-text")
    assert user_llm.data["text"] == "I need to send an email."


async def test_text_session_opens_only_the_output_socket_and_builds_no_speech(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello from text."))
    call = cloud.manager.expect_call(CALL_ID)
    body = voice_request(stt_type=None, tts_type=None, tts_voice_id=None)

    response = await http.post(f"{runner.url}/run", json=body)

    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    assert call.bot_llm_text() == ["Hello from text."]
    assert [c.direction for c in call.connections()] == ["output"]
    assert call.audio_chunks() == []
    assert cloud.deepgram.connections_opened == 0
    assert cloud.cartesia.connections_opened == 0


async def test_stop_ends_the_call_and_releases_everything(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))

    response = await http.post(f"{runner.url}/run", json=voice_request())
    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    assert cloud.deepgram.active_connections == 1
    assert cloud.cartesia.active_connections == 1

    stopped = await http.post(f"{runner.url}/stop", params={"id": CALL_ID})

    assert stopped.status_code == 200
    assert stopped.json() == {"status": "stopped", "id": CALL_ID}
    await call.wait_closed(timeout=5)
    assert (await http.get(f"{runner.url}/health")).json()["sessions"] == 0
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.active_connections == 0, 5)
    await cloud.cartesia.wait_until(lambda: cloud.cartesia.active_connections == 0, 5)


async def test_a_second_run_for_a_running_id_is_409(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(Reply.say("Hello."))
    cloud.manager.expect_call(CALL_ID)
    body = voice_request(stt_type=None, tts_type=None)
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    again = await http.post(f"{runner.url}/run", json=body)

    assert again.status_code == 409
    assert "already running" in again.json()["error"]
    assert len(runner.sessions) == 1
