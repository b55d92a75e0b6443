"""Providers by kind: ``LLM``, ``STT`` and ``TTS`` registries, and the specs they build from.

Importing this package registers every provider; building one imports its
vendor code only then. Each provider names the environment variables it reads
its key and endpoint from, so the runner's list of them is derived here.
"""

from teamrunner.providers.llm import LLM, split_model
from teamrunner.providers.specs import LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.stt import STT
from teamrunner.providers.tts import TTS

REGISTRIES = (LLM, STT, TTS)


def key_variables() -> tuple[str, ...]:
    """Every environment variable a registered provider reads a key from."""
    names = {p.key_variable for r in REGISTRIES for p in r.providers() if p.key_variable}
    return tuple(sorted(names))


def endpoint_variables() -> tuple[str, ...]:
    """Every environment variable that points a registered provider elsewhere."""
    names = {p.endpoint_variable for r in REGISTRIES for p in r.providers() if p.endpoint_variable}
    return tuple(sorted(names))


__all__ = [
    "LLM",
    "REGISTRIES",
    "STT",
    "TTS",
    "LLMSpec",
    "STTSpec",
    "TTSSpec",
    "endpoint_variables",
    "key_variables",
    "split_model",
]
