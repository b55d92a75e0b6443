"""Burst starts: POST /run latency when 10, 50 or 100 calls start at once.

Each burst posts that many single-AI voice calls (Deepgram and Cartesia
simulators) at the same moment and times every answer, then stops the calls
that started. The runner is run twice in the same run: with admission by
load as it ships (``RUNNER_LOAD_THRESHOLD``'s default: the calls past what
the core carries are answered 503 at once) and with admission out of the way
(``RUNNER_LOAD_THRESHOLD=0``, taking every call). ``--root`` runs another checkout's
``main.py`` (e.g. an older commit in a git worktree) as a third runner.

    python -m bench.starts [--rounds 3] [--root ../old-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import ROOT, RunnerProcess, banner, percentile, split_cores, table
from simulators.cloud import Cloud
from teamrunner.config import DEFAULT_LOAD_THRESHOLD

BURSTS = (10, 50, 100)


def voice_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "llm_type": "openai.gpt-4o",
        "llm_messages": [{"role": "system", "content": "Greet the caller."}],
        "stt_type": "deepgram",
        "stt_language": "en",
        "tts_type": "cartesia",
        "tts_voice_id": "voice-a",
        "smart_turn_enabled": False,
    }


async def burst(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, size: int, tag: str
) -> list[tuple[int, float]]:
    """(status, seconds) of each /run of one burst; the started calls are then stopped."""
    ids = [f"{tag}-{i}" for i in range(size)]
    for call_id in ids:
        cloud.manager.expect_call(call_id)

    async def start(call_id: str) -> tuple[int, float]:
        started = time.monotonic()
        response = await http.post(f"{runner.url}/run", json=voice_call(call_id))
        return response.status_code, time.monotonic() - started

    results = await asyncio.gather(*(start(i) for i in ids))
    for call_id, (status, _) in zip(ids, results, strict=True):
        if status == 200:
            await http.post(f"{runner.url}/stop", params={"id": call_id})
    return list(results)


async def measure(
    label: str, environment: dict[str, str], root: Path, rounds: int, cores: set[int]
) -> list[tuple[Any, ...]]:
    rows = []
    async with Cloud() as cloud:
        runner = RunnerProcess({**cloud.environment(), **environment}, cores=cores, root=root)
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with runner, httpx.AsyncClient(timeout=60, limits=limits) as http:
            await burst(cloud, runner, http, 5, "warm-up")
            for size in BURSTS:
                answers: list[tuple[int, float]] = []
                for round_ in range(rounds):
                    answers += await burst(cloud, runner, http, size, f"{size}-{round_}")
                ok = [s * 1000 for status, s in answers if status == 200]
                refused = [s * 1000 for status, s in answers if status == 503]
                other = len(answers) - len(ok) - len(refused)
                every = [s * 1000 for _, s in answers]
                rows.append(
                    (
                        label,
                        size,
                        f"{len(ok) / rounds:g} / {len(refused) / rounds:g} / {other / rounds:g}",
                        percentile(ok, 50) if ok else "-",
                        percentile(ok, 95) if ok else "-",
                        percentile(refused, 95) if refused else "-",
                        percentile(every, 95),
                    )
                )
    return rows


async def main(rounds: int, old_root: Path | None) -> None:
    banner("Burst starts")
    cores, _ = split_cores()
    shipped = {"RUNNER_LOAD_THRESHOLD": str(DEFAULT_LOAD_THRESHOLD)}
    runners = [
        (f"admission by load ({DEFAULT_LOAD_THRESHOLD:g})", shipped, ROOT),
        ("no admission", {"RUNNER_LOAD_THRESHOLD": "0"}, ROOT),
    ]
    if old_root is not None:
        runners.append((f"other checkout ({old_root.name})", {}, old_root))
    rows = []
    for label, environment, root in runners:
        rows += await measure(label, environment, root, rounds, cores)
    print(
        table(
            [
                "runner",
                "burst",
                "200 / 503 / other per burst",
                "200 p50 ms",
                "200 p95 ms",
                "503 p95 ms",
                "all p95 ms",
            ],
            rows,
        )
    )
    print(f"\n{rounds} bursts of each size; the runner is pinned to its own cores.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", type=Path, help="another checkout whose main.py to measure")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.root))
