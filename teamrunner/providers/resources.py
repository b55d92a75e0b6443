"""What providers share across calls: HTTP clients and loaded speech models.

A service per call is cheap when what is expensive lives here, once per
process: an OpenAI-compatible client keeps its pool of warm connections to
one endpoint for every call that uses that endpoint and key (pipecat would
otherwise open a client per service and never close it, leaving a
keep-alive connection behind each call), and speech models are loaded once
(``teamrunner.speech.models``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from teamrunner.speech.models import SpeechModels
from teamrunner.tls import httpx2_context

if TYPE_CHECKING:
    from openai import AsyncOpenAI


# How long a connection to an LLM endpoint is kept for the next request. A call's
# requests are a conversational turn apart (5.8 s in the capacity benchmark's calls,
# longer when the caller thinks), past httpx's 5 s, after which every turn opened a new
# connection, TCP and TLS handshakes on its way to the first token, unless another call
# had just used one. A minute keeps a call's connection from turn to turn; an endpoint
# that closes it sooner costs a new connection, as before (httpx drops a connection the
# server closed before it reuses it).
LLM_KEEPALIVE_SECS = 60.0


class OpenAIClients:
    """One ``AsyncOpenAI`` client per endpoint and key, shared by every call.

    Args:
        stall_secs: A request that gets no first byte, or no further byte, for
            this long is abandoned (httpx's read timeout is per read); pipecat
            then reports it as an LLM completion timeout.
        retries: How often the SDK sends a request again when it got no
            answer at all. A stream that stalled after its first byte is never
            sent again: the caller has heard part of it.
    """

    def __init__(self, stall_secs: float = 600.0, retries: int = 2) -> None:
        self._clients: dict[tuple[Any, ...], AsyncOpenAI] = {}
        # One number: every phase (connect, each read, each write) gets that long.
        self._timeout = stall_secs
        self._retries = retries

    def get(
        self,
        api_key: str | None,
        base_url: str | None,
        organization: str | None = None,
        project: str | None = None,
        default_headers: dict[str, str] | None = None,
    ) -> AsyncOpenAI:
        key = (
            api_key,
            base_url,
            organization,
            project,
            tuple(sorted((default_headers or {}).items())),
        )
        client = self._clients.get(key)
        if client is None:
            # The SDK takes about a second to import: only a call that needs it pays.
            # httpx2: the OpenAI SDK's HTTP library (a dependency of the SDK).
            import httpx2
            from openai import DEFAULT_CONNECTION_LIMITS, AsyncOpenAI, DefaultAsyncHttpxClient

            client = AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                organization=organization,
                project=project,
                default_headers=default_headers,
                timeout=self._timeout,
                max_retries=self._retries,
                http_client=DefaultAsyncHttpxClient(
                    verify=httpx2_context(),
                    # The SDK's own limits, with connections kept from turn to turn.
                    limits=httpx2.Limits(
                        max_connections=DEFAULT_CONNECTION_LIMITS.max_connections,
                        max_keepalive_connections=DEFAULT_CONNECTION_LIMITS.max_keepalive_connections,
                        keepalive_expiry=LLM_KEEPALIVE_SECS,
                    ),
                ),
            )
            self._clients[key] = client
        return client

    def prepare(self) -> None:
        """Import what a first client and its first request need, and keep no client.

        The SDK's HTTP library imports its transport only as its first client
        is made, and that transport loads anyio's asyncio backend on its first
        request: without this, a tenth of a second and then 18 ms of imports on
        the first call. Blocking: run it off the event loop.
        """
        import anyio
        from openai import DefaultAsyncHttpxClient

        # Never used: it opened nothing, so there is nothing to close.
        DefaultAsyncHttpxClient(verify=httpx2_context())
        anyio.run(anyio.sleep, 0)  # loads the backend, on an event loop of its own

    def __len__(self) -> int:
        return len(self._clients)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


@dataclass
class SharedResources:
    """Everything a provider factory may reuse instead of creating per call."""

    models: SpeechModels = field(default_factory=SpeechModels)
    openai_clients: OpenAIClients = field(default_factory=OpenAIClients)

    async def close(self) -> None:
        await self.openai_clients.close()
