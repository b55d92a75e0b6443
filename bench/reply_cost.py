"""What a streamed reply costs the runner: CPU per reply, and per chunk of the stream.

A call that hears but does not speak (typed turns, ``send-text``; no voice)
takes ``--turns`` turns answered with a reply of one word, alternating with as
many answered with a reply of ``--words`` words, each word a chunk of the
stream as OpenAI sends them. The runner is pinned to one core and the simulators to the
other; its CPU is read from ``/proc`` around each set of turns. The difference
between the two, over the difference in chunks, is what one chunk costs: the
SDK building it, pipecat pushing its text, the context aggregating it and the
text reaching pipecat-manager.

    python -m bench.reply_cost [--turns 40] [--words 60] [--root ../other-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.harness import ROOT, RunnerProcess, banner, split_cores, table
from simulators.cloud import Cloud
from simulators.manager import Caller, CallRecord
from simulators.openai import Reply

CALL = "reply-cost"
WORD = "word"


def text_call(call_id: str) -> dict[str, object]:
    return {
        "id": call_id,
        "llm_type": "openai.gpt-4o",
        "llm_messages": [{"role": "system", "content": "Answer the caller."}],
        # Ears (the input socket typed turns come on), no voice: the reply is text alone.
        "stt_type": "deepgram",
        "smart_turn_enabled": False,
    }


def answered(text: str) -> Callable[[CallRecord], bool]:
    return lambda record: record.bot_llm_text()[-1:] == [text]


async def turn_cpu(cloud: Cloud, runner: RunnerProcess, words: int, n: int) -> float:
    """Runner CPU seconds of turn ``n``, answered with ``words`` words."""
    answer = f"{' '.join([WORD] * words)} {n}."
    cloud.openai.push(Reply.say(answer))
    before = runner.cpu_seconds()
    await cloud.manager.send_text(CALL, f"Question {n}.")
    await cloud.manager.calls[CALL].wait(answered(answer), 10, "the answer")
    return runner.cpu_seconds() - before


async def cpu_per_turn(
    cloud: Cloud, runner: RunnerProcess, turns: int, words: int
) -> tuple[float, float]:
    """Runner CPU seconds per turn of one word and per turn of ``words`` words.

    The two alternate, so the conversation growing (each request carries all
    of it) weighs on both alike.
    """
    short = long = 0.0
    for n in range(turns):
        short += await turn_cpu(cloud, runner, 1, 2 * n)
        long += await turn_cpu(cloud, runner, words, 2 * n + 1)
    return short / turns, long / turns


async def measure(root: Path, turns: int, words: int, runner_cores: set[int]) -> list[object]:
    cloud = Cloud()
    async with cloud:
        cloud.openai.push(Reply.say("Hello."))
        cloud.manager.expect_call(CALL, caller=Caller(Caller.silence(0.5)))
        async with (
            RunnerProcess(cloud.environment(), cores=runner_cores, root=root) as runner,
            httpx.AsyncClient(timeout=60) as http,
        ):
            assert (await http.post(f"{runner.url}/run", json=text_call(CALL))).is_success
            await cloud.manager.calls[CALL].wait(
                lambda c: "Hello." in c.bot_llm_text(), 10, "a greeting"
            )
            await cpu_per_turn(cloud, runner, 3, words)  # warm: first-use paths
            short, long = await cpu_per_turn(cloud, runner, turns, words)
            await http.post(f"{runner.url}/stop", params={"id": CALL})
    per_chunk = (long - short) / (words - 1)
    return [root.name or str(root), short * 1e3, long * 1e3, per_chunk * 1e6]


async def main(turns: int, words: int, roots: list[Path]) -> None:
    banner(f"A streamed reply's cost: {turns} turns of 1 word, alternating with {words} words")
    runner_cores, _ = split_cores()
    rows = [await measure(root, turns, words, runner_cores) for root in roots]
    print(
        table(
            [
                "checkout",
                "CPU per 1-word turn ms",
                f"CPU per {words}-word turn ms",
                "CPU per chunk µs",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--words", type=int, default=60)
    parser.add_argument(
        "--root", type=Path, action="append", help="a checkout to measure (repeat to compare)"
    )
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.words, args.root or [ROOT]))
