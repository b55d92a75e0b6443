"""CPU per audio frame on pipecat-manager's sockets: pipecat's serializer against the runner's.

Every caller frame (50 a second per call) is read, and every chunk of the
bot's voice written, by the sockets' serializer. This times both ways on the
same bytes in one process, alternating, and prints the ratio; the frames
they give are compared in ``tests/manager/test_serializer.py``.

    python -m bench.serializer_cost [--frames 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import pipecat.frames.protobufs.frames_pb2 as frame_protos
from pipecat.frames.frames import OutputAudioRawFrame
from pipecat.serializers.protobuf import ProtobufFrameSerializer

from bench.harness import banner, table
from teamrunner.manager.serializer import ManagerSerializer
from teamrunner.observe.redaction import Redactor


def caller_frame() -> bytes:
    """A 20 ms caller frame as pipecat-manager sends it."""
    proto = frame_protos.Frame()  # type: ignore[attr-defined]
    proto.audio.audio = b"\x01\x02" * 320
    proto.audio.sample_rate = 16000
    proto.audio.num_channels = 1
    return proto.SerializeToString()


async def cpu_per_call(step: Callable[[], Awaitable[object]], n: int) -> float:
    """Microseconds of CPU per ``step``."""
    start = time.process_time()
    for _ in range(n):
        await step()
    return (time.process_time() - start) / n * 1e6


async def main(frames: int, rounds: int) -> None:
    pipecats, ours = ProtobufFrameSerializer(), ManagerSerializer(Redactor())
    data = caller_frame()
    chunk = OutputAudioRawFrame(audio=b"\x03\x04" * 640, sample_rate=16000, num_channels=1)
    cases = {
        "caller frame read (20 ms)": (
            lambda: pipecats.deserialize(data),
            lambda: ours.deserialize(data),
        ),
        "bot chunk written (40 ms)": (
            lambda: pipecats.serialize(chunk),
            lambda: ours.serialize(chunk),
        ),
    }
    rows = []
    for name, (theirs, mine) in cases.items():
        before, after = [], []
        for _ in range(rounds):
            before.append(await cpu_per_call(theirs, frames))
            after.append(await cpu_per_call(mine, frames))
        b, a = statistics.median(before), statistics.median(after)
        rows.append([name, f"{b:.2f}", f"{a:.2f}", f"{a / b:.2f}"])
    print(table(["per", "pipecat µs CPU", "runner µs CPU", "runner / pipecat"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    banner("Serializer cost")
    asyncio.run(main(args.frames, args.rounds))
