"""Start-up: process start to ``/health`` answering, and to ``/ready``.

pipecat-manager starts the runner with its pod, and a restarted runner is a
window in which calls fail, so what counts is the time from ``exec`` to the
first 200 of ``/health`` (the process answers; liveness) and of ``/ready``
(it takes a call at full speed: the call stack imported and the speech
models of ``RUNNER_PRELOAD_MODELS`` loaded). Each is polled every 10 ms from
the moment the process is spawned. The baseline, in the same run, is the
floor of any Python HTTP service on this machine: a FastAPI application of
one route served by uvicorn, started the same way.

Runs the runner as one process (``RUNNER_WORKERS=1``) and as a front with
two workers (``RUNNER_WORKERS=2``, the default on this 2-core machine);
``--root`` adds another checkout's ``main.py``, both ways (e.g. an older
commit in a git worktree).

Each row also gives the CPU seconds the runner's processes (the front, its
workers and whatever else it started) spent until ``/ready``: on a shared
machine the wall clock says as much about the neighbours as about the
runner, and this figure does not.

``--phases`` prints instead where a worker's start goes: the CPU seconds of
each step a worker takes before it is ready (``import main``, ``import run``,
the models of ``RUNNER_PRELOAD_MODELS``), and of the largest libraries among
those imports each alone, every figure the median of fresh interpreters. CPU
time, not wall time: on a shared machine it is what the process itself spent.

``--keys`` starts the runner with keys for OpenAI, Deepgram and Cartesia set, as
a deployment of voice calls has them: its warm-up then also imports those
providers' services (what such a deployment's first call would import).

    python -m bench.startup [--rounds 5] [--root ../old-checkout] [--keys]
    python -m bench.startup --phases [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.harness import ROOT, banner, deployment_environment, free_port, median, table

POLL_SECS = 0.01
TIMEOUT_SECS = 120.0

# The baseline: the smallest service of the same stack, one route, served the same way.
PLAIN_SERVICE = """
import os
import uvicorn
from fastapi import FastAPI
app = FastAPI()
@app.get("/health")
async def health():
    return {"status": "ok"}
@app.get("/ready")
async def ready():
    return {"status": "ready"}
uvicorn.run(app, host="127.0.0.1", port=int(os.environ["RUNNER_PORT"]), log_level="warning")
"""


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds spent so far by ``pid`` and every process below it (from ``/proc``).

    Each process's own time and that of its children it has reaped; a
    process that has ended and was not reaped by one of these is not counted.
    """
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                # "pid (name) state ppid ...": fields after the name, from the state on.
                stats[int(entry.name)] = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
    tree, below = {pid}, {pid}
    while below:
        below = {p for p, fields in stats.items() if int(fields[1]) in below} - tree
        tree |= below
    ticks = sum(sum(int(v) for v in stats[p][11:15]) for p in tree if p in stats)
    return ticks / os.sysconf("SC_CLK_TCK")


async def time_start(
    command: list[str], cwd: Path, env: dict[str, str]
) -> tuple[float, float, float]:
    """Seconds from spawning ``command`` to ``/health`` answering 200, and to ``/ready``.

    And the CPU seconds its processes spent until ``/ready``: on a shared
    machine, what the start itself cost, whatever else the cores were doing.
    """
    port = env["RUNNER_PORT"]
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, env=env, stdout=asyncio.subprocess.DEVNULL
    )
    health: float | None = None
    try:
        async with httpx.AsyncClient(timeout=2.0) as http:
            while time.monotonic() - started < TIMEOUT_SECS:
                if process.returncode is not None:
                    raise RuntimeError(f"{command} exited with {process.returncode}")
                path = "/ready" if health is not None else "/health"
                try:
                    answer = await http.get(f"http://127.0.0.1:{port}{path}")
                except httpx.TransportError:
                    answer = None
                if answer is not None and health is not None and answer.status_code == 404:
                    # A runner with no /ready (older than readiness).
                    return health, health, tree_cpu_seconds(process.pid)
                if answer is not None and answer.status_code == 200:
                    now = time.monotonic() - started
                    if health is None:
                        health = now
                        continue  # /ready may already answer too
                    return health, now, tree_cpu_seconds(process.pid)
                await asyncio.sleep(POLL_SECS)
        raise TimeoutError(f"{command} was not ready within {TIMEOUT_SECS:g}s")
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


# Keys a deployment of voice calls holds (never sent anywhere: the runner only starts).
VOICE_KEYS = {"OPENAI_API_KEY": "k", "DEEPGRAM_API_KEY": "k", "CARTESIA_API_KEY": "k"}


