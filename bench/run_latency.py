"""Single-AI ``POST /run`` to 200: the runner against a lean plain-pipecat runner, same run.

The same text call (``bench.pickup``'s single AI: the LLM opens, no speech)
is started on each service in turn, round after round, so a noisy moment on
a shared machine touches every row alike: the lean runner
(``bench.lean_runner``: stock ``WorkerRunner`` and ``PipelineWorker``,
pipecat's websocket client and OpenAI service, one process); the runner as
production runs it, ``python main.py`` with its defaults (on a machine of
more than one core, a front and one worker per core); and the runner as one
process (``RUNNER_WORKERS=1``), whose difference from the default is the
front's hop. Each call is timed from the POST to its 200, and waited on to
its first ``bot-llm-text`` and to its socket's close after ``/stop``, so
every service does the whole call. Admission is as it ships
(``RUNNER_LOAD_THRESHOLD`` unset). ``--root`` adds another checkout's
``main.py`` (a before and after in one session). The last column pairs each
round's call with the lean runner's of the same round, the median of their
differences: on a shared machine it shows a shift of a millisecond that the
p50s, each moved by the load of its own moments, do not.

    python -m bench.run_latency [--rounds 100] [--root ../other-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import httpx

from bench.harness import RunnerProcess, banner, percentile, table
from bench.pickup import pick_up, single_request
from simulators.cloud import Cloud
from teamrunner.workers.cores import usable_cores

WARM_UP_ROUNDS = 5


async def main(rounds: int, old_root: Path | None) -> None:
    banner("Single-AI /run to 200: the runner against a lean pipecat runner")
    cloud = Cloud()
    await cloud.start()
    # Admission as it ships: the harness turns it off by default.
    shipped = {**cloud.environment(), "RUNNER_LOAD_THRESHOLD": "0.75"}
    # What python main.py starts with RUNNER_WORKERS unset (the harness sets it to 1).
    default_workers = {"RUNNER_WORKERS": str(usable_cores())}
    services: list[tuple[str, RunnerProcess]] = [
        (
            "lean pipecat runner (baseline)",
            RunnerProcess(shipped, command=("-m", "bench.lean_runner")),
        ),
        ("runner, python main.py (defaults)", RunnerProcess({**shipped, **default_workers})),
        ("runner, RUNNER_WORKERS=1 (no front)", RunnerProcess(shipped)),
    ]
    if old_root is not None:
        services.append(
            (
                f"runner at {old_root.name}, defaults",
                RunnerProcess({**shipped, **default_workers}, root=old_root),
            )
        )
    answered: dict[str, list[float]] = {name: [] for name, _ in services}
    async with httpx.AsyncClient(timeout=60) as http:
        for _, service in services:
            await service.start()
        try:
            for round_ in range(WARM_UP_ROUNDS + rounds):
                for index, (name, service) in enumerate(services):
                    body = single_request(f"s{index}-{round_}", voice=False)
                    measured = await pick_up(cloud, service, http, body)
                    if round_ >= WARM_UP_ROUNDS:
                        answered[name].append(measured[0] * 1000)
        finally:
            for _, service in services:
                await service.stop()
            await cloud.stop()
    lean = answered[services[0][0]]
    base = percentile(lean, 50)
    rows = [
        (
            name,
            len(times),
            percentile(times, 50),
            percentile(times, 95),
            percentile(times, 50) / base,
            # Each round's call against the lean runner's in the same round: a noisy
            # moment moves both, so the shift shows through noise the p50s drown in.
            percentile([t - b for t, b in zip(times, lean, strict=True)], 50),
        )
        for name, times in answered.items()
    ]
    headers = ["service", "calls", "to 200 p50 ms", "to 200 p95 ms", "p50 / lean"]
    print(table([*headers, "p50 of (it - lean) per round, ms"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--root", type=Path, help="another checkout whose main.py to time too")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.root))
