"""A simulator of pipecat-manager's wire, so the runner can be tested without the Go service.

It is not pipecat-manager: no Asterisk, no flows, no database, no AI manager
behind the tool endpoint. It serves on loopback the four things the runner
touches (docs/contract.md sections 3-5), byte-compatible with what the Go side sends
and accepts:

- ``GET /{id}/ws?direction=input``: plays a scripted caller (``Caller``) as
  protobuf ``AudioRawFrame``s, 20 ms of 16 kHz mono s16le each, paced like a
  phone line, and injects RTVI ``send-text`` messages on request.
- ``GET /{id}/ws?direction=output``: decodes every protobuf frame the runner
  sends and records it (``CallRecord``), emulating the media server's playout
  of bot audio and its reaction to ``FLUSH_MEDIA``.
- ``POST /{id}/tools`` and ``POST /{id}/member-switched``: records the request
  and answers as configured (``Reply``), optionally after a delay.

Where this differs from Go on purpose it says so: Go answers a bad
``direction`` with an empty 200 and stops reading an output socket that sent
non-mono audio; the simulator answers 400 and closes the socket with a reason,
so the failure is legible in a test.

This module holds the server (``ManagerSimulator``: its routes, its calls, the
test-facing API) and the command line. The parts live beside it: the caller's
script in ``caller.py``, the events and the call record in ``events.py`` and
``record.py``, a call's live sockets in ``line.py``, the protobuf and JSON
bytes in ``wire.py``, the HTTP requests and replies in ``endpoints.py``. Their
public names are re-exported here, so ``from simulators.manager import Caller,
Reply, CallRecord`` keeps working.

Run it by hand with ``python -m simulators.manager --port 8001``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from aiohttp import web

from simulators.caller import (
    FRAME_BYTES,
    FRAME_SECS,
    Caller,
    Segment,
    SegmentKind,
    SentSegment,
    Start,
    Then,
)
from simulators.endpoints import (
    MEMBER_SWITCHED_BODY,
    Reply,
    ToolResult,
    read_member_switch,
    read_tool_call,
    tool_success,
)
from simulators.events import (
    FLUSH_MEDIA,
    RTVI_LABEL,
    AudioChunk,
    ConnectionEvent,
    Direction,
    Event,
    InterruptionEvent,
    InvalidMessage,
    MemberSwitch,
    Party,
    RTVIMessage,
    TextEvent,
    TextSent,
    ToolCall,
    TranscriptionEvent,
)
from simulators.line import Line
from simulators.record import CallRecord, ManagerSimulatorError
from simulators.server import Simulator
from simulators.wire import go_json

__all__ = [
    "FLUSH_MEDIA",
    "FRAME_BYTES",
    "FRAME_SECS",
    "RTVI_LABEL",
    "AudioChunk",
    "CallRecord",
    "Caller",
    "ConnectionEvent",
    "Direction",
    "Event",
    "InterruptionEvent",
    "InvalidMessage",
    "ManagerSimulator",
    "ManagerSimulatorError",
    "MemberSwitch",
    "Party",
    "RTVIMessage",
    "Reply",
    "Segment",
    "SegmentKind",
    "SentSegment",
    "Start",
    "TextEvent",
    "TextSent",
    "Then",
    "ToolCall",
    "ToolResult",
    "TranscriptionEvent",
    "go_json",
    "main",
]


class ManagerSimulator(Simulator):
    """pipecat-manager's side of the wire: caller audio in, bot output recorded, tools answered.

    Args:
        caller: Script for calls not announced with ``expect_call`` (default:
            a silent line).
        tools: Replies by tool name for every call; a call's own ``tools`` win.
            Unlisted tools get ``Reply.ok()``.
        member_switched: Reply to member-switch notifications (default 200
            ``{"status": "ok"}``).
        strict_ids: Answer 404 for call ids not announced with ``expect_call``,
            as Go does for a session it does not know.
        log: Called with one readable line per notable event (the CLI prints them).
    """

    name = "pipecat-manager"

    def __init__(
        self,
        *,
        caller: Caller | None = None,
        tools: Mapping[str, Reply] | None = None,
        member_switched: Reply | None = None,
        strict_ids: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.default_caller = caller or Caller()
        self.tools = dict(tools or {})
        self.member_switched = member_switched or Reply.ok()
        self.strict_ids = strict_ids
        self.calls: dict[str, CallRecord] = {}
        self.rejected: list[tuple[float, str, int]] = []  # (at, path, status)
        self._log = log
        self._lines: dict[str, Line] = {}

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{call_id}/ws", self._websocket)
        app.router.add_post("/{call_id}/tools", self._tool_call)
        app.router.add_post("/{call_id}/member-switched", self._member_switched)
        return app

    # Test-facing API.

    def expect_call(
        self,
        call_id: str,
        *,
        caller: Caller | None = None,
        tools: Mapping[str, Reply] | None = None,
        member_switched: Reply | None = None,
    ) -> CallRecord:
        """Announce a call before the runner dials in, with its caller script and replies."""
        if call_id in self.calls:
            raise ManagerSimulatorError(f"call {call_id} is already known; announce it once")
        return self._new_call(call_id, caller, tools, member_switched, expected=True)

    def call(self, call_id: str) -> CallRecord:
        try:
            return self.calls[call_id]
        except KeyError:
            known = ", ".join(self.calls) or "none"
            raise KeyError(f"no call {call_id!r} on the simulator (known: {known})") from None

    async def wait_for(
        self, call_id: str, predicate: Callable[[CallRecord], bool], timeout: float = 10.0
    ) -> CallRecord:
        """Wait until the call exists and ``predicate(call)`` holds; returns the call."""

        def ready() -> bool:
            call = self.calls.get(call_id)
            return call is not None and predicate(call)

        try:
            await self.wait_until(ready, timeout)
        except TimeoutError:
            seen = "known" if call_id in self.calls else "never seen"
            raise TimeoutError(
                f"call {call_id} ({seen}): condition not met in {timeout}s"
            ) from None
        return self.calls[call_id]

    async def wait_call(self, call_id: str, timeout: float = 10.0) -> CallRecord:
        """Wait until the runner has opened a socket for ``call_id``."""
        return await self.wait_for(call_id, lambda c: bool(c.connections()), timeout)

    async def send_text(
        self,
        call_id: str,
        text: str,
        *,
        run_immediately: bool = True,
        audio_response: bool = True,
        message_id: str | None = None,
    ) -> str:
        """Send an RTVI ``send-text`` on the input socket, as Go's ``SendRTVIText`` does.

        Returns the message id.

        Raises:
            ManagerSimulatorError: when the input socket is not open (the runner
                opens it only for calls with ``stt_type``).
        """
        return await self._line(call_id).send_text(
            text,
            run_immediately=run_immediately,
            audio_response=audio_response,
            message_id=message_id,
        )

    async def say(self, call_id: str, *audio: Segment | Caller) -> None:
        """Queue more caller audio; it replaces the filler silence within one frame."""
        await self._line(call_id).say(*audio)

    async def hangup(self, call_id: str, *, abrupt: bool = False) -> None:
        """End the call as Go does: close both sockets.

        ``abrupt`` drops the TCP connections without a websocket close frame
        (what a Go ``Conn.Close()`` does) instead of a normal 1000 close.
        """
        await self._line(call_id).hangup(abrupt=abrupt)

    async def close_connections(self) -> None:
        await asyncio.gather(*(line.close() for line in self._lines.values()))

    # Routes.

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        call_id = request.match_info["call_id"]
        try:
            direction = Direction(request.query.get("direction", ""))
        except ValueError:
            return await self._reject(request, 400, "direction must be 'input' or 'output'")
        if self._call_for(call_id) is None:
            return await self._reject(request, 404, f"could not find session {call_id}")
        return await self._lines[call_id].serve(direction, request)

    async def _tool_call(self, request: web.Request) -> web.StreamResponse:
        call = self._call_for(request.match_info["call_id"])
        if call is None:
            return await self._reject(request, 404, "could not find session")
        raw = await request.read()
        event, reply = read_tool_call(
            raw,
            seq=len(call.events),
            at=time.monotonic(),
            reply_for=lambda name: call.tools.get(name) or self.tools.get(name) or Reply.ok(),
        )
        await self._lines[call.call_id].record(event)
        return await reply.answer(tool_success(event.tool_call_id))

    async def _member_switched(self, request: web.Request) -> web.StreamResponse:
        call = self._call_for(request.match_info["call_id"])
        if call is None:
            return await self._reject(request, 404, "could not find session")
        raw = await request.read()
        event, reply = read_member_switch(
            raw,
            seq=len(call.events),
            at=time.monotonic(),
            reply=call.member_switched or self.member_switched,
        )
        await self._lines[call.call_id].record(event)
        return await reply.answer(MEMBER_SWITCHED_BODY)

    # Plumbing.

    def _new_call(
        self,
        call_id: str,
        caller: Caller | None,
        tools: Mapping[str, Reply] | None,
        member_switched: Reply | None,
        *,
        expected: bool,
    ) -> CallRecord:
        call = CallRecord(
            call_id,
            caller=caller or self.default_caller,
            tools=tools or {},
            member_switched=member_switched,
            expected=expected,
            wait_until=self.wait_until,
        )
        self.calls[call_id] = call
        say = self._say if self._log is not None else None
        self._lines[call_id] = Line(call, notify=self.notify, say=say)
        return call

    def _line(self, call_id: str) -> Line:
        """The line of a known call; the KeyError of ``call`` otherwise."""
        return self._lines[self.call(call_id).call_id]

    def _call_for(self, call_id: str) -> CallRecord | None:
        """The record for ``call_id``, created on first contact unless ``strict_ids``."""
        call = self.calls.get(call_id)
        if call is None and not self.strict_ids:
            call = self._new_call(call_id, None, None, None, expected=False)
        return call

    async def _reject(self, request: web.Request, status: int, error: str) -> web.Response:
        self.rejected.append((time.monotonic(), request.path_qs, status))
        self._say(f"rejected {request.method} {request.path_qs}: {status} {error}")
        await self.notify()
        return web.json_response({"error": error}, status=status)

    def _say(self, line: str) -> None:
        if self._log is not None:
            self._log(f"{time.strftime('%H:%M:%S')} {line}")


# --- Command line --------------------------------------------------------------


def _parse_args(argv: Iterable[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.manager",
        description="Serve a simulator of pipecat-manager's wire (not the Go service).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--caller", type=Path, help="WAV the caller plays on every call")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--realtime", action="store_true", help="pace caller audio at real time")
    pace.add_argument("--speed", type=float, help="caller audio N times real time (0: unpaced)")
    parser.add_argument("--start", choices=[s.value for s in Start], default=Start.AFTER_OUTPUT)
    parser.add_argument("--then", choices=[t.value for t in Then], default=Then.SILENCE)
    parser.add_argument("--record", type=Path, help="directory to save each call as <id>.wav")
    return parser.parse_args(list(argv) if argv is not None else None)


async def _serve(args: argparse.Namespace) -> None:
    segments = [Caller.wav(args.caller)] if args.caller else []
    caller = Caller(
        *segments,
        realtime=args.speed is None,
        speed=1.0 if args.speed is None else args.speed,
        start=args.start,
        then=args.then,
    )
    sim = ManagerSimulator(caller=caller, log=lambda line: print(line, flush=True))
    await sim.start(args.host, args.port)
    serving = asyncio.current_task()
    if serving is not None:  # SIGTERM stops it like Ctrl-C does
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, serving.cancel)
    print(f"pipecat-manager simulator on {sim.address} (PIPECATCALL_ADDRESS={sim.address})")
    saved: set[str] = set()
    try:
        while True:
            if args.record is None:
                await asyncio.Event().wait()
            with contextlib.suppress(TimeoutError):
                await sim.wait_until(
                    lambda: any(c.closed and i not in saved for i, c in sim.calls.items()), 3600
                )
            for call_id, call in list(sim.calls.items()):
                if call.closed and call_id not in saved:
                    saved.add(call_id)
                    args.record.mkdir(parents=True, exist_ok=True)
                    path = args.record / f"{call_id}.wav"
                    call.write_wav(path)
                    print(f"[{call_id}] saved {path}", flush=True)
    finally:
        await sim.stop()


def main(argv: Iterable[str] | None = None) -> None:
    args = _parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
