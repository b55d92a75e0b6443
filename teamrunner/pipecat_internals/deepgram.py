"""pipecat's Deepgram STT, able to say whether its socket is up and to reconnect now.

``DeepgramSTTService`` keeps its socket in ``_connection`` (None while no
socket is up) and reconnects with ``_do_reconnect`` (its own disconnect and
connect, the hook ``STTService._reconnect`` calls, without pipecat's backoff).
``DeepgramSTTSocket`` offers both under public names. Imported only when a
call uses Deepgram, so an unused vendor costs nothing.

The client each service builds is a ``LightDeepgramClient``, and its sockets
are opened over the process's one TLS context (``teamrunner.tls``): the SDK
lets ``websockets`` make a new one per socket, about 25 ms of CPU each.
pipecat builds an
``AsyncDeepgramClient`` per service (per call and member), and the SDK's own
client costs the event loop on every call although live streaming never uses
its HTTP side: a new ``httpx.AsyncClient`` per client (which reads every
environment variable for proxies and, with ``SSL_CERT_FILE`` set, loads the
whole CA bundle: 0.5 to 30 ms), and on every connect a lookup of the SDK's
version in the installed packages' metadata (0.6 ms). The light client shares
one HTTP client across the process and looks the version up once; the headers
of its handshake are the SDK's own (``test_deepgram.py`` compares them).
pipecat names the class in its module and takes no client of ours, so it is
swapped there, once, when this module is imported; the SDK names the
function that opens its listening socket in its module, where it is wrapped
the same way (as the SDK's own ``install_transport`` does).
"""

from __future__ import annotations

import functools
from typing import Any

import deepgram.listen.v1.client as deepgram_listen
import httpx
import pipecat.services.deepgram.stt as pipecat_deepgram
from deepgram import AsyncDeepgramClient
from deepgram.core.client_wrapper import BaseClientWrapper
from pipecat.services.deepgram.stt import DeepgramSTTService

from teamrunner.tls import client_context, httpx_context


@functools.cache
def shared_http_client() -> httpx.AsyncClient:
    """The one HTTP client of every Deepgram client here (live streaming sends nothing on it)."""
    return httpx.AsyncClient(verify=httpx_context())


@functools.cache
def sdk_headers() -> dict[str, str]:
    """The SDK's own handshake headers (its name, version and platform), looked up once."""
    probe = BaseClientWrapper(api_key="", environment=None)  # type: ignore[arg-type]
    headers = BaseClientWrapper.get_headers(probe)
    headers.pop("Authorization", None)
    return headers


class LightDeepgramClient(AsyncDeepgramClient):
    """The SDK's client on the process's one HTTP client, with its version looked up once."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("httpx_client", shared_http_client())
        super().__init__(**kwargs)
        wrapper = self._client_wrapper

        def headers() -> dict[str, str]:
            return {
                **sdk_headers(),
                **(wrapper.get_custom_headers() or {}),
                "Authorization": f"Token {wrapper.api_key}",
            }

        wrapper.get_headers = headers  # type: ignore[method-assign]


_sdk_connect = deepgram_listen.websockets_client_connect


def connect_over_shared_tls(uri: str, **kwargs: Any) -> Any:
    """The SDK's socket opener, given the process's TLS context for a ``wss://`` socket."""
    if uri.startswith("wss://"):
        kwargs.setdefault("ssl", client_context())
    return _sdk_connect(uri, **kwargs)


pipecat_deepgram.AsyncDeepgramClient = LightDeepgramClient  # type: ignore[misc]
deepgram_listen.websockets_client_connect = connect_over_shared_tls  # type: ignore[assignment]


class DeepgramSTTSocket(DeepgramSTTService):
    """pipecat's Deepgram STT, with its socket's state and an immediate reconnect."""

    def socket_up(self) -> bool:
        """Whether a Deepgram socket is up (pipecat clears its connection once it is gone)."""
        return self._connection is not None

    async def reconnect_socket(self) -> None:
        """Close the socket if any and open a new one now, as pipecat's own reconnect does.

        Raises:
            ConnectionError: the new socket could not be opened.
        """
        await self._do_reconnect()
