"""Handoff latency: how long the runner takes to hand a caller from one member to the next.

Two members whose LLMs (two OpenAI-compatible simulators) answer every request
with a transition to the other, so a call ping-pongs between them:

* text call: from the last byte of a member's response carrying the
  transition call to the next member's first LLM request arriving;
* voice call: each member also says a short line with its transition; the
  next member's first bot audio chunk on the output socket, against the
  earliest the providers allow it: the next LLM's answer and its voice's
  first audio after the transition call, and the next voice's first audio
  after the previous voice has made its line (the next voice waits for
  it). What is left is the runner's.

And voice-to-voice, end of caller speech to first bot audio, single AI against
the team's start member, with the turn settings used (Silero VAD, the fixed
end-of-turn rule: the VAD's 0.2 s stop plus 0.6 s; Deepgram simulator
transcripts at once).

And the handoff line's dead air: each transition carries a ``handoff_message``,
one handoff at a time (the caller asks for it by ``send-text``, once the
previous one has been heard), and the gap the caller hears between the end of
the line's playout and the next member's first audio, on the media server's
timeline as the pipecat-manager simulator plays it (0 when the next member's
audio arrived before the line was over). Measured with the simulators as they
are, and with provider-like latency (the LLM's first token after 300 ms, the
voice's first audio after 150 ms).

    python -m bench.handoff [--handoffs 60] [--turns 12] [--lines 30] [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.harness import (
    ROOT,
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
from simulators.tts import PROVIDER_PACING
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
    line_made = {text: at for (_, text), at in cloud.cartesia.last_audio_at.items()}
    chunks = call.audio_chunks()
    latencies = []
    for prev, nxt in itertools.pairwise(requests[: count + 1]):
        text = nxt.reply.text if nxt.reply else None
        line = prev.reply.text if prev.reply else None
        if prev.responded_at is None or nxt.responded_at is None:
            continue
        if text not in tts or text not in first_audio or line not in line_made:
            continue
        voice = "voice-a" if "to_b" in nxt.tool_names else "voice-b"
        # Its first audio: the first chunk in its voice sent after the voice made it
        # (the end of the same voice's previous line may still be arriving).
        audio = next(
            (
                c
                for c in chunks
                if c.at > first_audio[text]
                and VOICES.identify_voice(c.pcm, 16000, ["voice-a", "voice-b"]) == voice
            ),
            None,
        )
        if audio is None:
            continue
        first_audio_secs = first_audio[text] - tts[text].received_at
        answered = nxt.responded_at - nxt.received_at
        earliest = max(
            prev.responded_at + answered + first_audio_secs,
            line_made[line] + first_audio_secs,
        )
        latencies.append(audio.at - earliest)
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


HANDOFF_LINE = "One moment please, I am handing you over to my colleague."


# What a member says itself as it transfers, when the team gives no handoff line.
OWN_WORDS = "Sure, one moment."


class OnRequest:
    """Both LLMs' responder for the handoff-line call: hand over when asked, else say hello.

    With ``own_words``, the member says them in the response that transfers.
    """

    def __init__(self, own_words: str | None = None) -> None:
        self._own_words = own_words

    def __call__(self, request: ChatRequest) -> Reply:
        me = "a" if "to_b" in request.tool_names else "b"
        if request.user_text == "hand over" and request.messages[-1].get("role") == "user":
            other = f"to_{'b' if me == 'a' else 'a'}"
            if self._own_words:
                return Reply.say(self._own_words).and_call(other)
            return Reply.call(other)
        return Reply.say(f"{me.upper()} here, how can I help you?")


def line_team(call_id: str, *, line: bool = True) -> dict[str, Any]:
    body = ping_pong_team(call_id, voice=True)
    for member in body["resolved_team"]["members"]:
        member["ai"]["stt_type"] = "deepgram"
        if line:
            member["transitions"][0]["handoff_message"] = HANDOFF_LINE
    body["stt_type"] = "deepgram"
    return body


async def handoff_line_gaps(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, count: int, *, line: bool = True
) -> list[float]:
    """The silence the caller hears between each handoff line and the next member's voice.

    Without ``line``, the line is the member's own words in its transferring response.
    """
    call_id = f"handoff-lines-{id(cloud)}"
    call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.5)))
    response = await http.post(f"{runner.url}/run", json=line_team(call_id, line=line))
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    await call.wait_bot_audio(min_secs=0.1, timeout=20)
    gaps = []
    for number in range(count):
        await _heard_everything(call)
        asked_at = time.monotonic()
        await cloud.manager.send_text(call_id, "hand over")
        await call.wait_member_switches(number + 1, timeout=20)
        line_voice, next_voice = ("a", "b") if number % 2 == 0 else ("b", "a")
        await call.wait(_voice_since(asked_at, f"voice-{next_voice}"), 20, "the next voice")
        await _heard_everything(call)
        gaps.append(_gap_after_line(call, asked_at, line_voice))
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    return gaps


def _voice_since(since: float, voice: str) -> Callable[[CallRecord], bool]:
    """Whether audio in ``voice`` has arrived since ``since``."""

    def arrived(call: CallRecord) -> bool:
        return any(
            chunk.at > since and VOICES.identify_voice(chunk.pcm, 16000, [voice]) == voice
            for chunk in call.audio_chunks()[-3:]
        )

    return arrived


async def _heard_everything(call: CallRecord) -> None:
    """Wait until the media server has played all the bot audio it was sent, and a bit more."""
    while True:
        played = call.heard_bot_audio()
        end = max((start + len(pcm) / 32000 for start, pcm in played), default=0.0)
        if time.monotonic() > end + 0.3:
            return
        await asyncio.sleep(end + 0.3 - time.monotonic())


def _gap_after_line(call: CallRecord, since: float, line_voice: str) -> float:
    """From the end of the line (``voice-<line_voice>``) to the next member's first audio."""
    voices = [f"voice-{line_voice}", f"voice-{'b' if line_voice == 'a' else 'a'}"]
    line_end: float | None = None
    for start, pcm in call.heard_bot_audio():
        if start < since:
            continue
        voice = VOICES.identify_voice(pcm, 16000, voices)
        if voice == voices[0]:
            line_end = start + len(pcm) / 32000
        elif voice == voices[1] and line_end is not None:
            return max(0.0, start - line_end)
    raise RuntimeError("the handoff line or the next member's answer was not heard")


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


