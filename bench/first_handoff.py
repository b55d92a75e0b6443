"""The first handoff of a fresh call: what a caller meets, not a warm loop.

Each call is a new text team call whose start member's very first LLM answer
is a transition; the measure is from the last byte of that streamed answer
to the next member's first chat-completions request having fully arrived,
read off the LLM simulators' own clocks. One handoff per call. Two teams:
both members on one OpenAI-compatible endpoint (different models, one key,
so one shared LLM service) and on two (openai and grok, different keys). The
baseline in the same run is the warm case: the same runner's tenth handoff
of one long call, ping-ponging between the same two members.

    python -m bench.first_handoff [--calls 20]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from pathlib import Path
from typing import Any

import httpx

from bench.harness import ROOT, RunnerProcess, banner, percentile, split_cores, table
from simulators.cloud import Cloud
from simulators.openai import ChatRequest, OpenAISimulator, Reply


def team(call_id: str, second_engine: str) -> dict[str, Any]:
    def member(me: str, other: str, engine: str) -> dict[str, Any]:
        return {
            "id": me,
            "name": me.upper(),
            "ai": {"engine_model": engine, "init_prompt": f"You are {me}."},
            "transitions": [
                {"function_name": f"to_{other}", "description": "x", "next_member_id": other}
            ],
        }

    return {
        "id": call_id,
        "llm_type": "openai.a",
        "resolved_team": {
            "id": "first-handoff",
            "start_member_id": "a",
            "members": [member("a", "b", "openai.a"), member("b", "a", second_engine)],
        },
    }


def transfer_always(request: ChatRequest) -> Reply:
    """Every member hands over at once: a call ping-pongs until it is stopped."""
    return Reply.call("to_b" if "to_b" in request.tool_names else "to_a")


async def first_handoffs(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, engine: str, calls: int
) -> list[float]:
    second: OpenAISimulator = cloud.openai if engine.startswith("openai") else cloud.grok
    gaps = []
    for n in range(calls + 2):
        call_id = f"first-{engine.replace('.', '-')}-{n}"
        call = cloud.manager.expect_call(call_id)
        before_a, before_b = len(cloud.openai.requests), len(second.requests)
        cloud.openai.push(Reply.call("to_b"))
        second.push(Reply.say("Hello, B here."))
        response = await http.post(f"{runner.url}/run", json=team(call_id, engine))
        assert response.status_code == 200, response.text
        if second is cloud.openai:
            await cloud.openai.wait_for_requests(before_a + 2, timeout=20)
            a, b = cloud.openai.requests[before_a], cloud.openai.requests[before_a + 1]
        else:
            await second.wait_for_requests(before_b + 1, timeout=20)
            a, b = cloud.openai.requests[before_a], second.requests[before_b]
        await http.post(f"{runner.url}/stop", params={"id": call_id})
        await call.wait_closed(timeout=10)
        if n >= 2 and a.responded_at is not None:  # two calls warm the process up
            gaps.append(b.received_at - a.responded_at)
    return gaps


async def warm_handoffs(
    cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient, count: int
) -> list[float]:
    """Handoffs 10 to 10 + ``count`` of one long ping-pong call between the two endpoints."""
    cloud.openai.responder = transfer_always
    cloud.grok.responder = transfer_always
    call = cloud.manager.expect_call("warm")
    assert (await http.post(f"{runner.url}/run", json=team("warm", "grok.b"))).status_code == 200
    total = 10 + count + 1
    await cloud.openai.wait_until(
        lambda: len(cloud.openai.requests) + len(cloud.grok.requests) >= total, 60
    )
    await http.post(f"{runner.url}/stop", params={"id": "warm"})
    await call.wait_closed(timeout=10)
    requests = sorted(cloud.openai.requests + cloud.grok.requests, key=lambda r: r.received_at)
    pairs = list(itertools.pairwise(requests))[10 : 10 + count]
    return [b.received_at - a.responded_at for a, b in pairs if a.responded_at is not None]


async def main(calls: int, root: Path) -> None:
    banner("First handoff of a fresh call")
    cores, _ = split_cores()
    results: dict[str, list[float]] = {}
    for engine, label in (("openai.b", "one endpoint"), ("grok.b", "two endpoints")):
        async with Cloud() as cloud:
            runner = RunnerProcess(cloud.environment(), cores=cores, root=root)
            async with runner, httpx.AsyncClient(timeout=60) as http:
                results[label] = await first_handoffs(cloud, runner, http, engine, calls)
                if engine == "grok.b":
                    results["warm (10th handoff on)"] = await warm_handoffs(
                        cloud, runner, http, calls
                    )
    warm = percentile(results["warm (10th handoff on)"], 50)
    rows = [
        (
            label,
            len(gaps),
            percentile(gaps, 50) * 1000,
            percentile(gaps, 95) * 1000,
            max(gaps) * 1000,
            percentile(gaps, 50) / warm,
        )
        for label, gaps in results.items()
    ]
    print(table(["first handoff", "n", "p50 ms", "p95 ms", "max ms", "p50 / warm p50"], rows))
    print("\nFrom the last byte of the transition's answer to the next request's arrival.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--root", type=Path, default=ROOT, help="another checkout to measure")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.root))
