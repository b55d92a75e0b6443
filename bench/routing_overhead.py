"""Routing overhead: the runner's CPU time per caller audio frame and per bot audio frame,
through a three-member team's routers against a single-AI pipeline, measured in the same run.

Caller frames: a voice call (Deepgram simulator, Silero VAD on) receives a
minute of speech at ten times real time; the runner's CPU time over the
stream, divided by its 20 ms frames. Bot frames: a call with a voice and no
ears speaks a long reply (Cartesia simulator, 40 ms chunks out); the runner's
CPU time from the reply to its last audio chunk, divided by the chunks. In the
team the active member uses the very same providers as the single AI, so the
difference is the routers. Runs alternate single and team; medians are
reported.

    python -m bench.routing_overhead [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import httpx

from bench.harness import ROOT, RunnerProcess, banner, median, split_cores, table
from simulators.cloud import Cloud
from simulators.manager import Caller
from simulators.openai import Reply
from simulators.speech import speak

SPEECH_SECS = 120.0
# One caller frame as the runner's input joins them (RUNNER_CALLER_AUDIO_MS, 40 ms).
JOINED_FRAME_BYTES = 1280
REPLY = "Thank you for calling, here is everything about your account. " * 60


def member(i: int, language: str, voice: tuple[str, str]) -> dict[str, Any]:
    return {
        "id": f"m{i}",
        "name": f"Member {i}",
        "ai": {
            "engine_model": ["openai.m", "grok.m", "openai.m"][i],
            "init_prompt": f"You are member {i}.",
            "stt_type": "deepgram",
            "stt_language": language,
            "tts_type": voice[0],
            "tts_voice_id": voice[1],
        },
        "transitions": [
            {"function_name": f"to_m{j}", "description": "x", "next_member_id": f"m{j}"}
            for j in range(3)
            if j != i
        ],
    }


def request(call_id: str, team: bool, *, hears: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": call_id,
        "llm_type": "openai.m",
        "llm_messages": [{"role": "system", "content": "Speak."}],
        "tts_type": "cartesia",
        "tts_voice_id": "voice-a",
        "smart_turn_enabled": False,
    }
    if hears:
        body.update(stt_type="deepgram", stt_language="en")
    if team:
        members = [
            member(0, "en", ("cartesia", "voice-a")),
            member(1, "en-GB", ("elevenlabs", "voice-b")),
            member(2, "en", ("cartesia", "voice-c")),
        ]
        body["resolved_team"] = {"id": "t", "start_member_id": "m0", "members": members}
    return body


async def caller_frame_cost(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, call_id: str, team: bool
) -> float:
    """CPU seconds the runner spends per 20 ms caller frame."""
    speech = speak("I would like to hear everything about my account, please.")
    pcm = speech * int(SPEECH_SECS * 32000 / len(speech))
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(call_id, caller=Caller(realtime=False, speed=10, then="stop"))
    assert (
        await http.post(f"{runner.url}/run", json=request(call_id, team, hears=True))
    ).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=20)
    await call.wait_bot_audio(min_secs=0.1, timeout=20)
    received = cloud.deepgram.audio_bytes_received
    before = runner.cpu_seconds()
    # The input joins the caller's 20 ms frames (RUNNER_CALLER_AUDIO_MS): a frame
    # of silence after the speech delivers its last frame, which waits for a next.
    await cloud.manager.say(call_id, Caller.pcm(pcm + bytes(JOINED_FRAME_BYTES)))
    await cloud.deepgram.wait_until(
        lambda: cloud.deepgram.audio_bytes_received >= received + len(pcm), 120
    )
    spent = runner.cpu_seconds() - before
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    return spent / (len(pcm) / 640)


async def bot_frame_cost(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, call_id: str, team: bool
) -> float:
    """CPU seconds the runner spends per bot audio chunk sent to pipecat-manager."""
    cloud.openai.push(Reply.say(REPLY))
    call = cloud.manager.expect_call(call_id)
    before = runner.cpu_seconds()
    assert (
        await http.post(f"{runner.url}/run", json=request(call_id, team, hears=False))
    ).status_code == 200
    expected = len(REPLY.strip()) * cloud.ms_per_char / 1000
    await call.wait_bot_audio(min_secs=expected * 0.98, timeout=120)
    spent = runner.cpu_seconds() - before
    chunks = len(call.audio_chunks())
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    return spent / chunks


async def main(runs: int, root: Path) -> None:
    banner("Routing overhead")
    results: dict[tuple[str, bool], list[float]] = {}
    runner_cores, _ = split_cores()
    async with Cloud(ms_per_char=40) as cloud:
        runner = RunnerProcess(cloud.environment(), cores=runner_cores, root=root)
        async with runner, httpx.AsyncClient(timeout=60) as http:
            for run in range(runs + 1):
                for team in (False, True):
                    for kind, measure in (("caller", caller_frame_cost), ("bot", bot_frame_cost)):
                        cost = await measure(cloud, runner, http, f"{kind}-{team}-{run}", team)
                        if run:  # the first run warms the process up
                            results.setdefault((kind, team), []).append(cost)
    rows = []
    for kind, label in (
        ("caller", "caller audio frame (20 ms in)"),
        ("bot", "bot audio chunk (40 ms out)"),
    ):
        single, teamed = median(results[(kind, False)]), median(results[(kind, True)])
        rows.append((label, single * 1e6, teamed * 1e6, teamed / single))
    print(table(["per", "single AI µs CPU", "team of 3 µs CPU", "team / single"], rows))
    print(f"\nMedians of {runs} runs each; CPU is the runner process's user+system time.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.root))
