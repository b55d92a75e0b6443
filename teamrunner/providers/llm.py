"""LLM providers: the ``<provider>`` part of ``llm_type`` / ``engine_model``.

Each entry builds one pipecat ``LLMService`` from an :class:`LLMSpec`. The
request's ``<provider>.<model>`` is split by :func:`split_model`; the key and
endpoint were resolved before a factory runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from teamrunner.providers.registry import Registry
from teamrunner.providers.resources import SharedResources
from teamrunner.providers.specs import LLMSpec

if TYPE_CHECKING:
    from pipecat.services.llm_service import LLMService

LLM: Registry[LLMSpec, LLMService[Any]] = Registry("LLM")

XAI_DEFAULT_ENDPOINT = "https://api.x.ai/v1"


def split_model(value: str) -> tuple[str, str] | None:
    """Split ``openai.gpt-4o`` (or ``openai:gpt-4o``) into provider and model.

    The first ``.`` wins, so model names may contain dots
    (``gemini.gemini-2.5-flash``); ``:`` is accepted when there is no dot.
    Returns None when either half is empty.
    """
    separator = "." if "." in value else ":"
    provider, _, model = value.partition(separator)
    provider, model = provider.strip().lower(), model.strip()
    if not provider or not model:
        return None
    return provider, model


@LLM.register(
    "openai",
    key_variable="OPENAI_API_KEY",
    endpoint_variable="OPENAI_BASE_URL",
    imports=("teamrunner.providers.openai_compatible",),
)
def openai_llm(spec: LLMSpec, shared: SharedResources) -> LLMService[Any]:
    """OpenAI chat completions; any OpenAI-compatible server through ``OPENAI_BASE_URL``."""
    from teamrunner.providers.openai_compatible import PooledOpenAILLMService

    return PooledOpenAILLMService(
        clients=shared.openai_clients,
        api_key=spec.key,
        base_url=spec.endpoint,
        settings=PooledOpenAILLMService.Settings(model=spec.model),
    )


@LLM.register(
    "grok",
    key_variable="XAI_API_KEY",
    endpoint_variable="XAI_BASE_URL",
    imports=("teamrunner.providers.openai_compatible",),
)
def grok_llm(spec: LLMSpec, shared: SharedResources) -> LLMService[Any]:
    """xAI Grok, OpenAI-compatible, at ``XAI_DEFAULT_ENDPOINT`` unless ``XAI_BASE_URL``."""
    from teamrunner.providers.openai_compatible import PooledGrokLLMService

    return PooledGrokLLMService(
        clients=shared.openai_clients,
        api_key=spec.key or "",
        base_url=spec.endpoint or XAI_DEFAULT_ENDPOINT,
        settings=PooledGrokLLMService.Settings(model=spec.model),
    )


@LLM.register(
    "gemini",
    key_variable="GOOGLE_API_KEY",
    # What Google's SDK imports as its client is made: its async credentials, its
    # HTTP client's transport, and the readers of its packaged data.
    imports=(
        "pipecat.services.google.llm",
        "google.auth.aio.credentials",
        "httpcore",
        "importlib.readers",
        "importlib.resources.readers",
    ),
)
def gemini_llm(spec: LLMSpec, shared: SharedResources) -> LLMService[Any]:
    """Google Gemini through Google's own SDK."""
    from pipecat.services.google.llm import GoogleLLMService

    return GoogleLLMService(
        api_key=spec.key or "",
        settings=GoogleLLMService.Settings(model=spec.model),
    )
