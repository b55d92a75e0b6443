"""What the caller's VAD costs a call: CPU per second of caller audio, three ways.

One call's caller audio as the capacity benchmark plays it (``bench/capacity.py``:
the question in Piper's voice, then the line while the bot answers), in 40 ms
frames as the input transport joins them, on one core as a worker has, analyzed by:

* pipecat's ``SileroVADAnalyzer`` as it ships: every frame handed to a thread
  of the analyzer's own, Silero and the loudness meter on every window;
* the same analysis inline, on the caller's task (``SileroVADOnSession``);
* the runner's VAD: inline, behind the energy gate (``SharedSileroVAD``).

Each runs as one asyncio task on its own event loop; the figure is the
process's CPU time (every thread counted) over the audio's duration, the share
of a core one call's VAD takes. The machine's other load changes wall time,
not CPU time, so the figures hold on a shared machine better than the capacity
benchmark's; each is the median of ``--rounds`` rounds, run in turn. The line
is digital silence or, with ``--noise``, noise of that many sample units RMS.

    python -m bench.vad_cost [--rounds 5] [--turns 6] [--noise 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer

from bench.capacity import ANSWER, MS_PER_CHAR, PAUSE_AFTER_REPLY_S, QUESTION
from bench.harness import ALL_CORES, banner, table
from simulators.speech import speak
from teamrunner.pipecat_internals.analyzers import SileroVADOnSession
from teamrunner.speech.analyzers import SharedSileroVAD, silero_session
from teamrunner.speech.models import SpeechModels

RATE = 16000
FRAME = RATE // 25 * 2  # 40 ms, as the input transport joins the caller's audio


def caller_audio(turns: int, noise_rms: float) -> bytes:
    """The question, then the line for as long as the bot's answer and the pause last."""
    question = speak(QUESTION)
    line_secs = 0.8 + len(ANSWER) * MS_PER_CHAR / 1000 + PAUSE_AFTER_REPLY_S
    rng = np.random.default_rng(0)
    turn = []
    for _ in range(turns):
        line = rng.normal(0.0, noise_rms, int(line_secs * RATE)).round().astype(np.int16)
        turn += [question, line.tobytes()]
    return b"".join(turn)


async def analyze(vad: VADAnalyzer, pcm: bytes) -> float:
    """CPU seconds spent analyzing ``pcm`` frame by frame."""
    vad.set_sample_rate(RATE)
    cpu0 = time.process_time()
    for start in range(0, len(pcm) - FRAME + 1, FRAME):
        await vad.analyze_audio(pcm[start : start + FRAME])
    cpu = time.process_time() - cpu0
    await vad.cleanup()
    return cpu


def main(rounds: int, turns: int, noise_rms: float) -> None:
    banner("What a call's VAD costs")
    # One core, as a worker has: pipecat's VAD thread shares it with the event loop.
    os.sched_setaffinity(0, {min(ALL_CORES)})
    pcm = caller_audio(turns, noise_rms)
    secs = len(pcm) / (2 * RATE)
    models = SpeechModels()
    kinds: list[tuple[str, Callable[[], VADAnalyzer]]] = [
        ("pipecat's Silero VAD, a thread per call", SileroVADAnalyzer),
        ("the same, inline", lambda: SileroVADOnSession(silero_session())),
        ("inline, behind the energy gate (as the runner ships)", models.vad),
    ]
    shares: dict[str, list[float]] = {name: [] for name, _ in kinds}
    skipped = 0.0
    for _ in range(rounds):
        for name, make in kinds:
            vad = make()
            shares[name].append(asyncio.run(analyze(vad, pcm)) / secs)
            if isinstance(vad, SharedSileroVAD):
                skipped = vad.windows_skipped / (vad.windows_skipped + vad.windows_scored)
    base = statistics.median(shares[kinds[0][0]])
    print(
        f"{secs:.0f} s of caller audio ({turns} turns: the question, then the line while the "
        f"bot answers; line {'digital silence' if not noise_rms else f'noise {noise_rms:g} RMS'}),"
        f" 40 ms frames; median of {rounds} rounds\n"
    )
    print(
        table(
            ["VAD", "CPU per call, % of a core", "min–max %", "against pipecat's"],
            [
                (
                    name,
                    statistics.median(values) * 100,
                    f"{min(values) * 100:.2f}–{max(values) * 100:.2f}",
                    statistics.median(values) / base,
                )
                for name, values in shares.items()
            ],
        )
    )
    print(f"\nWindows the gate skipped: {skipped * 100:.0f} %")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--noise", type=float, default=0.0, help="line noise, RMS sample units")
    args = parser.parse_args()
    main(args.rounds, args.turns, args.noise)
