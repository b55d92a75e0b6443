"""The one shape of the runner's HTTP clients to peers across a network: pipecat-manager, a policy.

A ``PeerClient`` holds one connection pool to one peer, made on its first
request, so a process that never asks a peer never imports aiohttp for it.
Every request has a time of its own, the whole exchange within it (the
runner's timeout policy: a peer that is slow costs a bounded time, never an
open-ended one), and its answer is read whole. Every way a request can fail
becomes one typed error naming the peer (``PeerTimeout``, ``PeerUnreachable``,
``PeerFailed``: ``teamrunner.errors``), so each client says what a failure
means for it (an error result for the LLM, a stay) from one mapping. What a
failure means, and whether to retry, is the caller's. A pool's front speaks to
its workers, on sockets of its own, with a client cut to that one peer
(``teamrunner.workers.link``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamrunner.errors import PeerError, PeerFailed, PeerTimeout, PeerUnreachable

if TYPE_CHECKING:
    import aiohttp


@dataclass(frozen=True)
class PeerAnswer:
    """A peer's answer, read whole: its status, body and headers (names in any case)."""

    status: int
    body: bytes
    headers: Mapping[str, str]
    content_type: str
    encoding: str

    def text(self) -> str:
        """The body as text, in the encoding its headers name (as aiohttp reads it)."""
        return self.body.decode(self.encoding)


class PeerClient:
    """HTTP requests to one peer, over one connection pool made on the first.

    Args:
        peer: Names the peer in every error (``pipecat-manager``, ``remote policy``).
        base_url: Prefixed to every request's path, if given.
        headers: Sent with every request (a bearer token, say).
        connection_limit: At most this many connections at once (aiohttp's default if None).
        keepalive_secs: An idle connection is kept this long (aiohttp's default if None).
    """

    def __init__(
        self,
        peer: str,
        *,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        connection_limit: int | None = None,
        keepalive_secs: float | None = None,
    ) -> None:
        self.peer = peer
        self._base_url = base_url
        self._headers = dict(headers or {})
        self._pool: dict[str, Any] = {}
        if connection_limit is not None:
            self._pool["limit"] = connection_limit
        if keepalive_secs is not None:
            self._pool["keepalive_timeout"] = keepalive_secs
        self._session: aiohttp.ClientSession | None = None

    async def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        json: Any = None,
        data: bytes | None = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> PeerAnswer:
        """Send a request and read its whole answer within ``timeout`` seconds.

        Raises:
            PeerTimeout: no whole answer within ``timeout``.
            PeerUnreachable: the connection could not be made.
            PeerFailed: the connection broke, or the answer could not be read.
        """
        import aiohttp

        try:
            async with self._http().request(
                method,
                url,
                json=json,
                data=data,
                params=params,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                body = await response.read()
                return PeerAnswer(
                    response.status,
                    body,
                    response.headers,  # read case-insensitively
                    response.content_type,
                    response.get_encoding(),
                )
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            raise self.error(e, timeout) from e

    def error(self, cause: BaseException, timeout: float) -> PeerError:
        """The typed error a request that failed with ``cause`` is, in words quoting no URL."""
        import aiohttp

        if isinstance(cause, TimeoutError):
            return PeerTimeout(self.peer, f"no answer within {timeout:g}s", cause)
        if isinstance(cause, aiohttp.ClientConnectorError):
            return PeerUnreachable(self.peer, "could not connect", cause)
        return PeerFailed(self.peer, f"the connection failed: {type(cause).__name__}", cause)

    async def close(self) -> None:
        """Close the connection pool; a later request opens a new one."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                base_url=self._base_url,
                headers=self._headers,
                connector=aiohttp.TCPConnector(**self._pool),
            )
        return self._session
