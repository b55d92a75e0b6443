"""Capacity: how many concurrent voice calls a runner carries, per core and per pod.

N calls at once, single-AI or three-member team, each with real-time caller
audio on its input socket (the manager simulator plays 20 ms frames: Piper
speech, then line silence), Silero VAD on, the fixed end-of-turn rule
(smart_turn_enabled false: 0.2 s VAD stop plus 0.6 s), and the Deepgram,
OpenAI and Cartesia simulators. The voice streams like a real provider
(``simulators.tts.PROVIDER_PACING``: first audio after 150 ms, then 1.5x real
time; ``--burst`` sends each reply at once instead, as the figures before it
did). Each call: the bot greets, then for each turn the caller asks and the
bot answers with a line of about two seconds of audio. Calls start
staggered across one turn.

For each N it reports p95 voice-to-voice (end of caller speech to first bot
audio) over every turn of every call; pace: how late the latest bot audio
chunk arrived against its real-time playout slot, counted from the reply's
first chunk (the media server plays bot audio in real time, so a chunk later
than its slot is a gap the caller hears); the runner's CPU per call (share of
one core, every process of the runner counted) and resident memory per call.
A level passes when every call keeps pace (no chunk more than 40 ms late) and
p95 voice-to-voice is within 50 ms of the one-call figure of the same pod.
Levels stop at the first that fails. The machine may be shared: "other load"
is the CPU every other process used meanwhile (``/proc/stat``), and a level
that failed, or a one-call level, while other load passed 15 % of a core is
run again, up to twice (each try is a row); the bar is the quietest one-call
figure.

Then the runner's own admission, as it ships (``--admission``, on by
default): a fresh runner with the default ``RUNNER_LOAD_THRESHOLD``, and
calls started one every ``--gap`` seconds (or all at once with ``--gap 0``),
each talking turn after turn, until ``/run`` answers 503; a few more tries
follow, then the calls it admitted talk on for ``--turns`` more turns. It
reports how many it admitted, and whether those kept pace by the same bar
as the levels (the one-call figure of the levels' run). Admission should
take at least 0.8 of the largest passing level, and never more than keep
pace.

A pod of one worker (``RUNNER_WORKERS=1``) is pinned to one core and the
simulators to the other. A pod of two workers has both cores, which it
shares with the simulators: on this machine there is no third core for
them, so their own CPU (printed) comes out of the pod's, and the ratio of
the two pods is a lower bound of what a second core adds.

    python -m bench.capacity [--workers 1,2] [--kinds single,team] [--turns 6] [--burst]
                             [--no-admission] [--gap 1.0] [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvloop

from bench.harness import (
    ALL_CORES,
    CLOCK_TICKS,
    ROOT,
    RunnerProcess,
    banner,
    caller_turn,
    percentile,
    split_cores,
    table,
    voice_call,
)
from simulators.cloud import Cloud
from simulators.manager import Caller, CallRecord
from simulators.openai import ChatRequest, Reply
from simulators.speech import speak
from simulators.tts import PROVIDER_PACING
from simulators.voices import VoiceBook
from teamrunner.config import DEFAULT_LOAD_THRESHOLD

VOICES = VoiceBook({"voice-a": 598.0, "voice-b": 1417.0, "voice-c": 2153.0})
QUESTION = "What is my balance?"
ANSWER = "Your balance is forty two dollars and ten cents."
MS_PER_CHAR = 40.0  # the answer lasts about two seconds
PACE_SLACK_S = 0.040
V2V_SLACK_S = 0.050
PAUSE_AFTER_REPLY_S = 0.5
# A level run while other processes used more than this much of a core is run again
# (up to RETRIES more times) if it failed: the machine is shared.
DISTURBED_CPU = 0.15
RETRIES = 2


def call_body(call_id: str, team: bool) -> dict[str, Any]:
    body = voice_call(call_id, "Answer the caller.")
    if team:
        names = ["a", "b", "c"]
        body["resolved_team"] = {
            "id": "capacity",
            "start_member_id": "a",
            "members": [
                {
                    "id": me,
                    "name": me.upper(),
                    "ai": {
                        "engine_model": "openai.gpt-4o" if me != "b" else "grok.grok-3",
                        "init_prompt": f"You are {me}.",
                        "tts_type": "cartesia",
                        "tts_voice_id": f"voice-{me}",
                        "stt_type": "deepgram",
                    },
                    "transitions": [
                        {
                            "function_name": f"to_{other}",
                            "description": "x",
                            "next_member_id": other,
                        }
                        for other in names
                        if other != me
                    ],
                }
                for me in names
            ],
        }
    return body


def answer(_: ChatRequest) -> Reply:
    return Reply.say(ANSWER)


@dataclass
class CallResult:
    voice_to_voice: list[float] = field(default_factory=list)
    worst_lateness: float = float("-inf")
    # Set by an admission ramp's call once it has as many measured turns as asked.
    enough: asyncio.Event = field(default_factory=asyncio.Event)


def lateness(call: CallRecord, first_index: int, until: float) -> float:
    """How late the reply's latest chunk was against its real-time slot (negative: early)."""
    chunks = [c for c in call.audio_chunks()[first_index:] if c.at <= until]
    if not chunks:
        return float("inf")
    start, played, worst = chunks[0].at, 0.0, float("-inf")
    for chunk in chunks:
        worst = max(worst, chunk.at - (start + played))
        played += chunk.secs
    return worst


