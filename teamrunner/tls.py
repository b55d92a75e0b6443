"""The process's one TLS client context, for the sockets a call opens to its providers.

A voice call opens websockets to its providers (Deepgram, Cartesia,
ElevenLabs) over TLS, and neither pipecat nor the providers' SDKs give them
a context: ``websockets`` lets the event loop make a default one for every
connection, and making one loads the system's whole CA bundle, about 25 ms
of CPU on the event loop (measured here), during which no other call's
audio moves. A single AI's voice call paid that twice at pickup, a
ten-member team's call ten times. ``client_context`` is made once, on first
use, the way the default is (``ssl.create_default_context``: the system's
trust store, host names checked), and every such socket is given it
(``teamrunner.pipecat_internals``: ``websocket_service`` for pipecat's
websocket voices, ``deepgram`` for Deepgram's SDK). Certificates are verified exactly
as before; a context holds settings and the trust store, not a connection's
state, and is made to be shared.

The HTTPS clients a call's providers build each made a context of their
own too, by the rules of their HTTP library: 30 ms each with a bundle. The
OpenAI SDK's (one per endpoint and key) use httpx2, which reads
``SSL_CERT_FILE``, ``SSL_CERT_DIR``, else the system's store; Deepgram's
(one per process, never used for live streaming) use httpx, which falls back
on certifi's bundle instead. ``httpx2_context`` and ``httpx_context`` are
those, each made once by its library's own function, so every client trusts
exactly what it would have trusted. The warm-up makes all three before the
first call.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def client_context() -> ssl.SSLContext:
    """The default TLS client context, made on first use and kept for the process."""
    return ssl.create_default_context()


@functools.cache
def httpx_context() -> ssl.SSLContext:
    """The context httpx makes for an HTTPS client by its own rules, made once and kept."""
    import httpx  # 0.08 s, with rich: not on the path of a pool's template's early start

    return httpx.create_ssl_context()


@functools.cache
def httpx2_context() -> ssl.SSLContext:
    """The context httpx2 (the OpenAI SDK's HTTP library) makes by its own rules, made once."""
    import httpx2

    return httpx2.create_ssl_context()
