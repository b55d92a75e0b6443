"""Admission by load: a runner takes what its core can carry, and refuses past it.

The measure and the arithmetic (``teamrunner.lifecycle.admission``) are checked on their
own with a clock the test turns; what a runner process admits is checked
against ``python main.py`` with the simulators, since the load it measures is
its own process's: one worker, and a front with two.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from simulators.manager import Caller
from simulators.openai import Reply
from teamrunner.lifecycle.admission import WINDOW_SECS, Admission, CallCost, CpuMeter
from teamrunner.responses import CallKind

from conftest import Cloud
from runner_process import RunnerProcess
from scenarios import caller_says, voice_request

TEXT = {"stt_type": None, "tts_type": None}


class Clock:
    """A wall clock and a CPU clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.cpu = 0.0

    def run(self, seconds: float, share: float) -> None:
        """``seconds`` pass with the process keeping ``share`` of a core busy."""
        self.wall += seconds
        self.cpu += seconds * share


def metered(clock: Clock) -> CpuMeter:
    return CpuMeter(cpu_seconds=lambda: clock.cpu, clock=lambda: clock.wall)


def run_sampled(meter: CpuMeter, clock: Clock, seconds: float, share: float) -> None:
    for _ in range(round(seconds / 0.25)):
        clock.run(0.25, share)
        meter.sample()


def test_the_measure_is_the_mean_over_a_whole_turn_whatever_the_phase() -> None:
    clock = Clock()
    meter = metered(clock)
    # Calls that speak and listen together: 0.8 of a core for 2 s, 0.2 for 4 s.
    for _ in range(3):
        run_sampled(meter, clock, 2.0, 0.8)
        run_sampled(meter, clock, 4.0, 0.2)
    assert meter.load == pytest.approx(0.4)
    # Caught in the quiet part of the turn, it still counts the busy part.
    run_sampled(meter, clock, 2.0, 0.8)
    run_sampled(meter, clock, 3.0, 0.2)
    assert meter.load == pytest.approx((2 * 0.8 + 3 * 0.2 + 1 * 0.2) / 6)

    # Load that stays fills the window.
    run_sampled(meter, clock, WINDOW_SECS, 0.6)
    assert meter.load == pytest.approx(0.6)


def test_starting_calls_is_left_out_of_the_measure_however_long_it_takes() -> None:
    clock = Clock()
    meter = metered(clock)
    run_sampled(meter, clock, 3.0, 0.10)

    # Five seconds of starts at full tilt, longer than the window.
    with meter.starting():
        run_sampled(meter, clock, 5.0, 1.0)
    assert meter.load == pytest.approx(0.10)
    clean_before = meter.clean_secs
    run_sampled(meter, clock, 1.0, 0.20)
    assert meter.clean_secs == pytest.approx(clean_before + 0.75)  # the first quarter overlapped
    assert meter.load == pytest.approx(0.20)


def test_calls_just_admitted_count_until_the_measure_sees_them() -> None:
    clock = Clock()
    costs = CallCost(text=0.002, speaks=0.015, voice=0.05)
    meter = metered(clock)
    admission = Admission(0.21, None, meter=meter, costs=costs)

    # A burst of voice calls, none yet in the measure: it stops at the threshold.
    admitted = 0
    for n in range(10):
        if admission.refusal(CallKind.VOICE, n) is None:
            admission.admitted(f"call-{n}", CallKind.VOICE)
            admitted += 1
    assert admitted == 4
    assert admission.refusal(CallKind.TEXT, 4) is None  # a text call still fits

    # Up, they show in the measure as the window fills with them; the rest is pending.
    for n in range(4):
        admission.started(f"call-{n}")
    run_sampled(meter, clock, WINDOW_SECS / 2, 0.2)
    assert meter.load == pytest.approx(0.2)
    assert admission.pending() == pytest.approx(0.1)
    run_sampled(meter, clock, WINDOW_SECS / 2, 0.2)
    assert admission.pending() == 0
    assert admission.projected() == pytest.approx(0.2)


def test_a_hard_cap_refuses_whatever_the_load() -> None:
    admission = Admission(0.0, 3)

    assert admission.refusal(CallKind.TEXT, 2) is None
    assert "RUNNER_MAX_CALLS" in (admission.refusal(CallKind.TEXT, 3) or "")