async def run_call(
    cloud: Cloud,
    runner: RunnerProcess,
    http: httpx.AsyncClient,
    call_id: str,
    team: bool,
    turns: int,
    delay: float,
    speech: bytes,
) -> CallResult:
    await asyncio.sleep(delay)
    result = CallResult()
    call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.2)))
    response = await http.post(f"{runner.url}/run", json=call_body(call_id, team))
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    reply_secs = len(ANSWER) * MS_PER_CHAR / 1000
    await call.wait_bot_audio(min_secs=reply_secs * 0.9, timeout=30)
    for _ in range(turns):
        await asyncio.sleep(PAUSE_AFTER_REPLY_S)
        heard_before = call.received_bot_secs()
        before, latency = await caller_turn(cloud, call, speech)
        result.voice_to_voice.append(latency)

        def heard_whole_reply(c: CallRecord, h: float = heard_before) -> bool:
            return c.received_bot_secs() - h >= reply_secs * 0.95

        await call.wait(heard_whole_reply, 30, "the whole reply")
        result.worst_lateness = max(result.worst_lateness, lateness(call, before, time.monotonic()))
    await http.post(f"{runner.url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=20)
    del cloud.manager.calls[call_id]
    return result


@dataclass
class Level:
    calls: int
    voice_to_voice: list[float]
    worst_lateness: float
    runner_cpu_per_call: float
    rss_per_call_mib: float
    simulators_cpu: float
    other_cpu: float


async def run_level(
    cloud: Cloud,
    runner: RunnerProcess,
    http: httpx.AsyncClient,
    n: int,
    team: bool,
    turns: int,
    speech: bytes,
    idle_rss: float,
) -> Level:
    cloud.deepgram.push_transcripts(*[QUESTION] * (n * turns))
    period = len(speech) / 32000 + 0.8 + len(ANSWER) * MS_PER_CHAR / 1000 + PAUSE_AFTER_REPLY_S
    cpu0, own0, all0, wall0 = runner.cpu_seconds(), _own_cpu(), _machine_cpu(), time.monotonic()
    peak_rss = 0.0

    async def sample_rss() -> None:
        nonlocal peak_rss
        while True:
            peak_rss = max(peak_rss, runner.rss_mib())
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_rss())
    kind = "team" if team else "single"
    results = await asyncio.gather(
        *(
            run_call(cloud, runner, http, f"{kind}-{n}-{i}", team, turns, period * i / n, speech)
            for i in range(n)
        )
    )
    sampler.cancel()
    wall = time.monotonic() - wall0
    return Level(
        calls=n,
        voice_to_voice=[v for r in results for v in r.voice_to_voice],
        worst_lateness=max(r.worst_lateness for r in results),
        runner_cpu_per_call=(runner.cpu_seconds() - cpu0) / wall / n,
        rss_per_call_mib=(peak_rss - idle_rss) / n,
        simulators_cpu=(_own_cpu() - own0) / wall,
        other_cpu=max(
            0.0,
            (_machine_cpu() - all0) - (runner.cpu_seconds() - cpu0) - (_own_cpu() - own0),
        )
        / wall,
    )


