"""pipecat's OpenAI and Grok LLM services on the process's pooled clients.

pipecat builds an ``AsyncOpenAI`` client per service through the services'
``create_client`` hook; these subclasses answer that hook from the process's
pool instead (one client per endpoint and key, ``resources.OpenAIClients``),
wrapped in a :class:`DirectChatClient` that sends chat completion requests
without the SDK's per-request transform. Imported only when a call asks for
one of these providers.

With pipecat's metrics on (``RUNNER_PROVIDER_METRICS``), they report only
their time to first byte, the one figure the runner reads
(``teamrunner.call.observer``): pipecat would also send a processing-time
and a time-to-first-answer-token ``MetricsFrame`` down the whole pipeline
with every response, and at a handoff both travel ahead of the function
call's result.
"""

from __future__ import annotations

from typing import Any

from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.xai.llm import GrokLLMService

from teamrunner.providers.chat_completions import DirectChatClient
from teamrunner.providers.resources import OpenAIClients


class _PooledClient:
    """Takes the service's OpenAI client from the process's pool instead of making its own."""

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

    async def stop_ttfat_metrics(self, *, end_time: float | None = None) -> None:
        """Not reported: nothing in the runner reads the time to first answer token."""

    async def start_processing_metrics(self, *, start_time: float | None = None) -> None:
        """Not measured: nothing in the runner reads a response's processing time."""

    async def stop_processing_metrics(self, *, end_time: float | None = None) -> None:
        """Not reported: nothing in the runner reads a response's processing time."""


class PooledOpenAILLMService(_PooledClient, OpenAILLMService):
    """pipecat's OpenAI LLM on a shared client."""


class PooledGrokLLMService(_PooledClient, GrokLLMService):
    """pipecat's Grok LLM on a shared client."""
