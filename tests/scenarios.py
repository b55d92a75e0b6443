"""The requests and callers the end-to-end tests share.

A single-AI voice request and a three-member team request in pipecat-manager's
exact shape, and a helper for making the simulated caller speak.
"""

from __future__ import annotations

from typing import Any

import httpx

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord
from simulators.speech import speak

from conftest import OPENAI_KEY, XAI_KEY, Cloud

CALL_ID = "6a1f9c2e-0b7d-4e55-8f3a-2c9d1e4b7a10"

SEND_EMAIL = {
    "name": "send_email",
    "description": "Send an email to the caller.",
    "parameters": {
        "type": "object",
        "properties": {"to": {"type": "string", "description": "Address"}},
        "required": ["to"],
    },
    "run_llm": True,
}


def voice_request(**changes: object) -> dict[str, object]:
    body: dict[str, object] = {
        "id": CALL_ID,
        "llm_type": "openai.gpt-4o",
        "llm_key": OPENAI_KEY,
        "llm_messages": [{"role": "system", "content": "You are Ava, a helpful assistant."}],
        "stt_type": "deepgram",
        "stt_language": "en-US",
        "tts_type": "cartesia",
        "tts_language": "en",
        "tts_voice_id": "voice-a",
        "tools": [SEND_EMAIL],
        "smart_turn_enabled": False,
    }
    body.update(changes)
    return body


TEAM_CALL_ID = "9d4e3c2b-1a0f-4e6d-8c7b-5a4f3e2d1c0b"
GREETER, BILLING, SUPPORT = "member-greeter", "member-billing", "member-support"

LOOKUP_INVOICE = {
    "name": "get_invoice",
    "description": "Look up an invoice.",
    "parameters": {"type": "object", "properties": {"number": {"type": "string"}}, "required": []},
}


def member(
    member_id: str,
    name: str,
    *,
    engine: str,
    key: str,
    prompt: str,
    tts: tuple[str, str],
    stt_language: str,
    tools: list[dict[str, Any]],
    transitions: list[tuple[str, str]],
) -> dict[str, Any]:
    return {
        "id": member_id,
        "name": name,
        "ai": {
            "engine_model": engine,
            "engine_key": key,
            "init_prompt": prompt,
            "parameter": {"company": "Acme"},
            "tts_type": tts[0],
            "tts_voice_id": tts[1],
            "stt_type": "deepgram",
            "stt_language": stt_language,
            "smart_turn_enabled": False,
        },
        "tools": tools,
        "transitions": [
            {"function_name": fn, "description": f"Hand over ({fn})", "next_member_id": to}
            for fn, to in transitions
        ],
    }


def team_request() -> dict[str, Any]:
    members = [
        member(
            GREETER,
            "Greeter",
            engine="openai.gpt-4o",
            key=OPENAI_KEY,
            prompt="You greet callers for {{ company }}.",
            tts=("cartesia", "voice-greeter"),
            stt_language="en",
            tools=[{**SEND_EMAIL, "run_llm": False}],
            transitions=[("transfer_to_billing", BILLING), ("transfer_to_support", SUPPORT)],
        ),
        member(
            BILLING,
            "Billing",
            engine="grok.grok-3",
            key=XAI_KEY,
            prompt="You handle billing for {{ company }}.",
            tts=("elevenlabs", "voice-billing"),
            stt_language="en-GB",
            tools=[LOOKUP_INVOICE],
            transitions=[("transfer_to_greeter", GREETER)],
        ),
        member(
            SUPPORT,
            "Support",
            engine="openai.gpt-4o-mini",
            key=OPENAI_KEY,
            prompt="You fix problems for {{ company }}.",
            tts=("cartesia", "voice-support"),
            stt_language="en",
            tools=[],
            transitions=[],
        ),
    ]
    return {
        "id": TEAM_CALL_ID,
        "llm_type": "openai.gpt-4o",
        "llm_key": OPENAI_KEY,
        "llm_messages": [],
        "stt_type": "deepgram",
        "stt_language": "en",
        "tts_type": "cartesia",
        "tts_voice_id": "voice-greeter",
        "resolved_team": {"id": "team-1", "start_member_id": GREETER, "members": members},
        "smart_turn_enabled": False,
    }


async def caller_says(cloud: Cloud, text: str, call_id: str = TEAM_CALL_ID) -> None:
    """The caller speaks ``text``; Deepgram's simulator will transcribe it as such."""
    cloud.deepgram.push_transcripts(text)
    await cloud.manager.say(call_id, Caller.pcm(speak(text)))


async def assert_run_refused(
    runner: RunnerServer,
    http: httpx.AsyncClient,
    body: dict[str, Any],
    expected: tuple[int, str, str],
    secret: str,
) -> None:
    """``POST /run`` ``body`` is refused: ``expected`` is (status, field named, words of the
    error); the answer has the one error shape, quotes no ``secret`` and leaves no call."""
    status, field, words = expected
    response = await http.post(f"{runner.url}/run", json=body)

    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["status"] == "error"
    assert field in [p["field"] for p in answer["problems"]], answer
    assert words in answer["error"], answer["error"]
    assert secret not in response.text
    assert len(runner.sessions) == 0


def closed_at(call: CallRecord) -> float:
    """When the first socket of the call closed."""
    return min(e.at for e in call.connections() if not e.opened)


def played_until(call: CallRecord, cloud: Cloud, voice: str) -> float:
    """When the media server finished playing the last audio in ``voice``."""
    return max(
        start + len(pcm) / 32000
        for start, pcm in call.heard_bot_audio()
        if cloud.voices.identify_voice(pcm, 16000, [voice]) == voice
    )
