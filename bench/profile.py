"""Where the runner's CPU goes in a handoff: py-spy sampling the runner process.

Runs the handoff benchmark's ping-pong team (text, or voice with ``--voice``)
while py-spy samples the runner's process 1000 times a second, then prints
the share of samples by the part of the stack they fall in (the OpenAI
client, pipecat's frame queues, the event loop, ...) and the functions with
the most samples of their own. The raw samples are kept for a flame graph
(``--raw``; ``py-spy`` can also write SVG or speedscope itself).

``--front N`` profiles instead a pool's front (``python main.py`` with two
workers) while it passes on N single-AI text calls (``bench.run_latency``'s
call, each started, waited to its first words and stopped), sampling only
while the front holds the GIL (py-spy's ``--gil``: its own work, not its
waiting), and prints the front's CPU per call from ``/proc``.

    python -m bench.profile [--handoffs 150] [--voice] [--raw profile.txt]
    python -m bench.profile --front 200
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import signal
import sys
import tempfile
from pathlib import Path

import httpx

from bench.handoff import VOICES, PingPong, text_handoffs, voice_handoffs
from bench.harness import RunnerProcess, banner, split_cores, table
from simulators.cloud import Cloud

# The first rule whose pattern appears anywhere in a sample's stack names its part.
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("OpenAI client, HTTP and JSON", ("openai/", "httpx", "httpcore", "h11/", "anyio/")),
    ("LLM context adapter", ("adapters/llm",)),
    ("context aggregators", ("aggregators/",)),
    ("pipecat.flows", ("pipecat/flows/",)),
    ("TTS and STT services", ("services/cartesia", "services/deepgram", "services/tts_")),
    ("notices to pipecat-manager (aiohttp)", ("aiohttp/",)),
    ("websockets to pipecat-manager", ("websockets/", "serializers/")),
    ("observers", ("observer",)),
    ("routers", ("routing/", "service_switcher", "parallel_pipeline")),
    ("frame queues and pushes", ("frame_processor.py", "queues.py", "pipeline.py")),
]
# The same for a pool's front, which runs no call: its parts are HTTP in and out, each
# sample counted where it is innermost.
FRONT_PARTS: list[tuple[str, tuple[str, ...]]] = [
    (
        "the request to the worker (over its Unix socket)",
        ("aiohttp/", "teamrunner/workers/link.py"),
    ),
    # The transport uvicorn writes the answer through (one write per answer).
    ("uvicorn (HTTP in, the answer out)", ("uvicorn/", "teamrunner/serving/protocol.py")),
    ("the runner's edge (teamrunner.serving)", ("teamrunner/serving/",)),
    ("the front's own code (teamrunner.workers)", ("teamrunner/workers/",)),
    ("FastAPI and starlette (routing, middleware)", ("fastapi/", "starlette/")),
]
LOCATION = re.compile(r" \((?P<file>[^()]*?):\d+\)$")


def _file(frame: str) -> str:
    match = LOCATION.search(frame)
    return match.group("file").split("site-packages/")[-1] if match else frame


def summarize(
    raw: Path, rules: list[tuple[str, tuple[str, ...]]] = PARTS, *, innermost: bool = False
) -> tuple[int, collections.Counter[str], collections.Counter[str]]:
    """Samples in all, by part of the stack, and by function (own samples).

    A sample's part is the first rule matching any frame of its stack; with
    ``innermost``, the rule matching the frame nearest the sampled line, so a
    part that wraps every request (a middleware) does not take the samples of
    what runs inside it.
    """
    parts: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples, frames = int(count), stack.split(";")
        total += samples
        files = [_file(f) for f in frames]
        if innermost:
            part = next(
                (
                    name
                    for f in reversed(files)
                    for name, keys in rules
                    if any(k in f for k in keys)
                ),
                "event loop and the rest",
            )
        else:
            part = next(
                (name for name, keys in rules if any(k in f for f in files for k in keys)),
                "event loop and the rest",
            )
        parts[part] += samples
        own[re.sub(r":\d+\)$", ")", frames[-1]).split("site-packages/")[-1]] += samples
    return total, parts, own


def print_shares(
    parts: collections.Counter[str], own: collections.Counter[str], total: int, most: int
) -> None:
    """The two tables of a profile: share of ``total`` samples by part of the stack, and
    the ``most`` functions with the most samples of their own."""
    shares = [(part, n / total * 100) for part, n in parts.most_common()]
    print(table(["part of the stack", "share %"], shares))
    print()
    print(
        table(
            ["function (own samples)", "share %"],
            [(name, n / total * 100) for name, n in own.most_common(most)],
        )
    )


async def record(handoffs: int, voice: bool, raw: Path) -> tuple[float, float]:
    """Run the ping-pong under py-spy; returns the seconds it took and the runner's CPU seconds."""
    runner_cores, _ = split_cores()
    cloud = Cloud(voices=VOICES, ms_per_char=20, responder=PingPong(voice=voice, limit=handoffs))
    async with (
        cloud,
        RunnerProcess(cloud.environment(), cores=runner_cores) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        spy = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).with_name("py-spy")),
            *("record", "--pid", str(runner.pid), "--rate", "1000"),
            *("--format", "raw", "--output", str(raw), "--nonblocking"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.sleep(1.0)  # py-spy attaches
        started, cpu = asyncio.get_running_loop().time(), runner.cpu_seconds()
        run = voice_handoffs if voice else text_handoffs
        await run(cloud, runner, http, handoffs)
        elapsed = asyncio.get_running_loop().time() - started
        cpu = runner.cpu_seconds() - cpu
        spy.send_signal(signal.SIGINT)
        await asyncio.wait_for(spy.wait(), 30)
    if not raw.is_file():  # noqa: ASYNC240 - once, after the run
        raise RuntimeError("py-spy wrote no samples (is ptrace allowed here?)")
    return elapsed, cpu


async def record_front(calls: int, raw: Path) -> float:
    """Start ``calls`` calls through a pool's front under py-spy; the front's CPU ms per call."""
    from bench.pickup import pick_up, single_request

    cloud = Cloud()
    async with (
        cloud,
        RunnerProcess({**cloud.environment(), "RUNNER_WORKERS": "2"}) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        for i in range(5):  # warm
            await pick_up(cloud, runner, http, single_request(f"warm-{i}", voice=False))
        spy = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).with_name("py-spy")),
            *("record", "--pid", str(runner.pid), "--rate", "1000", "--gil"),
            *("--format", "raw", "--output", str(raw), "--nonblocking"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.sleep(1.0)  # py-spy attaches
        front = runner.pids()[0]
        cpu = runner.cpu_seconds_of(front)
        for i in range(calls):
            await pick_up(cloud, runner, http, single_request(f"call-{i}", voice=False))
        cpu = runner.cpu_seconds_of(front) - cpu
        spy.send_signal(signal.SIGINT)
        await asyncio.wait_for(spy.wait(), 30)
    if not raw.is_file():  # noqa: ASYNC240 - once, after the run
        raise RuntimeError("py-spy wrote no samples (is ptrace allowed here?)")
    return cpu / calls * 1000


async def main_front(calls: int, raw: Path | None) -> None:
    banner("Profile: a pool's front passing on /run and /stop")
    with tempfile.TemporaryDirectory() as scratch:
        path = raw or Path(scratch) / "samples.txt"
        ms_per_call = await record_front(calls, path)
        total, parts, own = summarize(path, FRONT_PARTS, innermost=True)
    print(
        f"{calls} calls (a /run and a /stop each); the front's CPU (from /proc): "
        f"{ms_per_call:.2f} ms per call; {total} py-spy samples while it held the GIL\n"
    )
    print_shares(parts, own, total, 15)


async def main(handoffs: int, voice: bool, raw: Path | None) -> None:
    banner(f"Profile: {'voice' if voice else 'text'} handoffs")
    with tempfile.TemporaryDirectory() as scratch:
        path = raw or Path(scratch) / "samples.txt"
        elapsed, cpu = await record(handoffs, voice, path)
        total, parts, own = summarize(path)
    print(
        f"{handoffs} handoffs in {elapsed:.1f} s; the runner's CPU (from /proc): "
        f"{cpu / handoffs * 1000:.1f} ms per handoff, the call's start included; "
        f"{total} py-spy samples (shares below are of these)\n"
    )
    print_shares(parts, own, total, 15)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--handoffs", type=int, default=150)
    parser.add_argument("--voice", action="store_true")
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw samples here")
    parser.add_argument("--front", type=int, metavar="CALLS", help="profile a pool's front")
    args = parser.parse_args()
    if args.front:
        asyncio.run(main_front(args.front, args.raw))
    else:
        asyncio.run(main(args.handoffs, args.voice, args.raw))
