"""Memory: the runner's resident memory over 200 sequential voice team calls.

Each call is a two-member team (OpenAI and Grok simulators, two Cartesia
voices, the Deepgram simulator) with Silero VAD and the smart-turn model on:
the first member greets, the caller (Piper speech played in real time on
the input socket) asks for help, the first member says a line and transfers,
and the second member answers; then the call is stopped. Resident memory is
read from ``/proc`` after calls 10, 50, 100, 150 and 200, and ``GET /health``
says how many speech models the process has loaded (Silero and smart-turn:
two, however many calls and members).

    python -m bench.memory [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import httpx

from bench.harness import RunnerProcess, banner, table
from simulators.cloud import Cloud
from simulators.manager import Caller
from simulators.openai import ChatRequest, Reply
from simulators.speech import speak
from simulators.voices import VoiceBook

VOICES = VoiceBook({"voice-a": 598.0, "voice-b": 1417.0})
CALLER_LINE = "I need help with my bill."
CHECKPOINTS = (10, 50, 100, 150, 200)


def team_call(call_id: str) -> dict[str, Any]:
    def member(me: str, engine: str, transitions: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "id": me,
            "name": me.upper(),
            "ai": {
                "engine_model": engine,
                "init_prompt": f"You are {me}.",
                "tts_type": "cartesia",
                "tts_voice_id": f"voice-{me}",
                "stt_type": "deepgram",
            },
            "transitions": transitions,
        }

    return {
        "id": call_id,
        "llm_type": "openai.a",
        "stt_type": "deepgram",
        "tts_type": "cartesia",
        "tts_voice_id": "voice-a",
        "smart_turn_enabled": True,
        "resolved_team": {
            "id": "memory",
            "start_member_id": "a",
            "members": [
                member(
                    "a",
                    "openai.a",
                    [{"function_name": "to_b", "description": "x", "next_member_id": "b"}],
                ),
                member("b", "grok.b", []),
            ],
        },
    }


def conversation(request: ChatRequest) -> Reply:
    """Both LLMs: greet, then on the caller's words transfer, then (member b) answer."""
    last = request.messages[-1] if request.messages else {}
    if last.get("role") == "tool":
        return Reply.say("Billing here, how can I help?")
    if any(m.get("role") == "user" for m in request.messages):
        return Reply.say("Let me get billing.").and_call("to_b")
    return Reply.say("Hello.")


async def one_call(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, n: int, speech: bytes
) -> None:
    call_id = f"memory-{n}"
    cloud.deepgram.push_transcripts(CALLER_LINE)
    answered = len(cloud.grok.requests)
    call = cloud.manager.expect_call(
        call_id, caller=Caller(Caller.silence(0.3), Caller.pcm(speech))
    )
    response = await http.post(f"{runner.url}/run", json=team_call(call_id))
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    await cloud.grok.wait_until(
        lambda: (
            len(cloud.grok.requests) > answered and cloud.grok.requests[-1].responded_at is not None
        ),
        30,
    )
    before = len(call.audio_chunks())
    await call.wait(lambda c: len(c.audio_chunks()) > before + 5, 10, "member b's audio")
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    del cloud.manager.calls[call_id]  # the simulator's own record, not the runner's


async def main(calls: int) -> None:
    banner("Memory")
    speech = speak(CALLER_LINE)
    cloud = Cloud(voices=VOICES, responder=conversation)
    async with (
        cloud,
        RunnerProcess(cloud.environment()) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        started = time.monotonic()
        rows = [("after start, no call", runner.rss_mib(), "-", "-")]
        at_10 = None
        for n in range(1, calls + 1):
            await one_call(cloud, runner, http, n, speech)
            if n in CHECKPOINTS or n == calls:
                rss = runner.rss_mib()
                at_10 = rss if n == 10 else at_10
                loaded = (await http.get(f"{runner.url}/health")).json()
                rows.append(
                    (
                        f"after {n} calls",
                        rss,
                        f"{rss / at_10:.3f}" if at_10 else "-",
                        loaded["speech_models_loaded"],
                    )
                )
        elapsed = time.monotonic() - started
    print(table(["when", "RSS MiB", "RSS / after 10 calls", "speech models loaded"], rows))
    print(
        f"\n{calls} calls in {elapsed:.0f} s; each: a 2-member voice team, Silero VAD and "
        "smart-turn on, one caller utterance, one transfer."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
