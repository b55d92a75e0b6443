"""A call's turns seconds apart: does each LLM request open a new connection to the endpoint?

A voice call (Deepgram, Cartesia and OpenAI simulators, over TLS with
``--tls`` as the real providers are) takes ``--turns`` typed turns
(``send-text``), ``--gap`` seconds apart, one call at a time, so that no other
call keeps the connection warm. For each turn: whether its request came on a
new connection (the simulator records each request's client port), and the
time from the turn to the request's arrival and to the answer's first text
at pipecat-manager. A new connection costs its TCP and TLS handshakes there;
over a network, a round trip or two to the endpoint each.

    python -m bench.llm_turns [--turns 4] [--gap 8] [--tls] [--root ../other-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.harness import ROOT, RunnerProcess, banner, median, table
from bench.starts import voice_call
from simulators.cloud import Cloud
from simulators.manager import Caller, CallRecord
from simulators.openai import Reply
from simulators.tls import issue

CALL = "llm-turns"


def _answered(answer: str) -> Callable[[CallRecord], bool]:
    return lambda record: answer in record.bot_llm_text()


async def main(turns: int, gap: float, tls: bool, root: Path) -> None:
    banner(f"LLM requests {gap:g} s apart ({root}){', providers over TLS' if tls else ''}")
    cloud = Cloud(tls=issue(Path(tempfile.mkdtemp())) if tls else None)
    rows = []
    async with cloud:
        cloud.openai.push(Reply.say("Hello."), *[Reply.say(f"Answer {i}.") for i in range(turns)])
        call = cloud.manager.expect_call(CALL, caller=Caller(Caller.silence(0.5)))
        async with (
            RunnerProcess(cloud.environment(), root=root) as runner,
            httpx.AsyncClient(timeout=60) as http,
        ):
            assert (await http.post(f"{runner.url}/run", json=voice_call(CALL))).status_code == 200
            await cloud.openai.wait_for_requests(1, timeout=10)
            for turn in range(turns):
                await asyncio.sleep(gap)
                asked = time.monotonic()
                await cloud.manager.send_text(CALL, f"Question {turn}.")
                [*_, request] = await cloud.openai.wait_for_requests(turn + 2, timeout=10)
                await call.wait(_answered(f"Answer {turn}."), 10, "the answer")
                first_text = next(m.at for m in call.rtvi("bot-llm-text") if m.at > asked)
                previous = cloud.openai.requests[-2].peer
                rows.append(
                    (
                        turn + 1,
                        "yes" if request.peer != previous else "no",
                        (request.received_at - asked) * 1000,
                        (first_text - asked) * 1000,
                    )
                )
            await http.post(f"{runner.url}/stop", params={"id": CALL})
    print(
        table(
            ["turn", "new connection", "to the request ms", "to the first answer text ms"],
            rows,
        )
    )
    new = sum(1 for r in rows if r[1] == "yes")
    to_request, to_text = median(r[2] for r in rows), median(r[3] for r in rows)
    print(
        f"\n{new} of {len(rows)} requests on a new connection; median to the request "
        f"{to_request:.2f} ms, to the first text {to_text:.2f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--gap", type=float, default=8.0, help="seconds between turns")
    parser.add_argument("--tls", action="store_true", help="the providers speak TLS")
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.gap, args.tls, args.root))
