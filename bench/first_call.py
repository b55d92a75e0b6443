"""A fresh runner's first calls: POST /run to 200 and to the first words, call by call.

The first call after a deploy is a real caller's, and it pays for whatever the
process has not done before it (imports, TLS contexts, a client's first
request), on the event loop every call shares. Each round starts a runner that
holds the simulated providers' keys, waits for ``/ready``, and places
``--calls`` voice calls one after another (a single AI, then a team of 10 on a
fresh runner); the table gives each call's place, so the first can be read
against those after it. ``--tls`` has the providers speak TLS as the real ones
do; ``--root`` measures another checkout, for a before and after in one session.

    python -m bench.first_call [--rounds 3] [--calls 3] [--tls] [--root ../other-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import httpx

from bench.harness import ROOT, RunnerProcess, banner, median, table
from bench.pickup import pick_up, single_request, team_request
from simulators.cloud import Cloud
from simulators.tls import issue

KINDS = (("single AI", 1), ("team of 10", 10))


async def fresh_runner_calls(
    cloud: Cloud, root: Path, size: int, calls: int, round_: int
) -> list[tuple[float, float]]:
    """Seconds to 200 and to first words of each of ``calls`` calls on a fresh runner."""
    results = []
    async with (
        RunnerProcess(cloud.environment(), root=root) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        for i in range(calls):
            call_id = f"first-{size}-{round_}-{i}"
            body = single_request(call_id, True) if size == 1 else team_request(call_id, size, True)
            answered, _, _, _, first_words = await pick_up(cloud, runner, http, body)
            results.append((answered, first_words))
    return results


async def main(rounds: int, calls: int, root: Path, tls: bool) -> None:
    banner(f"A fresh runner's first calls ({root}){', providers over TLS' if tls else ''}")
    cloud = Cloud(tls=issue(Path(tempfile.mkdtemp())) if tls else None)
    rows = []
    async with cloud:
        for label, size in KINDS:
            runs = [await fresh_runner_calls(cloud, root, size, calls, r) for r in range(rounds)]
            for place in range(calls):
                answered = [run[place][0] * 1000 for run in runs]
                first_words = [run[place][1] * 1000 for run in runs]
                rows.append(
                    (label, place + 1, median(answered), max(answered), median(first_words))
                )
    print(
        table(
            [
                "call",
                "place on a fresh runner",
                "to 200 median ms",
                "max ms",
                "to first words median ms",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh runners per kind of call")
    parser.add_argument("--calls", type=int, default=3, help="calls placed on each")
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    parser.add_argument("--tls", action="store_true", help="the providers speak TLS")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.calls, args.root, args.tls))