def _machine_cpu() -> float:
    """CPU seconds every process on the machine has used, from ``/proc/stat``.

    Less the runner's and the benchmark's own, it is what else ran meanwhile: on
    a machine shared with other work, a level that failed while it ran is suspect.
    """
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


# Levels tried for a pod of each size, after one call; they stop at the first that fails.
LEVELS = {1: [2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32], 2: [4, 8, 12, 14, 16, 18, 20, 24, 28]}


@dataclass
class Capacity:
    workers: int
    team: bool
    largest: int
    rows: list[tuple[Any, ...]]
    cores: str = ""
    baseline: float = float("nan")
    first_failing: int | None = None


@dataclass
class Admitted:
    """What the runner's own admission took in a ramp, and how the calls it took fared."""

    workers: int
    team: bool
    admitted: int
    refused: int
    voice_to_voice: list[float]
    worst_lateness: float
    threshold: float
    measured: float  # the runner's own measure of its load when the ramp ended (/health)
    cpu_share: float  # the runner's CPU while the admitted calls talked on, from /proc
    other_cpu: float  # what everything else on the machine used meanwhile, steal included


def pod_cores(workers: int, shared: bool) -> set[int]:
    """The cores the pod runs on; pins this process (the simulators) too.

    Apart (the default): one worker gets a core of its own and the simulators
    the other; a larger pod gets every core and shares them with the simulators.
    Shared: a pod of N workers and its simulators share the first N cores, so
    pods of every size carry their load generator alike and compare fairly.
    """
    if shared:
        cores = set(sorted(ALL_CORES)[:workers])
        os.sched_setaffinity(0, cores)
        return cores
    if workers == 1:
        return split_cores()[0]
    os.sched_setaffinity(0, ALL_CORES)
    return set(ALL_CORES)


async def talk_until(
    cloud: Cloud,
    http: httpx.AsyncClient,
    url: str,
    call_id: str,
    team: bool,
    speech: bytes,
    measuring: asyncio.Event,
    stop: asyncio.Event,
    result: CallResult,
    admitted: asyncio.Future[bool],
    turns: int,
) -> None:
    """Start a call and have its caller talk, turn after turn, until ``stop``.

    ``admitted`` says whether ``/run`` took the call, as soon as it answers.
    Turns that begin once ``measuring`` is set are measured into ``result``,
    whose ``enough`` is set once ``turns`` of them are.
    """
    call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.2)))
    response = await http.post(f"{url}/run", json=call_body(call_id, team))
    admitted.set_result(response.status_code == 200)
    if response.status_code == 503:
        del cloud.manager.calls[call_id]
        return
    if response.status_code != 200:
        raise RuntimeError(f"/run failed: {response.text}")
    reply_secs = len(ANSWER) * MS_PER_CHAR / 1000
    await call.wait_bot_audio(min_secs=reply_secs * 0.9, timeout=60)
    while not stop.is_set():
        await asyncio.sleep(PAUSE_AFTER_REPLY_S)
        measured = measuring.is_set()
        heard_before = call.received_bot_secs()
        cloud.deepgram.push_transcripts(QUESTION)
        before, latency = await caller_turn(cloud, call, speech, timeout=60)

        def heard_whole_reply(c: CallRecord, h: float = heard_before) -> bool:
            return c.received_bot_secs() - h >= reply_secs * 0.95

        await call.wait(heard_whole_reply, 60, "the whole reply")
        if measured:
            result.voice_to_voice.append(latency)
            late = lateness(call, before, time.monotonic())
            result.worst_lateness = max(result.worst_lateness, late)
            if len(result.voice_to_voice) >= turns:
                result.enough.set()
    await http.post(f"{url}/stop", params={"id": call_id})
    await call.wait_closed(timeout=20)
    del cloud.manager.calls[call_id]