@pytest.fixture
async def one_worker(
    cloud: Cloud, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A runner process of one worker, its load threshold given by the test's parameter."""
    environment = {**cloud.environment(), "RUNNER_WORKERS": "1", **getattr(request, "param", {})}
    runner = RunnerProcess(environment, tmp_path).start()
    yield runner.url
    await runner.astop()


async def test_a_hundred_text_calls_at_once_on_one_worker_are_all_admitted_and_answered(
    cloud: Cloud, one_worker: str, http: httpx.AsyncClient
) -> None:
    ids = [f"text-{n:03}" for n in range(100)]
    cloud.openai.push(*[Reply.say("Hello, how can I help?") for _ in ids])
    calls = [cloud.manager.expect_call(call_id) for call_id in ids]

    answers = await asyncio.gather(
        *(http.post(f"{one_worker}/run", json=voice_request(id=i, **TEXT)) for i in ids)
    )

    assert [a.status_code for a in answers] == [200] * 100, next(
        a.text for a in answers if a.status_code != 200
    )
    await asyncio.gather(*(c.wait(lambda r: r.bot_llm_text(), 30, "the greeting") for c in calls))
    health = (await http.get(f"{one_worker}/health")).json()
    assert health["sessions"] == 100, health


@pytest.mark.parametrize("one_worker", [{"RUNNER_LOAD_THRESHOLD": "0.16"}], indirect=True)
async def test_a_burst_of_voice_calls_stops_at_what_the_worker_can_carry(
    cloud: Cloud, one_worker: str, http: httpx.AsyncClient
) -> None:
    # A voice call costs 0.055 of a core: two fit under 0.16 (with room for the idle
    # runner's own work), the third would not.
    ids = [f"voice-{n}" for n in range(5)]
    for call_id in ids:
        cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.2)))

    answers = await asyncio.gather(
        *(http.post(f"{one_worker}/run", json=voice_request(id=i)) for i in ids)
    )

    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 200, 503, 503, 503], [a.text for a in answers]
    refused = next(a for a in answers if a.status_code == 503)
    assert refused.headers["retry-after"] == "2"
    assert "RUNNER_LOAD_THRESHOLD" in refused.json()["error"]
    # A text call costs next to nothing: it is still taken.
    text = await http.post(f"{one_worker}/run", json=voice_request(id="text-0", **TEXT))
    assert text.status_code == 200, text.text
    metrics = (await http.get(f"{one_worker}/metrics")).text
    assert 'runner_calls_refused_total{reason="capacity"} 3.0' in metrics
    assert 'runner_admits{kind="voice",worker="0"} 0.0' in metrics


@pytest.mark.parametrize("one_worker", [{"RUNNER_LOAD_THRESHOLD": "0.08"}], indirect=True)
async def test_once_a_call_shows_in_the_measure_its_load_refuses_the_next_and_it_goes_on(
    cloud: Cloud, one_worker: str, http: httpx.AsyncClient
) -> None:
    # One voice call (0.055 of a core) fits under 0.08 on its cost alone; once the
    # measure's window is full of it only the measure counts it, and a real voice call,
    # even a silent one, keeps more than 0.025 of a core busy (about 0.05 measured on
    # 2026-12-02), which leaves no room for a second.
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call("voice-0", caller=Caller(Caller.silence(0.2)))
    assert (await http.post(f"{one_worker}/run", json=voice_request(id="voice-0"))).is_success
    await call.wait_rtvi("bot-llm-stopped", timeout=15)

    async def measured() -> dict[str, object]:
        while True:
            load = (await http.get(f"{one_worker}/health")).json()["load"]
            if load["pending"] == 0 and load["measured"] > 0:
                return dict(load)
            await asyncio.sleep(0.25)

    load = await asyncio.wait_for(measured(), timeout=15)
    refused = await http.post(f"{one_worker}/run", json=voice_request(id="voice-1"))
    not_ready = await http.get(f"{one_worker}/ready")

    assert refused.status_code == 503, (refused.text, load)
    assert load["admits"]["voice"] is False  # type: ignore[index]
    assert not_ready.status_code == 503 and "at capacity" in not_ready.json()["error"]
    # The call admitted carries on as if nothing happened.
    cloud.openai.push(Reply.say("Still here."))
    await caller_says(cloud, "Are you there?", call_id="voice-0")
    await call.wait(lambda c: "Still here." in c.bot_llm_text(), 15, "an answer")


@pytest.fixture
async def two_workers(cloud: Cloud, tmp_path: Path) -> AsyncIterator[str]:
    environment = {
        **cloud.environment(),
        "RUNNER_WORKERS": "2",
        "RUNNER_LOAD_THRESHOLD": "0.1",
    }
    runner = RunnerProcess(environment, tmp_path).start()
    yield runner.url
    await runner.astop()


async def test_a_pool_offers_a_call_to_each_worker_before_it_refuses_it(
    cloud: Cloud, two_workers: str, http: httpx.AsyncClient
) -> None:
    # A voice call costs 0.055: each worker carries one under 0.1, so the pod carries two.
    ids = ["voice-0", "voice-1", "voice-2"]
    for call_id in ids:
        cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.2)))
    # Each worker idle in its own measure first: a worker just forked and warm can
    # show a moment of its start-up on a busy machine, which is not a call's room.
    idle = await asyncio.wait_for(idle_workers(http, two_workers), timeout=15)

    answers = [
        await http.post(f"{two_workers}/run", json=voice_request(id=call_id)) for call_id in ids
    ]

    assert [a.status_code for a in answers] == [200, 200, 503], ([a.text for a in answers], idle)
    assert answers[2].headers["retry-after"] == "2"
    listed = (await http.get(f"{two_workers}/calls")).json()["calls"]
    assert sorted(c["worker"] for c in listed) == [0, 1]
    # Refused once by the pod, not once per worker that had no room.
    metrics = (await http.get(f"{two_workers}/metrics")).text
    assert 'runner_calls_refused_total{reason="capacity"} 1.0' in metrics


async def idle_workers(http: httpx.AsyncClient, url: str) -> list[object]:
    """Wait until every worker's measure shows it idle; the loads it reported."""
    while True:
        workers = (await http.get(f"{url}/health")).json()["workers"]
        loads = [w.get("load") for w in workers]
        if loads and all(
            load and load["pending"] == 0 and load["measured"] < 0.02 for load in loads
        ):
            return loads
        await asyncio.sleep(0.25)
