"""A provider this install cannot serve is refused up front, and ``/health`` says which it can.

The test environment has every extra installed, so each test runs the runner
(``python main.py``) in a process where Piper is not installed
(``runner_process.without_modules``), as after ``pip install .`` without the
``[local]`` extra: ``import piper`` fails there as it would on such an
install, and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from teamrunner.providers.registry import Registry

from conftest import OPENAI_KEY
from runner_process import RunnerProcess, without_modules
from scenarios import team_request

INSTALL_LOCAL = "pip install 'pipecat-team-runner[local]'"


@pytest.fixture
def runner_without_piper(tmp_path: Path) -> Iterator[RunnerProcess]:
    runner = RunnerProcess(without_modules(tmp_path, "piper"), tmp_path)
    try:
        yield runner.start()
    finally:
        runner.stop()


def single_ai(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "no-piper-here",
        "llm_type": "openai.gpt-4o",
        "llm_key": OPENAI_KEY,
        "llm_messages": [{"role": "system", "content": "You are Ava."}],
        "tts_type": "piper",
    }
    body.update(changes)
    return body


def refused_field(response: httpx.Response) -> tuple[str, str]:
    """The one problem of a 400 in the runner's error shape: (field, message)."""
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["status"] == "error"
    [problem] = answer["problems"]
    return problem["field"], problem["message"]


async def test_a_voice_this_install_lacks_is_a_400_naming_the_field_and_what_to_install(
    runner_without_piper: RunnerProcess,
) -> None:
    team = team_request()
    team.update(stt_type=None, tts_type="espeak", tts_voice_id=None)
    for index, member in enumerate(team["resolved_team"]["members"]):
        member["ai"].update(tts_type="piper" if index == 1 else "espeak", tts_voice_id=None)

    async with httpx.AsyncClient(timeout=30) as http:
        single = await http.post(f"{runner_without_piper.url}/run", json=single_ai())
        teamed = await http.post(f"{runner_without_piper.url}/run", json=team)
        calls = (await http.get(f"{runner_without_piper.url}/calls")).json()

    field, message = refused_field(single)
    assert field == "tts_type"
    assert "piper" in message and INSTALL_LOCAL in message
    field, message = refused_field(teamed)
    assert field == "resolved_team.members[1].ai.tts_type"
    assert INSTALL_LOCAL in message
    for response in (single, teamed):
        assert OPENAI_KEY not in response.text
    assert calls == {"calls": []}
    assert "Traceback" not in runner_without_piper.log


async def test_health_lists_the_providers_this_install_can_serve(
    runner_without_piper: RunnerProcess,
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        health = (await http.get(f"{runner_without_piper.url}/health")).json()

    assert health["providers"] == {
        "llm": ["gemini", "grok", "openai"],
        "stt": ["deepgram", "whisper"],
        "tts": ["cartesia", "elevenlabs", "espeak"],
    }


async def test_a_pools_health_lists_the_same_providers_as_its_workers_serve(
    tmp_path: Path,
) -> None:
    pool = RunnerProcess({**without_modules(tmp_path, "piper"), "RUNNER_WORKERS": "2"}, tmp_path)
    try:
        pool.start(until="/ready")
        async with httpx.AsyncClient(timeout=30) as http:
            health = (await http.get(f"{pool.url}/health")).json()
            refused = await http.post(f"{pool.url}/run", json=single_ai())
    finally:
        pool.stop()

    assert len(health["workers"]) == 2
    assert health["providers"]["tts"] == ["cartesia", "elevenlabs", "espeak"]
    assert refused_field(refused)[0] == "tts_type"


def test_a_provider_whose_module_is_missing_is_not_servable_and_says_what_to_install() -> None:
    registry: Registry[object, object] = Registry("TTS")
    registry.register("far", requires=("teamrunner_test_no_such_module",), extra="local")(build)
    registry.register("near", requires=("json",), extra="local")(build)
    registry.register("core")(build)

    far = registry.get("far")
    assert far is not None
    assert far.unavailable() == (
        "far is not installed here (no module teamrunner_test_no_such_module); "
        f"install it with: {INSTALL_LOCAL}"
    )
    assert registry.servable() == ["core", "near"]


def build(spec: object, shared: object) -> object:
    return object()
