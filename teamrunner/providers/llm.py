"""LLM providers: the ``<provider>`` part of ``llm_type`` / ``engine_model``.

Each entry builds one pipecat ``LLMService`` from an :class:`LLMSpec`. The
request's ``<provider>.<model>`` is split by :func:`split_model`; the key and
endpoint were resolved before a factory runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.xai.llm import GrokLLMService

from teamrunner.providers.chat_completions import DirectChatClient
from teamrunner.providers.registry import Registry
from teamrunner.providers.resources import OpenAIClients, SharedResources
from teamrunner.providers.specs import LLMSpec

if TYPE_CHECKING:
    from pipecat.services.llm_service import LLMService

LLM: Registry[LLMSpec, LLMService] = Registry("LLM")

XAI_DEFAULT_ENDPOINT = "https://api.x.ai/v1"


class _PooledClient:
    """Takes the service's OpenAI client from the process's pool instead of making its own.

    The pooled client is wrapped in a :class:`DirectChatClient`, which sends
    chat completion requests without the SDK's per-request transform.
    """

    def __init__(self, *, clients: OpenAIClients, **kwargs: Any) -> None:
        self._pool = clients
        super().__init__(**kwargs)

    def create_client(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        default_headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        return DirectChatClient(
            self._pool.get(api_key, base_url, organization, project, default_headers)
        )


class PooledOpenAILLMService(_PooledClient, OpenAILLMService):
    """pipecat's OpenAI LLM on a shared client."""


class PooledGrokLLMService(_PooledClient, GrokLLMService):
    """pipecat's Grok LLM on a shared client."""


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
    summary="OpenAI chat completions (any OpenAI-compatible server via OPENAI_BASE_URL)",
)
def openai_llm(spec: LLMSpec, shared: SharedResources) -> LLMService:
    return PooledOpenAILLMService(
        clients=shared.openai_clients,
        api_key=spec.key,
        base_url=spec.endpoint,
        settings=OpenAILLMService.Settings(model=spec.model),
    )


@LLM.register(
    "grok",
    key_variable="XAI_API_KEY",
    endpoint_variable="XAI_BASE_URL",
    summary=f"xAI Grok, OpenAI-compatible ({XAI_DEFAULT_ENDPOINT} unless XAI_BASE_URL)",
)
def grok_llm(spec: LLMSpec, shared: SharedResources) -> LLMService:
    return PooledGrokLLMService(
        clients=shared.openai_clients,
        api_key=spec.key or "",
        base_url=spec.endpoint or XAI_DEFAULT_ENDPOINT,
        settings=GrokLLMService.Settings(model=spec.model),
    )


@LLM.register(
    "gemini",
    key_variable="GOOGLE_API_KEY",
    summary="Google Gemini through Google's own SDK",
)
def gemini_llm(spec: LLMSpec, shared: SharedResources) -> LLMService:
    from pipecat.services.google.llm import GoogleLLMService

    return GoogleLLMService(
        api_key=spec.key or "",
        settings=GoogleLLMService.Settings(model=spec.model),
    )
