"""Capacity: how many concurrent voice calls one runner process carries on one core.

N calls at once, single-AI or three-member team, each with real-time caller
audio on its input socket (the manager simulator plays 20 ms frames: Piper
speech, then line silence), Silero VAD on, the fixed end-of-turn rule
(smart_turn_enabled false: 0.2 s VAD stop plus 0.6 s), and the Deepgram,
OpenAI and Cartesia simulators answering at once. Each call: the bot
greets, then for each turn the caller asks and the bot answers with a line
of about two seconds of audio. Calls start staggered across one turn.

For each N it reports p95 voice-to-voice (end of caller speech to first bot
audio) over every turn of every call; pace: how late the latest bot audio
chunk arrived against its real-time playout slot, counted from the reply's
first chunk (the media server plays bot audio in real time, so a chunk later
than its slot is a gap the caller hears); the runner's CPU per call (share of
its one core) and resident memory per call. A level passes when every call
keeps pace (no chunk more than 40 ms late) and p95 voice-to-voice is within
50 ms of the one-call figure. The runner is pinned to one core and the
simulators to the other; their own CPU is printed so that a level limited by
the simulators rather than the runner shows as such.

    python -m bench.capacity [--levels 1,2,4,8,12,16,24,32] [--turns 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass, field
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

VOICES = VoiceBook({"voice-a": 598.0, "voice-b": 1417.0, "voice-c": 2153.0})
QUESTION = "What is my balance?"
ANSWER = "Your balance is forty two dollars and ten cents."
MS_PER_CHAR = 40.0  # the answer lasts about two seconds
PACE_SLACK_S = 0.040
V2V_SLACK_S = 0.050
PAUSE_AFTER_REPLY_S = 0.5


def call_body(call_id: str, team: bool) -> dict[str, Any]:
    body = voice_call(call_id, "Answer the caller.")
    if team:
        names = ["a", "b", "c"]
        body["resolved_team"] = {
            "id": "capacity",
            "start_member_id": "a",
            "members": [
                {
                    "id": me,
                    "name": me.upper(),
                    "ai": {
                        "engine_model": "openai.gpt-4o" if me != "b" else "grok.grok-3",
                        "init_prompt": f"You are {me}.",
                        "tts_type": "cartesia",
                        "tts_voice_id": f"voice-{me}",
                        "stt_type": "deepgram",
                    },
                    "transitions": [
                        {
                            "function_name": f"to_{other}",
                            "description": "x",
                            "next_member_id": other,
                        }
                        for other in names
                        if other != me
                    ],
                }
                for me in names
            ],
        }
    return body


def answer(_: ChatRequest) -> Reply:
    return Reply.say(ANSWER)


@dataclass
class CallResult:
    voice_to_voice: list[float] = field(default_factory=list)
    worst_lateness: float = float("-inf")


def lateness(call: CallRecord, first_index: int, until: float) -> float:
    """How late the reply's latest chunk was against its real-time slot (negative: early)."""
    chunks = [c for c in call.audio_chunks()[first_index:] if c.at <= until]
    if not chunks:
        return float("inf")
    start, played, worst = chunks[0].at, 0.0, float("-inf")
    for chunk in chunks:
        worst = max(worst, chunk.at - (start + played))
        played += chunk.secs
    return worst


async def run_call(
    cloud: Cloud,
    runner: RunnerProcess,
    http: httpx.AsyncClient,
    call_id: str,
    team: bool,
    turns: int,
    delay: float,
    speech: bytes,
) -> CallResult:
    await asyncio.sleep(delay)
    result = CallResult()
    call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.2)))
    response = await http.post(f"{runner.url}/run", json=call_body(call_id, team))
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    reply_secs = len(ANSWER) * MS_PER_CHAR / 1000
    await call.wait_bot_audio(min_secs=reply_secs * 0.9, timeout=30)
    for _ in range(turns):
        await asyncio.sleep(PAUSE_AFTER_REPLY_S)
        heard_before = call.received_bot_secs()
        before, latency = await caller_turn(cloud, call, speech)
        result.voice_to_voice.append(latency)

        def heard_whole_reply(c: CallRecord, h: float = heard_before) -> bool:
            return c.received_bot_secs() - h >= reply_secs * 0.95

        await call.wait(heard_whole_reply, 30, "the whole reply")
        result.worst_lateness = max(result.worst_lateness, lateness(call, before, time.monotonic()))
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=20)
    del cloud.manager.calls[call_id]
    return result


