"""Shared fixtures: a clean environment, simulators, and a real runner on a real port.

Every test runs against real servers on 127.0.0.1: the runner's own HTTP API
(uvicorn), and simulators where pipecat-manager and the providers would be.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import httpx
import pytest

from teamrunner.config import ENDPOINT_VARIABLES, KEY_VARIABLES, Settings
from teamrunner.server import RunnerServer

RUNNER_VARIABLES = (
    "RUNNER_HOST",
    "RUNNER_PORT",
    "PIPECATCALL_ADDRESS",
    "RUNNER_SESSION_IDLE_SECS",
    "RUNNER_START_TIMEOUT_SECS",
    "RUNNER_TOOL_TIMEOUT_SECS",
    "RUNNER_NOTIFY_TIMEOUT_SECS",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's keys or endpoints may change what a test does."""
    for name in (*KEY_VARIABLES, *ENDPOINT_VARIABLES, *RUNNER_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    assert not any(os.environ.get(name) for name in KEY_VARIABLES)


def runner_settings(**overrides: object) -> Settings:
    """Settings for a runner on an ephemeral port; tests pass addresses and keys."""
    values: dict[str, object] = {"host": "127.0.0.1", "port": 0, "start_timeout_secs": 10.0}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@pytest.fixture
async def bare_runner() -> AsyncIterator[RunnerServer]:
    """A runner whose pipecat-manager address leads nowhere: for requests refused up front."""
    async with RunnerServer(runner_settings(pipecatcall_address="127.0.0.1:9")) as server:
        yield server