async def measure_admission(
    team: bool,
    workers: int,
    turns: int,
    speech: bytes,
    gap: float,
    burst: int = 0,
    refusals_in_a_row: int = 4,
) -> Admitted:
    """Offer calls to a runner as it ships until it refuses ``refusals_in_a_row`` in a row.

    ``burst`` calls are offered at once first; then one at a time, each
    ``gap`` seconds after the last was answered.
    """
    runner_cores = pod_cores(workers, shared=False)
    cloud = Cloud(voices=VOICES, ms_per_char=MS_PER_CHAR, responder=answer)
    cloud.cartesia.pacing = PROVIDER_PACING
    threshold = DEFAULT_LOAD_THRESHOLD
    kind = "team" if team else "single"
    async with cloud:
        environment = {
            **cloud.environment(),
            "RUNNER_WORKERS": str(workers),
            "RUNNER_LOAD_THRESHOLD": str(threshold),
        }
        async with (
            RunnerProcess(environment, cores=runner_cores) as runner,
            httpx.AsyncClient(timeout=60) as http,
        ):
            loop = asyncio.get_running_loop()
            measuring, stop = asyncio.Event(), asyncio.Event()
            taken: list[tuple[asyncio.Task[None], CallResult]] = []
            offered = 0

            async def offer() -> bool:
                nonlocal offered
                result, took = CallResult(), loop.create_future()
                call_id = f"admit-{kind}-{offered}"
                offered += 1
                task = asyncio.create_task(
                    talk_until(
                        cloud,
                        http,
                        runner.url,
                        call_id,
                        team,
                        speech,
                        measuring,
                        stop,
                        result,
                        took,
                        turns,
                    )
                )
                if await took:
                    taken.append((task, result))
                    return True
                await task
                return False

            outcomes = await asyncio.gather(*(offer() for _ in range(burst)))
            refused, in_a_row = outcomes.count(False), 0
            while in_a_row < refusals_in_a_row and len(taken) < 200:
                await asyncio.sleep(gap)
                if await offer():
                    in_a_row = 0
                else:
                    refused, in_a_row = refused + 1, in_a_row + 1
            # The calls it took talk on; their turns from now on are measured.
            measured = (await http.get(f"{runner.url}/health")).json()["load"]["measured"]
            measuring.set()
            cpu0, own0, all0 = runner.cpu_seconds(), _own_cpu(), _machine_cpu()
            wall0 = time.monotonic()
            results = [result for _, result in taken]
            await asyncio.gather(*(r.enough.wait() for r in results))
            wall = time.monotonic() - wall0
            cpu_share = (runner.cpu_seconds() - cpu0) / wall
            other = (_machine_cpu() - all0) - (runner.cpu_seconds() - cpu0) - (_own_cpu() - own0)
            other_cpu = max(0.0, other) / wall
            stop.set()
            await asyncio.gather(*(task for task, _ in taken))
    return Admitted(
        workers=workers,
        team=team,
        admitted=len(taken),
        refused=refused,
        voice_to_voice=[v for r in results for v in r.voice_to_voice],
        worst_lateness=max((r.worst_lateness for r in results), default=float("nan")),
        threshold=threshold,
        measured=measured,
        cpu_share=cpu_share,
        other_cpu=other_cpu,
    )


