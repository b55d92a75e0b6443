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
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def client_context() -> ssl.SSLContext:
    """The default TLS client context, made on first use and kept for the process."""
    return ssl.create_default_context()
