"""Admission and drain: the runner refuses what it cannot carry, and a deploy drops no call.

Admission runs in-process. The drain is a property of the process that
serves the API (its signals, its exit status), so those tests start
``python main.py`` against the simulators and send it SIGTERM, once as a
single process and once as the front of two workers (``tests/workers/test_workers.py``
has the pool's own tests, admission across it included).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from playground.server import RunnerServer
from simulators.manager import Caller, CallRecord
from simulators.openai import Reply
from teamrunner.serving.server import HURRY_SIGNAL

from conftest import Cloud, cloud_settings
from runner_process import DRAINING, RunnerProcess
from scenarios import caller_says, voice_request

CALL_A = "5b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"
CALL_B = "6c1d2e3f-4051-4b6c-9d7e-8f90a1b2c3d4"
CALL_C = "7d2e3f40-5162-4c7d-ae8f-90a1b2c3d4e5"


@pytest.fixture
async def small_runner(cloud: Cloud) -> AsyncIterator[RunnerServer]:
    async with RunnerServer(cloud_settings(cloud, max_calls=2)) as server:
        yield server


async def test_past_max_calls_run_answers_503_at_once_and_ready_says_so(
    cloud: Cloud, small_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    url = small_runner.url
    for call_id in (CALL_A, CALL_B, CALL_C):
        cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.2)))
    ready = (await http.get(f"{url}/ready")).json()
    assert {k: ready[k] for k in ("status", "calls", "max_calls")} == {
        "status": "ready",
        "calls": 0,
        "max_calls": 2,
    }
    for call_id in (CALL_A, CALL_B):
        started = await http.post(f"{url}/run", json=voice_request(id=call_id))
        assert started.status_code == 200, started.text

    refused = await http.post(f"{url}/run", json=voice_request(id=CALL_C))
    not_ready = await http.get(f"{url}/ready")

    assert refused.status_code == 503
    assert "at capacity" in refused.json()["error"]
    assert refused.headers["retry-after"] == "2"
    assert not_ready.status_code == 503 and "at capacity" in not_ready.json()["error"]
    assert len(small_runner.sessions) == 2
    # A call that ends makes room again.
    assert (await http.post(f"{url}/stop", params={"id": CALL_A})).status_code == 200
    assert (await http.get(f"{url}/ready")).status_code == 200
    assert (await http.post(f"{url}/run", json=voice_request(id=CALL_C))).status_code == 200
    metrics = (await http.get(f"{url}/metrics")).text
    assert 'runner_calls_refused_total{reason="capacity"} 1.0' in metrics


@pytest.fixture(params=["1", "2"], ids=["one process", "two workers"])
def draining_runner(
    cloud: Cloud, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[RunnerProcess]:
    """The runner as a process, or a front with two workers (the drain holds for both);
    a test's ``drain_secs`` mark sets ``RUNNER_DRAIN_SECS``."""
    mark = request.node.get_closest_marker("drain_secs")
    environment = {
        **cloud.environment(),
        "RUNNER_DRAIN_SECS": str(mark.args[0] if mark else 2),
        "RUNNER_LOG_LEVEL": "INFO",
        "RUNNER_WORKERS": request.param,
    }
    process = RunnerProcess(environment, tmp_path).start()
    yield process
    process.stop()


async def wait_exit(process: RunnerProcess, timeout: float) -> int:
    return await asyncio.to_thread(process.wait, timeout)


async def greeted_call(cloud: Cloud, runner: RunnerProcess, http: httpx.AsyncClient) -> CallRecord:
    """A call on ``runner`` whose greeting has been said."""
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_A, caller=Caller(Caller.silence(0.3)))
    assert (await http.post(f"{runner.url}/run", json=voice_request(id=CALL_A))).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)
    return call


