"""Call pickup: POST /run to 200, to the output socket connected, and to the first words.

Teams of 1, 5, 10 and 20 members, half of them sharing settings (so a team
of 10 has 5 distinct LLM models, voices and STT languages), against a
single-AI call measured in the same run, for text calls (no speech) and voice
calls (Deepgram and Cartesia simulators, each distinct setting one websocket
to open). Every call's AI opens by asking its LLM, so "first words" is the
call's first turn as pipecat-manager sees it: from ``POST /run`` to the bot's
first ``bot-llm-text`` (text calls) or first audio (voice calls). It also
counts the connections each call opened at the simulators: they must equal
the distinct settings. ``--root`` measures another checkout's ``main.py``
(e.g. a git worktree of an older commit), for a before and after in one session.
``--tls`` has the providers' simulators speak TLS (``wss://``, ``https://``), as
the real providers do, with a CA made for the run that the runner trusts.

    python -m bench.pickup [--rounds 12] [--root ../other-checkout] [--tls]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import ROOT, RunnerProcess, banner, percentile, table
from simulators.cloud import Cloud
from simulators.tls import issue

SIZES = (1, 5, 10, 20)
LANGUAGES = ["en", "en-US", "en-GB", "en-AU", "en-IN", "en-NZ", "de", "fr", "es", "it"]


def distinct(size: int) -> int:
    """How many members have settings of their own; the rest share the first member's."""
    return size - size // 2


def single_request(call_id: str, voice: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": call_id,
        "llm_type": "openai.model-0",
        "llm_messages": [{"role": "system", "content": "Greet the caller."}],
        "smart_turn_enabled": False,
    }
    if voice:
        body.update(
            stt_type="deepgram", stt_language="en", tts_type="cartesia", tts_voice_id="voice-0"
        )
    return body


def team_request(call_id: str, size: int, voice: bool) -> dict[str, Any]:
    own = distinct(size)
    members = []
    for i in range(size):
        j = i if i < own else 0
        ai: dict[str, Any] = {
            "engine_model": f"openai.model-{j}",
            "init_prompt": f"You are member {i}.",
        }
        if voice:
            ai.update(
                stt_type="deepgram",
                stt_language=LANGUAGES[j],
                tts_type="cartesia",
                tts_voice_id=f"voice-{j}",
            )
        members.append(
            {
                "id": f"m{i}",
                "name": f"Member {i}",
                "ai": ai,
                "tools": [],
                "transitions": [
                    {
                        "function_name": f"transfer_to_m{(i + 1) % size}",
                        "description": "next",
                        "next_member_id": f"m{(i + 1) % size}",
                    }
                ]
                if size > 1
                else [],
            }
        )
    body = single_request(call_id, voice)
    body["resolved_team"] = {"id": "team", "start_member_id": "m0", "members": members}
    return body


async def pick_up(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, body: dict[str, Any]
) -> tuple[float, float, int, int, float]:
    """One call: seconds to 200, to the output socket, the STT and TTS sockets it opened,
    and seconds to its first words."""
    call_id = body["id"]
    call = cloud.manager.expect_call(call_id)
    stt_before, tts_before = cloud.deepgram.connections_opened, cloud.cartesia.connections_opened
    started = time.monotonic()
    response = await http.post(f"{runner.url}/run", json=body)
    answered = time.monotonic() - started
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    # The client's handshake is done; the simulator may record it a moment later.
    await call.wait(lambda c: c.connected_at("output") is not None, 10, "the output socket")
    connected_at = call.connected_at("output")
    assert connected_at is not None
    if "tts_type" in body:
        await call.wait(lambda c: bool(c.audio_chunks()), 10, "the first words")
        first_words = call.audio_chunks()[0].at
    else:
        [first, *_] = await call.wait_rtvi("bot-llm-text", timeout=10)
        first_words = first.at
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=10)
    # The next call starts once this one is gone: its provider sockets closed too, so
    # that no call's pickup is measured beside another's teardown.
    await cloud.deepgram.wait_until(lambda: cloud.deepgram.active_connections == 0, 10)
    await cloud.cartesia.wait_until(lambda: cloud.cartesia.active_connections == 0, 10)
    return (
        answered,
        connected_at - started,
        cloud.deepgram.connections_opened - stt_before,
        cloud.cartesia.connections_opened - tts_before,
        first_words - started,
    )


async def main(rounds: int, root: Path, tls: bool) -> None:
    banner(f"Call pickup ({root}){', providers over TLS' if tls else ''}")
    cloud = Cloud(tls=issue(Path(tempfile.mkdtemp())) if tls else None)
    async with (
        cloud,
        RunnerProcess(cloud.environment(), root=root) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        kinds = [("single", 1)] + [("team", size) for size in SIZES]
        for voice in (False, True):
            results: dict[tuple[str, int], list[tuple[float, float, int, int, float]]] = {
                k: [] for k in kinds
            }
            for round_ in range(rounds + 2):
                for kind, size in kinds:
                    call_id = f"{kind}-{size}-{voice}-{round_}"
                    body = (
                        single_request(call_id, voice)
                        if kind == "single"
                        else team_request(call_id, size, voice)
                    )
                    measured = await pick_up(cloud, runner, http, body)
                    if round_ >= 2:  # the first two rounds warm the process up
                        results[(kind, size)].append(measured)
            single_p50 = percentile([r[0] for r in results[("single", 1)]], 50)
            rows = []
            for (kind, size), runs in results.items():
                answered = [r[0] * 1000 for r in runs]
                connected = [r[1] * 1000 for r in runs]
                first_words = [r[4] * 1000 for r in runs]
                rows.append(
                    (
                        "single AI" if kind == "single" else f"team of {size}",
                        1 if kind == "single" else distinct(size),
                        percentile(answered, 50),
                        percentile(answered, 95),
                        percentile(connected, 50),
                        percentile(first_words, 50),
                        percentile(first_words, 95),
                        percentile(answered, 50) / (single_p50 * 1000),
                        f"{runs[-1][2]} / {runs[-1][3]}" if voice else "-",
                    )
                )
            print(f"### {'Voice' if voice else 'Text'} calls ({rounds} rounds)\n")
            print(
                table(
                    [
                        "call",
                        "distinct settings",
                        "to 200 p50 ms",
                        "to 200 p95 ms",
                        "to output socket p50 ms",
                        "to first words p50 ms",
                        "to first words p95 ms",
                        "p50 / single",
                        "STT / TTS sockets",
                    ],
                    rows,
                )
            )
            print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    parser.add_argument("--tls", action="store_true", help="the providers speak TLS")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.root, args.tls))
