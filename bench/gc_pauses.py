"""Garbage-collection pauses in a runner whose calls come and go, as a pod's do.

The capacity benchmark starts its calls together and ends them together; in
production calls start and end all the time, and each call leaves thousands
of objects (its processors, queues, tasks) that only a full collection of the
heap frees. A full collection walks every object every live call holds, and
no call's audio moves meanwhile. Here ``--calls`` slots each run voice calls
back to back (the capacity benchmark's calls: real-time caller audio, a voice
paced like a provider, ``--turns`` turns each, staggered so that calls end
one at a time) on a runner pinned to one core, for ``--seconds``. The runner
runs under ``bench/gc_probe.py``, which times every collection. Printed: the
collections by generation (count, total, longest), the objects each full
collection walked, and the calls' worst
audio lateness, as the capacity benchmark measures it.

    python -m bench.gc_pauses [--calls 12] [--team] [--turns 2] [--seconds 60] [--root ..]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import httpx
import uvloop

from bench.capacity import MS_PER_CHAR, QUESTION, VOICES, answer, run_call
from bench.harness import ROOT, RunnerProcess, banner, percentile, split_cores, table
from simulators.cloud import Cloud
from simulators.speech import speak
from simulators.tts import PROVIDER_PACING

PROBE = Path(__file__).resolve().with_name("gc_probe.py")


async def churn(
    cloud: Cloud,
    runner: RunnerProcess,
    http: httpx.AsyncClient,
    calls: int,
    team: bool,
    turns: int,
    seconds: float,
) -> tuple[int, float]:
    """Keep ``calls`` calls going for ``seconds``; how many ran, and the worst lateness (s)."""
    speech = speak(QUESTION)
    deadline = time.monotonic() + seconds
    ran = 0
    worst = 0.0

    async def slot(index: int) -> None:
        nonlocal ran, worst
        await asyncio.sleep(index * 1.5)  # staggered: calls end one at a time
        n = 0
        while time.monotonic() < deadline:
            cloud.deepgram.push_transcripts(*[QUESTION] * turns)
            call_id = f"churn-{index}-{n}"
            result = await run_call(cloud, runner, http, call_id, team, turns, 0.0, speech)
            worst = max(worst, result.worst_lateness)
            ran += 1
            n += 1

    await asyncio.gather(*(slot(i) for i in range(calls)))
    return ran, worst


async def main(calls: int, team: bool, turns: int, seconds: float, root: Path) -> None:
    kind = "three-member team" if team else "single-AI"
    banner(f"GC pauses: {calls} {kind} calls coming and going on one core ({root})")
    runner_cores, _ = split_cores()
    cloud = Cloud(voices=VOICES, ms_per_char=MS_PER_CHAR, responder=answer)
    cloud.cartesia.pacing = PROVIDER_PACING
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "collections.jsonl"
        async with cloud:
            environment = {**cloud.environment(), "GC_PROBE_OUT": str(out)}
            async with (
                RunnerProcess(
                    environment, cores=runner_cores, root=root, command=(str(PROBE),)
                ) as runner,
                httpx.AsyncClient(timeout=60) as http,
            ):
                started = time.monotonic()
                ran, worst = await churn(cloud, runner, http, calls, team, turns, seconds)
                wall = time.monotonic() - started
        seen = [json.loads(line) for line in out.read_text().splitlines()]
    in_run = [s for s in seen if started <= s["at"] <= started + wall]
    rows = []
    for generation in (0, 1, 2):
        pauses = [s["ms"] for s in in_run if s["generation"] == generation]
        rows.append(
            (
                generation,
                len(pauses),
                sum(pauses),
                percentile(pauses, 95) if pauses else 0.0,
                max(pauses, default=0.0),
            )
        )
    walked = [s.get("walked", 0) for s in in_run if s["generation"] == 2]
    print(f"{ran} calls in {wall:.0f} s; worst audio lateness {worst * 1000:.1f} ms\n")
    print(table(["generation", "collections", "total ms", "p95 ms", "longest ms"], rows))
    if walked:
        print(
            f"\nObjects a full collection walked: median {percentile(walked, 50):.0f}, "
            f"most {max(walked)}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=12, help="calls going at once")
    parser.add_argument("--team", action="store_true", help="three-member team calls")
    parser.add_argument("--turns", type=int, default=2, help="turns in each call")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    uvloop.run(main(args.calls, args.team, args.turns, args.seconds, args.root))