@pytest.mark.drain_secs(30)
async def test_sigterm_drains_calls_carry_on_and_new_ones_are_refused(
    cloud: Cloud, draining_runner: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = draining_runner.url
    cloud.openai.push(Reply.say("Hello."), Reply.say("Still here, how can I help?"))
    call = cloud.manager.expect_call(CALL_A, caller=Caller(Caller.silence(0.3)))
    assert (await http.post(f"{url}/run", json=voice_request(id=CALL_A))).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    draining_runner.signal(signal.SIGTERM)
    await draining_runner.wait_log(DRAINING)
    ready = await http.get(f"{url}/ready")
    refused = await http.post(f"{url}/run", json=voice_request(id=CALL_B))
    health = await http.get(f"{url}/health")
    metrics = await http.get(f"{url}/metrics")
    # The live call goes on: the caller speaks, and the bot answers, during the drain.
    await caller_says(cloud, "Are you still there?", call_id=CALL_A)
    await call.wait(
        lambda c: "Still here, how can I help?" in c.bot_llm_text(), 10, "an answer while draining"
    )
    assert call.is_open("output")
    # pipecat-manager ends the call itself; the runner then has nothing left and exits.
    assert (await http.post(f"{url}/stop", params={"id": CALL_A})).status_code == 200
    status = await wait_exit(draining_runner, 10)

    assert ready.status_code == 503 and ready.headers["retry-after"] == "5"
    assert "draining" in ready.json()["error"]
    assert refused.status_code == 503 and "shutting down" in refused.json()["error"]
    assert refused.headers["retry-after"] == "5"
    # Counted and logged once, by the process that refused it (a pool's front, or the runner).
    assert 'runner_calls_refused_total{reason="draining"} 1.0' in metrics.text
    assert draining_runner.log.count("refused POST /run: 503") == 1
    assert health.status_code == 200
    assert status == 0
    assert not call.rtvi("error")  # the call ended as Go asked, not as a shutdown


async def test_a_call_still_up_when_the_drain_ends_is_told_why_and_closed_cleanly(
    cloud: Cloud, draining_runner: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = draining_runner.url
    cloud.openai.push(Reply.say("Hello."))
    call = cloud.manager.expect_call(CALL_A, caller=Caller(Caller.silence(0.3)))
    assert (await http.post(f"{url}/run", json=voice_request(id=CALL_A))).status_code == 200
    await call.wait_rtvi("bot-llm-stopped", timeout=10)

    draining_runner.signal(signal.SIGTERM)
    status = await wait_exit(draining_runner, 15)  # RUNNER_DRAIN_SECS is 2

    [error] = call.rtvi("error")
    assert "shutting down" in error.data["error"] and error.data["fatal"] is True
    await call.wait_closed(timeout=5)
    closes = [c for c in call.connections() if not c.opened]
    assert closes and all(c.closed_by == "runner" and c.close_code == 1000 for c in closes)
    assert status == 0
    assert "call ended (shutdown" in draining_runner.log


@pytest.mark.drain_secs(600)
async def test_a_second_signal_ends_every_call_at_once(
    cloud: Cloud, draining_runner: RunnerProcess, http: httpx.AsyncClient
) -> None:
    runner = draining_runner
    call = await greeted_call(cloud, runner, http)

    runner.signal(signal.SIGTERM)
    await runner.wait_log(DRAINING)
    assert runner.running  # draining, for up to ten minutes
    runner.signal(signal.SIGTERM)
    status = await wait_exit(runner, 10)

    assert status == 0
    assert call.rtvi("error")
    await call.wait_closed(timeout=5)


@pytest.mark.drain_secs(600)
async def test_the_hurry_signal_alone_ends_every_call_at_once(
    cloud: Cloud, draining_runner: RunnerProcess, http: httpx.AsyncClient
) -> None:
    # What a front sends its workers for a second signal: one signal, which two
    # SIGTERMs sent together are not always (the kernel can merge them).
    runner = draining_runner
    call = await greeted_call(cloud, runner, http)

    runner.signal(HURRY_SIGNAL)
    status = await wait_exit(runner, 10)

    assert status == 0
    assert call.rtvi("error")
    await call.wait_closed(timeout=5)
