"""What pipecat's provider metrics cost per frame: the runner's CPU with them on and off.

The runner measures providers' time to first byte through pipecat's metrics
(``RUNNER_PROVIDER_METRICS``, on by default), which adds frames to every LLM
and TTS request, and the call observer reads every frame. This runs the
routing benchmark's two workloads (a minute of caller speech in; a long
reply out) on a three-member team, alternating a runner with metrics on and
one with them off, and reports the CPU per frame of each and the ratio.

    python -m bench.metrics_cost [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio

import httpx

from bench.harness import RunnerProcess, banner, median, split_cores, table
from bench.routing_overhead import bot_frame_cost, caller_frame_cost
from simulators.cloud import Cloud


async def main(runs: int) -> None:
    banner("Metrics cost")
    results: dict[tuple[str, bool], list[float]] = {}
    cores, _ = split_cores()
    async with Cloud(ms_per_char=40) as cloud:
        for run in range(runs + 1):
            for metrics in (False, True):
                env = {**cloud.environment(), "RUNNER_PROVIDER_METRICS": "1" if metrics else "0"}
                runner = RunnerProcess(env, cores=cores)
                async with runner, httpx.AsyncClient(timeout=60) as http:
                    for kind, cost in (("caller", caller_frame_cost), ("bot", bot_frame_cost)):
                        spent = await cost(cloud, runner, http, f"{kind}-{metrics}-{run}", True)
                        if run:  # the first run warms the machine up
                            results.setdefault((kind, metrics), []).append(spent)
    rows = []
    for kind, label in (("caller", "caller audio frame (20 ms in)"), ("bot", "bot audio chunk")):
        off, on = median(results[(kind, False)]), median(results[(kind, True)])
        rows.append((label, off * 1e6, on * 1e6, on / off))
    print(table(["per", "metrics off µs CPU", "metrics on µs CPU", "on / off"], rows))
    print(f"\nA team of 3; medians of {runs} runs; CPU is the runner's user+system time.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args().runs))
