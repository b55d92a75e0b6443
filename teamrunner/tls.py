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
(``teamrunner.pipecat_internals``: ``connecting`` for pipecat's websocket
services, ``deepgram`` for Deepgram's SDK). Certificates are verified exactly
as before; a context holds settings and the trust store, not a connection's
state, and is made to be shared.

The HTTPS clients built with httpx (the OpenAI SDK's, one per endpoint and
key; Deepgram's, never used for live streaming) each made a context of their
own the same way, by httpx's rules (``SSL_CERT_FILE``, ``SSL_CERT_DIR``, else
certifi's bundle): 30 ms each with a bundle. ``http_context`` is that one,
made once. The warm-up makes both before the first call.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def client_context() -> ssl.SSLContext:
    """The default TLS client context, made on first use and kept for the process."""
    return ssl.create_default_context()


@functools.cache
def http_context() -> ssl.SSLContext:
    """The context httpx makes for an HTTPS client by its own rules, made once and kept."""
    return httpx.create_ssl_context()
