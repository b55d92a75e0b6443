"""A provider whose key the runner holds is built without importing anything on the event loop.

The warm-up imports ``warm_modules`` of the keys the runner holds; each test
warms a fresh interpreter up the same way (``WarmUp``), then builds the
provider's service as a call would and lists what that imported. A module a factory imports that its
entry does not name would be imported by the first call instead, on the event
loop every call shares.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from teamrunner.providers import LLM, STT, TTS, warm_modules

ROOT = Path(__file__).resolve().parents[2]

BUILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from teamrunner.lifecycle.warmup import WarmUp
    from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec, warm_modules
    from teamrunner.providers.resources import SharedResources

    kind, name, variable = sys.argv[1:4]
    shared = SharedResources()
    asyncio.run(WarmUp(warm_modules([variable]), shared, ()).wait())
    registry = {"LLM": LLM, "STT": STT, "TTS": TTS}[kind]
    spec = {
        "LLM": LLMSpec(name, "model", key="k", endpoint="https://llm.invalid/v1"),
        "STT": STTSpec(name, "en", key="k", endpoint="wss://stt.invalid"),
        "TTS": TTSSpec(name, "voice", "en", key="k", endpoint="wss://tts.invalid"),
    }[kind]
    before = set(sys.modules)
    registry.get(name).factory(spec, shared)
    print(json.dumps(sorted(set(sys.modules) - before)))
    """
)

KEYED = [
    (registry.kind, provider.name, provider.key_variable)
    for registry in (LLM, STT, TTS)
    for provider in registry.providers()
    if provider.key_variable and provider.unavailable() is None
]


@pytest.mark.parametrize(("kind", "name", "variable"), KEYED, ids=[k[1] for k in KEYED])
def test_a_provider_whose_key_the_runner_holds_imports_nothing_when_a_call_builds_it(
    kind: str, name: str, variable: str
) -> None:
    assert warm_modules([variable]), f"{name} names no modules to warm"
    built = subprocess.run(
        [sys.executable, "-c", BUILD, kind, name, variable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(built.stdout.strip().splitlines()[-1]) == []


def test_only_the_providers_whose_keys_the_runner_holds_are_warmed() -> None:
    warmed = warm_modules(["DEEPGRAM_API_KEY"])
    assert "teamrunner.providers.deepgram" in warmed
    assert not any("cartesia" in m or "elevenlabs" in m for m in warmed)
    assert warm_modules([]) == ()
