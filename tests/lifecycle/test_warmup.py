"""Start-up: the API answers at once, and the process is ready once it is warm.

Each test starts ``python main.py`` as it is deployed and reads what a
probe would: ``/health`` as soon as the port is open, ``/ready`` (and the
first ``/run``) while the call stack and the speech models load behind it.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import httpx
import pytest

from simulators.manager import Caller
from teamrunner.lifecycle.warmup import WarmUp, settled_heap
from teamrunner.providers.resources import SharedResources

from conftest import Cloud
from runner_process import RunnerProcess
from scenarios import CALL_ID, voice_request


def test_health_answers_before_warm_and_ready_says_warming_up_until_then(
    cloud: Cloud, tmp_path: Path
) -> None:
    runner = RunnerProcess({**cloud.environment(), "RUNNER_LOG_LEVEL": "INFO"}, tmp_path)
    try:
        runner.start(until="/health")
        early_health = httpx.get(f"{runner.url}/health")
        early_ready = httpx.get(f"{runner.url}/ready")
        deadline = time.monotonic() + 60
        while httpx.get(f"{runner.url}/ready").status_code != 200:
            assert time.monotonic() < deadline, "never warm"
            time.sleep(0.05)
        warm_health = httpx.get(f"{runner.url}/health").json()
    finally:
        runner.stop()

    assert early_health.json()["speech_models_loaded"] == 0
    assert early_ready.status_code == 503
    assert early_ready.headers["retry-after"] == "2"
    assert "warming up" in early_ready.json()["error"]
    assert warm_health["speech_models_loaded"] == 2  # Silero and smart-turn, by default
    assert "warm in" in runner.log and "silero, smart-turn loaded" in runner.log


async def test_a_call_that_arrives_while_warming_up_waits_and_starts(
    cloud: Cloud, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    runner = RunnerProcess(cloud.environment(), tmp_path).start(until="/health")
    try:
        call = cloud.manager.expect_call(voice_request()["id"], caller=Caller(Caller.silence(0.3)))
        ready_before = (await http.get(f"{runner.url}/ready")).status_code
        started = await http.post(f"{runner.url}/run", json=voice_request())
        await call.wait_rtvi("bot-llm-stopped", timeout=15)
    finally:
        runner.stop()

    assert ready_before == 503
    assert started.status_code == 200, started.text


def test_an_unknown_model_to_preload_stops_the_runner_and_says_which_setting(
    cloud: Cloud, tmp_path: Path
) -> None:
    # A pool's workers fail the same way (tests/workers/test_workers.py).
    environment = {**cloud.environment(), "RUNNER_PRELOAD_MODELS": "silero,kaldi"}
    runner = RunnerProcess(environment, tmp_path)
    with pytest.raises(RuntimeError, match="exited with 3"):
        runner.start()

    assert "RUNNER_PRELOAD_MODELS names kaldi" in runner.log


async def test_a_first_call_after_ready_with_the_default_llm_imports_nothing(
    cloud: Cloud, tmp_path: Path, http: httpx.AsyncClient
) -> None:
    # Python logs each import as it happens (to stderr, the runner's log) with this set.
    environment = {**cloud.environment(), "PYTHONPROFILEIMPORTTIME": "1"}
    runner = RunnerProcess(environment, tmp_path).start()
    try:
        warm = len(runner.log)
        text_call = {k: v for k, v in voice_request().items() if not k.startswith(("stt", "tts"))}
        call = cloud.manager.expect_call(CALL_ID, caller=Caller(Caller.silence(0.3)))
        started = await http.post(f"{runner.url}/run", json=text_call)
        await call.wait_rtvi("bot-llm-stopped", timeout=15)
        during_call = runner.log[warm:]
    finally:
        runner.stop()

    assert started.status_code == 200, started.text
    assert call.bot_llm_text()  # the LLM answered, over the shared client
    imported = [
        line.rpartition("|")[2].strip()
        for line in during_call.splitlines()
        if line.startswith("import time:")
    ]
    # Left to the call, a few milliseconds: anyio's socket and stream classes, which it
    # imports as the first connection is made, and pipecat's worker runner, looked up
    # as a call's pipeline starts.
    assert [m for m in imported if not m.startswith(("anyio.", "pipecat.workers.runner"))] == []


def test_a_settled_heap_collects_nothing_inside_and_freezes_what_was_made() -> None:
    gc.unfreeze()
    made: list[object] = []
    with settled_heap():
        assert not gc.isenabled()
        made.extend([{"n": n}] for n in range(1000))
    try:
        assert gc.isenabled()
        # Everything tracked is frozen: the dicts and lists made inside among it.
        assert gc.get_freeze_count() >= 2000
        assert gc.get_count()[0] < 100
    finally:
        gc.unfreeze()


async def test_the_warm_up_freezes_the_call_stack_it_imported() -> None:
    gc.unfreeze()
    shared = SharedResources()
    warmup = WarmUp(["json"], shared, ())
    try:
        await warmup.wait()
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        await shared.close()