async def main(handoffs: int, turns: int, lines: int, root: Path) -> None:
    banner("Handoff latency")
    runner_cores, _ = split_cores()
    handoff: dict[bool, list[float]] = {}
    for voice in (False, True):
        responder = PingPong(voice=voice, limit=handoffs)
        async with Cloud(voices=VOICES, ms_per_char=20, responder=responder) as cloud:
            runner = RunnerProcess(cloud.environment(), cores=runner_cores, root=root)
            async with runner, httpx.AsyncClient(timeout=60) as http:
                measure = voice_handoffs if voice else text_handoffs
                handoff[voice] = await measure(cloud, runner, http, handoffs)
    async with Cloud(voices=VOICES, ms_per_char=20) as cloud:
        runner = RunnerProcess(cloud.environment(), cores=runner_cores, root=root)
        async with runner, httpx.AsyncClient(timeout=60) as http:
            single = await voice_to_voice(cloud, runner, http, team=False, turns=turns)
            team = await voice_to_voice(cloud, runner, http, team=True, turns=turns)
    gaps: dict[str, list[float]] = {}
    for label, llm_delay, voice_delay, own_words in (
        ("simulators as they are", 0.0, 0.0, None),
        ("LLM first token 300 ms, voice first audio 150 ms", 0.3, 0.15, None),
        (
            f"no handoff line, the member's own {OWN_WORDS!r} instead; LLM first token "
            "300 ms, voice paced like a provider",
            0.3,
            None,
            OWN_WORDS,
        ),
    ):
        on_request = OnRequest(own_words)
        async with Cloud(voices=VOICES, ms_per_char=20, responder=on_request) as cloud:
            for llm in (cloud.openai, cloud.grok):
                llm.first_token_delay = llm_delay
            if voice_delay is None:
                cloud.cartesia.pacing = PROVIDER_PACING
            else:
                cloud.cartesia.first_audio_delay = voice_delay
            runner = RunnerProcess(cloud.environment(), cores=runner_cores, root=root)
            async with runner, httpx.AsyncClient(timeout=60) as http:
                gaps[label] = await handoff_line_gaps(
                    cloud, runner, http, lines, line=own_words is None
                )
    rows = [
        row("text handoff: transition call to next LLM request", handoff[False]),
        row("voice handoff: transition call to next voice, runner's share", handoff[True]),
        row("voice-to-voice, single AI", single),
        row("voice-to-voice, team start member", team),
    ]
    rows += [
        row(f"handoff line: end of its playout to the next voice ({label})", values)
        for label, values in gaps.items()
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
    parser.add_argument("--lines", type=int, default=30, help="handoffs with a handoff line")
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    asyncio.run(main(args.handoffs, args.turns, args.lines, args.root))
