"""Resolving a request's provider fields into specs: provider, model, voice, key, endpoint.

Each function checks one field and adds a ``Problem`` naming it when the
runner cannot serve it (a provider it does not have, or one this install
lacks a module for, with what to install), without quoting the value (a
misplaced key must not come back in an error body). A key comes from the
request, else from the runner's environment (the provider's own key
variable); an endpoint only from the environment.
"""

from __future__ import annotations

from typing import Any

from teamrunner.config import Settings
from teamrunner.errors import Problem
from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec, split_model
from teamrunner.providers.registry import Provider, Registry

_NO_LLM = LLMSpec(provider="", model="")


def llm_spec(
    where: str,
    value: str | None,
    key: str | None,
    key_field: str,
    settings: Settings,
    problems: list[Problem],
) -> LLMSpec:
    """The LLM named ``<provider>.<model>`` by the field ``where`` (a blank spec if unusable)."""
    example = f"<provider>.<model> with a provider of: {LLM.accepted()} (e.g. openai.gpt-4o)"
    if not value:
        problems.append(Problem(where, f"missing; expected {example}"))
        return _NO_LLM
    parts = split_model(value)
    if parts is None:
        problems.append(Problem(where, f"is not {example}"))
        return _NO_LLM
    provider_name, model = parts
    provider = LLM.get(provider_name)
    if provider is None:
        problems.append(Problem(where, f"names no LLM provider the runner has; expected {example}"))
        return _NO_LLM
    missing = provider.unavailable()
    if missing:
        problems.append(Problem(where, missing))
        return _NO_LLM
    key = key or _env_key(provider, settings)
    if provider.needs_key and not key:
        problems.append(
            Problem(
                key_field,
                f"no key for {provider_name}: send it in the request "
                f"or set {provider.key_variable} on the runner",
            )
        )
    return LLMSpec(
        provider=provider_name, model=model, key=key, endpoint=_env_endpoint(provider, settings)
    )


def stt_spec(
    where: str,
    value: str | None,
    language: str | None,
    settings: Settings,
    problems: list[Problem],
) -> STTSpec | None:
    """The speech recognizer named by the field ``where``, or None (absent or unusable)."""
    found = _speech_provider(where, value, STT, settings, problems)
    if found is None:
        return None
    provider, key = found
    spec = STTSpec(
        provider=provider.name,
        language=language,
        key=key,
        endpoint=_env_endpoint(provider, settings),
    )
    return _checked(where, provider, spec, problems)


def tts_spec(
    where: str,
    value: str | None,
    voice_id: str | None,
    language: str | None,
    settings: Settings,
    problems: list[Problem],
) -> TTSSpec | None:
    """The voice named by the field ``where``, or None (absent or unusable)."""
    found = _speech_provider(where, value, TTS, settings, problems)
    if found is None:
        return None
    provider, key = found
    spec = TTSSpec(
        provider=provider.name,
        voice_id=voice_id,
        language=language,
        key=key,
        endpoint=_env_endpoint(provider, settings),
    )
    return _checked(where, provider, spec, problems)


def check_language(where: str, code: str | None, problems: list[Problem]) -> None:
    if not code:
        return
    from pipecat.transcriptions.language import Language

    try:
        Language(code)
    except ValueError:
        problems.append(Problem(where, "is not a language code pipecat knows (e.g. en, en-US, de)"))


def _speech_provider(
    where: str,
    value: str | None,
    registry: Registry[Any, Any],
    settings: Settings,
    problems: list[Problem],
) -> tuple[Provider[Any, Any], str | None] | None:
    """The STT or TTS provider named by ``value`` and its key, or None (with a problem)."""
    if not value:
        return None
    provider = registry.get(value.lower())
    if provider is None:
        problems.append(
            Problem(
                where,
                f"names no {registry.kind} provider the runner has; "
                f"accepted: {registry.accepted()}",
            )
        )
        return None
    missing = provider.unavailable()
    if missing:
        problems.append(Problem(where, missing))
        return None
    key = _env_key(provider, settings)
    if provider.needs_key and not key:
        problems.append(
            Problem(where, f"{provider.name} needs {provider.key_variable} set on the runner")
        )
        return None
    return provider, key


def _checked(where: str, provider: Provider[Any, Any], spec: Any, problems: list[Problem]) -> Any:
    """The spec, after its provider's own check (a voice it lacks, a language it cannot hear)."""
    problem = provider.check(spec) if provider.check else None
    if problem:
        problems.append(Problem(where, problem))
        return None
    return spec


def _env_key(provider: Provider[Any, Any], settings: Settings) -> str | None:
    return settings.key(provider.key_variable) if provider.key_variable else None


def _env_endpoint(provider: Provider[Any, Any], settings: Settings) -> str | None:
    return settings.endpoint(provider.endpoint_variable) if provider.endpoint_variable else None