def environment(workers: str, keys: bool = False) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))},
        **deployment_environment(),
        **(VOICE_KEYS if keys else {}),
        "RUNNER_HOST": "127.0.0.1",
        "RUNNER_PORT": str(free_port()),
        "RUNNER_WORKERS": workers,
        "RUNNER_LOG_LEVEL": "ERROR",
        "RUNNER_DRAIN_SECS": "0",
    }


async def main(rounds: int, old_root: Path | None, keys: bool) -> None:
    banner(f"Start-up: process start to /health and to /ready{', with keys' if keys else ''}")
    # Each takes its port from RUNNER_PORT (the plain service too).
    runs: list[tuple[str, list[str], Path, str]] = [
        ("plain FastAPI + uvicorn (baseline)", [sys.executable, "-c", PLAIN_SERVICE], ROOT, "1"),
        ("runner, RUNNER_WORKERS=1", [sys.executable, "main.py"], ROOT, "1"),
        ("runner, RUNNER_WORKERS=2", [sys.executable, "main.py"], ROOT, "2"),
    ]
    if old_root is not None:
        for workers in ("1", "2"):
            runs.append(
                (
                    f"runner at {old_root.name}, RUNNER_WORKERS={workers}",
                    [sys.executable, "main.py"],
                    old_root,
                    workers,
                )
            )
    figures: dict[str, tuple[list[float], list[float], list[float]]] = {
        name: ([], [], []) for name, *_ in runs
    }
    for _ in range(rounds):  # interleaved, so a noisy moment touches every row alike
        for name, command, cwd, workers in runs:
            for figure, value in zip(
                figures[name],
                await time_start(command, cwd, environment(workers, keys)),
                strict=True,
            ):
                figure.append(value)
    base_health = median(figures[runs[0][0]][0])
    rows = []
    for name, (to_health, to_ready, cpu) in figures.items():
        rows.append(
            [
                name,
                rounds,
                f"{median(to_health):.2f}",
                f"{max(to_health):.2f}",
                f"{median(to_health) / base_health:.2f}",
                f"{median(to_ready):.2f}",
                f"{max(to_ready):.2f}",
                f"{median(cpu):.2f}",
            ]
        )
    print(
        table(
            [
                "process",
                "n",
                "to /health p50 s",
                "max s",
                "/health vs baseline",
                "to /ready p50 s",
                "max s",
                "CPU s to /ready p50",
            ],
            rows,
        )
    )


# A worker's steps before it is ready, each timed in CPU seconds after the ones before it.
PHASES = """
import time
t = time.process_time()
import main
a = time.process_time()
import run
b = time.process_time()
from teamrunner.speech.models import SpeechModels
SpeechModels().preload(["silero", "smart-turn"])
c = time.process_time()
print(a - t, b - a, c - b)
"""
# The largest libraries a worker imports, each timed alone.
LIBRARIES = ("fastapi", "openai", "pipecat.frames.frames", "aiohttp", "numpy")


def _cpu_seconds(script: str) -> list[float]:
    """Run ``script`` in a fresh interpreter at the root; the numbers it prints."""
    env = {**os.environ, **deployment_environment(), "RUNNER_LOG_LEVEL": "ERROR"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return [float(v) for v in result.stdout.split()]


def phases(rounds: int) -> None:
    banner("Start-up: where a worker's start goes, CPU seconds")
    steps: list[list[float]] = [[], [], []]
    libraries: dict[str, list[float]] = {name: [] for name in LIBRARIES}
    for _ in range(rounds):
        for step, seconds in zip(steps, _cpu_seconds(PHASES), strict=True):
            step.append(seconds)
        for name in LIBRARIES:
            timed = f"import time\nt = time.process_time()\nimport {name}\n"
            libraries[name] += _cpu_seconds(timed + "print(time.process_time() - t)")
    rows = [
        ("import main (the API)", f"{median(steps[0]):.2f}"),
        ("import run (the call stack), after main", f"{median(steps[1]):.2f}"),
        ("load Silero and smart-turn", f"{median(steps[2]):.2f}"),
        ("a worker, all three", f"{sum(median(s) for s in steps):.2f}"),
    ]
    rows += [
        (f"  of which import {name}, alone", f"{median(libraries[name]):.2f}") for name in LIBRARIES
    ]
    print(table(["step", "CPU s (median)"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--root", type=Path, help="another checkout whose main.py to time too")
    parser.add_argument("--phases", action="store_true", help="where a worker's start goes")
    parser.add_argument("--keys", action="store_true", help="voice providers' keys set")
    args = parser.parse_args()
    if args.phases:
        phases(args.rounds)
    else:
        asyncio.run(main(args.rounds, args.root, args.keys))
