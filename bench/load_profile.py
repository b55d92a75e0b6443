"""Where a loaded runner's CPU goes: py-spy sampling one process that carries N voice calls.

The capacity benchmark's calls (``bench/capacity.py``: real-time caller
audio, Silero VAD, a paced voice) run ``--calls`` at once on a runner pinned
to one core, while py-spy samples it 250 times a second. Samples of a thread
waiting (the event loop in ``select``, pipecat's VAD threads between
windows) are left out; the rest, the process's busy time, is shared out by
the part of the stack a sample falls in, and by the functions with the most
samples of their own. ``--raw`` keeps py-spy's samples for a flame graph.

    python -m bench.load_profile [--calls 8] [--team] [--turns 6] [--raw samples.txt]
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
import uvloop

from bench.capacity import ANSWER, MS_PER_CHAR, QUESTION, VOICES, answer, run_level
from bench.harness import ROOT, RunnerProcess, banner, split_cores
from bench.profile import print_shares
from simulators.cloud import Cloud
from simulators.speech import speak
from simulators.tts import PROVIDER_PACING

# The first rule whose pattern appears anywhere in a sample's stack names its part.
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("VAD: Silero and loudness, on pipecat's thread", ("audio/vad", "onnxruntime", "audio/utils")),
    ("Deepgram client (caller audio out)", ("services/deepgram", "deepgram/")),
    ("TTS service", ("services/cartesia", "services/tts_service", "services/elevenlabs")),
    ("LLM client", ("openai/", "httpx", "httpcore", "services/openai", "chat_completions")),
    ("sockets to pipecat-manager (protobuf)", ("transports/websocket", "serializers/")),
    ("websocket framing (masks, parsing)", ("websockets/",)),
    ("observers", ("observer",)),
    ("routers", ("routing/", "service_switcher")),
    ("turns and context aggregators", ("aggregators/", "pipecat/turns/")),
    ("frame queues and pushes", ("frame_processor.py", "queues.py", "pipeline.py")),
]
# A sample whose innermost frame is one of these is a thread waiting, not working.
WAITING = ("select (selectors.py", "_worker (concurrent/futures/thread.py")
LOCATION = re.compile(r":\d+\)$")


def summarize(raw: Path) -> tuple[int, int, collections.Counter[str], collections.Counter[str]]:
    """(busy samples, waiting samples, busy samples by part, by innermost function)."""
    parts: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    busy = waiting = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [LOCATION.sub(")", f).split("site-packages/")[-1] for f in stack.split(";")]
        if any(key in frames[-1] for key in WAITING):
            waiting += int(count)
            continue
        busy += int(count)
        part = next(
            (name for name, keys in PARTS if any(k in f for f in frames for k in keys)),
            "event loop and the rest",
        )
        parts[part] += int(count)
        own[frames[-1]] += int(count)
    return busy, waiting, parts, own


async def record(calls: int, team: bool, turns: int, raw: Path, root: Path) -> float:
    """Run the calls under py-spy; returns the runner's CPU per call (share of its core)."""
    runner_cores, _ = split_cores()
    cloud = Cloud(voices=VOICES, ms_per_char=MS_PER_CHAR, responder=answer)
    cloud.cartesia.pacing = PROVIDER_PACING
    speech = speak(QUESTION)
    async with (
        cloud,
        RunnerProcess(cloud.environment(), cores=runner_cores, root=root) as runner,
        httpx.AsyncClient(timeout=60) as http,
    ):
        await run_level(cloud, runner, http, 1, team, 1, speech, runner.rss_mib())
        spy = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).with_name("py-spy")),
            *("record", "--pid", str(runner.pid), "--rate", "250", "--nonblocking"),
            *("--format", "raw", "--output", str(raw)),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.sleep(1.0)  # py-spy attaches
        level = await run_level(cloud, runner, http, calls, team, turns, speech, 0.0)
        spy.send_signal(signal.SIGINT)
        await asyncio.wait_for(spy.wait(), 30)
    if not raw.is_file():  # noqa: ASYNC240 - once, after the run
        raise RuntimeError("py-spy wrote no samples (is ptrace allowed here?)")
    return level.runner_cpu_per_call


async def main(calls: int, team: bool, turns: int, raw: Path | None, root: Path) -> None:
    banner(f"Profile: {calls} {'team' if team else 'single-AI'} calls on one core")
    with tempfile.TemporaryDirectory() as scratch:
        path = raw or Path(scratch) / "samples.txt"
        per_call = await record(calls, team, turns, path, root)
        busy, waiting, parts, own = summarize(path)
    print(
        f"The runner's CPU per call: {per_call * 100:.1f} % of its core; {busy} busy py-spy "
        f"samples ({waiting} of threads waiting left out); replies of {len(ANSWER)} "
        "characters, paced like a real provider\n"
    )
    print_shares(parts, own, busy, 20)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--team", action="store_true")
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw samples here")
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    uvloop.run(main(args.calls, args.team, args.turns, args.raw, args.root))