async def measure(
    team: bool,
    workers: int,
    levels: list[int],
    turns: int,
    speech: bytes,
    burst: bool,
    shared: bool = False,
    root: Path = ROOT,
) -> Capacity:
    runner_cores = pod_cores(workers, shared)
    cloud = Cloud(voices=VOICES, ms_per_char=MS_PER_CHAR, responder=answer)
    cloud.cartesia.pacing = None if burst else PROVIDER_PACING
    async with cloud:
        environment = {**cloud.environment(), "RUNNER_WORKERS": str(workers)}
        async with (
            RunnerProcess(environment, cores=runner_cores, root=root) as runner,
            httpx.AsyncClient(timeout=60) as http,
        ):
            capacity = await measure_levels(
                cloud, runner, http, team, workers, levels, turns, speech
            )
    if shared:
        capacity.cores = f"{workers} core{'s' if workers > 1 else ''} shared with the simulators"
    elif workers == 1:
        capacity.cores = "1 core of its own, the simulators on the other"
    else:
        capacity.cores = f"{len(runner_cores)} cores shared with the simulators"
    return capacity


async def measure_levels(
    cloud: Cloud,
    runner: RunnerProcess,
    http: httpx.AsyncClient,
    team: bool,
    workers: int,
    levels: list[int],
    turns: int,
    speech: bytes,
) -> Capacity:
    # A call on each worker first, so the figures below do not include first calls' imports.
    await run_level(cloud, runner, http, workers, team, 1, speech, runner.rss_mib())
    idle_rss = runner.rss_mib()
    rows: list[tuple[Any, ...]] = []
    baseline, largest = float("inf"), 0
    for n in [1, *levels]:
        for attempt in range(1, RETRIES + 2):
            level = await run_level(cloud, runner, http, n, team, turns, speech, idle_rss)
            p95 = percentile(level.voice_to_voice, 95)
            if n == 1:
                baseline = min(baseline, p95)  # the quietest one-call figure is the bar
            passed = level.worst_lateness <= PACE_SLACK_S and p95 <= baseline + V2V_SLACK_S
            disturbed = level.other_cpu > DISTURBED_CPU
            rows.append(
                (
                    n,
                    attempt,
                    percentile(level.voice_to_voice, 50) * 1000,
                    p95 * 1000,
                    level.worst_lateness * 1000,
                    level.runner_cpu_per_call * 100,
                    level.rss_per_call_mib,
                    level.simulators_cpu * 100,
                    level.other_cpu * 100,
                    "yes" if passed else "no",
                )
            )
            # Try again only what other work on the machine may have spoiled.
            if (passed and not (n == 1 and disturbed)) or not disturbed:
                break
        if not passed:
            return Capacity(workers, team, largest, rows, baseline=baseline, first_failing=n)
        largest = n
    return Capacity(workers, team, largest, rows, baseline=baseline)


def report(capacity: Capacity) -> None:
    kind = "Team (3 members)" if capacity.team else "Single AI"
    workers = f"{capacity.workers} worker{'s' if capacity.workers > 1 else ''}"
    print(f"### {kind}, {workers} ({capacity.cores})\n")
    print(
        table(
            [
                "calls",
                "try",
                "v2v p50 ms",
                "v2v p95 ms",
                "latest chunk vs slot ms",
                "runner CPU per call %",
                "RSS per call MiB",
                "simulators CPU %",
                "other load CPU %",
                "passes",
            ],
            capacity.rows,
        )
    )
    print(f"\nLargest passing N: {capacity.largest}\n")


def summary(results: list[Capacity]) -> None:
    print("### Calls per pod\n")
    rows = []
    for team in (False, True):
        by_workers = {c.workers: c.largest for c in results if c.team == team}
        if not by_workers:
            continue
        one = by_workers.get(1)
        cells: list[Any] = ["three-member team" if team else "single AI"]
        for workers in sorted(by_workers):
            cells.append(by_workers[workers])
        ratio = by_workers[max(by_workers)] / one if one and len(by_workers) > 1 else "-"
        rows.append((*cells, ratio))
    headers = [
        "call",
        *(f"{w} worker{'s' if w > 1 else ''}" for w in sorted({c.workers for c in results})),
    ]
    print(table([*headers, "ratio"], rows))
    print()


