"""Shared fixtures: a clean environment, simulators, and a real runner on a real port.

Every test runs against real servers on 127.0.0.1: the runner's own HTTP API
(uvicorn), and simulators where pipecat-manager and the providers would be.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from pydantic import SecretStr

from simulators.cartesia import CartesiaSimulator
from simulators.deepgram import DeepgramSimulator
from simulators.elevenlabs import ElevenLabsSimulator
from simulators.manager import ManagerSimulator
from simulators.openai import OpenAISimulator
from simulators.voices import VoiceBook
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


# --- The cloud around a call: every party the runner talks to, simulated. ---


# Keys long enough to be redacted, and distinctive enough to search logs for.
OPENAI_KEY = "sk-openai-sim-7d1e0c5b9a"
XAI_KEY = "xai-grok-sim-3b8f21c6d4"
DEEPGRAM_KEY = "dg-sim-key-91c4e7a2b0"
CARTESIA_KEY = "cartesia-sim-key-5e2d8f1a"
ELEVENLABS_KEY = "xi-sim-key-0a6c3e9d7f"

# Voices whose tones are pinned far apart, so identification never hinges on a hash.
VOICES = {
    "voice-greeter": 424.0,
    "voice-billing": 1003.0,
    "voice-support": 1683.0,
    "voice-a": 598.0,
    "voice-b": 1417.0,
}


@dataclass
class Cloud:
    """The simulators standing where pipecat-manager and the providers would be."""

    manager: ManagerSimulator
    openai: OpenAISimulator
    grok: OpenAISimulator
    deepgram: DeepgramSimulator
    cartesia: CartesiaSimulator
    elevenlabs: ElevenLabsSimulator
    voices: VoiceBook

    def settings(self, **overrides: object) -> Settings:
        """Runner settings pointing every provider and pipecat-manager at the simulators."""
        values: dict[str, object] = {
            "pipecatcall_address": self.manager.address,
            "keys": {
                "XAI_API_KEY": SecretStr(XAI_KEY),
                "DEEPGRAM_API_KEY": SecretStr(DEEPGRAM_KEY),
                "CARTESIA_API_KEY": SecretStr(CARTESIA_KEY),
                "ELEVENLABS_API_KEY": SecretStr(ELEVENLABS_KEY),
            },
            "endpoints": {
                "OPENAI_BASE_URL": self.openai.base_url,
                "XAI_BASE_URL": self.grok.base_url,
                "DEEPGRAM_BASE_URL": self.deepgram.ws_url,
                "CARTESIA_BASE_URL": self.cartesia.ws_url,
                "ELEVENLABS_BASE_URL": self.elevenlabs.ws_url,
            },
        }
        values.update(overrides)
        return runner_settings(**values)


@pytest.fixture
async def cloud() -> AsyncIterator[Cloud]:
    voices = VoiceBook(VOICES)
    sims = Cloud(
        manager=ManagerSimulator(),
        openai=OpenAISimulator(name="openai"),
        grok=OpenAISimulator(name="grok"),
        deepgram=DeepgramSimulator(),
        cartesia=CartesiaSimulator(voices=voices, ms_per_char=10),
        elevenlabs=ElevenLabsSimulator(voices=voices, ms_per_char=10),
        voices=voices,
    )
    parts = [sims.manager, sims.openai, sims.grok, sims.deepgram, sims.cartesia, sims.elevenlabs]
    for sim in parts:
        await sim.start()
    try:
        yield sims
    finally:
        for sim in reversed(parts):
            await sim.stop()


@pytest.fixture
async def runner(cloud: Cloud) -> AsyncIterator[RunnerServer]:
    """A real runner on a real port, wired to the simulated cloud."""
    async with RunnerServer(cloud.settings()) as server:
        yield server
