"""Handoff latency: how long the runner takes to hand a caller from one member to the next.

Two members whose LLMs (two OpenAI-compatible simulators) answer every request
with a transition to the other, so a call ping-pongs between them:

* text call: from the last byte of a member's response carrying the
  transition call to the next member's first LLM request arriving;
* voice call: each member also says a short line; from the transition call to
  the next member's first bot audio chunk on the output socket, less the
  simulators' own time (the LLM simulator's response and the TTS simulator's
  time to first audio), so what is left is the runner's.

And voice-to-voice, end of caller speech to first bot audio, single AI against
the team's start member, with the turn settings used (Silero VAD, the fixed
end-of-turn rule: the VAD's 0.2 s stop plus 0.6 s; Deepgram simulator
transcripts at once).

    python -m bench.handoff [--handoffs 60] [--turns 12]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

import httpx

from bench.harness import (
    RunnerProcess,
    banner,
    caller_turn,
    percentile,
    split_cores,
    table,
    voice_call,
)
from simulators.cloud import Cloud
from simulators.manager import Caller, CallRecord
from simulators.openai import ChatRequest, Reply
from simulators.speech import speak
from simulators.voices import VoiceBook

VOICES = VoiceBook({"voice-a": 598.0, "voice-b": 1417.0})


def ping_pong_team(call_id: str, *, voice: bool) -> dict[str, Any]:
    def member(me: str, other: str, engine: str) -> dict[str, Any]:
        ai: dict[str, Any] = {"engine_model": engine, "init_prompt": f"You are {me}."}
        if voice:
            ai.update(tts_type="cartesia", tts_voice_id=f"voice-{me}")
        return {
            "id": me,
            "name": me.upper(),
            "ai": ai,
            "transitions": [
                {"function_name": f"to_{other}", "description": "x", "next_member_id": other}
            ],
        }

    body: dict[str, Any] = {
        "id": call_id,
        "llm_type": "openai.a",
        "resolved_team": {
            "id": "ping-pong",
            "start_member_id": "a",
            "members": [member("a", "b", "openai.a"), member("b", "a", "grok.b")],
        },
    }
    if voice:
        body.update(tts_type="cartesia", tts_voice_id="voice-a")
    return body


class PingPong:
    """Both LLMs' responder: say a numbered line (voice calls), then transfer."""

    def __init__(self, voice: bool, limit: int) -> None:
        self._voice = voice
        self._limit = limit
        self._count = itertools.count(1)

    def __call__(self, request: ChatRequest) -> Reply:
        n = next(self._count)
        me = "a" if "to_b" in request.tool_names else "b"
        other = "b" if me == "a" else "a"
        if n > self._limit:
            return Reply.say("Done.")
        if self._voice:
            return Reply.say(f"{me.upper()} number {n}.").and_call(f"to_{other}")
        return Reply.call(f"to_{other}")


async def ping_pong(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, count: int, *, voice: bool
) -> tuple[CallRecord, list[ChatRequest]]:
    """Run a ping-pong call until ``count`` handoffs; its record and both LLMs' requests."""
    call_id = "voice-handoffs" if voice else "text-handoffs"
    call = cloud.manager.expect_call(call_id)
    response = await http.post(f"{runner.url}/run", json=ping_pong_team(call_id, voice=voice))
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    await _requests(cloud, count + 1)
    if voice:
        await asyncio.sleep(0.5)  # let the last lines' audio arrive
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    requests = sorted(cloud.openai.requests + cloud.grok.requests, key=lambda r: r.received_at)
    return call, requests


async def text_handoffs(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, count: int
) -> list[float]:
    _, requests = await ping_pong(cloud, runner, http, count, voice=False)
    return [
        nxt.received_at - prev.responded_at
        for prev, nxt in itertools.pairwise(requests[: count + 1])
        if prev.responded_at is not None
    ]