def report_admission(taken: Admitted, capacity: Capacity | None) -> tuple[Any, ...]:
    """One row: what admission took, whether those kept pace, against the levels' figure."""
    p95 = percentile(taken.voice_to_voice, 95)
    bar = capacity.baseline + V2V_SLACK_S if capacity is not None else float("nan")
    kept_pace = taken.worst_lateness <= PACE_SLACK_S and not p95 > bar
    largest = capacity.largest if capacity is not None else None
    return (
        "three-member team" if taken.team else "single AI",
        taken.workers,
        largest if largest is not None else "-",
        capacity.first_failing if capacity is not None and capacity.first_failing else "-",
        taken.admitted,
        taken.refused,
        taken.admitted / largest if largest else "-",
        percentile(taken.voice_to_voice, 50) * 1000,
        p95 * 1000,
        taken.worst_lateness * 1000,
        taken.measured,
        taken.cpu_share,
        taken.other_cpu * 100,
        "yes" if kept_pace else "no",
    )


async def main(
    workers: list[int],
    kinds: list[str],
    levels: list[int] | None,
    turns: int,
    burst: bool,
    shared: bool,
    admission: bool,
    gap: float,
    admission_burst: int,
    root: Path = ROOT,
) -> None:
    banner("Capacity")
    speech = speak(QUESTION)
    results = []
    admitted_rows = []
    for count in workers:
        for team in (kind == "team" for kind in kinds):
            capacity = None
            if levels != []:
                capacity = await measure(
                    team,
                    count,
                    levels or LEVELS.get(count, LEVELS[2]),
                    turns,
                    speech,
                    burst,
                    shared,
                    root,
                )
                report(capacity)
                results.append(capacity)
            if admission:
                taken = await measure_admission(team, count, turns, speech, gap, admission_burst)
                admitted_rows.append(report_admission(taken, capacity))
    if results:
        summary(results)
    if admitted_rows:
        arrivals = f"{admission_burst} at once, then " if admission_burst else ""
        print(
            f"### What the runner's own admission takes (RUNNER_LOAD_THRESHOLD "
            f"{DEFAULT_LOAD_THRESHOLD:g}; calls offered {arrivals}one every {gap:g} s after the "
            f"last was answered, until {4} in a row are refused)\n"
        )
        print(
            table(
                [
                    "call",
                    "workers",
                    "largest passing level",
                    "first failing level",
                    "admitted",
                    "refused",
                    "admitted / largest passing",
                    "v2v p50 ms",
                    "v2v p95 ms",
                    "latest chunk vs slot ms",
                    "runner's measure at the end",
                    "runner CPU while they talk",
                    "other load CPU %",
                    "admitted keep pace",
                ],
                admitted_rows,
            )
        )
        print()
    voice = "in one burst per reply" if burst else "paced like a real provider (150 ms, then 1.5x)"
    print(
        "Turn settings: Silero VAD (stop_secs 0.2) plus the fixed 0.6 s rule; the Deepgram "
        f"simulator transcribes at once; replies of {len(ANSWER)} characters at "
        f"{MS_PER_CHAR:g} ms each, {voice}."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="1,2", help="pod sizes to measure")
    parser.add_argument("--kinds", default="single,team")
    parser.add_argument(
        "--levels", help="levels after one call (default: by pod size; 'none' skips them)"
    )
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--burst", action="store_true", help="unpaced voice: each reply at once")
    parser.add_argument(
        "--shared",
        action="store_true",
        help="a pod of N workers shares its N cores with the simulators (fair pod ratios)",
    )
    parser.add_argument(
        "--no-admission", action="store_true", help="skip the ramp against the shipped admission"
    )
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between offered calls")
    parser.add_argument(
        "--admission-burst", type=int, default=0, help="calls offered at once before the ramp"
    )
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="another checkout to measure (levels only)"
    )
    args = parser.parse_args()
    if args.levels == "none":
        chosen: list[int] | None = []
    else:
        chosen = [int(n) for n in args.levels.split(",")] if args.levels else None
    # The simulators are the load generator: on uvloop they take less of the cores they share.
    uvloop.run(
        main(
            [int(n) for n in args.workers.split(",")],
            args.kinds.split(","),
            chosen,
            args.turns,
            args.burst,
            args.shared,
            not args.no_admission,
            args.gap,
            args.admission_burst,
            args.root,
        )
    )
