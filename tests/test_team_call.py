"""Team calls end to end: members hand the caller on, each with its own LLM, voice and ears.

The team is a greeter (openai, Cartesia, Deepgram en), billing (grok,
ElevenLabs, Deepgram en-GB) and support (openai, Cartesia with another voice,
Deepgram en, so the same STT as the greeter). After each transition the
test reads what every simulator received: the new member's LLM server got
the new member's prompt and exactly its functions, the previous LLM got
nothing more, caller audio reached only the new member's STT, bot audio
carries the new voice, and pipecat-manager was told of the switch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import httpx
from pipecat.services.stt_service import STTService

from playground.server import RunnerServer
from routing.router import MemberRouting
from simulators.deepgram import ListenConnection
from simulators.manager import Caller, CallRecord, ToolResult
from simulators.openai import Reply
from teamrunner.manager.events import MANAGER_READS

from conftest import Cloud
from scenarios import BILLING, GREETER, SUPPORT, XAI_KEY, caller_says, team_request
from scenarios import TEAM_CALL_ID as CALL_ID


def audio_by_language(cloud: Cloud) -> dict[str, int]:
    connections: list[ListenConnection] = cloud.deepgram.connections
    return {c.query.get("language", "?"): c.audio_bytes for c in connections if not c.closed}


def voices_heard(cloud: Cloud, call: CallRecord) -> list[str]:
    """The voices of the bot audio on the output socket, in order, one entry per stretch."""
    runs: list[str] = []
    for chunk in call.audio_chunks():
        voice = cloud.voices.identify_voice(
            chunk.pcm, 16000, ["voice-greeter", "voice-billing", "voice-support"]
        )
        if voice is not None and (not runs or runs[-1] != voice):
            runs.append(voice)
    return runs


async def test_transitions_switch_prompt_tools_llm_voice_and_ears(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Welcome to Acme."),
        Reply.say("Let me get billing.").and_call("transfer_to_billing"),
        Reply.call("transfer_to_support"),
        Reply.say("Support here, what is broken?"),
    )
    cloud.grok.push(
        Reply.say("Billing here, how can I help?"),
        Reply.call("transfer_to_greeter"),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.5)))

    response = await http.post(f"{runner.url}/run", json=team_request())

    assert response.status_code == 200, response.text
    assert response.json()["team"] is True
    # Three members, two distinct STT settings (en, en-GB): two Deepgram connections,
    # billing's opened once the call is up.
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.connections_opened >= 2, 5)
    assert cloud.deepgram.connections_opened == 2
    await call.wait_rtvi("bot-llm-stopped", count=1, timeout=10)
    [greeting] = cloud.openai.requests
    assert greeting.system_prompt == "You greet callers for Acme."
    assert sorted(greeting.tool_names) == [
        "send_email",
        "transfer_to_billing",
        "transfer_to_support",
    ]
    assert "ASYNC TOOLS" not in greeting.system_prompt
    await call.wait(lambda c: voices_heard(cloud, c), 10, "the greeter's voice")
    assert voices_heard(cloud, call) == ["voice-greeter"]

    # Greeter -> billing.
    before = audio_by_language(cloud)
    await caller_says(cloud, "I have a billing question.")
    [switch] = await call.wait_member_switches(1, timeout=15)
    assert switch.transition_function_name == "transfer_to_billing"
    assert switch.from_member["id"] == GREETER and switch.to_member["id"] == BILLING
    assert switch.to_member == {
        "id": BILLING,
        "name": "Billing",
        "engine_model": "grok.grok-3",
        "tts_type": "elevenlabs",
        "tts_voice_id": "voice-billing",
        "stt_type": "deepgram",
    }
    [billing_first] = await cloud.grok.wait_for_requests(1, timeout=10)
    assert billing_first.system_prompt == "You handle billing for Acme."
    assert sorted(billing_first.tool_names) == ["get_invoice", "transfer_to_greeter"]
    assert billing_first.authorization == f"Bearer {XAI_KEY}"
    assert billing_first.model == "grok-3"
    # The billing member sees the whole conversation so far.
    assert any(m.get("content") == "I have a billing question." for m in billing_first.messages)
    await call.wait(
        lambda c: "Billing here, how can I help?" in c.bot_llm_text(), 10, "billing's greeting"
    )
    assert len(cloud.openai.requests) == 2  # the greeter's LLM got nothing more
    await call.wait(lambda c: len(voices_heard(cloud, c)) == 2, 10, "billing's voice")
    assert voices_heard(cloud, call) == ["voice-greeter", "voice-billing"]
    heard_en = audio_by_language(cloud)["en"]
    assert heard_en > before["en"]  # the caller's question went to the greeter's STT

    # Billing -> greeter: caller audio now reaches only billing's STT (en-GB).
    await caller_says(cloud, "Actually, I need the front desk.")
    await call.wait_member_switches(2, timeout=15)
    after_billing = audio_by_language(cloud)
    assert after_billing["en-GB"] > before["en-GB"]
    assert call.member_switches[1].to_member["id"] == GREETER

    # Greeter (straight away) -> support.
    switches = await call.wait_member_switches(3, timeout=15)
    assert (switches[2].from_member["id"], switches[2].to_member["id"]) == (GREETER, SUPPORT)
    requests = await cloud.openai.wait_for_requests(4, timeout=10)
    greeter_again, support_first = requests[2], requests[3]
    assert greeter_again.system_prompt == "You greet callers for Acme."
    assert support_first.system_prompt == "You fix problems for Acme."
    # Greeter and support share one LLM service (one account); each gets its own model.
    assert (greeting.model, greeter_again.model, support_first.model) == (
        "gpt-4o",
        "gpt-4o",
        "gpt-4o-mini",
    )
    session = runner.sessions.get(CALL_ID)
    assert [n for n, _ in session.call.components if n.startswith("LLM")] == [
        "LLM openai.gpt-4o, openai.gpt-4o-mini (members: Greeter, Support)",
        "LLM grok.grok-3 (members: Billing)",
    ]
    assert support_first.tool_names == []
    await call.wait(
        lambda c: "Support here, what is broken?" in c.bot_llm_text(), 10, "support's greeting"
    )
    await call.wait(lambda c: len(voices_heard(cloud, c)) == 3, 10, "support's voice")
    # The greeter said nothing on its way through, so the caller heard three voices.
    assert voices_heard(cloud, call) == ["voice-greeter", "voice-billing", "voice-support"]
    assert len(cloud.grok.requests) == 2
    # Three members, two TTS providers and three voices: one connection per voice.
    assert cloud.cartesia.connections_opened == 2
    assert cloud.elevenlabs.connections_opened == 1
    # Go was sent only the RTVI messages it reads: no function-call or started events.
    assert {m.type for m in call.rtvi()} <= MANAGER_READS
    assert {m.type for m in call.rtvi()} >= {"bot-llm-text", "bot-llm-stopped", "user-llm-text"}


async def test_members_with_equal_settings_share_one_connection(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    members = body["resolved_team"]["members"]
    # Support speaks like the greeter, with the greeter's ears: two distinct TTS settings.
    members[2]["ai"]["tts_voice_id"] = "voice-greeter"
    cloud.openai.push(Reply.say("Welcome."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))

    response = await http.post(f"{runner.url}/run", json=body)

    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    # The members the call did not start with connect once it is up.
    await cloud.elevenlabs.wait_until(lambda: cloud.elevenlabs.connections_opened >= 1, 5)
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.connections_opened >= 2, 5)
    assert cloud.cartesia.connections_opened + cloud.elevenlabs.connections_opened == 2
    assert cloud.cartesia.connections_opened == 1
    assert cloud.deepgram.connections_opened == 2


async def test_members_who_all_hear_alike_share_one_stt_with_no_router_before_it(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body["resolved_team"]["members"][1]["ai"]["stt_language"] = "en"  # billing hears as the rest
    cloud.openai.push(Reply.say("Welcome."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."), Reply.say("Your invoice is paid."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    slots = runner.sessions.get(CALL_ID).call.slots
    # The one STT is in the pipeline itself; the LLM and the voices still have routers.
    assert isinstance(slots.stt, STTService) and not isinstance(slots.stt, MemberRouting)
    assert isinstance(slots.llm, MemberRouting) and isinstance(slots.tts, MemberRouting)

    await caller_says(cloud, "Billing please.")
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 15, "billing")
    await caller_says(cloud, "Is my invoice paid?")
    await call.wait(lambda c: "Your invoice is paid." in c.bot_llm_text(), 15, "billing again")

    assert cloud.deepgram.connections_opened == 1
    assert cloud.grok.requests[-1].messages[-1]["content"] == "Is my invoice paid?"
    assert [s.to_member["id"] for s in call.member_switches] == [BILLING]


async def test_a_transition_whose_switch_fails_stays_with_the_current_member(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    cloud.openai.push(
        Reply.say("Welcome."),
        Reply.call("transfer_to_billing"),
        Reply.say("Billing is unavailable, but I can help."),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))
    response = await http.post(f"{runner.url}/run", json=team_request())
    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    # Billing's voice provider now refuses the key: its service can no longer be used.
    session = runner.sessions.get(CALL_ID)
    [(_, billing_voice)] = [
        (name, p) for name, p in session.call.components if name.startswith("TTS elevenlabs")
    ]
    unusable = asyncio.Event()
    billing_voice.add_event_handler(
        "on_usable_changed", lambda service, usable: unusable.set() if not usable else None
    )
    cloud.elevenlabs.refuse_connections = True
    cloud.elevenlabs.refusal_status = 401
    await cloud.elevenlabs.close_connections()
    await asyncio.wait_for(unusable.wait(), 10)

    await caller_says(cloud, "I have a billing question.")

    third = (await cloud.openai.wait_for_requests(3, timeout=15))[2]
    result = third.messages[-1]
    assert result["role"] == "tool"
    assert "could not transfer to Billing" in result["content"]
    assert third.system_prompt == "You greet callers for Acme."
    await call.wait(
        lambda c: "Billing is unavailable, but I can help." in c.bot_llm_text(),
        10,
        "the greeter carrying on",
    )
    assert call.member_switches == []
    assert cloud.grok.requests == []
    assert session.call.active_member.id == GREETER


async def test_switch_notice_never_holds_up_the_call_and_names_are_made_valid(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    greeter = body["resolved_team"]["members"][0]
    greeter["transitions"][0]["function_name"] = "transfer to billing!"
    cloud.openai.push(Reply.say("Welcome."), Reply.call("transfer_to_billing_"))
    cloud.grok.push(Reply.say("Billing here."))
    # pipecat-manager answers the notice with a 500, and only after 3 seconds.
    call = cloud.manager.expect_call(
        CALL_ID, caller=Caller(Caller.silence(0.2)), member_switched=ToolResult.error(500, delay=3)
    )
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    [greeting] = await cloud.openai.wait_for_requests(1, timeout=10)
    assert "transfer_to_billing_" in greeting.tool_names

    await caller_says(cloud, "Billing please.")

    [switch] = await call.wait_member_switches(1, timeout=15)
    assert switch.transition_function_name == "transfer to billing!"
    [billing] = await cloud.grok.wait_for_requests(1, timeout=2)
    assert billing.received_at - switch.at < 1.0
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 10, "billing speaking")
    assert len(runner.sessions) == 1


async def test_a_team_chat_session_builds_no_speech_at_all(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body.update(stt_type=None, tts_type=None, tts_voice_id=None)
    cloud.openai.push(Reply.say("Welcome."))
    call = cloud.manager.expect_call(CALL_ID)

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    names = [name for name, _ in runner.sessions.get(CALL_ID).call.components]
    assert [n for n in names if n.startswith(("STT", "TTS"))] == []
    assert [c.direction for c in call.connections()] == ["output"]
    assert cloud.deepgram.connections_opened == 0
    assert cloud.cartesia.connections_opened + cloud.elevenlabs.connections_opened == 0


async def test_history_seeds_the_start_member_but_not_an_old_system_prompt(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body["llm_messages"] = [
        {"role": "system", "content": "You are the old single assistant."},
        {"role": "user", "content": "I called before about my bill."},
        {"role": "assistant", "content": "I remember, let me help."},
    ]
    cloud.openai.push(Reply.say("Welcome back."))
    cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))

    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200

    [first] = await cloud.openai.wait_for_requests(1, timeout=10)
    assert first.system_prompt == "You greet callers for Acme."
    assert first.messages[1:] == body["llm_messages"][1:]


async def test_a_members_own_vad_settings_apply_while_it_has_the_call(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = team_request()
    body["vad_config"] = {"stop_secs": 0.3}
    billing = body["resolved_team"]["members"][1]
    billing["ai"]["vad_config"] = {"stop_secs": 1.2, "confidence": 0.8}
    cloud.openai.push(Reply.say("Welcome."), Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."), Reply.call("transfer_to_greeter"))
    cloud.openai.push(Reply.say("Back at the front desk."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    vad = runner.sessions.get(CALL_ID).call.vad
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    assert (vad.params.stop_secs, vad.params.confidence) == (0.3, 0.7)

    await caller_says(cloud, "Billing please.")
    await call.wait(lambda c: "Billing here." in c.bot_llm_text(), 15, "billing")
    assert (vad.params.stop_secs, vad.params.confidence) == (1.2, 0.8)

    await caller_says(cloud, "Back to the front desk.")
    await call.wait(lambda c: "Back at the front desk." in c.bot_llm_text(), 15, "greeter")
    assert (vad.params.stop_secs, vad.params.confidence) == (0.3, 0.7)


async def test_a_handoff_straight_after_the_start_waits_for_the_next_members_ears(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    """Billing's connections open after the call answers; a handoff that comes first waits."""
    line = "I have a billing question."
    # Billing hears en-GB: its socket's handshake is held; the greeter's (en) is not.
    cloud.deepgram.hold_handshakes(language="en-GB")
    cloud.openai.push(Reply.call("transfer_to_billing"))
    cloud.grok.push(Reply.say("Billing here."), Reply.say("Let me look at your bill."))
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))

    response = await http.post(f"{runner.url}/run", json=team_request())

    assert response.status_code == 200, response.text
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.handshakes_waiting == 1, 5)
    await cloud.openai.wait_for_requests(1, timeout=10)
    # The greeter hands over at once, but billing cannot hear yet: no switch is made.
    with contextlib.suppress(TimeoutError):
        await call.wait_member_switches(1, timeout=1.0)
    assert call.member_switches == []
    assert cloud.grok.requests == []

    released_at = time.monotonic()
    cloud.deepgram.release_handshakes()

    [switch] = await call.wait_member_switches(1, timeout=10)
    assert switch.at >= released_at
    assert switch.to_member["id"] == BILLING
    await cloud.grok.wait_for_requests(1, timeout=10)
    # The caller's next words reach billing's ears, whole.
    await caller_says(cloud, line)
    [_, answer] = await cloud.grok.wait_for_requests(2, timeout=15)
    assert answer.user_text == line
    assert call.user_transcripts() == [line]
    assert audio_by_language(cloud)["en-GB"] > 0
    # Still one socket per distinct setting.
    assert cloud.deepgram.connections_opened == 2


async def test_a_member_whose_voice_refuses_the_key_is_refused_at_its_handoff_not_at_the_start(
    cloud: Cloud, runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    # Billing's voice (ElevenLabs) refuses the key: it connects after the call is up.
    cloud.elevenlabs.refuse_connections = True
    cloud.elevenlabs.refusal_status = 401
    cloud.openai.push(
        Reply.say("Welcome."),
        Reply.call("transfer_to_billing"),
        Reply.say("Billing is unavailable, but I can help."),
    )
    call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.2)))

    response = await http.post(f"{runner.url}/run", json=team_request())

    assert response.status_code == 200, response.text
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    await caller_says(cloud, "I have a billing question.")
    third = (await cloud.openai.wait_for_requests(3, timeout=15))[2]
    assert "could not transfer to Billing" in third.messages[-1]["content"]
    await call.wait(
        lambda c: "Billing is unavailable, but I can help." in c.bot_llm_text(),
        10,
        "the greeter carrying on",
    )
    assert call.member_switches == []
    assert cloud.grok.requests == []
