"""A pool of worker processes behind one front: one address, calls spread over the workers.

Every test starts ``python main.py`` with ``RUNNER_WORKERS=2`` against the
simulators and talks to the front's port only, as Go does; which worker runs
a call is read from the front's ``/calls``, and what each call did from what
the manager simulator received on that call's sockets.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from simulators.manager import Caller, CallRecord
from simulators.openai import Reply
from teamrunner.config import DEFAULT_LOAD_THRESHOLD, Settings
from teamrunner.workers import usable_cores, worker_count

from conftest import Cloud
from runner_process import DRAINING, RunnerProcess
from scenarios import caller_says, voice_request

CALL_A = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"
CALL_B = "1b2c3d4e-5f60-4b7c-9d8e-9fa0b1c2d3e4"
CALL_C = "2c3d4e5f-6071-4c8d-ae9f-a0b1c2d3e4f5"


@pytest.fixture
async def pool(
    cloud: Cloud, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[RunnerProcess]:
    """The runner as a front and two workers; a ``drain_secs`` mark sets ``RUNNER_DRAIN_SECS``."""
    mark = request.node.get_closest_marker("drain_secs")
    environment = {
        **cloud.environment(),
        "RUNNER_WORKERS": "2",
        "RUNNER_MAX_CALLS": "4",
        "RUNNER_DRAIN_SECS": str(mark.args[0] if mark else 30),
        "RUNNER_LOG_LEVEL": "INFO",
    }
    process = RunnerProcess(environment, tmp_path).start()
    yield process
    await process.astop()


async def start_call(cloud: Cloud, http: httpx.AsyncClient, url: str, call_id: str) -> CallRecord:
    """Start a single-AI voice call through the front; returns once the bot has greeted."""
    call = cloud.manager.expect_call(call_id, caller=Caller(Caller.silence(0.3)))
    started = await http.post(f"{url}/run", json=voice_request(id=call_id))
    assert started.status_code == 200, started.text
    assert started.json()["id"] == call_id
    await call.wait_rtvi("bot-llm-stopped", timeout=15)
    return call


async def placement(http: httpx.AsyncClient, url: str) -> dict[str, int]:
    """Which worker runs each call, as the front lists them."""
    listed = (await http.get(f"{url}/calls")).json()["calls"]
    return {c["id"]: c["worker"] for c in listed}


async def answers(cloud: Cloud, call: CallRecord, line: str) -> None:
    """The caller says something on ``call`` and hears the bot answer."""
    cloud.openai.push(Reply.say(line))
    await caller_says(cloud, "Are you there?", call_id=call.call_id)
    await call.wait(lambda c: line in c.bot_llm_text(), 15, f"the answer {line!r}")


async def test_calls_go_to_the_least_loaded_worker_and_stops_to_the_one_holding_them(
    cloud: Cloud, pool: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = pool.url
    call_a = await start_call(cloud, http, url, CALL_A)
    call_b = await start_call(cloud, http, url, CALL_B)
    placed = await placement(http, url)
    assert sorted(placed.values()) == [0, 1]  # one call on each worker

    assert (await http.post(f"{url}/stop", params={"id": CALL_A})).json() == {
        "status": "stopped",
        "id": CALL_A,
    }
    await call_a.wait_closed(timeout=10)
    # The other worker's call never noticed.
    assert call_b.is_open("output") and call_b.is_open("input")
    await answers(cloud, call_b, "Still with you.")
    # The freed worker is now the least loaded: the next call goes there.
    await start_call(cloud, http, url, CALL_C)
    placed = await placement(http, url)
    assert placed == {CALL_B: placed[CALL_B], CALL_C: 1 - placed[CALL_B]}

    # A second /run for a running id goes to the worker holding it, which refuses it.
    duplicate = await http.post(f"{url}/run", json=voice_request(id=CALL_B))
    unknown = await http.post(f"{url}/stop", params={"id": CALL_A})
    bad_id = await http.post(f"{url}/stop", params={"id": "../x"})

    assert duplicate.status_code == 409 and "already running" in duplicate.json()["error"]
    assert unknown.status_code == 404 and unknown.json()["status"] == "error"
    assert bad_id.status_code == 422
    for call_id in (CALL_B, CALL_C):
        assert (await http.post(f"{url}/stop", params={"id": call_id})).status_code == 200
    assert (await http.get(f"{url}/calls")).json() == {"calls": []}


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``: its children, theirs, and so on (from ``/proc``)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # it ended meanwhile
            # "pid (name) state ppid ...": the name may hold spaces and parentheses.
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found: set[int] = set()
    below = {pid}
    while below:
        below = {child for child, parent in parents.items() if parent in below} - found
        found |= below
    return found


async def until_ended(pids: set[int], timeout: float) -> None:
    """Wait until every one of ``pids`` has exited (each is watched through a pidfd)."""
    loop = asyncio.get_running_loop()
    waits = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # already gone
        ended = loop.create_future()
        loop.add_reader(fd, ended.set_result, None)
        waits.append((fd, ended))
    try:
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(ended for _, ended in waits))
    finally:
        for fd, _ in waits:
            loop.remove_reader(fd)
            os.close(fd)


def metric_file_pids(worker_pid: int) -> set[int]:
    """The processes that counted a metric: the pids in the workers' metric files' names.

    The directory is the one the workers write in, read from a worker's environment.
    """
    environ = Path(f"/proc/{worker_pid}/environ").read_bytes().split(b"\0")
    [directory] = [
        v.split(b"=", 1)[1] for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")
    ]
    # prometheus-client names each file by kind and pid: counter_123.db, gauge_livesum_123.db.
    return {int(p.stem.rpartition("_")[2]) for p in Path(directory.decode()).glob("*.db")}


async def test_health_ready_calls_and_metrics_answer_for_the_whole_runner(
    cloud: Cloud, pool: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = pool.url
    idle = (await http.get(f"{url}/health")).json()
    await start_call(cloud, http, url, CALL_A)
    await start_call(cloud, http, url, CALL_B)

    health = (await http.get(f"{url}/health")).json()
    ready = await http.get(f"{url}/ready")
    listed = (await http.get(f"{url}/calls")).json()["calls"]
    metrics = (await http.get(f"{url}/metrics")).text
    schema = (await http.get(f"{url}/openapi.json")).json()

    # Each worker loaded its speech models before the runner answered at all.
    assert [w["speech_models_loaded"] for w in idle["workers"]] == [2, 2]
    assert [(w["index"], w["state"], w["calls"]) for w in health["workers"]] == [
        (0, "ready", 1),
        (1, "ready", 1),
    ]
    assert health["status"] == "ok" and health["sessions"] == 2
    pids = {w["pid"] for w in health["workers"]}
    assert len(pids) == 2 and pool.pid not in pids
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "calls": 2,
        "max_calls": 4,
        "workers": 2,
        "admitting": 2,
    }
    # Each worker's load, as it measures it, and what its admission would decide.
    for worker in health["workers"]:
        assert 0 <= worker["load"]["measured"] < 1
        assert worker["load"]["threshold"] == DEFAULT_LOAD_THRESHOLD
        assert worker["load"]["admits"] == {
            "text": True,
            "speaks": True,
            "voice": True,
            "team_voice": True,
        }
    assert 'runner_admits{kind="voice",worker="0"} 1.0' in metrics
    assert {c["id"] for c in listed} == {CALL_A, CALL_B}
    assert all(c["hears"] and c["speaks"] and not c["team"] for c in listed)
    # Counted in two processes, summed in one exposition.
    assert "runner_calls_active 2.0" in metrics
    assert 'runner_calls_started_total{kind="single"} 2.0' in metrics
    assert "runner_workers_up 2.0" in metrics
    assert metrics.count("# TYPE runner_calls_started_total counter") == 1
    # Only the workers count: nothing counted in the template they were forked from.
    assert metric_file_pids(min(pids)) == pids
    assert "/run" in schema["paths"] and "/stop" in schema["paths"]

    for call_id in (CALL_A, CALL_B):
        assert (await http.post(f"{url}/stop", params={"id": call_id})).status_code == 200
    metrics = (await http.get(f"{url}/metrics")).text
    assert "runner_calls_active 0.0" in metrics
    assert 'runner_calls_ended_total{reason="stopped"} 2.0' in metrics


async def test_admission_holds_across_the_pool(
    cloud: Cloud, pool: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = pool.url  # RUNNER_MAX_CALLS=4 caps the pod: four calls, two on each worker
    ids = [f"{CALL_A[:-1]}{n}" for n in range(5)]
    for call_id in ids[:4]:
        await start_call(cloud, http, url, call_id)
    cloud.manager.expect_call(ids[4], caller=Caller(Caller.silence(0.3)))

    refused = await http.post(f"{url}/run", json=voice_request(id=ids[4]))
    not_ready = await http.get(f"{url}/ready")
    placed = await placement(http, url)

    assert sorted(placed.values()) == [0, 0, 1, 1]
    assert refused.status_code == 503 and refused.headers["retry-after"] == "2"
    assert "at capacity" in refused.json()["error"]
    assert not_ready.status_code == 503 and "at capacity: 4 of 4" in not_ready.json()["error"]
    # A call that ends by itself (Go hangs up) frees its place without a /stop.
    await cloud.manager.hangup(ids[0])
    for _ in range(100):  # the pool asks its workers every second
        if ids[0] not in await placement(http, url):
            break
        await asyncio.sleep(0.05)
    assert (await http.get(f"{url}/ready")).status_code == 200
    assert (await http.post(f"{url}/run", json=voice_request(id=ids[4]))).status_code == 200
    assert (await placement(http, url))[ids[4]] == placed[ids[0]]
    metrics = (await http.get(f"{url}/metrics")).text
    assert 'runner_calls_refused_total{reason="capacity"} 1.0' in metrics


async def test_a_worker_killed_mid_call_ends_only_its_calls_and_is_replaced(
    cloud: Cloud, pool: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = pool.url
    call_a = await start_call(cloud, http, url, CALL_A)
    call_b = await start_call(cloud, http, url, CALL_B)
    placed = await placement(http, url)
    workers = (await http.get(f"{url}/health")).json()["workers"]
    doomed = workers[placed[CALL_A]]
    cloud.openai.push(Reply.say("Let me check that for you."))
    await caller_says(cloud, "What is my balance?", call_id=CALL_A)
    await call_a.wait(lambda c: len(c.bot_llm_text()) >= 2, 15, "a second answer")

    os.kill(doomed["pid"], signal.SIGKILL)
    # Go sees the dead worker's call end: its sockets close.
    await call_a.wait_closed(timeout=10)
    # The other call goes on as if nothing happened.
    await answers(cloud, call_b, "Yes, I am here.")
    assert call_b.is_open("output") and call_b.is_open("input")
    assert [c.opened for c in call_b.connections()] == [True, True]

    async def replaced() -> dict[str, object]:
        while True:
            health = (await http.get(f"{url}/health")).json()
            worker = health["workers"][doomed["index"]]
            if worker["state"] == "ready":
                return worker
            await asyncio.sleep(0.1)

    replacement = await asyncio.wait_for(replaced(), 60)
    assert replacement["pid"] != doomed["pid"] and replacement["speech_models_loaded"] == 2
    assert await placement(http, url) == {CALL_B: placed[CALL_B]}
    gone = await http.post(f"{url}/stop", params={"id": CALL_A})
    assert gone.status_code == 404
    # The replacement takes calls: it is the least loaded.
    await start_call(cloud, http, url, CALL_C)
    assert (await placement(http, url))[CALL_C] == doomed["index"]
    metrics = (await http.get(f"{url}/metrics")).text
    assert 'runner_calls_ended_total{reason="worker_lost"} 1.0' in metrics
    assert "runner_worker_exits_total 1.0" in metrics
    assert "runner_calls_active 2.0" in metrics  # the dead worker's share is gone
    assert 'runner_calls_started_total{kind="single"} 3.0' in metrics  # its count is not
    [lost] = [line for line in pool.log.splitlines() if "call ended (worker_lost" in line]
    assert CALL_A in lost
    assert "ended unexpectedly" in pool.log


@pytest.mark.drain_secs(10)
async def test_sigterm_to_the_front_drains_every_worker_and_it_exits_0(
    cloud: Cloud, pool: RunnerProcess, http: httpx.AsyncClient
) -> None:
    url = pool.url
    call_a = await start_call(cloud, http, url, CALL_A)
    call_b = await start_call(cloud, http, url, CALL_B)
    assert sorted((await placement(http, url)).values()) == [0, 1]

    pool.signal(signal.SIGTERM)
    await pool.wait_log(DRAINING)
    ready = await http.get(f"{url}/ready")
    refused = await http.post(f"{url}/run", json=voice_request(id=CALL_C))
    health = await http.get(f"{url}/health")
    # Calls on both workers go on while they drain, and /stop still reaches them.
    await answers(cloud, call_a, "Still here.")
    await answers(cloud, call_b, "Me too.")
    assert pool.running
    stopped = await http.post(f"{url}/stop", params={"id": CALL_A})
    # Call B is still up when the drain ends: it is told why and closed cleanly.
    status = await asyncio.to_thread(pool.wait, 30)

    assert ready.status_code == 503 and "draining" in ready.json()["error"]
    assert refused.status_code == 503 and "shutting down" in refused.json()["error"]
    assert health.status_code == 200
    assert [w["state"] for w in health.json()["workers"]] == ["draining", "draining"]
    assert stopped.status_code == 200
    assert not call_a.rtvi("error")  # ended as Go asked
    [error] = call_b.rtvi("error")
    assert "shutting down" in error.data["error"]
    await call_b.wait_closed(timeout=5)
    closes = [c for c in call_b.connections() if not c.opened]
    assert closes and all(c.closed_by == "runner" and c.close_code == 1000 for c in closes)
    assert status == 0
    assert pool.log.count("exited (0)") == 2


async def test_a_front_killed_outright_takes_its_workers_and_everything_it_started_with_it(
    cloud: Cloud, pool: RunnerProcess, http: httpx.AsyncClient
) -> None:
    workers = {w["pid"] for w in (await http.get(f"{pool.url}/health")).json()["workers"]}
    started = descendants(pool.pid)  # the workers, and the template they were forked from

    pool.signal(signal.SIGKILL)  # no drain: the front cannot tell its workers anything
    assert pool.wait(10) == -signal.SIGKILL
    await until_ended(started, timeout=30)

    assert workers < started


async def test_the_front_answers_at_once_and_a_call_that_comes_early_waits_for_the_workers(
    cloud: Cloud, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    environment = {**cloud.environment(), "RUNNER_WORKERS": "2"}
    runner = RunnerProcess(environment, tmp_path).start(until="/health")
    try:
        health = (await http.get(f"{runner.url}/health")).json()
        ready = await http.get(f"{runner.url}/ready")
        call = cloud.manager.expect_call(CALL_A, caller=Caller(Caller.silence(0.3)))
        started = await http.post(f"{runner.url}/run", json=voice_request(id=CALL_A))
        await call.wait_rtvi("bot-llm-stopped", timeout=15)
        ready_after = await http.get(f"{runner.url}/ready")
    finally:
        runner.stop()

    assert [w["state"] for w in health["workers"]] == ["starting", "starting"]
    assert ready.status_code == 503 and ready.headers["retry-after"] == "2"
    assert "starting: 0 of 2 worker processes up" in ready.json()["error"]
    assert started.status_code == 200, started.text
    assert ready_after.status_code == 200 and ready_after.json()["workers"] == 2


async def test_one_worker_is_a_single_process_with_no_front(
    cloud: Cloud, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    runner = RunnerProcess({**cloud.environment(), "RUNNER_WORKERS": "1"}, tmp_path).start()
    try:
        health = (await http.get(f"{runner.url}/health")).json()
        ready = (await http.get(f"{runner.url}/ready")).json()
    finally:
        runner.stop()

    # Ready once warm: Silero and smart-turn (RUNNER_PRELOAD_MODELS' default) are loaded.
    assert health.pop("providers")["stt"] == ["deepgram", "whisper"]
    assert health.pop("load")["admits"]["voice"]
    assert health == {"status": "ok", "sessions": 0, "speech_models_loaded": 2}
    # No cap by default: the runner admits by its load, which it reports.
    assert ready["max_calls"] is None and ready["calls"] == 0
    assert ready["load"]["threshold"] == DEFAULT_LOAD_THRESHOLD and ready["load"]["admits"]["voice"]
    assert "workers up" not in runner.log


def test_a_worker_that_cannot_start_stops_the_runner_with_status_3(
    cloud: Cloud, tmp_path: Path
) -> None:
    environment = {
        **cloud.environment(),
        "RUNNER_WORKERS": "2",
        "RUNNER_PRELOAD_MODELS": "kaldi",  # no such model: each worker fails as it warms up
    }
    runner = RunnerProcess(environment, tmp_path)
    with pytest.raises(RuntimeError, match="exited with 3"):
        runner.start()

    assert "a worker process did not start" in runner.log
    assert "RUNNER_PRELOAD_MODELS" in runner.log


def test_workers_default_to_the_cores_the_process_may_use(tmp_path: Path) -> None:
    cores = len(os.sched_getaffinity(0))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    unlimited = usable_cores(tmp_path)
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a core's time
    quota = usable_cores(tmp_path)

    assert unlimited == cores
    assert quota == 1
    assert worker_count(Settings(workers=3)) == 3
    assert worker_count(Settings()) == usable_cores()
