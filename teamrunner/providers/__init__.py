"""Providers by kind: ``LLM``, ``STT`` and ``TTS`` registries, and the specs they build from.

Importing this package registers every provider; building one imports its
vendor code only then. Each provider names the environment variables it reads
its key and endpoint from, so the runner's list of them is derived here, and
the modules its service is built from, so that a runner holding its key can
import them before its first call (``warm_modules``).

::

    registry.py           the registry: a provider is one entry, looked up by name
    llm.py                the LLM providers (``llm_type``, ``engine_model``)
    stt.py                the speech-to-text providers (``stt_type``)
    tts.py                the text-to-speech providers (``tts_type``)
    specs.py              what a call asks of a provider, its key resolved
    resources.py          what providers share across calls: clients, speech models
    openai_compatible.py  pipecat's OpenAI and Grok LLMs on the pooled clients
    chat_completions.py   chat completion requests without the SDK's transform
    deepgram.py           Deepgram live STT that loses no audio while reconnecting
    whisper.py            the embedded default's ears: Whisper on the loaded model
    piper.py              the embedded default's voice: Piper on the loaded voice
    espeak.py             a second local voice: espeak-ng
"""

from collections.abc import Iterable

from teamrunner.providers.llm import LLM, split_model
from teamrunner.providers.specs import LLMSpec, STTSpec, TTSSpec
from teamrunner.providers.stt import STT
from teamrunner.providers.tts import TTS

REGISTRIES = (LLM, STT, TTS)


def key_variables() -> tuple[str, ...]:
    """Every environment variable a registered provider reads a key from."""
    names = {p.key_variable for r in REGISTRIES for p in r.providers() if p.key_variable}
    return tuple(sorted(names))


def warm_modules(keys: Iterable[str]) -> tuple[str, ...]:
    """What the first call of a runner holding ``keys`` would import: its providers' modules.

    ``keys`` are the key variables set in the runner's environment; a provider
    whose key the runner holds is one its calls use (a request may bring a key
    of its own for another, whose modules its first call then imports).
    """
    held = set(keys)
    modules = [
        module
        for registry in REGISTRIES
        for provider in registry.providers()
        if provider.key_variable in held and provider.unavailable() is None
        for module in provider.imports
    ]
    return tuple(dict.fromkeys(modules))


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
    "warm_modules",
]
