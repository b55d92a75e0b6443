"""Where a fresh call's first handoff spends its time, stage by stage, from timestamps.

``bench/first_handoff.py`` measures the whole gap (the last byte of member
A's transition to member B's first request arriving); this splits it. The
runner runs with ``bench/timeline/sitecustomize.py``, which notes when
frames are pushed, when the output transport's media sender takes a frame,
when the function call runs, and every event-loop callback longer than
0.2 ms (on asyncio's loop: uvloop's cannot be timed, so the whole gap is a
little longer here than in ``bench.first_handoff``). A's answer comes 0.3 s
after its request, so the call's start is over by then. Per call, the gap is
cut at six marks:

1. A's stream ends (the simulator's clock) → pipecat runs the function;
2. the function (the transition: routers, flows) → it returns;
3. → the output transport's media sender takes its result frame;
4. → pipecat.flows queues the next node's ``LLMRunFrame`` at the head;
5. → member B's LLM starts its response;
6. → B's request has arrived (the simulator's clock).

A last row gives the CPU time the runner's event loop spent inside the gap:
on a quiet machine the gap is little more than that work, and on a shared one
it is the figure that does not move with the neighbours' load.

    python -m bench.handoff_timeline [--calls 12]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import re
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.first_handoff import team
from bench.harness import ROOT, RunnerProcess, banner, percentile, split_cores, table
from simulators.cloud import Cloud
from simulators.openai import Reply

Note = tuple[float, str, str]
STAGES = (
    "A's stream ends → pipecat runs the function",
    "the transition function runs",
    "its result → the output transport's media sender",
    "→ pipecat.flows queues the next node at the head",
    "the head → member B's LLM starts",
    "B's request built and sent → arrived",
)
_SLOW = re.compile(r"^(?P<ms>[\d.]+) ms in (?P<what>.*)$")
_INSTANCE = re.compile(r"#\d+")


def _llm(who: str) -> bool:
    """A member's LLM service, not the router in front of them (``RoutingLLMService``)."""
    return "LLMService" in who and not who.startswith("Routing")


# Each mark after the first: who notes it, and what it notes.
MARKS: list[tuple[Callable[[str], bool], str]] = [
    (_llm, "runs the function"),
    (_llm, "function returned"),
    (lambda who: who == "output media sender", "takes FunctionCallResultFrame"),
    (lambda who: who.endswith("::Source"), "pushes LLMRunFrame down"),
    (_llm, "pushes LLMFullResponseStartFrame down"),
]


def marks(notes: list[Note], start: float, end: float) -> list[float] | None:
    """The cut points of one handoff, each the first of its note after the one before."""
    cuts = [start]
    for who, what in MARKS:
        at = next((t for t, w, x in notes if t >= cuts[-1] and who(w) and x == what), None)
        if at is None:
            return None
        cuts.append(at)
    return [*cuts, end]


def loop_cpu(notes: list[Note], start: float, end: float) -> float:
    """Seconds of CPU the event loop's callbacks spent inside the gap: its work, less any wait."""
    return sum(float(what) for t, who, what in notes if who == "cpu" and start <= t <= end) / 1000


def slow_callbacks(notes: list[Note], start: float, end: float) -> dict[str, float]:
    """Milliseconds of callbacks over 0.2 ms inside the gap, by what they ran."""
    spent: dict[str, float] = collections.defaultdict(float)
    for t, who, what in notes:
        match = _SLOW.match(what)
        if who == "event loop" and match and start <= t <= end:
            # One row per kind of processor, not per call's instance of it.
            spent[_INSTANCE.sub("", match.group("what"))] += float(match.group("ms"))
    return spent


async def handoffs(
    calls: int, root: Path
) -> tuple[list[list[float]], list[float], dict[str, list[float]]]:
    cores, _ = split_cores()
    stages: list[list[float]] = []
    cpu: list[float] = []
    slow: dict[str, list[float]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "notes.json"
        async with Cloud() as cloud:
            environment = {
                **cloud.environment(),
                "PYTHONPATH": str(ROOT / "bench" / "timeline"),
                "TIMELINE_OUT": str(out),
            }
            runner = RunnerProcess(environment, cores=cores, root=root)
            async with runner, httpx.AsyncClient(timeout=60) as http:
                for n in range(calls + 2):
                    call_id = f"timeline-{n}"
                    call = cloud.manager.expect_call(call_id)
                    before = len(cloud.openai.requests)
                    cloud.openai.push(Reply.call("to_b").after_hanging(0.3))
                    cloud.openai.push(Reply.say("Hello, B here."))
                    response = await http.post(f"{runner.url}/run", json=team(call_id, "openai.b"))
                    assert response.status_code == 200, response.text
                    await cloud.openai.wait_for_requests(before + 2, timeout=20)
                    a, b = cloud.openai.requests[before], cloud.openai.requests[before + 1]
                    os.kill(runner.pid, signal.SIGUSR1)
                    await cloud.openai.wait_until(out.exists, 5)
                    await asyncio.sleep(0.1)  # the notes are written
                    notes: list[Note] = [(t, w, x) for t, w, x in json.loads(out.read_text())]
                    out.unlink()
                    await http.post(f"{runner.url}/stop", params={"id": call_id})
                    await call.wait_closed(timeout=10)
                    if n < 2 or a.responded_at is None:  # two calls warm the process up
                        continue
                    start, end = a.responded_at, b.received_at
                    cuts = marks(notes, start, end)
                    if cuts is None:
                        continue
                    stages.append([y - x for x, y in itertools.pairwise(cuts)])
                    cpu.append(loop_cpu(notes, start, end))
                    for what, ms in slow_callbacks(notes, start, end).items():
                        slow[what].append(ms)
    return stages, cpu, slow


async def main(calls: int, root: Path) -> None:
    banner("Where the first handoff's time goes")
    stages, cpu, slow = await handoffs(calls, root)
    totals = [sum(s) for s in stages]
    rows = []
    for i, stage in enumerate(STAGES):
        each = [s[i] for s in stages]
        rows.append(
            (
                stage,
                percentile(each, 50) * 1000,
                percentile(each, 95) * 1000,
                sum(each) / sum(totals),
            )
        )
    rows.append(("the whole gap", percentile(totals, 50) * 1000, percentile(totals, 95) * 1000, 1))
    share = sum(cpu) / sum(totals)
    rows.append(
        (
            "the event loop's CPU inside it",
            percentile(cpu, 50) * 1000,
            percentile(cpu, 95) * 1000,
            share,
        )
    )
    print(f"{len(stages)} fresh calls, one handoff each\n")
    print(table(["stage", "p50 ms", "p95 ms", "share of the gap"], rows))
    heavy = sorted(slow.items(), key=lambda kv: -sum(kv[1]))[:8]
    print("\nEvent-loop callbacks over 0.2 ms inside the gap, per handoff:\n")
    print(
        table(
            ["callback (processor, coroutine)", "ms per handoff"],
            [(what, sum(ms) / len(stages)) for what, ms in heavy],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.root))
