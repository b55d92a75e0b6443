"""uvicorn's HTTP protocol with a deadline on a request's headers, answering in the error shape.

uvicorn times out an idle kept-alive connection but not a client that opens
a connection, or starts a request, and then sends its headers slowly or
never: each such client holds a connection and its memory for as long as it
likes. This protocol gives every request ``header_timeout`` seconds from its
first byte (or from the connection's opening) to its last header; past that
it answers 408 in the runner's error shape and closes the connection. A
request that is not HTTP at all (uvicorn's parser refuses it) is answered
400 in the same shape instead of uvicorn's plain text, and closed too:
after bytes that are not HTTP, nothing later on that connection can be read.

It subclasses uvicorn's httptools protocol, which uvicorn accepts as its
``http`` setting, and hooks only httptools' parser callbacks
(``on_message_begin``, ``on_headers_complete``), asyncio's
``connection_made``/``connection_lost`` and uvicorn's ``send_400_response``.
``tests/serving/test_http_limits.py`` holds slow and garbled clients against
a real server, and fails if those hooks stop firing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from teamrunner.responses import error_body


def header_timeout_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol, closing requests whose headers take longer than this."""

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _headers_too_slow(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            message = f"the request headers did not arrive within {header_timeout:g}s"
            self.transport.write(_closing_answer(b"408 Request Timeout", message))
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            message = "the request is not HTTP/1.1 the runner can read"
            self.transport.write(_closing_answer(b"400 Bad Request", message))
            self.transport.close()

    return HeaderTimeoutProtocol


def _closing_answer(status: bytes, message: str) -> bytes:
    """A whole response in the error shape, telling the client the connection ends."""
    payload = json.dumps(error_body(message), separators=(",", ":")).encode()
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: "
        + str(len(payload)).encode()
        + b"\r\n\r\n"
        + payload
    )