async def voice_handoffs(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, count: int
) -> list[float]:
    call, requests = await ping_pong(cloud, runner, http, count, voice=True)
    tts = {r.transcript: r for r in cloud.cartesia.requests if r.transcript}
    first_audio = {text: at for (_, text), at in cloud.cartesia.first_audio_at.items()}
    chunks = call.audio_chunks()
    latencies = []
    for prev, nxt in itertools.pairwise(requests[: count + 1]):
        text = nxt.reply.text if nxt.reply else None
        if prev.responded_at is None or nxt.responded_at is None or not text or text not in tts:
            continue
        voice = "voice-a" if "to_b" in nxt.tool_names else "voice-b"
        audio = next(
            (
                c
                for c in chunks
                if c.at > prev.responded_at
                and VOICES.identify_voice(c.pcm, 16000, ["voice-a", "voice-b"]) == voice
            ),
            None,
        )
        if audio is None or text not in first_audio:
            continue
        simulators = (nxt.responded_at - nxt.received_at) + (
            first_audio[text] - tts[text].received_at
        )
        latencies.append(audio.at - prev.responded_at - simulators)
    return latencies


async def voice_to_voice(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, team: bool, turns: int
) -> list[float]:
    call_id = f"v2v-{team}"
    cloud.openai.push(Reply.say("Hello."))
    for _ in range(turns):
        cloud.openai.push(Reply.say("Sure."))
    cloud.deepgram.push_transcripts(*["What is my balance?"] * turns)
    call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.5)))
    body = voice_call(call_id, "Answer.", llm_type="openai.a")
    if team:
        members = ping_pong_team(call_id, voice=True)["resolved_team"]
        for m in members["members"]:
            m["ai"].update(stt_type="deepgram")
        body["resolved_team"] = members
    assert (await http.post(f"{runner.url}/run", json=body)).status_code == 200
    await call.wait_bot_audio(min_secs=0.1, timeout=20)
    speech = speak("What is my balance?")
    latencies = []
    for _ in range(turns):
        await asyncio.sleep(1.0)
        _, latency = await caller_turn(cloud, call, speech)
        latencies.append(latency)
        await call.wait_bot_audio(min_secs=0, timeout=5)
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    return latencies


async def _requests(cloud: Cloud, count: int, timeout: float = 120.0) -> None:
    """Wait until the two LLM simulators have received ``count`` requests between them."""
    deadline = asyncio.get_running_loop().time() + timeout
    while len(cloud.openai.requests) + len(cloud.grok.requests) < count:
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(
                f"only {len(cloud.openai.requests) + len(cloud.grok.requests)} requests"
            )
        await asyncio.sleep(0.05)


def ms(values: list[float], q: float) -> float:
    return percentile(values, q) * 1000


def row(measure: str, values: list[float]) -> tuple[str, int, float, float, float]:
    return (measure, len(values), ms(values, 50), ms(values, 95), ms(values, 100))


async def main(handoffs: int, turns: int) -> None:
    banner("Handoff latency")
    runner_cores, _ = split_cores()
    handoff: dict[bool, list[float]] = {}
    for voice in (False, True):
        responder = PingPong(voice=voice, limit=handoffs)
        async with Cloud(voices=VOICES, ms_per_char=20, responder=responder) as cloud:
            runner = RunnerProcess(cloud.environment(), cores=runner_cores)
            async with runner, httpx.AsyncClient(timeout=60) as http:
                measure = voice_handoffs if voice else text_handoffs
                handoff[voice] = await measure(cloud, runner, http, handoffs)
    async with Cloud(voices=VOICES, ms_per_char=20) as cloud:
        runner = RunnerProcess(cloud.environment(), cores=runner_cores)
        async with runner, httpx.AsyncClient(timeout=60) as http:
            single = await voice_to_voice(cloud, runner, http, team=False, turns=turns)
            team = await voice_to_voice(cloud, runner, http, team=True, turns=turns)
    rows = [
        row("text handoff: transition call to next LLM request", handoff[False]),
        row("voice handoff: transition call to next voice, runner's share", handoff[True]),
        row("voice-to-voice, single AI", single),
        row("voice-to-voice, team start member", team),
    ]
    print(table(["measure", "n", "p50 ms", "p95 ms", "max ms"], rows))
    print(
        "\nTurn settings for voice-to-voice: Silero VAD stop_secs 0.2 plus the fixed 0.6 s rule "
        "(smart_turn_enabled false); the Deepgram simulator transcribes at once."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--handoffs", type=int, default=60)
    parser.add_argument("--turns", type=int, default=12)
    args = parser.parse_args()
    asyncio.run(main(args.handoffs, args.turns))