@dataclass
class Level:
    calls: int
    voice_to_voice: list[float]
    worst_lateness: float
    runner_cpu_per_call: float
    rss_per_call_mib: float
    simulators_cpu: float


async def run_level(
    cloud: Cloud,
    runner: RunnerProcess,
    http: httpx.AsyncClient,
    n: int,
    team: bool,
    turns: int,
    speech: bytes,
    idle_rss: float,
) -> Level:
    cloud.deepgram.push_transcripts(*[QUESTION] * (n * turns))
    period = len(speech) / 32000 + 0.8 + len(ANSWER) * MS_PER_CHAR / 1000 + PAUSE_AFTER_REPLY_S
    cpu0, own0, wall0 = runner.cpu_seconds(), _own_cpu(), time.monotonic()
    peak_rss = 0.0

    async def sample_rss() -> None:
        nonlocal peak_rss
        while True:
            peak_rss = max(peak_rss, runner.rss_mib())
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_rss())
    kind = "team" if team else "single"
    results = await asyncio.gather(
        *(
            run_call(cloud, runner, http, f"{kind}-{n}-{i}", team, turns, period * i / n, speech)
            for i in range(n)
        )
    )
    sampler.cancel()
    wall = time.monotonic() - wall0
    return Level(
        calls=n,
        voice_to_voice=[v for r in results for v in r.voice_to_voice],
        worst_lateness=max(r.worst_lateness for r in results),
        runner_cpu_per_call=(runner.cpu_seconds() - cpu0) / wall / n,
        rss_per_call_mib=(peak_rss - idle_rss) / n,
        simulators_cpu=(_own_cpu() - own0) / wall,
    )


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


async def measure(team: bool, levels: list[int], turns: int, speech: bytes) -> None:
    runner_cores, _ = split_cores()
    cloud = Cloud(voices=VOICES, ms_per_char=MS_PER_CHAR, responder=answer)
    async with (
        cloud,
        RunnerProcess(cloud.environment(), cores=runner_cores) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        # One call first so that the figures below do not include the first call's imports.
        await run_level(cloud, runner, http, 1, team, 1, speech, runner.rss_mib())
        idle_rss = runner.rss_mib()
        rows, baseline, largest = [], None, 0
        for n in levels:
            level = await run_level(cloud, runner, http, n, team, turns, speech, idle_rss)
            p95 = percentile(level.voice_to_voice, 95)
            baseline = p95 if baseline is None else baseline
            passed = level.worst_lateness <= PACE_SLACK_S and p95 <= baseline + V2V_SLACK_S
            if passed:
                largest = n  # levels stop at the first that fails
            rows.append(
                (
                    n,
                    percentile(level.voice_to_voice, 50) * 1000,
                    p95 * 1000,
                    level.worst_lateness * 1000,
                    level.runner_cpu_per_call * 100,
                    level.rss_per_call_mib,
                    level.simulators_cpu * 100,
                    "yes" if passed else "no",
                )
            )
            if not passed:
                break
    print(f"### {'Team (3 members)' if team else 'Single AI'}\n")
    print(
        table(
            [
                "calls",
                "v2v p50 ms",
                "v2v p95 ms",
                "latest chunk vs slot ms",
                "runner CPU per call %",
                "RSS per call MiB",
                "simulators CPU %",
                "passes",
            ],
            rows,
        )
    )
    print(f"\nLargest passing N: {largest}\n")


async def main(levels: list[int], turns: int) -> None:
    banner("Capacity")
    speech = speak(QUESTION)
    for team in (False, True):
        await measure(team, levels, turns, speech)
    print(
        "Turn settings: Silero VAD (stop_secs 0.2) plus the fixed 0.6 s rule; the Deepgram "
        f"simulator transcribes at once; replies of {len(ANSWER)} characters at "
        f"{MS_PER_CHAR:g} ms each; runner on one core."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="1,2,4,8,12,16,24,32")
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    asyncio.run(main([int(n) for n in args.levels.split(",")], args.turns))
