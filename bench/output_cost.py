"""CPU per bot audio chunk through the call's output socket, in one process.

The call's output socket (``teamrunner.manager.transport``) runs alone in a
pipeline, connected to the pipecat-manager simulator in the same process, and
is handed a reply of 40 ms chunks as a voice would hand them over; the figure
is the process's CPU time per chunk, from the first chunk queued to the last
frame passed on, median of five replies. The simulator's share is in it too,
the same for any checkout, so compare two checkouts in the same run: each is
measured in a process of its own, alternating, with ``--root`` naming the
other.

    python -m bench.output_cost [--chunks 1000] [--root CHECKOUT] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPLIES = 5


async def cpu_per_chunk(chunks: int) -> float:
    """Microseconds of this process's CPU per chunk, median of ``REPLIES`` replies."""
    from pipecat.frames.frames import EndFrame, Frame, LLMFullResponseEndFrame, TTSAudioRawFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.workers.runner import WorkerRunner

    from simulators.cloud import Cloud
    from simulators.manager import Caller
    from teamrunner.manager.transport import SAMPLE_RATE, open_sockets
    from teamrunner.observe.redaction import Redactor

    class End(FrameProcessor):
        def __init__(self) -> None:
            super().__init__()
            self.done = asyncio.Event()

        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, LLMFullResponseEndFrame):
                self.done.set()
            await self.push_frame(frame, direction)

    chunk = b"\x01\x02" * (SAMPLE_RATE // 25)
    costs = []
    async with Cloud() as cloud:
        for reply in range(REPLIES):
            call_id = f"output-cost-{reply}"
            call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0)))
            sockets = open_sockets(cloud.manager.ws_url, call_id, hears=False, redactor=Redactor())
            end = End()
            worker = PipelineWorker(Pipeline([sockets.output(), end]), cancel_on_idle_timeout=False)
            runner = WorkerRunner(handle_sigint=False)
            await runner.add_workers(worker)
            running = asyncio.create_task(runner.run())
            await call.wait_connected(timeout=10)
            started = time.process_time()
            for _ in range(chunks):
                await worker.queue_frame(TTSAudioRawFrame(chunk, SAMPLE_RATE, 1))
            await worker.queue_frame(LLMFullResponseEndFrame())
            await asyncio.wait_for(end.done.wait(), 60)
            costs.append((time.process_time() - started) / chunks * 1e6)
            await worker.queue_frame(EndFrame())
            await asyncio.wait_for(running, 20)
    return statistics.median(costs)


def measure(root: Path, chunks: int) -> float:
    """One checkout's figure, from a process whose imports are that checkout's."""
    environment = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, str(Path(__file__)), "--child", "--chunks", str(chunks)]
    answer = subprocess.run(
        command, cwd=root, env=environment, capture_output=True, text=True, check=True
    )
    return float(answer.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--root", type=Path, help="another checkout to measure beside this one")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(asyncio.run(cpu_per_chunk(args.chunks)))
        return
    roots = [ROOT] if args.root is None else [args.root, ROOT]
    rows: dict[Path, list[float]] = {root: [] for root in roots}
    for _ in range(args.rounds):
        for root in roots:
            rows[root].append(measure(root, args.chunks))
    print("| checkout | CPU µs per 40 ms chunk, each round |")
    print("|---|---|")
    for root, figures in rows.items():
        print(f"| {root} | {', '.join(f'{f:.0f}' for f in figures)} |")


if __name__ == "__main__":
    main()
