"""uvicorn's HTTP protocol with a deadline on a request's headers, and each answer in one write.

uvicorn times out an idle kept-alive connection but not a client that opens
a connection, or starts a request, and then sends its headers slowly or
never: each such client holds a connection and its memory for as long as it
likes. This protocol gives every request ``header_timeout`` seconds from its
first byte (or from the connection's opening) to its last header; past that
it answers 408 in the runner's error shape and closes the connection. A
request that is not HTTP at all (uvicorn's parser refuses it) is answered
400 in the same shape instead of uvicorn's plain text, and closed too:
after bytes that are not HTTP, nothing later on that connection can be read.

uvicorn writes an answer's status line and headers as the application
starts it, and its body when the application sends it: two writes, which
wake the client twice (Go, or a pool's front reading its worker) and cost
the server a system call more for every answer. The protocol hands uvicorn
its transport wrapped (``HeadWithBody``) so that a head waits for the body
that follows it, and both go in one write; the body comes in the same step
of the event loop for every answer the runner gives, and a head whose body
does not is written alone at the loop's next turn. The bytes on the wire
are the same.

A connection closed while its client may still be sending (a body refused
413 before it was all read, headers too slow, bytes that are not HTTP) is
closed the way Apache and nginx close one: the answer and then the end of
the runner's side are sent, and what the client goes on sending is read and
dropped until it closes its side, for up to ``LINGER_SECS``. Closing the
socket at once, with the client's bytes unread, makes the kernel reset the
connection, and a reset can reach the client before it has read the answer:
Go's client then reports "connection reset by peer" instead of the 413 that
says what to change.

It subclasses uvicorn's httptools protocol, which uvicorn accepts as its
``http`` setting, and hooks only httptools' parser callbacks
(``on_message_begin``, ``on_headers_complete``, ``on_message_complete``),
asyncio's ``connection_made``/``connection_lost``/``data_received`` and
uvicorn's ``send_400_response``.
``tests/serving/test_http_limits.py`` holds slow and garbled clients against
a real server, and fails if those hooks stop firing, or if an answer comes
in two writes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from teamrunner.responses import error_body

# How long a connection closed with the client still sending reads and drops its bytes.
LINGER_SECS = 2.0


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the deadline on headers and the lingering close."""

    header_timeout: float  # the server's setting, given by header_timeout_protocol
    _deadline: asyncio.TimerHandle | None = None
    # Between a request's first byte and its last: the client is still sending.
    _in_request = False

    def connection_made(self, transport: Any) -> None:
        # It stands for the transport, which it passes everything else to.
        wrapped = HeadWithBody(transport, self.loop, lambda: self._in_request)
        super().connection_made(cast(asyncio.Transport, wrapped))
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # lingering: the rest of a request already answered, read and dropped
        super().data_received(data)

    def on_message_begin(self) -> None:
        self._in_request = True
        super().on_message_begin()
        self._arm()

    def on_message_complete(self) -> None:
        self._in_request = False
        super().on_message_complete()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        message = f"the request headers did not arrive within {self.header_timeout:g}s"
        self.transport.write(_closing_answer(b"408 Request Timeout", message))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        self._in_request = True  # whatever it is, more of it may be coming
        message = "the request is not HTTP/1.1 the runner can read"
        self.transport.write(_closing_answer(b"400 Bad Request", message))
        self.transport.close()


def header_timeout_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol, closing requests whose headers take longer than this."""
    return type(
        "HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": header_timeout}
    )


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


class HeadWithBody:
    """A transport that holds an answer's head until the body after it, and writes both at once.

    A write that is a whole head (a status line to the blank line) is held;
    the next write, or the transport's closing, or else the event loop's next
    turn, sends it. A close while ``linger()`` says the client may still be
    sending ends the runner's side and leaves the socket open for the client to
    read the answer and close its own, for up to ``LINGER_SECS`` (the
    protocol drops what it reads meanwhile). Everything else is the
    transport's own.
    """

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        linger: Callable[[], bool] = lambda: False,
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._linger = linger
        self._lingering = False
        self._head: bytes | None = None
        self._flush: asyncio.Handle | None = None

    def write(self, data: bytes) -> None:
        if self._head is not None:
            data = self._head + data
            self._release()
        elif data.startswith(b"HTTP/1.1 ") and data.endswith(b"\r\n\r\n"):
            self._head = data
            self._flush = self._loop.call_soon(self._write_head)
            return
        self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def close(self) -> None:
        self._write_head()
        if self._lingering:
            return  # closes once the client has, or at the end of the linger
        transport = self._transport
        if transport.is_closing() or not transport.can_write_eof() or not self._linger():
            transport.close()
            return
        self._lingering = True
        transport.write_eof()
        transport.resume_reading()  # uvicorn pauses reading while a body waits
        self._loop.call_later(LINGER_SECS, transport.close)

    def is_closing(self) -> bool:
        return self._lingering or self._transport.is_closing()

    def _write_head(self) -> None:
        if self._head is not None:
            head = self._head
            self._release()
            self._transport.write(head)

    def _release(self) -> None:
        self._head = None
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
