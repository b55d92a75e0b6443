"""Shared fixtures: a clean environment, simulators, and a real runner on a real port.

Every test runs against real servers on 127.0.0.1: the runner's own HTTP API
(uvicorn), and simulators where pipecat-manager and the providers would be.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from playground.server import RunnerServer
from simulators.cloud import KEYS, Cloud
from simulators.voices import VoiceBook
from teamrunner.config import Settings
from teamrunner.providers import endpoint_variables, key_variables

RUNNER_VARIABLES = (*Settings.variables(), "OTEL_EXPORTER_OTLP_ENDPOINT")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's keys or endpoints may change what a test does."""
    for name in (*key_variables(), *endpoint_variables(), *RUNNER_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    assert not any(os.environ.get(name) for name in key_variables())


# Tests run a handful of calls at once at most; admission is tested on its own. An
# in-process runner shares its process with the simulators and the test, so its own
# load would be theirs too: admission by load is off unless a test turns it on.
RUNNER_DEFAULTS: dict[str, object] = {
    "host": "127.0.0.1",
    "port": 0,
    "start_timeout_secs": 10.0,
    "load_threshold": 0.0,
    # Each test's calls load the models they use; the warm-up's own tests ask for more.
    "preload_models": "",
}


def runner_settings(**overrides: object) -> Settings:
    """Settings for a runner on an ephemeral port; tests pass addresses and keys."""
    return Settings(**{**RUNNER_DEFAULTS, **overrides})  # type: ignore[arg-type]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@pytest.fixture
async def bare_runner() -> AsyncIterator[RunnerServer]:
    """A runner whose pipecat-manager address leads nowhere: for requests refused up front."""
    async with RunnerServer(runner_settings(pipecatcall_address="127.0.0.1:9")) as server:
        yield server


# --- The cloud around a call: every party the runner talks to, simulated. ---

# Keys long enough to be redacted, and distinctive enough to search logs for.
OPENAI_KEY = KEYS["OPENAI_API_KEY"]
XAI_KEY = KEYS["XAI_API_KEY"]
DEEPGRAM_KEY = KEYS["DEEPGRAM_API_KEY"]
CARTESIA_KEY = KEYS["CARTESIA_API_KEY"]
ELEVENLABS_KEY = KEYS["ELEVENLABS_API_KEY"]

# Voices whose tones are pinned far apart, so identification never hinges on a hash.
VOICES = {
    "voice-greeter": 424.0,
    "voice-billing": 1003.0,
    "voice-support": 1683.0,
    "voice-a": 598.0,
    "voice-b": 1417.0,
}


def cloud_settings(cloud: Cloud, **overrides: object) -> Settings:
    """Runner settings pointing pipecat-manager and every provider at the simulators."""
    return replace(Settings.from_env(cloud.environment()), **{**RUNNER_DEFAULTS, **overrides})


@pytest.fixture
async def cloud() -> AsyncIterator[Cloud]:
    async with Cloud(voices=VoiceBook(VOICES), ms_per_char=10) as sims:
        yield sims


@pytest.fixture
async def runner(cloud: Cloud) -> AsyncIterator[RunnerServer]:
    """A real runner on a real port, wired to the simulated cloud."""
    async with RunnerServer(cloud_settings(cloud)) as server:
        yield server
